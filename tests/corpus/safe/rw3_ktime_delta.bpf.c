/* Profiler: ktime deltas between completions, kept per communicator in a hash. */
#include <ncclbpf/policy.h>

struct gap {
	__u64 last_ns;
	__u64 max_gap_ns;
	__u64 sum_gap_ns;
	__u64 n;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, struct gap);
} gaps SEC(".maps");

SEC("profiler")
int gap_prof(struct ncclbpf_coll_record *rec)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 key = rec->comm_id;
	struct gap *g = bpf_map_lookup_elem(&gaps, &key);

	if (!g) {
		struct gap init = { .last_ns = now };

		bpf_map_update_elem(&gaps, &key, &init, BPF_ANY);
		return 0;
	}
	if (now > g->last_ns) {
		__u64 d = now - g->last_ns;

		if (d > g->max_gap_ns)
			g->max_gap_ns = d;
		g->sum_gap_ns += d;
		g->n++;
	}
	g->last_ns = now;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
