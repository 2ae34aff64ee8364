// EXPECT: write to read-only context field
#include <ncclbpf/policy.h>

SEC("profiler")
int ctx_profiler_write(struct ncclbpf_coll_record *rec)
{
	rec->latency_ns = 0; /* the record is read-only */
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
