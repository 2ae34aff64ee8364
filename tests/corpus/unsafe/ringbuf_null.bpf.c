// EXPECT: possibly-null ring buffer record passed to helper
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

SEC("profiler")
int ringbuf_null(const struct ncclbpf_coll_record *rec)
{
	void *e = bpf_ringbuf_reserve(&events, 16, 0);

	bpf_ringbuf_submit(e, 0); /* reserve may fail */
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
