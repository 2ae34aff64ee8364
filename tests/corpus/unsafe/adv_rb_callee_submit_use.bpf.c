// EXPECT: use of ring buffer record after submit or discard
#include <ncclbpf/policy.h>
struct val { __u64 a, b; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr2 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __type(key, __u64); __type(value, __u64); } h8 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

static __attribute__((noinline)) int done(__u64 *e)
{
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* the callee releases the record; the caller's copy is dead afterwards */
SEC("profiler") int rb_callee_submit_use(struct ncclbpf_coll_record *rec)
{
	__u64 *e = bpf_ringbuf_reserve(&rb, 8, 0);

	if (!e)
		return 0;
	*e = 1;
	done(e);
	*e = rec->latency_ns;
	return 0;
}
