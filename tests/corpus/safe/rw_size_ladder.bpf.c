/* Size thresholds with an if/else chain, checking offered cells. */
#include <ncclbpf/policy.h>

SEC("tuner")
int size_ladder(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 n = ctx->n_bytes;

	if (n <= 4096) {
		if (ncclbpf_cell_offered(ctx, NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_LL)) {
			ctx->algo = NCCLBPF_ALGO_TREE;
			ctx->proto = NCCLBPF_PROTO_LL;
		}
	} else if (n <= 65536) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_LL128;
	} else if (n <= (1 << 24)) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
		ctx->n_channels = 16;
	} else {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
		ctx->n_channels = 32;
	}
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
