/* LRU hash of comms seen; update/delete helpers; per-comm profiler state with a struct value. */
#include <ncclbpf/policy.h>

struct comm_state {
	__u64 last_seq;
	__u64 ops;
	__u64 bytes;
	__u32 rank;
	__u32 flags;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, struct comm_state);
} comms SEC(".maps");

SEC("profiler")
int lru_seen(const struct ncclbpf_coll_record *r)
{
	__u64 id = r->comm_id;
	struct comm_state *s, fresh = {};

	s = bpf_map_lookup_elem(&comms, &id);
	if (!s) {
		fresh.last_seq = r->seq;
		fresh.ops = 1;
		fresh.bytes = r->n_bytes;
		fresh.rank = r->rank;
		bpf_map_update_elem(&comms, &id, &fresh, BPF_ANY);
		return 0;
	}
	if (r->seq < s->last_seq) {
		bpf_map_delete_elem(&comms, &id);
		return 0;
	}
	s->last_seq = r->seq;
	s->ops += 1;
	s->bytes += r->n_bytes;
	s->flags |= r->gpu_timed ? 1 : 2;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
