// EXPECT: pointer arithmetic with unbounded scalar
#include <ncclbpf/policy.h>
struct val { __u64 a, b; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr2 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __type(key, __u64); __type(value, __u64); } h8 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

/* int index checked against the upper bound only */
SEC("tuner") int stack_arr_neg_idx(struct ncclbpf_tuner_ctx *ctx)
{
	volatile __u32 a[4] = { 1, 2, 3, 4 };
	int i = ctx->nccl_proto;

	if (i >= 4)
		return 0;
	ctx->n_channels = a[i];
	return 0;
}
