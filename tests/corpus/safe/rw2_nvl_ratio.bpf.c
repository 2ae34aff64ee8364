/* NVLink domain ratio with guarded division and a version check; chooses NVLS when uniform. */
#include <ncclbpf/policy.h>

SEC("tuner")
int nvl_ratio(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 d = ctx->nvl_domains, lo = ctx->min_ranks_per_nvl_domain;
	__u32 hi = ctx->max_ranks_per_nvl_domain;

	if (ctx->abi_version < 5 || d == 0)
		return NCCLBPF_TUNER_SKIP;
	if (lo == hi && ctx->n_ranks / d == lo &&
	    ncclbpf_cell_offered(ctx, NCCLBPF_ALGO_NVLS, NCCLBPF_PROTO_SIMPLE)) {
		ctx->algo = NCCLBPF_ALGO_NVLS;
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
		return NCCLBPF_TUNER_APPLY;
	}
	ctx->n_channels = hi ? (lo * 32) / hi : 16;
	if (ctx->n_channels < 1)
		ctx->n_channels = 1;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
