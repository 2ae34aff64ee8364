// EXPECT: arithmetic on possibly-null pointer
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} cfg SEC(".maps");

SEC("tuner")
int nullable_arith(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = 0;
	__u32 *v = bpf_map_lookup_elem(&cfg, &key);
	__u32 *hi = v + 1; /* computed before the null check */

	asm volatile("" : "+r"(hi));
	if (!v)
		return 0;
	ctx->n_channels = *hi & 63;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
