/* Nested loops over the 7x3 cells: the offered cell with the lowest static cost. */
#include <ncclbpf/policy.h>

static const __u32 proto_cost[NCCLBPF_NUM_PROTOS] = { 1, 2, 4 };

SEC("tuner")
int cell_loop(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 best = ~0u;
	int best_a = -1, best_p = -1;

	for (int a = 0; a < NCCLBPF_NUM_ALGOS; a++) {
		for (int p = 0; p < NCCLBPF_NUM_PROTOS; p++) {
			__u32 cost;

			if (!(ctx->avail_mask & NCCLBPF_CELL(a, p)))
				continue;
			cost = (a + 1) * proto_cost[p] * (ctx->n_bytes > 1048576 ? 1 : 3);
			if (cost < best) {
				best = cost;
				best_a = a;
				best_p = p;
			}
		}
	}
	if (best_a < 0)
		return NCCLBPF_TUNER_SKIP;
	ctx->algo = best_a;
	ctx->proto = best_p;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
