// EXPECT: warn
// Profiler keeps per-CPU latency sums per protocol; tuner picks the protocol with the lowest mean.
#include <ncclbpf/policy.h>

struct acc {
	__u64 sum;
	__u64 n;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_PROTOS);
	__type(key, __u32);
	__type(value, struct acc);
} proto_lat SEC(".maps");

SEC("profiler")
int prof(const struct ncclbpf_coll_record *r)
{
	__u32 k;
	struct acc *a;

	if (r->proto < 0 || r->proto >= NCCLBPF_NUM_PROTOS)
		return 0;
	k = r->proto;
	a = bpf_map_lookup_elem(&proto_lat, &k);
	if (!a)
		return 0;
	a->sum += r->latency_ns;
	a->n++;
	return 0;
}

SEC("tuner")
int tune(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 best = ~0ull;
	int bp = -1;

	for (__u32 k = 0; k < NCCLBPF_NUM_PROTOS; k++) {
		struct acc *a = bpf_map_lookup_elem(&proto_lat, &k);
		__u64 mean;

		if (!a || a->n == 0)
			continue;
		mean = a->sum / a->n;
		if (mean < best) {
			best = mean;
			bp = k;
		}
	}
	if (bp < 0)
		return NCCLBPF_TUNER_SKIP;
	ctx->proto = bp;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
