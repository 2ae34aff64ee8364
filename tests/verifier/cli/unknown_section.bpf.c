// A program whose section names no hook.
#include <ncclbpf/policy.h>

SEC("xdp")
int not_a_hook(void *ctx)
{
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
