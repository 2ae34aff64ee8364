// EXPECT: write to read-only context field
#include <ncclbpf/policy.h>

SEC("tuner")
int ctx_readonly(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_ranks = 1; /* an input */
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
