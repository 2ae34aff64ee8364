// EXPECT: warn
// The protocol is chosen by a ternary on profiler latencies: the compiler emits a select
// sequence, the chosen value is a constant on each side and the store follows the join.
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_PROTOS);
	__type(key, __u32);
	__type(value, __u64);
} proto_mean SEC(".maps");

SEC("profiler")
int prof(const struct ncclbpf_coll_record *r)
{
	__u32 k;
	__u64 *m;

	if (r->proto < 0 || r->proto >= NCCLBPF_NUM_PROTOS)
		return 0;
	k = r->proto;
	m = bpf_map_lookup_elem(&proto_mean, &k);
	if (m)
		*m = (*m * 7 + r->latency_ns) / 8;
	return 0;
}

SEC("tuner")
int tune(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 best = ~0ull;
	__u32 bp = NCCLBPF_PROTO_SIMPLE;

	for (__u32 k = 0; k < NCCLBPF_NUM_PROTOS; k++) {
		__u64 *m = bpf_map_lookup_elem(&proto_mean, &k);
		__u64 v = m ? *m : ~0ull;

		bp = v < best ? k : bp;
		best = v < best ? v : best;
	}
	ctx->proto = bp;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
