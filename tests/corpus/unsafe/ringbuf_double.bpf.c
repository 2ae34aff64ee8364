// EXPECT: ring buffer record submitted twice
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

SEC("profiler")
int ringbuf_double(const struct ncclbpf_coll_record *rec)
{
	__u64 *e = bpf_ringbuf_reserve(&events, 8, 0);

	if (!e)
		return 0;
	*e = rec->latency_ns;
	bpf_ringbuf_submit(e, 0);
	if (rec->latency_ns > 1000)
		bpf_ringbuf_discard(e, 0);
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
