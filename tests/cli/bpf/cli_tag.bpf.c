// SPDX-License-Identifier: MIT
/*
 * Two socket-filter programs sharing a map, loadable by the kernel too:
 * test_prog_tag compares our program tags with the kernel's.
 */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} tag_counts SEC(".maps");

SEC("socket")
int tag_one(void *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&tag_counts, &k);

	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

SEC("socket")
int tag_two(void *ctx)
{
	__u32 k = 1;
	__u64 *v = bpf_map_lookup_elem(&tag_counts, &k);

	if (v)
		__sync_fetch_and_add(v, 2);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
