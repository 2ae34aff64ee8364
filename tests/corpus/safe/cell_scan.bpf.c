// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Nested constant loops over the (algorithm, protocol) grid, a switch, and a
 * hash map keyed by a struct initialised on the stack. */
#include <ncclbpf/policy.h>

struct key {
	__u32 coll;
	__u32 bucket;
};

struct score {
	__u32 cost[NCCLBPF_NUM_ALGOS][NCCLBPF_NUM_PROTOS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct key);
	__type(value, struct score);
} scores SEC(".maps");

static __always_inline int default_proto(__u32 coll)
{
	switch (coll) {
	case NCCLBPF_COLL_BROADCAST:
	case NCCLBPF_COLL_REDUCE:
		return NCCLBPF_PROTO_SIMPLE;
	case NCCLBPF_COLL_ALLGATHER:
		return NCCLBPF_PROTO_LL128;
	default:
		return NCCLBPF_PROTO_LL;
	}
}

SEC("tuner")
int cell_scan(struct ncclbpf_tuner_ctx *ctx)
{
	struct key k = {};
	struct score *s;
	__u32 best = 0xffffffff;
	int ba = -1, bp = -1;

	k.coll = ctx->coll_type;
	k.bucket = ncclbpf_size_bucket(ctx->n_bytes);
	s = bpf_map_lookup_elem(&scores, &k);
	if (!s) {
		ctx->proto = default_proto(ctx->coll_type);
		return NCCLBPF_TUNER_APPLY;
	}
	for (int a = 0; a < NCCLBPF_NUM_ALGOS; a++) {
		for (int p = 0; p < NCCLBPF_NUM_PROTOS; p++) {
			if (!(ctx->avail_mask & NCCLBPF_CELL(a, p)))
				continue;
			if (s->cost[a][p] < best) {
				best = s->cost[a][p];
				ba = a;
				bp = p;
			}
		}
	}
	if (ba >= 0) {
		ctx->algo = ba;
		ctx->proto = bp;
	}
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
