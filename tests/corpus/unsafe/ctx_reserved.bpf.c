// EXPECT: context access not at a declared field
#include <ncclbpf/policy.h>

SEC("tuner")
int ctx_reserved(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_channels = ctx->reserved; /* padding is not a field */
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
