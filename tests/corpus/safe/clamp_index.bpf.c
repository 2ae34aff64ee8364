// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Clamped array indices into a map value and a const global table. */
#include <ncclbpf/policy.h>

static const volatile __s32 proto_by_coll[NCCLBPF_NUM_COLLS] = { 2, 2, 1, 1, 0 };

struct chan_table {
	__u32 channels[32];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_COLLS);
	__type(key, __u32);
	__type(value, struct chan_table);
} chan_cfg SEC(".maps");

SEC("tuner")
int clamp_index(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 coll = ctx->coll_type, b;
	struct chan_table *t;

	if (coll >= NCCLBPF_NUM_COLLS)
		return NCCLBPF_TUNER_SKIP;
	ctx->proto = proto_by_coll[coll];
	t = bpf_map_lookup_elem(&chan_cfg, &coll);
	if (!t)
		return NCCLBPF_TUNER_APPLY;
	b = ncclbpf_size_bucket(ctx->n_bytes);
	b &= 31;
	if (t->channels[b] >= 1 && t->channels[b] <= 64)
		ctx->n_channels = t->channels[b];
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
