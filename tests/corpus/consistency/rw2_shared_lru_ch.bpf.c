// EXPECT: warn
// Profiler stores the last channel count per comm in an LRU hash; tuner reuses it, clamped.
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u32);
} last_ch SEC(".maps");

SEC("profiler")
int prof(const struct ncclbpf_coll_record *r)
{
	__u64 id = r->comm_id;
	__u32 ch = r->n_channels;

	bpf_map_update_elem(&last_ch, &id, &ch, BPF_ANY);
	return 0;
}

SEC("tuner")
int tune(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 id = ctx->comm_id;
	__u32 *v = bpf_map_lookup_elem(&last_ch, &id);
	__u32 c;

	if (!v)
		return NCCLBPF_TUNER_SKIP;
	c = *v;
	ctx->n_channels = c < 1 ? 1 : c > 32 ? 32 : c;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
