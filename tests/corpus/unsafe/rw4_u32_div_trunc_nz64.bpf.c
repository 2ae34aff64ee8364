// EXPECT: division by possibly-zero value
// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Near miss of safe/rw4_u32_div_zext: the 64-bit quotient is tested, the
 * truncated one divides.  q != 0 says nothing about (__u32)q (q = 2^32),
 * so the zero extension must not inherit the test.
 */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} bytes_per_us SEC(".maps");

SEC("profiler")
int u32_div_trunc_nz64(struct ncclbpf_coll_record *rec)
{
	__u64 q = rec->latency_ns / 1000;
	__u32 key = 0;
	__u64 *v;

	if (!q)
		return 0;
	v = bpf_map_lookup_elem(&bytes_per_us, &key);
	if (v)
		*v = rec->n_bytes / (__u32)q;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
