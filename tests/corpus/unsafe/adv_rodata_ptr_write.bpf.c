// EXPECT: write to read-only map (.rodata)
#include <ncclbpf/policy.h>
struct val { __u64 a, b; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr2 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __type(key, __u64); __type(value, __u64); } h8 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

const volatile __u32 table[4] = { 1, 2, 3, 4 };

/* a store into a const global through its address (the compiler drops such C stores) */
SEC("tuner")
__attribute__((naked)) int rodata_ptr_write(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile(
	"r1 = %[table] ll;"
	"r2 = 7;"
	"*(u32 *)(r1 + 4) = r2;"
	"r0 = 0;"
	"exit;"
	:: [table] "i"(&table) : "memory");
}
