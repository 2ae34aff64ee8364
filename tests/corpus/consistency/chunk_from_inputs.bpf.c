// EXPECT: clean
// A chunk size from the call's inputs only (NCCL's chunk, the part's bytes):
// the same on every rank.
#include <ncclbpf/policy.h>

SEC("tuner/chunk")
int chunk_from_inputs(struct ncclbpf_chunk_ctx *ctx)
{
	if (ctx->n_bytes < (1u << 20) && ctx->nccl_chunk >= 2 * ctx->grain)
		ctx->chunk_size = (int)(ctx->nccl_chunk / 2);
	return NCCLBPF_CHUNK_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
