// EXPECT: "%p" in format
// %p prints an address; refused like %s.
#include <ncclbpf/policy.h>

SEC("profiler")
int printk_conv_p(const struct ncclbpf_coll_record *r)
{
	bpf_printk("rank %u at %p", r->rank, r->comm_id);
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
