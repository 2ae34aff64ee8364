/* A hash map keyed by a struct (comm, coll, bucket), updated from the profiler, read by the tuner. */
#include <ncclbpf/policy.h>

struct key {
	__u64 comm_id;
	__u32 coll;
	__u32 bucket;
};

struct stat {
	__u64 count;
	__u64 sum_ns;
	__u64 min_ns;
	__u64 max_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct key);
	__type(value, struct stat);
} stats SEC(".maps");

SEC("profiler")
int struct_key_obs(const struct ncclbpf_coll_record *r)
{
	struct key k = {
		.comm_id = r->comm_id,
		.coll = r->coll_type,
		.bucket = ncclbpf_size_bucket(r->n_bytes),
	};
	struct stat *s = bpf_map_lookup_elem(&stats, &k);

	if (!s) {
		struct stat init = { 1, r->latency_ns, r->latency_ns, r->latency_ns };

		bpf_map_update_elem(&stats, &k, &init, BPF_NOEXIST);
		return 0;
	}
	s->count++;
	s->sum_ns += r->latency_ns;
	if (r->latency_ns < s->min_ns)
		s->min_ns = r->latency_ns;
	if (r->latency_ns > s->max_ns)
		s->max_ns = r->latency_ns;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
