/* Tuner reads a map written only by user space; profiler counts decisions it observed. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} thresholds SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_ALGOS);
	__type(key, __u32);
	__type(value, __u64);
} algo_counts SEC(".maps");

SEC("tuner")
int two_maps_tune(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 c = ctx->coll_type;
	__u64 *t = bpf_map_lookup_elem(&thresholds, &c);
	__u64 limit = t ? *t : 65536;

	ctx->algo = ctx->n_bytes < limit ? NCCLBPF_ALGO_TREE : NCCLBPF_ALGO_RING;
	return 0;
}

SEC("profiler")
int two_maps_obs(const struct ncclbpf_coll_record *r)
{
	__u32 a = r->algo;
	__u64 *n;

	if (a >= NCCLBPF_NUM_ALGOS)
		return 0;
	n = bpf_map_lookup_elem(&algo_counts, &a);
	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
