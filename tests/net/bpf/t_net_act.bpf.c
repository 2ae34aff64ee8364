// SPDX-License-Identifier: GPL-2.0
/* Test net program that acts: 3 sockets, DSCP AF41 (TOS 0x88) and priority
 * 5 for send connections to 127.0.0.1; TOS 0xb8 (EF) and priority 2 on the
 * receive side. */
#include <ncclbpf/policy.h>

SEC("net") int act(struct ncclbpf_net_ctx *ctx)
{
	if (ctx->event == NCCLBPF_NET_CONNECT && ctx->peer_family == 2 &&
	    ctx->peer_addr[0] == 0x0100007f) {
		ctx->n_socks = 3;
		ctx->tos = 0x88;
		ctx->priority = 5;
	} else if (ctx->event == NCCLBPF_NET_ACCEPT) {
		ctx->tos = 0xb8;
		ctx->priority = 2;
	}
	return NCCLBPF_NET_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
