// EXPECT: clean
// Inputs and a config map only the operator writes: every rank decides alike.
#include <ncclbpf/policy.h>

struct rule {
	__u64 max_bytes;
	__s32 algo, proto, channels, pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_COLLS);
	__type(key, __u32);
	__type(value, struct rule);
} rules SEC(".maps");

const volatile __u32 min_ranks = 2;

SEC("tuner")
int config_only(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = ctx->coll_type;
	struct rule *r;

	if (ctx->n_ranks < min_ranks)
		return NCCLBPF_TUNER_SKIP;
	r = bpf_map_lookup_elem(&rules, &key);
	if (!r || ctx->n_bytes > r->max_bytes)
		return NCCLBPF_TUNER_APPLY;
	if (r->algo >= 0 && r->algo < NCCLBPF_NUM_ALGOS && r->proto >= 0 &&
	    r->proto < NCCLBPF_NUM_PROTOS && ncclbpf_cell_offered(ctx, r->algo, r->proto)) {
		ctx->algo = r->algo;
		ctx->proto = r->proto;
	}
	if (r->channels >= 1 && r->channels <= 64)
		ctx->n_channels = r->channels;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
