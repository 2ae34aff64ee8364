// SPDX-License-Identifier: GPL-2.0
/* Test tuner that reports the net_stats map a net program fills (closed
 * loop through a shared map): slot = collective type (Broadcast 0 ...
 * AllReduce 4) + 4 when n_bytes is 4 (so slots 4..7 are reachable through
 * Reduce..AllReduce), n_channels = 1 + value % 64. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} net_stats SEC(".maps");

SEC("tuner") int probe(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = ctx->coll_type + (ctx->n_bytes == 4 ? 4 : 0);
	__u64 *v;

	if (k > 7)
		return NCCLBPF_TUNER_SKIP;
	v = bpf_map_lookup_elem(&net_stats, &k);
	if (!v)
		return NCCLBPF_TUNER_SKIP;
	ctx->n_channels = 1 + (int)(*v % 64);
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
