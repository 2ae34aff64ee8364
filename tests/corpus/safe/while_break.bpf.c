// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A search loop with a constant bound and an early break; the index is used afterwards. */
#include <ncclbpf/policy.h>

struct thresholds {
	__u64 bytes[16];
	__s32 algo[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct thresholds);
} table SEC(".maps");

SEC("tuner")
int while_break(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = 0, i = 0;
	struct thresholds *t = bpf_map_lookup_elem(&table, &key);

	if (!t)
		return NCCLBPF_TUNER_APPLY;
	while (i < 16) {
		if (ctx->n_bytes <= t->bytes[i])
			break;
		i++;
	}
	if (i < 16 && t->algo[i] >= 0 && t->algo[i] < NCCLBPF_NUM_ALGOS)
		ctx->algo = t->algo[i];
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
