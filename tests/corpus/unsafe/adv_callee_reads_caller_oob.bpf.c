// EXPECT: stack access out of bounds
#include <ncclbpf/policy.h>

struct val { __u64 a, b; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr2 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __type(key, __u64); __type(value, __u64); } h8 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

static __attribute__((noinline)) __u32 rd(__u32 *p, __u32 i) { return p[i & 3]; }
SEC("tuner") int callee_reads_caller_oob(struct ncclbpf_tuner_ctx *ctx)
{ __u32 a[2] = {1, 2}; ctx->n_channels = rd(a, ctx->n_ranks); return 0; }
