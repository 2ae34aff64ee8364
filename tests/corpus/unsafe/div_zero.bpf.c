// EXPECT: division by possibly-zero value
#include <ncclbpf/policy.h>

SEC("tuner")
int div_zero(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_channels = ctx->n_ranks / ctx->n_nodes; /* n_nodes may be 0 */
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
