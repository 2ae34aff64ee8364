// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Helper calls with typed arguments: time, random numbers, printk, slot id. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} samples SEC(".maps");

SEC("profiler")
int helpers(const struct ncclbpf_coll_record *rec)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 r = bpf_get_prandom_u32();
	__u32 key = r & 3;
	__u64 *v;

	if (rec->latency_ns > 1000000)
		bpf_printk("slow collective %llu ns on rank %u", rec->latency_ns, rec->rank);
	v = bpf_map_lookup_elem(&samples, &key);
	if (v)
		*v += now - rec->latency_ns + bpf_get_smp_processor_id();
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
