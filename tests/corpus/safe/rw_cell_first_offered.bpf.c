/* Break out of the cell scan at the first offered Simple cell, else keep NCCL's pick. */
#include <ncclbpf/policy.h>

SEC("tuner")
int first_offered(struct ncclbpf_tuner_ctx *ctx)
{
	int a;

	for (a = 0; a < NCCLBPF_NUM_ALGOS; a++)
		if (ctx->avail_mask & NCCLBPF_CELL(a, NCCLBPF_PROTO_SIMPLE))
			break;
	if (a == NCCLBPF_NUM_ALGOS) {
		ctx->algo = ctx->nccl_algo;
		ctx->proto = ctx->nccl_proto;
		return NCCLBPF_TUNER_APPLY;
	}
	ctx->algo = a;
	ctx->proto = NCCLBPF_PROTO_SIMPLE;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
