// EXPECT: access through possibly-null pointer
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u32);
} cfg SEC(".maps");

SEC("tuner")
int null_deref(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = 0;
	__u32 *v = bpf_map_lookup_elem(&cfg, &key);

	ctx->n_channels = *v; /* no null check */
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
