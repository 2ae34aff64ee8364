// SPDX-License-Identifier: GPL-2.0
/* Test net program that weights a new send connection's sockets: 3 data
 * sockets carrying 1/8, 2/8 and 5/8 of the bytes. */
#include <ncclbpf/policy.h>

SEC("net") int share(struct ncclbpf_net_ctx *ctx)
{
	if (ctx->event == NCCLBPF_NET_CONNECT) {
		ctx->n_socks = 3;
		ctx->sock_weight[0] = 1;
		ctx->sock_weight[1] = 2;
		ctx->sock_weight[2] = 5;
	}
	return NCCLBPF_NET_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
