// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Built without -g (no BTF): verified, but its context type cannot be checked. */
#include <ncclbpf/policy.h>

SEC("tuner")
int no_btf(struct ncclbpf_tuner_ctx *ctx)
{
	return ctx->n_ranks > 8 ? NCCLBPF_TUNER_SKIP : NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
