/* Test env overrides (and a do-nothing profiler program). */
#include <ncclbpf/policy.h>

const char ncclbpf_env[] = "NCCL_ALGO=Ring\nNCCL_PROTO=Simple\nNCCL_MIN_NCHANNELS=4\n";

SEC("profiler") int nothing(struct ncclbpf_coll_record *r)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
