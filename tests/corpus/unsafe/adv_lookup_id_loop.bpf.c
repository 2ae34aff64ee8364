// EXPECT: access through possibly-null pointer
#include <ncclbpf/policy.h>

struct val { __u64 a, b; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr2 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __type(key, __u64); __type(value, __u64); } h8 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

/* the same call instruction runs twice: the first result must not share the second's null check */
SEC("tuner")
__attribute__((naked)) int lookup_id_loop(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile(
	"r9 = 2;"
	"r8 = 0;"
	"*(u32 *)(r10 - 4) = r8;"
	"l_%=:"
	"r1 = %[arr] ll;"
	"r2 = r10;"
	"r2 += -4;"
	"call 1;"
	"if r9 != 2 goto n_%=;"
	"r8 = r0;"
	"n_%=:"
	"r9 += -1;"
	"if r9 != 0 goto l_%=;"
	"if r0 == 0 goto e_%=;"
	"r1 = *(u64 *)(r8 + 0);"
	"e_%=:"
	"r0 = 0;"
	"exit;"
	:: [arr] "i"(&arr) : "memory");
}
