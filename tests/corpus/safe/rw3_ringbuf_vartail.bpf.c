/* Ring buffer events with a variable-length tail capped by a constant: output a
 * header plus up to 16 per-channel latencies read from a map. */
#include <ncclbpf/policy.h>

#define MAX_TAIL 16

struct ev {
	__u64 comm_id;
	__u64 seq;
	__u32 n;
	__u32 pad;
	__u64 tail[MAX_TAIL];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ev);
} scratch SEC(".maps");

SEC("profiler")
int vartail(struct ncclbpf_coll_record *rec)
{
	__u32 zero = 0;
	struct ev *e = bpf_map_lookup_elem(&scratch, &zero);
	__u32 n = rec->n_channels;

	if (!e)
		return 0;
	if (n > MAX_TAIL)
		n = MAX_TAIL;
	e->comm_id = rec->comm_id;
	e->seq = rec->seq;
	e->n = n;
	e->pad = 0;
	for (__u32 i = 0; i < MAX_TAIL; i++)
		e->tail[i] = i < n ? rec->latency_ns : 0;
	bpf_ringbuf_output(&events, e, 24 + (__u64)n * 8, 0);
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
