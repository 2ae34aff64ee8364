// EXPECT: warn
// The map the choice comes from is also written (statistics), so it is rank-local.
/* Nested struct map values and pointer-to-member access. */
#include <ncclbpf/policy.h>

struct choice {
	__s32 algo;
	__s32 proto;
};

struct stats {
	__u64 hits;
	__u64 bytes;
};

struct entry {
	struct {
		__u64 lo;
		__u64 hi;
	} range;
	struct choice pick[2];
	struct stats st;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct entry);
} entries SEC(".maps");

static __always_inline void account(struct stats *st, __u64 bytes)
{
	__sync_fetch_and_add(&st->hits, 1);
	__sync_fetch_and_add(&st->bytes, bytes);
}

SEC("tuner")
int nested(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = ctx->coll_type;
	struct entry *e = bpf_map_lookup_elem(&entries, &key);
	struct choice *c;

	if (!e)
		return NCCLBPF_TUNER_SKIP;
	if (ctx->n_bytes < e->range.lo || ctx->n_bytes > e->range.hi)
		return NCCLBPF_TUNER_SKIP;
	c = &e->pick[ctx->n_nodes > 1 ? 1 : 0];
	account(&e->st, ctx->n_bytes);
	if (c->algo >= 0 && c->algo < NCCLBPF_NUM_ALGOS)
		ctx->algo = c->algo;
	if (c->proto >= 0 && c->proto < NCCLBPF_NUM_PROTOS)
		ctx->proto = c->proto;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
