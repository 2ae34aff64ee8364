/* Arithmetic on ranks and nodes: per-rank bytes, ranks per node, guarded division. */
#include <ncclbpf/policy.h>

SEC("tuner")
int ranks_scale(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 nodes = ctx->n_nodes ? ctx->n_nodes : 1;
	__u32 per_node = ctx->n_ranks / nodes;
	__u64 per_rank;

	if (ctx->n_ranks == 0)
		return NCCLBPF_TUNER_SKIP;
	per_rank = ctx->n_bytes / ctx->n_ranks;
	if (per_node >= 8 && per_rank >= 65536)
		ctx->algo = NCCLBPF_ALGO_RING;
	else if (nodes > 1)
		ctx->algo = NCCLBPF_ALGO_TREE;
	if (ctx->reg_buff && ctx->num_pipe_ops > 1)
		ctx->n_channels = per_node > 4 ? 24 : 12;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
