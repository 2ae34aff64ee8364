/* A hash map keyed by comm_id holding a per-communicator override. */
#include <ncclbpf/policy.h>

struct override {
	__s32 algo;
	__s32 proto;
	__s32 n_channels;
	__u32 hits;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct override);
} overrides SEC(".maps");

SEC("tuner")
int hash_comm(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 id = ctx->comm_id;
	struct override *o = bpf_map_lookup_elem(&overrides, &id);

	if (!o)
		return NCCLBPF_TUNER_SKIP;
	ctx->algo = o->algo;
	ctx->proto = o->proto;
	ctx->n_channels = o->n_channels;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
