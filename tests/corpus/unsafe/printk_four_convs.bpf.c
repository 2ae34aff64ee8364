// EXPECT: has 4 conversions; bpf_trace_printk passes at most 3
// Four conversions, three arguments: the fourth would print nothing the
// program set.
#include <ncclbpf/policy.h>

SEC("profiler")
int printk_four_convs(const struct ncclbpf_coll_record *r)
{
	bpf_printk("%u %u %llu %llu", r->rank, r->n_ranks, r->latency_ns);
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
