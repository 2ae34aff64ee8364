/* Test tuner that reports the shared prof_stats map through n_channels:
 * the collective type selects the slot (Broadcast 0, Reduce 1, AllGather 2,
 * ReduceScatter 3, AllReduce 4; n_bytes adds 4 so slot 5 is reachable),
 * and n_channels = 1 + value % 64. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} prof_stats SEC(".maps");

SEC("tuner") int probe(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = ctx->coll_type + (ctx->n_bytes == 4 ? 4 : 0);
	__u64 *v;

	if (k > 7)
		return NCCLBPF_TUNER_SKIP;
	v = bpf_map_lookup_elem(&prof_stats, &k);
	if (!v)
		return NCCLBPF_TUNER_SKIP;
	ctx->n_channels = 1 + (int)(*v % 64);
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
