/* Channel clamp on a signed int computed from bytes and ranks. */
#include <ncclbpf/policy.h>

SEC("tuner")
int clamp_int(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 r = ctx->n_ranks ? ctx->n_ranks : 1;
	int v = (int)((ctx->n_bytes / 65536) / r) - (int)ctx->n_nodes;

	ctx->n_channels = v < 1 ? 1 : v > 32 ? 32 : v;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
