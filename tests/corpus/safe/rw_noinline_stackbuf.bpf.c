/* A subprogram filling a caller's stack struct through a pointer. */
#include <ncclbpf/policy.h>

struct choice {
	__s32 algo;
	__s32 proto;
	__s32 nch;
};

static __noinline void decide(const struct ncclbpf_tuner_ctx *ctx, struct choice *c)
{
	c->algo = NCCLBPF_ALGO_RING;
	c->proto = ctx->n_bytes < 65536 ? NCCLBPF_PROTO_LL128 : NCCLBPF_PROTO_SIMPLE;
	c->nch = ctx->n_ranks > 8 ? 16 : 8;
}

SEC("tuner")
int noinline_stackbuf(struct ncclbpf_tuner_ctx *ctx)
{
	struct choice c;

	decide(ctx, &c);
	ctx->algo = c.algo;
	ctx->proto = c.proto;
	ctx->n_channels = c.nch;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
