// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Test profiler program that is slow on purpose (a few hundred map
 * operations per record) and counts its runs in prof_stats[0], the map
 * t_probe_wide reads back. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} prof_stats SEC(".maps");

SEC("profiler") int on_coll_slow(struct ncclbpf_coll_record *r)
{
	__u64 h = r->seq ^ r->n_bytes;
	__u32 k = 0;
	__u64 *cnt;

	for (int i = 0; i < 64; i++) {
		__u32 j = 1 + (i & 3);
		__u64 *v = bpf_map_lookup_elem(&prof_stats, &j);

		h = h * 31 + i;
		if (v)
			*v ^= h;
	}
	cnt = bpf_map_lookup_elem(&prof_stats, &k);
	if (cnt)
		__sync_fetch_and_add(cnt, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
