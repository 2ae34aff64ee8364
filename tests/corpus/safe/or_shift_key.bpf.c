// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A table indexed by key = coll << 5 | bucket, coll below 5 and bucket
 * below 32 from earlier checks: clang drops the key's own bound check,
 * which it proves, and the verifier must bound the OR from the operands'
 * ranges (the form `ncclbpf tune` policies take).
 */
#include <ncclbpf/policy.h>

struct cell {
	__u8 set;
	__u8 algo;
	__u8 proto;
	__u8 n_channels;
};

static const struct cell table[NCCLBPF_NUM_COLLS * NCCLBPF_SIZE_BUCKETS] = {
	[0 * NCCLBPF_SIZE_BUCKETS + 0] = { 1, 0, 0, 0 },
	[0 * NCCLBPF_SIZE_BUCKETS + 3] = { 1, 3, 0, 3 },
	[0 * NCCLBPF_SIZE_BUCKETS + 6] = { 1, 2, 0, 1 },
	[0 * NCCLBPF_SIZE_BUCKETS + 9] = { 1, 1, 0, 4 },
	[0 * NCCLBPF_SIZE_BUCKETS + 12] = { 1, 0, 0, 2 },
	[0 * NCCLBPF_SIZE_BUCKETS + 15] = { 1, 3, 0, 0 },
	[0 * NCCLBPF_SIZE_BUCKETS + 18] = { 1, 2, 0, 3 },
	[0 * NCCLBPF_SIZE_BUCKETS + 21] = { 1, 1, 0, 1 },
	[0 * NCCLBPF_SIZE_BUCKETS + 24] = { 1, 0, 0, 4 },
	[0 * NCCLBPF_SIZE_BUCKETS + 27] = { 1, 3, 0, 2 },
	[0 * NCCLBPF_SIZE_BUCKETS + 30] = { 1, 2, 0, 0 },
	[1 * NCCLBPF_SIZE_BUCKETS + 0] = { 1, 1, 0, 0 },
	[1 * NCCLBPF_SIZE_BUCKETS + 3] = { 1, 0, 0, 3 },
	[1 * NCCLBPF_SIZE_BUCKETS + 6] = { 1, 3, 0, 1 },
	[1 * NCCLBPF_SIZE_BUCKETS + 9] = { 1, 2, 0, 4 },
	[1 * NCCLBPF_SIZE_BUCKETS + 12] = { 1, 1, 0, 2 },
	[1 * NCCLBPF_SIZE_BUCKETS + 15] = { 1, 0, 0, 0 },
	[1 * NCCLBPF_SIZE_BUCKETS + 18] = { 1, 3, 0, 3 },
	[1 * NCCLBPF_SIZE_BUCKETS + 21] = { 1, 2, 0, 1 },
	[1 * NCCLBPF_SIZE_BUCKETS + 24] = { 1, 1, 0, 4 },
	[1 * NCCLBPF_SIZE_BUCKETS + 27] = { 1, 0, 0, 2 },
	[1 * NCCLBPF_SIZE_BUCKETS + 30] = { 1, 3, 0, 0 },
	[2 * NCCLBPF_SIZE_BUCKETS + 0] = { 1, 2, 0, 0 },
	[2 * NCCLBPF_SIZE_BUCKETS + 3] = { 1, 1, 0, 3 },
	[2 * NCCLBPF_SIZE_BUCKETS + 6] = { 1, 0, 0, 1 },
	[2 * NCCLBPF_SIZE_BUCKETS + 9] = { 1, 3, 0, 4 },
	[2 * NCCLBPF_SIZE_BUCKETS + 12] = { 1, 2, 0, 2 },
	[2 * NCCLBPF_SIZE_BUCKETS + 15] = { 1, 1, 0, 0 },
	[2 * NCCLBPF_SIZE_BUCKETS + 18] = { 1, 0, 0, 3 },
	[2 * NCCLBPF_SIZE_BUCKETS + 21] = { 1, 3, 0, 1 },
	[2 * NCCLBPF_SIZE_BUCKETS + 24] = { 1, 2, 0, 4 },
	[2 * NCCLBPF_SIZE_BUCKETS + 27] = { 1, 1, 0, 2 },
	[2 * NCCLBPF_SIZE_BUCKETS + 30] = { 1, 0, 0, 0 },
	[3 * NCCLBPF_SIZE_BUCKETS + 0] = { 1, 3, 0, 0 },
	[3 * NCCLBPF_SIZE_BUCKETS + 3] = { 1, 2, 0, 3 },
	[3 * NCCLBPF_SIZE_BUCKETS + 6] = { 1, 1, 0, 1 },
	[3 * NCCLBPF_SIZE_BUCKETS + 9] = { 1, 0, 0, 4 },
	[3 * NCCLBPF_SIZE_BUCKETS + 12] = { 1, 3, 0, 2 },
	[3 * NCCLBPF_SIZE_BUCKETS + 15] = { 1, 2, 0, 0 },
	[3 * NCCLBPF_SIZE_BUCKETS + 18] = { 1, 1, 0, 3 },
	[3 * NCCLBPF_SIZE_BUCKETS + 21] = { 1, 0, 0, 1 },
	[3 * NCCLBPF_SIZE_BUCKETS + 24] = { 1, 3, 0, 4 },
	[3 * NCCLBPF_SIZE_BUCKETS + 27] = { 1, 2, 0, 2 },
	[3 * NCCLBPF_SIZE_BUCKETS + 30] = { 1, 1, 0, 0 },
	[4 * NCCLBPF_SIZE_BUCKETS + 0] = { 1, 0, 0, 0 },
	[4 * NCCLBPF_SIZE_BUCKETS + 3] = { 1, 3, 0, 3 },
	[4 * NCCLBPF_SIZE_BUCKETS + 6] = { 1, 2, 0, 1 },
	[4 * NCCLBPF_SIZE_BUCKETS + 9] = { 1, 1, 0, 4 },
	[4 * NCCLBPF_SIZE_BUCKETS + 12] = { 1, 0, 0, 2 },
	[4 * NCCLBPF_SIZE_BUCKETS + 15] = { 1, 3, 0, 0 },
	[4 * NCCLBPF_SIZE_BUCKETS + 18] = { 1, 2, 0, 3 },
	[4 * NCCLBPF_SIZE_BUCKETS + 21] = { 1, 1, 0, 1 },
	[4 * NCCLBPF_SIZE_BUCKETS + 24] = { 1, 0, 0, 4 },
	[4 * NCCLBPF_SIZE_BUCKETS + 27] = { 1, 3, 0, 2 },
	[4 * NCCLBPF_SIZE_BUCKETS + 30] = { 1, 2, 0, 0 },
};

SEC("tuner")
int or_shift_key(struct ncclbpf_tuner_ctx *ctx)
{
	const struct cell *t;
	__u32 key;

	if (ctx->coll_type >= NCCLBPF_NUM_COLLS)
		return NCCLBPF_TUNER_APPLY;
	key = ctx->coll_type * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(ctx->n_bytes);
	if (key >= NCCLBPF_NUM_COLLS * NCCLBPF_SIZE_BUCKETS)
		return NCCLBPF_TUNER_APPLY;
	t = &table[key];
	if (!t->set || !ncclbpf_cell_offered(ctx, t->algo, t->proto))
		return NCCLBPF_TUNER_APPLY;
	ctx->algo = t->algo;
	ctx->proto = t->proto;
	if (t->n_channels)
		ctx->n_channels = t->n_channels;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
