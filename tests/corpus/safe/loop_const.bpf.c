// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Loops with constant bounds over a config array; the verifier explores every iteration. */
#include <ncclbpf/policy.h>

struct weights {
	__u32 w[8];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct weights);
} weights SEC(".maps");

SEC("tuner")
int loop_const(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = 0, best = 0, best_w = 0;
	struct weights *w = bpf_map_lookup_elem(&weights, &key);

	if (!w)
		return NCCLBPF_TUNER_SKIP;
	for (int i = 0; i < 8; i++) {
		if (w->w[i] > best_w) {
			best_w = w->w[i];
			best = i;
		}
	}
	if (best < NCCLBPF_NUM_ALGOS && ncclbpf_cell_offered(ctx, best, NCCLBPF_PROTO_SIMPLE)) {
		ctx->algo = best;
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
	}
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
