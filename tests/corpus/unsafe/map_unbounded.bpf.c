// EXPECT: unbounded variable offset into map value
#include <ncclbpf/policy.h>

struct table {
	__u32 ch[8];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct table);
} cfg SEC(".maps");

SEC("tuner")
int map_unbounded(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = 0;
	__u64 i = ctx->n_bytes; /* never checked */
	struct table *t = bpf_map_lookup_elem(&cfg, &key);

	if (!t)
		return 0;
	ctx->n_channels = t->ch[i];
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
