// EXPECT: pointer comparison prohibited
#include <ncclbpf/policy.h>
struct val { __u64 a, b; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr2 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __type(key, __u64); __type(value, __u64); } h8 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

/* two possibly-null results compared with each other: equal proves nothing */
SEC("tuner")
__attribute__((naked)) int null_check_two_ptrs(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile(
	"r1 = 0;"
	"*(u32 *)(r10 - 4) = r1;"
	"r1 = %[arr] ll;"
	"r2 = r10;"
	"r2 += -4;"
	"call 1;"
	"r6 = r0;"
	"r1 = %[arr2] ll;"
	"r2 = r10;"
	"r2 += -4;"
	"call 1;"
	"if r0 == 0 goto z_%=;"
	"if r6 != r0 goto z_%=;"
	"r1 = *(u64 *)(r6 + 0);"
	"z_%=:"
	"r0 = 0;"
	"exit;"
	:: [arr] "i"(&arr), [arr2] "i"(&arr2) : "memory");
}
