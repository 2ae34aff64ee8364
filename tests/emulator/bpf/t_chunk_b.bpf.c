/* Test policy: Simple parts get 256 KiB chunks (t_chunk's successor in the reload test). */
#include <ncclbpf/policy.h>

SEC("tuner/chunk") int chunk_b(struct ncclbpf_chunk_ctx *ctx)
{
	if (ctx->proto == NCCLBPF_PROTO_SIMPLE)
		ctx->chunk_size = 256 << 10;
	return NCCLBPF_CHUNK_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
