// SPDX-License-Identifier: GPL-2.0
/* Test net program whose outputs are out of range: every one is refused. */
#include <ncclbpf/policy.h>

SEC("net") int bad(struct ncclbpf_net_ctx *ctx)
{
	ctx->n_socks = 1000;
	ctx->tos = 4096;
	ctx->priority = 7; /* needs CAP_NET_ADMIN: refused */
	return NCCLBPF_NET_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
