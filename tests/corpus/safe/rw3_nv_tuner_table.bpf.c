/* A port of the example tuner's config table: rows of {coll, min bytes, max bytes,
 * algo, proto, channels, nNodes, nRanks}, scanned in order, first match wins; -1
 * in nNodes/nRanks matches any. */
#include <ncclbpf/policy.h>

struct tune_row {
	__s32 coll;
	__s32 algo;
	__s32 proto;
	__s32 channels;
	__u64 min_bytes;
	__u64 max_bytes;
	__s32 n_nodes;
	__s32 n_ranks;
};

#define N_ROWS 8

static const struct tune_row rows[N_ROWS] = {
	{ NCCLBPF_COLL_ALLREDUCE, NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_LL, 4, 0, 65535, -1, -1 },
	{ NCCLBPF_COLL_ALLREDUCE, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL128, 8, 65536, 1048575, -1, -1 },
	{ NCCLBPF_COLL_ALLREDUCE, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE, -1, 1048576, ~0ULL, -1, -1 },
	{ NCCLBPF_COLL_ALLGATHER, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL, 2, 0, 8191, 1, -1 },
	{ NCCLBPF_COLL_ALLGATHER, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE, -1, 8192, ~0ULL, -1, -1 },
	{ NCCLBPF_COLL_REDUCESCATTER, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL128, 16, 0, ~0ULL, 2, 16 },
	{ NCCLBPF_COLL_BROADCAST, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE, -1, 0, ~0ULL, -1, -1 },
	{ NCCLBPF_COLL_REDUCE, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE, -1, 0, ~0ULL, -1, 8 },
};

SEC("tuner")
int table_tuner(struct ncclbpf_tuner_ctx *ctx)
{
	for (int i = 0; i < N_ROWS; i++) {
		const struct tune_row *r = &rows[i];

		if (r->coll != (__s32)ctx->coll_type)
			continue;
		if (ctx->n_bytes < r->min_bytes || ctx->n_bytes > r->max_bytes)
			continue;
		if (r->n_nodes != -1 && r->n_nodes != (__s32)ctx->n_nodes)
			continue;
		if (r->n_ranks != -1 && r->n_ranks != (__s32)ctx->n_ranks)
			continue;
		if (!ncclbpf_cell_offered(ctx, r->algo, r->proto))
			return NCCLBPF_TUNER_SKIP;
		ctx->algo = r->algo;
		ctx->proto = r->proto;
		if (r->channels > 0)
			ctx->n_channels = r->channels;
		return NCCLBPF_TUNER_APPLY;
	}
	return NCCLBPF_TUNER_SKIP;
}
char LICENSE[] SEC("license") = "GPL";
