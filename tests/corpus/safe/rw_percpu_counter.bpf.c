/* A per-CPU array counter and a prandom sample in the profiler. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} samples SEC(".maps");

SEC("profiler")
int percpu_counter(const struct ncclbpf_coll_record *r)
{
	__u32 zero = 0;
	__u64 *v;

	if (bpf_get_prandom_u32() % 100 >= 10)
		return 0;
	v = bpf_map_lookup_elem(&samples, &zero);
	if (v)
		*v += 1;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
