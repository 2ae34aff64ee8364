// SPDX-License-Identifier: MIT
/*
 * With cli_shape_b.bpf.c: one map name, two value sizes.  Objects of one
 * policy share maps by name, so the pair must be refused as a whole.
 */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} shape_counts SEC(".maps");

SEC("profiler")
int shape_a(const struct ncclbpf_coll_record *rec)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&shape_counts, &k);

	if (v)
		*v += 1;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
