// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * coll_stats - per-collective counters and latency histograms, exported to
 * Prometheus by `ncclbpf export` without a line of exporter code.
 *
 * A profiler program: it decides nothing.  For every completed collective
 * it counts one call and its bytes under (collective, algorithm, protocol)
 * and adds its latency to a log2 histogram per collective.  The
 * NCCLBPF_EXPORT lines below tell the exporter how to read each map: the
 * key's fields become labels, the value a counter or a histogram.  The
 * counts are rank-local telemetry; ranks of one job are summed by the
 * exporter (no rank label), so label sets stay bounded.
 */
#include <ncclbpf/policy.h>

#define LAT_BUCKETS 40 /* [2^i, 2^(i+1)) ns: up to ~550 s */

struct coll_key {
	__u32 coll;
	__s32 algo;
	__s32 proto;
	__u32 pad;
};

struct coll_val {
	__u64 calls;
	__u64 bytes;
};

struct lat_hist {
	__u64 sum_ns;
	__u64 buckets[LAT_BUCKETS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct coll_key);
	__type(value, __u64);
} coll_calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct coll_key);
	__type(value, __u64);
} coll_bytes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_COLLS);
	__type(key, __u32);
	__type(value, struct lat_hist);
} coll_latency SEC(".maps");

NCCLBPF_EXPORT(coll_calls, "type=counter;name=ncclbpf_policy_collectives_total;"
			   "help=Completed collectives seen by the coll_stats policy.;"
			   "key=collective:coll,algorithm:algo,protocol:proto,_:u32");
NCCLBPF_EXPORT(coll_bytes, "type=counter;name=ncclbpf_policy_collective_bytes_total;"
			   "help=Bytes of completed collectives seen by the coll_stats policy.;"
			   "key=collective:coll,algorithm:algo,protocol:proto,_:u32");
NCCLBPF_EXPORT(coll_latency, "type=histogram;name=ncclbpf_policy_collective_latency_seconds;"
			     "help=Latency of completed collectives, per collective (coll_stats).;"
			     "key=collective:coll");

static __always_inline void add(void *map, const struct coll_key *k, __u64 v)
{
	__u64 *p = bpf_map_lookup_elem(map, k);

	if (p) {
		__sync_fetch_and_add(p, v);
		return;
	}
	/* First of its kind: insert, or add to the entry another thread just made. */
	if (bpf_map_update_elem(map, k, &v, BPF_NOEXIST)) {
		p = bpf_map_lookup_elem(map, k);
		if (p)
			__sync_fetch_and_add(p, v);
	}
}

SEC("profiler")
int coll_stats_record(const struct ncclbpf_coll_record *rec)
{
	struct coll_key k = { .coll = rec->coll_type, .algo = rec->algo, .proto = rec->proto };
	__u32 coll = rec->coll_type, b;
	struct lat_hist *h;

	if (coll >= NCCLBPF_NUM_COLLS)
		return 0;
	add(&coll_calls, &k, 1);
	add(&coll_bytes, &k, rec->n_bytes);
	h = bpf_map_lookup_elem(&coll_latency, &coll);
	if (!h)
		return 0;
	b = ncclbpf_log2(rec->latency_ns);
	if (b >= LAT_BUCKETS)
		b = LAT_BUCKETS - 1;
	__sync_fetch_and_add(&h->sum_ns, rec->latency_ns);
	__sync_fetch_and_add(&h->buckets[b], 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
