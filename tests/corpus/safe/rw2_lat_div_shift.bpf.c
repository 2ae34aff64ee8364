/* Profiler: latency arithmetic with constant division and shifts into a per-coll array. */
#include <ncclbpf/policy.h>

struct lat {
	__u64 us_sum;
	__u64 bw_mbps;
	__u64 n;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_COLLS);
	__type(key, __u32);
	__type(value, struct lat);
} lat SEC(".maps");

SEC("profiler")
int lat_div(const struct ncclbpf_coll_record *r)
{
	__u32 k = r->coll_type;
	struct lat *l;
	__u64 us = r->latency_ns / 1000;
	__u64 ms = r->latency_ns >> 20;

	l = bpf_map_lookup_elem(&lat, &k);
	if (!l)
		return 0;
	l->us_sum += us + (ms > 1000 ? 1 : 0);
	l->bw_mbps = (r->n_bytes / (us + 1)) >> 1;
	l->n += (r->latency_ns * 3) / 7 > 100;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
