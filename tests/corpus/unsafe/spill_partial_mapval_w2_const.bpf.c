// EXPECT: read of partially overwritten spilled pointer
// A 2-byte store at fp-8 over a map value pointer spilled at fp-8
// leaves fp-6..fp-1 holding the rest of the address; reading the upper
// half back and storing it in a map would leak it.
#include <ncclbpf/policy.h>

struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, __u64); } leak SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

SEC("tuner")
__attribute__((naked)) int spill_partial_mapval_w2_const(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile(
"r6 = r1; r1 = 0; *(u32 *)(r10 - 24) = r1;"
"r1 = %[leak] ll; r2 = r10; r2 += -24; call 1;"
"if r0 == 0 goto z_%=;"
"r7 = r0; r8 = r7;"
"*(u64 *)(r10 - 8) = r8;"
"r1 = 0; *(u16 *)(r10 - 8) = r1;"
"r1 = *(u32 *)(r10 - 4);"
"*(u64 *)(r7 + 0) = r1;"
"z_%=: r0 = 0; exit;"
	:: [leak] "i"(&leak) : "memory");
}
