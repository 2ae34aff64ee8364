// EXPECT: clean
/* Signed comparisons on __s32 inputs/outputs: keep NCCL's algo when it is valid,
 * nudge the protocol, never write an out-of-range value. */
#include <ncclbpf/policy.h>

__u64 proto_changed;

SEC("tuner")
int signed_out(struct ncclbpf_tuner_ctx *ctx)
{
	__s32 a = ctx->nccl_algo;
	__s32 p = ctx->nccl_proto;

	if (a < 0 || p < 0)
		return NCCLBPF_TUNER_SKIP;
	if (a >= NCCLBPF_NUM_ALGOS || p >= NCCLBPF_NUM_PROTOS)
		return NCCLBPF_TUNER_SKIP;
	if (p == NCCLBPF_PROTO_LL && ctx->n_bytes > 65536) {
		int np = p + 2;

		if (ctx->avail_mask & NCCLBPF_CELL(a, np)) {
			ctx->algo = a;
			ctx->proto = np;
		}
	}
	if (ctx->algo >= 0 && ctx->n_channels < 0)
		ctx->n_channels = ctx->algo == NCCLBPF_ALGO_TREE ? 8 : 16;
	if (ctx->proto > -1 && ctx->proto != p)
		proto_changed++;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
