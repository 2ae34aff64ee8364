/* Test profiler program: keeps [0] completed collectives, [1] last latency (ns),
 * [2] last gpu_timed, [3] last n_bytes, [4] last algo, [5] last rank in a
 * map the probe tuner (t_probe) shares by name. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} prof_stats SEC(".maps");

static __always_inline void put(__u32 k, __u64 v)
{
	__u64 *p = bpf_map_lookup_elem(&prof_stats, &k);

	if (p)
		*p = v;
}

SEC("profiler") int on_coll(struct ncclbpf_coll_record *r)
{
	__u32 k = 0;
	__u64 *cnt = bpf_map_lookup_elem(&prof_stats, &k);

	if (cnt)
		__sync_fetch_and_add(cnt, 1);
	put(1, r->latency_ns);
	put(2, r->gpu_timed);
	put(3, r->n_bytes);
	put(4, (__u64)(__s64)r->algo);
	put(5, r->rank);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
