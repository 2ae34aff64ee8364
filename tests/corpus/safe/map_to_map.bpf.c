// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Values flow from one map to another through the stack and helpers. */
#include <ncclbpf/policy.h>

struct stat {
	__u64 count;
	__u64 sum_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, struct stat);
} per_comm SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u64);
} mean_ns SEC(".maps");

SEC("profiler")
int map_to_map(const struct ncclbpf_coll_record *rec)
{
	__u64 comm = rec->comm_id, mean;
	struct stat init = {}, *s;

	s = bpf_map_lookup_elem(&per_comm, &comm);
	if (!s) {
		init.count = 1;
		init.sum_ns = rec->latency_ns;
		bpf_map_update_elem(&per_comm, &comm, &init, BPF_NOEXIST);
		return 0;
	}
	__sync_fetch_and_add(&s->count, 1);
	__sync_fetch_and_add(&s->sum_ns, rec->latency_ns);
	if (s->count == 0)
		return 0;
	mean = s->sum_ns / s->count;
	bpf_map_update_elem(&mean_ns, &comm, &mean, BPF_ANY);
	if (mean > 1000000000ull)
		bpf_map_delete_elem(&per_comm, &comm);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
