/* Per-CPU hash keyed by (comm, coll, bucket) with a multi-counter struct value built field by field. */
#include <ncclbpf/policy.h>

struct key {
	__u64 comm_id;
	__u32 coll;
	__u32 bucket;
};

struct val {
	__u64 calls;
	__u64 bytes;
	__u64 lat_sum;
	__u32 last_algo;
	__u32 last_proto;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct key);
	__type(value, struct val);
} pc_stats SEC(".maps");

SEC("profiler")
int pc_hash_obs(const struct ncclbpf_coll_record *r)
{
	struct key k;
	struct val *v, nv;

	__builtin_memset(&k, 0, sizeof(k));
	k.comm_id = r->comm_id;
	k.coll = r->coll_type;
	k.bucket = ncclbpf_size_bucket(r->n_bytes);
	v = bpf_map_lookup_elem(&pc_stats, &k);
	if (v) {
		v->calls += 1;
		v->bytes += r->n_bytes;
		v->lat_sum += r->latency_ns;
		v->last_algo = r->algo;
		v->last_proto = r->proto;
		return 0;
	}
	nv.calls = 1;
	nv.bytes = r->n_bytes;
	nv.lat_sum = r->latency_ns;
	nv.last_algo = r->algo;
	nv.last_proto = r->proto;
	bpf_map_update_elem(&pc_stats, &k, &nv, BPF_ANY);
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
