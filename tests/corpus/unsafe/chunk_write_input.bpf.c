// EXPECT: write to read-only context field
// NCCL's proposal is an input of the chunk hook: only chunk_size is written.
#include <ncclbpf/policy.h>

SEC("tuner/chunk")
int chunk_write_input(struct ncclbpf_chunk_ctx *ctx)
{
	ctx->nccl_chunk = 1 << 20;
	return NCCLBPF_CHUNK_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
