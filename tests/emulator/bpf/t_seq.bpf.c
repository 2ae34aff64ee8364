/* Test policy: decision from rank-invariant inputs only (call number and
 * communicator id), so every rank must agree: channels = 1 + (call_seq + comm_id) % 8,
 * Tree on odd calls when offered. */
#include <ncclbpf/policy.h>

#define barrier() asm volatile("" ::: "memory")

SEC("tuner") int pick(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 s = ctx->call_seq + ctx->comm_id;

	ctx->n_channels = 1 + (int)(s % 8);
	if ((ctx->call_seq & 1) && ncclbpf_cell_offered(ctx, NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_SIMPLE)) {
		ctx->algo = NCCLBPF_ALGO_TREE;
		barrier(); /* keep two 4-byte stores (the context allows exact-width access only) */
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
	}
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
