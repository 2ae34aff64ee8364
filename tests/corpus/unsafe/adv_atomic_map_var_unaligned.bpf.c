// EXPECT: misaligned atomic operation
#include <ncclbpf/policy.h>

struct val { __u64 a, b; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr2 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __type(key, __u64); __type(value, __u64); } h8 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

SEC("tuner")
__attribute__((naked)) int atomic_map_var_unaligned(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile(
"r6 = *(u32 *)(r1 + 28); r6 &= 2; r1 = 0; *(u32 *)(r10 - 4) = r1;"
"r1 = %[arr] ll; r2 = r10; r2 += -4; call 1;"
"if r0 == 0 goto z_%=;"
"r0 += r6; r1 = 1; lock *(u32 *)(r0 + 0) += r1;"
"z_%=: r0 = 0; exit;"
	:: [arr] "i"(&arr), [arr2] "i"(&arr2), [rb] "i"(&rb), [h8] "i"(&h8) : "memory");
}
