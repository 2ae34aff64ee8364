/* Test policy: a chunk size from rank-invariant inputs only (call number,
 * communicator id, the part's bytes), so every rank must agree:
 * grain x (1 + (call_seq + comm_id + n_bytes / grain) % 64). */
#include <ncclbpf/policy.h>

SEC("tuner/chunk") int chunk(struct ncclbpf_chunk_ctx *ctx)
{
	__u64 g = ctx->grain ? ctx->grain : 1;

	ctx->chunk_size = (int)(g * (1 + (ctx->call_seq + ctx->comm_id + ctx->n_bytes / g) % 64));
	return NCCLBPF_CHUNK_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
