/* A config array map indexed by coll_type; value is a struct of several fields. */
#include <ncclbpf/policy.h>

struct coll_cfg {
	__u64 small_max;
	__s32 small_algo;
	__s32 small_proto;
	__s32 big_algo;
	__s32 big_proto;
	__s32 channels;
	__u32 enabled;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_COLLS);
	__type(key, __u32);
	__type(value, struct coll_cfg);
} coll_cfg SEC(".maps");

SEC("tuner")
int cfg_by_coll(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = ctx->coll_type;
	struct coll_cfg *c = bpf_map_lookup_elem(&coll_cfg, &key);

	if (!c || !c->enabled)
		return NCCLBPF_TUNER_SKIP;
	if (ctx->n_bytes <= c->small_max) {
		ctx->algo = c->small_algo;
		ctx->proto = c->small_proto;
	} else {
		ctx->algo = c->big_algo;
		ctx->proto = c->big_proto;
	}
	if (c->channels > 0 && c->channels <= 64)
		ctx->n_channels = c->channels;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
