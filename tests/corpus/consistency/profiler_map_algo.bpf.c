// EXPECT: warn
// A decision from a map the profiler writes with this rank's measurements.
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s32);
} best_algo SEC(".maps");

SEC("profiler")
int observe(const struct ncclbpf_coll_record *rec)
{
	__u32 key = 0;
	__s32 *v = bpf_map_lookup_elem(&best_algo, &key);

	if (v && rec->latency_ns < 10000)
		*v = rec->algo;
	return 0;
}

SEC("tuner")
int tune(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = 0;
	__s32 *v = bpf_map_lookup_elem(&best_algo, &key);

	if (v)
		ctx->algo = *v;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
