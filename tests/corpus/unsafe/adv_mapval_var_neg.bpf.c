// EXPECT: unbounded variable offset into map value
#include <ncclbpf/policy.h>
struct val { __u64 a, b; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr2 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __type(key, __u64); __type(value, __u64); } h8 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

/* a signed index checked only from above: a negative value reads before the value */
SEC("tuner") int mapval_var_neg(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 0;
	int i = ctx->nccl_algo;
	struct val *v = bpf_map_lookup_elem(&arr, &k);

	if (!v || i > 1)
		return 0;
	ctx->n_channels = (__u32)((__u64 *)v)[i];
	return 0;
}
