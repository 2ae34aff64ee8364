// EXPECT: write to read-only map (.rodata)
#include <ncclbpf/policy.h>

const volatile __u32 limit = 8;

SEC("tuner")
int rodata_write(struct ncclbpf_tuner_ctx *ctx)
{
	*(volatile __u32 *)&limit = ctx->n_ranks;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
