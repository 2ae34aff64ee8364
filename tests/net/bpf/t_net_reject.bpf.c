// SPDX-License-Identifier: GPL-2.0
/* Test net program the verifier must reject: it writes a read-only field. */
#include <ncclbpf/policy.h>

SEC("net") int reject(struct ncclbpf_net_ctx *ctx)
{
	ctx->bytes = 0;
	return NCCLBPF_NET_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
