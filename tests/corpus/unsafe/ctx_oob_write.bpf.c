// EXPECT: context access out of bounds
#include <ncclbpf/policy.h>

SEC("tuner")
int ctx_oob_write(struct ncclbpf_tuner_ctx *ctx)
{
	*(volatile __u32 *)((char *)ctx + 96) = 4;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
