/* Latency histogram per (coll, bucket) with __sync_fetch_and_add on array values. */
#include <ncclbpf/policy.h>

#define LAT_BUCKETS 24

struct hist {
	__u64 slots[LAT_BUCKETS];
	__u64 total;
	__u64 sum_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_COLLS);
	__type(key, __u32);
	__type(value, struct hist);
} lat_hist SEC(".maps");

SEC("profiler")
int hist_atomic(const struct ncclbpf_coll_record *r)
{
	__u32 key = r->coll_type;
	__u64 us = r->latency_ns / 1000;
	__u32 slot = 0;
	struct hist *h;

	h = bpf_map_lookup_elem(&lat_hist, &key);
	if (!h)
		return 0;
	while (us > 1 && slot < LAT_BUCKETS - 1) {
		us >>= 1;
		slot++;
	}
	__sync_fetch_and_add(&h->slots[slot], 1);
	__sync_fetch_and_add(&h->total, 1);
	__sync_fetch_and_add(&h->sum_ns, r->latency_ns);
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
