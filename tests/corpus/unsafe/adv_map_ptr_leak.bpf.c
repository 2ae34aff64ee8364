// EXPECT: prohibited pointer arithmetic
#include <ncclbpf/policy.h>

struct val { __u64 a, b; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr2 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __type(key, __u64); __type(value, __u64); } h8 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

SEC("tuner")
__attribute__((naked)) int map_ptr_leak(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile(
"r0 = %[arr] ll; r0 &= 1; exit;"
	:: [arr] "i"(&arr), [arr2] "i"(&arr2), [rb] "i"(&rb), [h8] "i"(&h8) : "memory");
}
