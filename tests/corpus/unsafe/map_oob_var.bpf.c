// EXPECT: map value access out of bounds
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
int map_oob_var(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = 0, i = ctx->n_ranks;
	struct table *t = bpf_map_lookup_elem(&cfg, &key);

	if (!t || i > 8) /* off by one: 8 is out of range */
		return 0;
	ctx->n_channels = t->ch[i];
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
