/* A three-deep chain of noinline calls passing a stack pointer down. */
#include <ncclbpf/policy.h>

static __noinline __u32 level3(__u32 *acc, __u32 x)
{
	*acc += x & 0xff;
	return *acc > 100;
}

static __noinline __u32 level2(__u32 *acc, __u64 bytes)
{
	__u32 r = level3(acc, (__u32)(bytes >> 10));

	return r + level3(acc, (__u32)bytes);
}

static __noinline int level1(const struct ncclbpf_tuner_ctx *ctx)
{
	__u32 acc = ctx->n_ranks;

	return level2(&acc, ctx->n_bytes) ? NCCLBPF_PROTO_SIMPLE : NCCLBPF_PROTO_LL;
}

SEC("tuner")
int chain3(struct ncclbpf_tuner_ctx *ctx)
{
	int p = level1(ctx);

	if (!ncclbpf_cell_offered(ctx, NCCLBPF_ALGO_RING, p))
		return NCCLBPF_TUNER_SKIP;
	ctx->proto = p;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
