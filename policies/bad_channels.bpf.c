// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bad_channels - a deliberately bad policy: one channel for everything.
 *
 * It is perfectly safe (the verifier accepts it: it writes one output
 * field with an in-range constant, and the value is the same on every
 * rank) and perfectly harmful: a single channel drives one SM pair per
 * GPU and one ring, so large collectives lose most of their bandwidth.
 * It demonstrates what verification does NOT promise: that a policy is
 * good.  Measure before deploying (bench/gpu, docs/policy-guide.md).
 */
#include <ncclbpf/policy.h>

SEC("tuner")
int bad_channels(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_channels = 1;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
