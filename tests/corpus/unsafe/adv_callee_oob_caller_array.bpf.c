// EXPECT: stack access out of bounds
#include <ncclbpf/policy.h>
struct val { __u64 a, b; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr2 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __type(key, __u64); __type(value, __u64); } h8 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

static __attribute__((noinline)) __u32 sum(__u32 *a, __u32 n)
{
	__u32 s = 0;

	for (__u32 i = 0; i < n && i < 8; i++)
		s += a[i];
	return s;
}

/* the callee may read 8 entries of a 4-entry caller array */
SEC("tuner") int callee_oob_caller_array(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 a[4] = { 1, 2, 3, 4 };

	a[ctx->n_nodes & 3] = 9;

	ctx->n_channels = sum(a, ctx->n_ranks);
	return 0;
}
