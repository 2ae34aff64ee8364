/* Cost model with a static const array of structs and a stack array of costs, argmin by index. */
#include <ncclbpf/policy.h>

struct model {
	__u32 lat_us;
	__u32 bw_gbps;
};

static const struct model models[NCCLBPF_NUM_PROTOS] = {
	{ 2, 10 }, { 4, 40 }, { 8, 80 },
};

SEC("tuner")
int cost_arr(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 cost[NCCLBPF_NUM_PROTOS];
	__u64 kb = ctx->n_bytes >> 10;
	int p, best = 0;

	for (p = 0; p < NCCLBPF_NUM_PROTOS; p++) {
		cost[p] = models[p].lat_us * 1000 + kb * 1000 / models[p].bw_gbps;
		if (!ncclbpf_cell_offered(ctx, NCCLBPF_ALGO_RING, p))
			cost[p] = ~0ull;
	}
	for (p = 1; p < NCCLBPF_NUM_PROTOS; p++)
		if (cost[p] < cost[best])
			best = p;
	if (cost[best] == ~0ull)
		return NCCLBPF_TUNER_SKIP;
	ctx->algo = NCCLBPF_ALGO_RING;
	ctx->proto = best;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
