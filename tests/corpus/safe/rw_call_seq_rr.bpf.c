/* Round robin over protocols by call_seq % 3; channel count from call_seq % 8. */
#include <ncclbpf/policy.h>

SEC("tuner")
int call_seq_rr(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 p = ctx->call_seq % NCCLBPF_NUM_PROTOS;

	if (!(ctx->avail_mask & NCCLBPF_CELL(NCCLBPF_ALGO_RING, p)))
		return NCCLBPF_TUNER_SKIP;
	ctx->algo = NCCLBPF_ALGO_RING;
	ctx->proto = p;
	ctx->n_channels = 1 + (ctx->call_seq / 3) % 8 * 4;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
