// EXPECT: pointer comparison prohibited
#include <ncclbpf/policy.h>
struct val { __u64 a, b; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr2 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __type(key, __u64); __type(value, __u64); } h8 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

/* the null check written with the constant register first and a nonzero value */
SEC("tuner")
__attribute__((naked)) int null_cmp_reg_swapped(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile(
	"r1 = 0;"
	"*(u32 *)(r10 - 4) = r1;"
	"r1 = %[arr] ll;"
	"r2 = r10;"
	"r2 += -4;"
	"call 1;"
	"r6 = 1;"
	"if r6 != r0 goto l_%=;"
	"r0 = 0;"
	"exit;"
	"l_%=:"
	"r1 = *(u64 *)(r0 + 0);"
	"r0 = 0;"
	"exit;"
	:: [arr] "i"(&arr) : "memory");
}
