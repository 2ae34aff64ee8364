// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Many live pointers across helper calls: the compiler spills them to the stack and back. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} a SEC(".maps");

SEC("profiler")
int spill_pointers(const struct ncclbpf_coll_record *rec)
{
	__u32 k0 = 0, k1 = 1, k2 = 2, k3 = 3;
	__u64 *p0 = bpf_map_lookup_elem(&a, &k0);
	__u64 *p1 = bpf_map_lookup_elem(&a, &k1);
	__u64 *p2 = bpf_map_lookup_elem(&a, &k2);
	__u64 *p3 = bpf_map_lookup_elem(&a, &k3);
	__u64 t = bpf_ktime_get_ns();

	if (!p0 || !p1 || !p2 || !p3)
		return 0;
	*p0 += rec->latency_ns;
	*p1 += t;
	*p2 += rec->n_bytes;
	*p3 += *p0 + *p1;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
