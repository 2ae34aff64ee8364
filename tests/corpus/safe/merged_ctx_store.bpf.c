/*
 * Adjacent constant outputs: clang merges the algo and proto stores into one
 * 8-byte store at offset 72 that covers both writable fields exactly.
 */
#include <ncclbpf/policy.h>

SEC("tuner")
int merged_store(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->n_bytes < 65536) {
		ctx->algo = NCCLBPF_ALGO_TREE;
		ctx->proto = NCCLBPF_PROTO_LL;
	} else {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
	}
	ctx->n_channels = 8;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
