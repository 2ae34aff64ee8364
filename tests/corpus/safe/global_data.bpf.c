// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Global data: .rodata read by the tuner, .data and .bss written by the profiler. */
#include <ncclbpf/policy.h>

const volatile __u64 small_limit = 65536;
const volatile __s32 small_proto = NCCLBPF_PROTO_LL;
__u64 calls = 0;
__u64 last_latency[4];
__u32 seen = 1;

SEC("tuner")
int global_tune(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->n_bytes < small_limit && ncclbpf_cell_offered(ctx, NCCLBPF_ALGO_RING, small_proto)) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = small_proto;
	}
	return NCCLBPF_TUNER_APPLY;
}

SEC("profiler")
int global_observe(const struct ncclbpf_coll_record *rec)
{
	calls++;
	last_latency[rec->coll_type & 3] = rec->latency_ns;
	seen = rec->rank;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
