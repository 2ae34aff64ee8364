/* Test policy for getChunkSize: Simple parts get 64 KiB + 100 bytes (NCCL
 * rounds it down to 64 KiB), LL parts 8 bytes (below the 16-byte grain:
 * refused, NCCL's chunk stands), LL128 parts 1 GiB (above NCCL's buffer:
 * NCCL lowers it to its limit), Tree skipped. */
#include <ncclbpf/policy.h>

SEC("tuner/chunk") int chunk(struct ncclbpf_chunk_ctx *ctx)
{
	if (ctx->algo == NCCLBPF_ALGO_TREE)
		return NCCLBPF_CHUNK_SKIP;
	if (ctx->proto == NCCLBPF_PROTO_SIMPLE)
		ctx->chunk_size = (64 << 10) + 100;
	else if (ctx->proto == NCCLBPF_PROTO_LL)
		ctx->chunk_size = 8;
	else
		ctx->chunk_size = 1 << 30;
	return NCCLBPF_CHUNK_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
