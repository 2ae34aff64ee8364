// EXPECT: loop not proven to terminate
#include <ncclbpf/policy.h>

struct val { __u64 a, b; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr2 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __type(key, __u64); __type(value, __u64); } h8 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

SEC("tuner")
__attribute__((naked)) int mapval_loop_bound(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile(
"r1 = 0; *(u32 *)(r10 - 4) = r1;"
"r1 = %[arr] ll; r2 = r10; r2 += -4; call 1;"
"if r0 == 0 goto z_%=;"
"r1 = *(u64 *)(r0 + 0); r2 = 0;"
"l_%=: r2 += 1; if r2 < r1 goto l_%=;"
"z_%=: r0 = 0; exit;"
	:: [arr] "i"(&arr), [arr2] "i"(&arr2), [rb] "i"(&rb), [h8] "i"(&h8) : "memory");
}
