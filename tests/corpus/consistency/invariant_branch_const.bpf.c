// EXPECT: clean
// Branches on rank-invariant inputs choosing constants, a flag set under one of them and
// tested later: every rank takes the same sides.
#include <ncclbpf/policy.h>

SEC("tuner")
int invariant_branch_const(struct ncclbpf_tuner_ctx *ctx)
{
	int big = 0, p = NCCLBPF_PROTO_SIMPLE;

	if (ctx->n_bytes > (1 << 20))
		big = 1;
	if (ctx->n_ranks > 8)
		p = NCCLBPF_PROTO_LL128;
	if (big)
		ctx->algo = NCCLBPF_ALGO_RING;
	ctx->proto = p;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
