/* call_seq % N alternation across a table of candidate cells, skipping unoffered ones. */
#include <ncclbpf/policy.h>

static const __u8 cand[4][2] = {
	{ NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE },
	{ NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_SIMPLE },
	{ NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL128 },
	{ NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_LL },
};

SEC("tuner")
int seq_alt(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 i = ctx->call_seq % 4;
	__u32 a = cand[i][0], p = cand[i][1];

	if (ctx->call_seq < 16)
		return NCCLBPF_TUNER_SKIP;
	if (!(ctx->avail_mask & (1u << (a * NCCLBPF_NUM_PROTOS + p))))
		return NCCLBPF_TUNER_SKIP;
	ctx->algo = a;
	ctx->proto = p;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
