/*
 * A slot that held a spilled map value pointer is overwritten whole and
 * reused as a counter that is stored into the map: data, not an address.
 */
#include <ncclbpf/policy.h>

struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, __u64); } cnt SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

SEC("tuner")
__attribute__((naked)) int spill_ptr_overwrite(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile(
"r6 = r1; r1 = 0; *(u32 *)(r10 - 24) = r1;"
"r1 = %[cnt] ll; r2 = r10; r2 += -24; call 1;"
"if r0 == 0 goto z_%=;"
"*(u64 *)(r10 - 8) = r0;"
"r1 = *(u32 *)(r6 + 28); *(u32 *)(r10 - 8) = r1;"
"r1 = 0; *(u32 *)(r10 - 4) = r1;"
"r1 = *(u64 *)(r10 - 8); r1 += 1;"
"*(u64 *)(r0 + 0) = r1;"
"z_%=: r0 = 0; exit;"
	:: [cnt] "i"(&cnt) : "memory");
}
