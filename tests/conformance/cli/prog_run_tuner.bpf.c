/* Two tiny tuner programs for the `ncclbpf prog run` test. */
#include "ncclbpf/policy.h"

/* SKIP for operations above 4 KiB, APPLY (keeping every choice) below. */
SEC("tuner")
int by_size(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->n_bytes > 4096)
		return NCCLBPF_TUNER_SKIP;
	ctx->algo = NCCLBPF_KEEP;
	return NCCLBPF_TUNER_APPLY;
}

SEC("tuner")
int always_skip(struct ncclbpf_tuner_ctx *ctx)
{
	return NCCLBPF_TUNER_SKIP;
}

char LICENSE[] SEC("license") = "GPL";
