// EXPECT: warn
// A function called only under a rank-local branch returns a constant; its result,
// kept past the join, picks the protocol.
#include <ncclbpf/policy.h>

static __attribute__((noinline)) int pick_ll(int n)
{
	return n > 2 ? NCCLBPF_PROTO_LL : NCCLBPF_PROTO_LL128;
}

SEC("tuner")
int subprog_in_region(struct ncclbpf_tuner_ctx *ctx)
{
	int p = NCCLBPF_PROTO_SIMPLE;

	if (bpf_get_prandom_u32() & 1)
		p = pick_ll(ctx->n_ranks);
	ctx->proto = p;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
