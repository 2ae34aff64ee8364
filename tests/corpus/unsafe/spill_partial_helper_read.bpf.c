// EXPECT: read of partially overwritten spilled pointer
// The rest of a partly overwritten context pointer handed to a helper as
// map value bytes: bpf_map_update_elem would copy the address into the map.
#include <ncclbpf/policy.h>

struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, __u64); } leak SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

SEC("tuner")
__attribute__((naked)) int spill_partial_helper_read(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile(
"r2 = 0; *(u32 *)(r10 - 16) = r2;"
"*(u64 *)(r10 - 8) = r1;"
"r2 = 0; *(u16 *)(r10 - 8) = r2;"
"r1 = %[leak] ll; r2 = r10; r2 += -16; r3 = r10; r3 += -8; r4 = 0; call 2;"
"r0 = 0; exit;"
	:: [leak] "i"(&leak) : "memory");
}
