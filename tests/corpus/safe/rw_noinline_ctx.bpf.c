/* static __noinline subprograms taking ctx and scalars (bpf-to-bpf calls). */
#include <ncclbpf/policy.h>

static __noinline int pick_proto(__u64 n_bytes, __u32 mask, int algo)
{
	if (n_bytes < 16384 && (mask & NCCLBPF_CELL(algo, NCCLBPF_PROTO_LL)))
		return NCCLBPF_PROTO_LL;
	if (n_bytes < 262144 && (mask & NCCLBPF_CELL(algo, NCCLBPF_PROTO_LL128)))
		return NCCLBPF_PROTO_LL128;
	return NCCLBPF_PROTO_SIMPLE;
}

static __noinline int apply(struct ncclbpf_tuner_ctx *ctx, int algo)
{
	if (!(ctx->avail_mask & NCCLBPF_CELL(algo, NCCLBPF_PROTO_SIMPLE)))
		return NCCLBPF_TUNER_SKIP;
	ctx->algo = algo;
	ctx->proto = pick_proto(ctx->n_bytes, ctx->avail_mask, algo);
	return NCCLBPF_TUNER_APPLY;
}

SEC("tuner")
int noinline_ctx(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->n_ranks < 2)
		return NCCLBPF_TUNER_SKIP;
	return apply(ctx, ctx->n_nodes > 1 ? NCCLBPF_ALGO_TREE : NCCLBPF_ALGO_RING);
}
char LICENSE[] SEC("license") = "GPL";
