// EXPECT: program integer_ctx takes __u64, not a pointer
// The context address taken as an integer: not a context type at all.
#include <ncclbpf/policy.h>

char LICENSE[] SEC("license") = "GPL";

SEC("profiler")
int integer_ctx(__u64 ctx)
{
	return 0;
}
