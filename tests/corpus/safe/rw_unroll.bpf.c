/* #pragma unroll over protocols with an early return inside. */
#include <ncclbpf/policy.h>

SEC("tuner")
int unroll(struct ncclbpf_tuner_ctx *ctx)
{
	static const int order[NCCLBPF_NUM_PROTOS] = {
		NCCLBPF_PROTO_SIMPLE, NCCLBPF_PROTO_LL128, NCCLBPF_PROTO_LL };

#pragma unroll
	for (int i = 0; i < NCCLBPF_NUM_PROTOS; i++) {
		if (ctx->avail_mask & NCCLBPF_CELL(NCCLBPF_ALGO_RING, order[i])) {
			ctx->algo = NCCLBPF_ALGO_RING;
			ctx->proto = order[i];
			return NCCLBPF_TUNER_APPLY;
		}
	}
	return NCCLBPF_TUNER_SKIP;
}
char LICENSE[] SEC("license") = "GPL";
