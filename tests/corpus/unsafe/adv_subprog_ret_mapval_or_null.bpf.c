// EXPECT: access through possibly-null pointer
#include <ncclbpf/policy.h>

struct val { __u64 a, b; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr2 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __type(key, __u64); __type(value, __u64); } h8 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

static __attribute__((noinline)) struct val *get(__u32 k) { return bpf_map_lookup_elem(&arr, &k); }
SEC("tuner") int subprog_ret_mapval_or_null(struct ncclbpf_tuner_ctx *ctx)
{ struct val *v = get(ctx->n_ranks); ctx->n_channels = (__u32)v->a; return 0; }
