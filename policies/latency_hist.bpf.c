// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * latency_hist - log2 latency histograms per collective and size bucket.
 *
 * A profiler program: it decides nothing, it only counts.  For every
 * completed collective it adds one to
 *
 *     latency_hist[(coll * NCCLBPF_SIZE_BUCKETS + size_bucket) * LAT_BUCKETS
 *                  + log2(latency_ns)]
 *
 * and adds the latency to latency_sum[coll * NCCLBPF_SIZE_BUCKETS +
 * size_bucket], so an operator tool (ncclbpf map dump, the exporter) can
 * turn the counts into quantiles and a mean without stopping the job.
 * size_bucket is ncclbpf_size_bucket(n_bytes) (log2 of the size); latency
 * bucket b counts latencies in [2^b, 2^(b+1)) ns, the last one everything
 * from 2^31 ns (about 2 s) up.
 *
 * Profiler callbacks arrive concurrently from NCCL's proxy threads, so the
 * counters are bumped with atomic adds; the histogram is rank-local
 * telemetry and no tuner should decide on it directly (see
 * adaptive_channels for the rank-consistent way to use such data).
 */
#include <ncclbpf/policy.h>

#define LAT_BUCKETS 32
#define N_KEYS (NCCLBPF_NUM_COLLS * NCCLBPF_SIZE_BUCKETS)

struct lat_sum {
	__u64 count;
	__u64 sum_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, N_KEYS * LAT_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} latency_hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, N_KEYS);
	__type(key, __u32);
	__type(value, struct lat_sum);
} latency_sum SEC(".maps");

SEC("profiler")
int latency_hist_record(const struct ncclbpf_coll_record *rec)
{
	__u64 lat = rec->latency_ns;
	__u32 coll = rec->coll_type;
	__u32 key, lb;
	struct lat_sum *s;
	__u64 *cnt;

	if (coll >= NCCLBPF_NUM_COLLS)
		return 0;
	key = coll * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(rec->n_bytes);

	s = bpf_map_lookup_elem(&latency_sum, &key);
	if (s) {
		__sync_fetch_and_add(&s->count, 1);
		__sync_fetch_and_add(&s->sum_ns, lat);
	}

	lb = ncclbpf_log2(lat);
	if (lb >= LAT_BUCKETS)
		lb = LAT_BUCKETS - 1;
	key = key * LAT_BUCKETS + lb;
	cnt = bpf_map_lookup_elem(&latency_hist, &key);
	if (cnt)
		__sync_fetch_and_add(cnt, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
