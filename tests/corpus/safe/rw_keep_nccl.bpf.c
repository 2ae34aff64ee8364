/* Keep NCCL's pick but adjust the channel count; NCCLBPF_KEEP outputs. */
#include <ncclbpf/policy.h>

SEC("tuner")
int keep_nccl(struct ncclbpf_tuner_ctx *ctx)
{
	int ch;

	if (ctx->nccl_algo < 0)
		return NCCLBPF_TUNER_SKIP;
	ctx->algo = NCCLBPF_KEEP;
	ctx->proto = NCCLBPF_KEEP;
	ch = ctx->n_ranks * 2;
	if (ch > 64)
		ch = 64;
	if (ch < 1)
		ch = 1;
	ctx->n_channels = ch;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
