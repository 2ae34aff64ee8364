// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Reload target for test_prof_reload: a small profiler program (quick to
 * load, so reloads come fast) counting its runs in prof_stats[0]. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} prof_stats SEC(".maps");

SEC("profiler") int on_coll_fast(struct ncclbpf_coll_record *r)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&prof_stats, &k);

	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
