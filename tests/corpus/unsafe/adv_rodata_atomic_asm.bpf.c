// EXPECT: write to read-only map (.rodata)
#include <ncclbpf/policy.h>
struct val { __u64 a, b; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr2 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __type(key, __u64); __type(value, __u64); } h8 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

const volatile __u64 limit = 5;

/* an atomic add on a const global */
SEC("tuner")
__attribute__((naked)) int rodata_atomic_asm(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile(
	"r1 = %[limit] ll;"
	"r2 = 1;"
	"lock *(u64 *)(r1 + 0) += r2;"
	"r0 = 0;"
	"exit;"
	:: [limit] "i"(&limit) : "memory");
}
