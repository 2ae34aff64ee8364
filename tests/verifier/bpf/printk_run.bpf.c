// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bpf_printk run by both engines (test_printk_run.c). */
#include <ncclbpf/policy.h>

/* One argument per conversion: the line holds exactly these values. */
SEC("tuner")
int printk_match(struct ncclbpf_tuner_ctx *ctx)
{
	bpf_printk("ranks=%u bytes=%llu d=%d", ctx->n_ranks, ctx->n_bytes, -3);
	return NCCLBPF_TUNER_SKIP;
}

/* Two conversions, one argument: %llx would print a stale r4. */
SEC("tuner")
int printk_short(struct ncclbpf_tuner_ctx *ctx)
{
	bpf_printk("ranks=%u stale=%llx", ctx->n_ranks);
	return NCCLBPF_TUNER_SKIP;
}
char LICENSE[] SEC("license") = "GPL";
