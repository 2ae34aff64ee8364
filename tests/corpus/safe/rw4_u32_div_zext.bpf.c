// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Bytes per microsecond with the time narrowed to a __u32: clang tests one
 * zero extension of the quotient (r1 = r7; r1 <<= 32; r1 >>= 32) for zero
 * and divides through another (r7 <<= 32; r7 >>= 32) after the first copy
 * is overwritten.  The two extensions of one value are linked, so the test
 * proves the divisor nonzero.
 */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} bytes_per_us SEC(".maps");

SEC("profiler")
int u32_div_zext(struct ncclbpf_coll_record *rec)
{
	__u32 us = rec->latency_ns / 1000, key = 0;
	__u64 *v;

	if (!us)
		return 0;
	v = bpf_map_lookup_elem(&bytes_per_us, &key);
	if (v)
		*v = rec->n_bytes / us;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
