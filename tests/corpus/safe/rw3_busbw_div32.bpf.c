/* busbw with 32-bit divides by n_ranks and a modulo for the rank's slot.  The time
 * is kept in a __u64: a __u32 truncation tested for zero on a copy is not linked
 * to the divisor (see docs/verifier.md, known limits). */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u32);
} per_slot SEC(".maps");

SEC("profiler")
int busbw32(struct ncclbpf_coll_record *rec)
{
	__u32 n = rec->n_ranks;
	__u32 kib = (__u32)(rec->n_bytes >> 10);
	__u64 us = rec->latency_ns / 1000;
	__u32 slot, *v;

	if (n <= 1 || us == 0)
		return 0;
	slot = rec->rank % n % 8;
	v = bpf_map_lookup_elem(&per_slot, &slot);
	if (v)
		*v = (__u32)(kib / us) * (n - 1) / n;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
