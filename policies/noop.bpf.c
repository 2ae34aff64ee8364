// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * noop - a tuner that decides nothing.
 *
 * Every output stays NCCLBPF_KEEP, so NCCL's own (algorithm, protocol,
 * channels) choice stands on every call.  It exists to measure what the
 * plugin path itself costs (ncclbpf bench, bench/gpu) and to prove that
 * loading the plugin alone changes no decision.
 */
#include <ncclbpf/policy.h>

SEC("tuner")
int noop(struct ncclbpf_tuner_ctx *ctx)
{
	(void)ctx;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
