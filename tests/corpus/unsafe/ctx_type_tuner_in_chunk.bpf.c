// EXPECT: program tuner_in_chunk takes struct ncclbpf_tuner_ctx *; hook chunk passes struct ncclbpf_chunk_ctx *
// A tuner program put in the chunk section: its stores to algo and proto
// would land on nccl_chunk and grain of the chunk context.  The object's BTF
// says which type it takes.
#include <ncclbpf/policy.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tuner/chunk")
int tuner_in_chunk(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->n_bytes > 4096)
		ctx->n_channels = 4;
	return 0;
}
