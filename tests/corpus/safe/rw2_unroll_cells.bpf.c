/* #pragma unroll over algorithms with an inner cost from a static table; counts offered cells. */
#include <ncclbpf/policy.h>

static const __u32 algo_weight[NCCLBPF_NUM_ALGOS] = { 3, 1, 9, 9, 5, 6, 4 };

SEC("tuner")
int unroll_cells(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 offered = 0, best_w = 100;
	int best = -1;

#pragma unroll
	for (int a = 0; a < NCCLBPF_NUM_ALGOS; a++) {
		if (ctx->avail_mask & NCCLBPF_CELL(a, NCCLBPF_PROTO_SIMPLE)) {
			offered++;
			if (algo_weight[a] < best_w) {
				best_w = algo_weight[a];
				best = a;
			}
		}
	}
	if (best < 0 || offered < 2)
		return NCCLBPF_TUNER_SKIP;
	ctx->algo = best;
	ctx->proto = NCCLBPF_PROTO_SIMPLE;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
