// EXPECT: warn
// A chunk size from the clock: every rank reads a different time, so ranks
// would pipeline different steps.
#include <ncclbpf/policy.h>

SEC("tuner/chunk")
int ktime_chunk(struct ncclbpf_chunk_ctx *ctx)
{
	ctx->chunk_size = (int)(ctx->grain << ((bpf_ktime_get_ns() >> 10) & 3));
	return NCCLBPF_CHUNK_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
