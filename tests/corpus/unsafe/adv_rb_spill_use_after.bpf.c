// EXPECT: use of ring buffer record after submit or discard
#include <ncclbpf/policy.h>

struct val { __u64 a, b; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr2 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __type(key, __u64); __type(value, __u64); } h8 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

SEC("tuner")
__attribute__((naked)) int rb_spill_use_after(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile(
"r1 = %[rb] ll; r2 = 8; r3 = 0; call 131;"
"if r0 == 0 goto z_%=;"
"*(u64 *)(r10 - 8) = r0; r1 = r0; r2 = 0; call 132;"
"r1 = *(u64 *)(r10 - 8); r2 = 0; *(u64 *)(r1 + 0) = r2;"
"z_%=: r0 = 0; exit;"
	:: [arr] "i"(&arr), [arr2] "i"(&arr2), [rb] "i"(&rb), [h8] "i"(&h8) : "memory");
}
