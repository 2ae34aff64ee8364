// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Profiler -> map -> tuner: telemetry drives tuning (accepted; a consistency warning is expected). */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_COLLS);
	__type(key, __u32);
	__type(value, __u64);
} last_lat SEC(".maps");

SEC("profiler")
int observe(const struct ncclbpf_coll_record *rec)
{
	__u32 key = rec->coll_type;
	__u64 *v;

	if (key >= NCCLBPF_NUM_COLLS)
		return 0;
	v = bpf_map_lookup_elem(&last_lat, &key);
	if (v)
		*v = rec->latency_ns;
	return 0;
}

SEC("tuner")
int tune(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = ctx->coll_type;
	__u64 *v = bpf_map_lookup_elem(&last_lat, &key);

	if (v && *v > 100000 && ncclbpf_cell_offered(ctx, NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_SIMPLE))
		ctx->algo = NCCLBPF_ALGO_TREE;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
