/* 2D const volatile table [coll][bucket group] plus a static const 2D table, indexed by bounded values. */
#include <ncclbpf/policy.h>

const volatile __s32 algo_tab[NCCLBPF_NUM_COLLS][4] = {
	{ 1, 1, 1, 1 }, { 0, 1, 1, 1 }, { 1, 1, 1, 1 }, { 1, 1, 1, 1 }, { 0, 0, 1, 1 },
};
static const __s32 proto_tab[NCCLBPF_NUM_COLLS][4] = {
	{ 0, 1, 2, 2 }, { 0, 1, 2, 2 }, { 0, 0, 1, 2 }, { 0, 0, 1, 2 }, { 0, 1, 1, 2 },
};

SEC("tuner")
int rodata_2d(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 c = ctx->coll_type;
	__u32 g = ncclbpf_size_bucket(ctx->n_bytes) / 8;
	__s32 a, p;

	if (c >= NCCLBPF_NUM_COLLS)
		return NCCLBPF_TUNER_SKIP;
	if (g > 3)
		g = 3;
	a = algo_tab[c][g];
	p = proto_tab[c][g];
	if (a < 0 || a >= NCCLBPF_NUM_ALGOS || p < 0 || p >= NCCLBPF_NUM_PROTOS)
		return NCCLBPF_TUNER_SKIP;
	if (!(ctx->avail_mask & NCCLBPF_CELL(a, p)))
		return NCCLBPF_TUNER_SKIP;
	ctx->algo = a;
	ctx->proto = p;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
