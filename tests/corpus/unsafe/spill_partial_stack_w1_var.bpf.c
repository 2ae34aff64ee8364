// EXPECT: read of partially overwritten spilled pointer
// A 1-byte store at fp-8 + (n_ranks & 1) over a pointer into the stack spilled
// at fp-8 may land on either side; fp-4..fp-1 keep part of the address on every
// path, and storing them in a map would leak it.
#include <ncclbpf/policy.h>

struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, __u64); } leak SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

SEC("tuner")
__attribute__((naked)) int spill_partial_stack_w1_var(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile(
"r6 = r1; r1 = 0; *(u32 *)(r10 - 24) = r1;"
"r1 = %[leak] ll; r2 = r10; r2 += -24; call 1;"
"if r0 == 0 goto z_%=;"
"r7 = r0; r8 = r10; r8 += -32;"
"*(u64 *)(r10 - 8) = r8;"
"r2 = *(u32 *)(r6 + 28); r2 &= 1; r3 = r10; r3 += -8; r3 += r2; r1 = 0; *(u8 *)(r3 + 0) = r1;"
"r1 = *(u32 *)(r10 - 4);"
"*(u64 *)(r7 + 0) = r1;"
"z_%=: r0 = 0; exit;"
	:: [leak] "i"(&leak) : "memory");
}
