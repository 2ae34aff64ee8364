// EXPECT: context access width does not match field
#include <ncclbpf/policy.h>

SEC("tuner")
int ctx_width(struct ncclbpf_tuner_ctx *ctx)
{
	*(volatile __u8 *)&ctx->algo = 1; /* 1-byte write to a 4-byte output */
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
