// EXPECT: warn
// The profiler records the fastest cell per (coll, bucket) in a struct-keyed hash; the tuner applies it.
#include <ncclbpf/policy.h>

struct key {
	__u64 comm_id;
	__u32 coll;
	__u32 bucket;
};

struct best {
	__u64 lat;
	__s32 algo;
	__s32 proto;
	__u64 samples;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2048);
	__type(key, struct key);
	__type(value, struct best);
} best_cell SEC(".maps");

SEC("profiler")
int learn(const struct ncclbpf_coll_record *r)
{
	struct key k = {};
	struct best *b;

	k.comm_id = r->comm_id;
	k.coll = r->coll_type;
	k.bucket = ncclbpf_size_bucket(r->n_bytes);
	b = bpf_map_lookup_elem(&best_cell, &k);
	if (!b) {
		struct best nb;

		nb.lat = r->latency_ns;
		nb.algo = r->algo;
		nb.proto = r->proto;
		nb.samples = 1;
		bpf_map_update_elem(&best_cell, &k, &nb, BPF_NOEXIST);
		return 0;
	}
	__sync_fetch_and_add(&b->samples, 1);
	if (r->latency_ns < b->lat) {
		b->lat = r->latency_ns;
		b->algo = r->algo;
		b->proto = r->proto;
	}
	return 0;
}

SEC("tuner")
int apply(struct ncclbpf_tuner_ctx *ctx)
{
	struct key k = {};
	struct best *b;

	k.comm_id = ctx->comm_id;
	k.coll = ctx->coll_type;
	k.bucket = ncclbpf_size_bucket(ctx->n_bytes);
	b = bpf_map_lookup_elem(&best_cell, &k);
	if (!b || b->samples < 8)
		return NCCLBPF_TUNER_SKIP;
	if (b->algo < 0 || b->algo >= NCCLBPF_NUM_ALGOS || b->proto < 0 || b->proto >= NCCLBPF_NUM_PROTOS)
		return NCCLBPF_TUNER_SKIP;
	ctx->algo = b->algo;
	ctx->proto = b->proto;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
