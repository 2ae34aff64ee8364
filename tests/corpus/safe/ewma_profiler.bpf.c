// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A profiler keeping an EWMA and a histogram per (collective, size bucket):
 * division by constants, clamped histogram index, a zero-initialised value
 * inserted with update, per-thread counters. */
#include <ncclbpf/policy.h>

#define NBINS 16

struct stats {
	__u64 ewma_ns;
	__u64 count;
	__u64 hist[NBINS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} events SEC(".maps");

SEC("profiler")
int ewma_profiler(const struct ncclbpf_coll_record *rec)
{
	__u32 key = rec->coll_type * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(rec->n_bytes);
	__u32 zero = 0, bin;
	__u64 lat = rec->latency_ns, *ev;
	struct stats *s;

	ev = bpf_map_lookup_elem(&events, &zero);
	if (ev)
		(*ev)++;
	s = bpf_map_lookup_elem(&stats, &key);
	if (!s) {
		struct stats init = {};

		init.ewma_ns = lat;
		init.count = 1;
		bpf_map_update_elem(&stats, &key, &init, BPF_NOEXIST);
		return 0;
	}
	s->ewma_ns = (s->ewma_ns * 7 + lat) / 8;
	s->count++;
	bin = ncclbpf_log2(lat / 1000 + 1);
	if (bin >= NBINS)
		bin = NBINS - 1;
	s->hist[bin]++;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
