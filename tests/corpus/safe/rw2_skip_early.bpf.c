/* Several early NCCLBPF_TUNER_SKIP returns before a decision. */
#include <ncclbpf/policy.h>

SEC("tuner")
int skip_early(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->abi_version < 3)
		return NCCLBPF_TUNER_SKIP;
	if (ctx->n_ranks < 2)
		return NCCLBPF_TUNER_SKIP;
	if (ctx->nccl_algo < 0 || ctx->nccl_proto < 0)
		return NCCLBPF_TUNER_SKIP;
	if (ctx->reg_buff && ctx->n_bytes > (1ull << 30))
		return NCCLBPF_TUNER_SKIP;
	if (ctx->coll_type != NCCLBPF_COLL_ALLREDUCE)
		return NCCLBPF_TUNER_SKIP;
	ctx->n_channels = ctx->num_pipe_ops > 1 ? 8 : 16;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
