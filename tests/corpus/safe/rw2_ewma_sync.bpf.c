/* EWMA of latency per bucket with __sync_fetch_and_add for the sample count. */
#include <ncclbpf/policy.h>

struct ew {
	__u64 avg;
	__u64 n;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_SIZE_BUCKETS);
	__type(key, __u32);
	__type(value, struct ew);
} ewma SEC(".maps");

SEC("profiler")
int ewma_sync(const struct ncclbpf_coll_record *r)
{
	__u32 b = ncclbpf_size_bucket(r->n_bytes);
	struct ew *e = bpf_map_lookup_elem(&ewma, &b);
	__u64 old;

	if (!e)
		return 0;
	old = __sync_fetch_and_add(&e->n, 1);
	if (old == 0)
		e->avg = r->latency_ns;
	else
		e->avg = (e->avg * 7 + r->latency_ns) >> 3;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
