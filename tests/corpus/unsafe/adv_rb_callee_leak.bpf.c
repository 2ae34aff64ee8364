// EXPECT: ring buffer reservation leaked
#include <ncclbpf/policy.h>
struct val { __u64 a, b; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr2 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __type(key, __u64); __type(value, __u64); } h8 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

static __attribute__((noinline)) int grab(void)
{
	__u64 *e = bpf_ringbuf_reserve(&rb, 8, 0);

	if (!e)
		return 0;
	*e = 1;
	return 1;
}

/* the callee reserves and returns without releasing */
SEC("profiler") int rb_callee_leak(struct ncclbpf_coll_record *rec)
{
	grab();
	return 0;
}
