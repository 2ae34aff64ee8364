/* A stack array of per-protocol scores indexed by a bounded variable. */
#include <ncclbpf/policy.h>

SEC("tuner")
int stack_scores(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 score[NCCLBPF_NUM_PROTOS];
	__u32 i, best = 0;
	__u32 idx = ctx->coll_type % NCCLBPF_NUM_PROTOS;

	for (i = 0; i < NCCLBPF_NUM_PROTOS; i++)
		score[i] = (i + 1) * 10;
	score[idx] += ctx->n_ranks > 8 ? 5 : 50;
	for (i = 1; i < NCCLBPF_NUM_PROTOS; i++)
		if (score[i] > score[best])
			best = i;
	if (!ncclbpf_cell_offered(ctx, NCCLBPF_ALGO_RING, best))
		return NCCLBPF_TUNER_SKIP;
	ctx->algo = NCCLBPF_ALGO_RING;
	ctx->proto = best;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
