/* static __noinline subprograms returning values and taking pointers to the caller's stack. */
#include <ncclbpf/policy.h>

struct choice {
	__s32 algo;
	__s32 proto;
	__s32 ch;
};

static __noinline int fill_choice(struct choice *c, __u64 bytes, __u32 ranks)
{
	if (bytes < 8192) {
		c->algo = NCCLBPF_ALGO_TREE;
		c->proto = NCCLBPF_PROTO_LL;
	} else {
		c->algo = NCCLBPF_ALGO_RING;
		c->proto = NCCLBPF_PROTO_SIMPLE;
	}
	c->ch = ranks > 16 ? 32 : 16;
	return bytes < 8192;
}

static __noinline __u32 sum3(const __u32 *v)
{
	return v[0] + v[1] + v[2];
}

SEC("tuner")
int noinline_ptrs(struct ncclbpf_tuner_ctx *ctx)
{
	struct choice c = {};
	__u32 arr[3] = { ctx->n_ranks, ctx->n_nodes, ctx->num_pipe_ops };
	int small;

	small = fill_choice(&c, ctx->n_bytes, ctx->n_ranks);
	if (sum3(arr) > 1000)
		return NCCLBPF_TUNER_SKIP;
	if (!ncclbpf_cell_offered(ctx, c.algo, c.proto))
		return NCCLBPF_TUNER_SKIP;
	ctx->algo = c.algo;
	ctx->proto = c.proto;
	if (!small)
		ctx->n_channels = c.ch;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
