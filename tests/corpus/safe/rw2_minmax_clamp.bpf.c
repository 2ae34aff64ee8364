/* min/max macros, ternaries and a nested-ternary channel clamp. */
#include <ncclbpf/policy.h>

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

SEC("tuner")
int minmax(struct ncclbpf_tuner_ctx *ctx)
{
	__s64 v = (__s64)(ctx->n_bytes >> 18) - (__s64)ctx->n_nodes;
	__u32 lo = MIN(ctx->n_ranks, 64u);
	__u32 hi = MAX(lo, 4u);

	v = v < 1 ? 1 : v > 32 ? 32 : v;
	ctx->n_channels = MIN((__u32)v, hi);
	ctx->algo = ctx->n_nodes > 1 ? NCCLBPF_ALGO_TREE : NCCLBPF_KEEP;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
