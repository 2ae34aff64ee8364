// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Reload target for test_prof_reload: a verified but slow profiler
 * program (a constant-bound loop of 120000 steps: milliseconds per record
 * in the interpreter) counting its runs in prof_stats[0]. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} prof_stats SEC(".maps");

SEC("profiler") int on_coll_slow(struct ncclbpf_coll_record *r)
{
	__u64 h = r->seq;
	__u32 k = 0;
	__u64 *v;

	for (__u32 i = 0; i < 120000; i++) {
		h = h * 31 + i;
		asm volatile("" : "+r"(h)); /* keeps the loop from being folded */
	}
	v = bpf_map_lookup_elem(&prof_stats, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
	k = 1;
	v = bpf_map_lookup_elem(&prof_stats, &k);
	if (v)
		*v = h;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
