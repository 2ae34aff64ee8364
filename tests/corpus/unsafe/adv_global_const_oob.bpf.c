// EXPECT: map value access out of bounds
#include <ncclbpf/policy.h>

struct val { __u64 a, b; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr2 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __type(key, __u64); __type(value, __u64); } h8 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

__u64 g[2];
SEC("tuner") int global_const_oob(struct ncclbpf_tuner_ctx *ctx)
{ ctx->n_channels = *(volatile __u32 *)((char *)g + 16); return 0; }
