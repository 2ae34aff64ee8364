/* Uses the v5 NVLink domain fields and the ABI version. */
#include <ncclbpf/policy.h>

SEC("tuner")
int nvl_domains(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->abi_version < 5 || ctx->nvl_domains == 0)
		return NCCLBPF_TUNER_SKIP;
	if (ctx->nvl_domains == 1 && ctx->max_ranks_per_nvl_domain >= 4 &&
	    ncclbpf_cell_offered(ctx, NCCLBPF_ALGO_NVLS, NCCLBPF_PROTO_SIMPLE)) {
		ctx->algo = NCCLBPF_ALGO_NVLS;
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
		return 0;
	}
	if (ctx->min_ranks_per_nvl_domain != ctx->max_ranks_per_nvl_domain)
		ctx->algo = NCCLBPF_ALGO_RING;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
