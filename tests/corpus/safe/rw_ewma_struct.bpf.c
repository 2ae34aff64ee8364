/* Profiler keeps an EWMA per (algo, proto) cell; tuner skips (only reads its own config). */
#include <ncclbpf/policy.h>

struct cell_stat {
	__u64 ewma_ns;
	__u64 samples;
	__u64 last_seq;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_ALGOS * NCCLBPF_NUM_PROTOS);
	__type(key, __u32);
	__type(value, struct cell_stat);
} cells SEC(".maps");

SEC("profiler")
int ewma_struct(const struct ncclbpf_coll_record *r)
{
	__u32 key;
	struct cell_stat *s;

	if (r->algo < 0 || r->algo >= NCCLBPF_NUM_ALGOS || r->proto < 0 ||
	    r->proto >= NCCLBPF_NUM_PROTOS)
		return 0;
	key = r->algo * NCCLBPF_NUM_PROTOS + r->proto;
	s = bpf_map_lookup_elem(&cells, &key);
	if (!s)
		return 0;
	if (s->samples == 0)
		s->ewma_ns = r->latency_ns;
	else
		s->ewma_ns = (s->ewma_ns * 7 + r->latency_ns) / 8;
	s->samples++;
	s->last_seq = r->seq;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
