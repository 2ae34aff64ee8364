// EXPECT: use of ring buffer record after submit or discard
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

SEC("profiler")
int ringbuf_use_after(const struct ncclbpf_coll_record *rec)
{
	volatile __u64 *e = bpf_ringbuf_reserve(&events, 16, 0);

	if (!e)
		return 0;
	e[0] = rec->latency_ns;
	bpf_ringbuf_submit((void *)e, 0);
	e[1] = rec->seq; /* the consumer may already read it */
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
