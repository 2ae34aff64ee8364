// SPDX-License-Identifier: GPL-2.0
/* Test net program with hostile weights, alternating per connect: all
 * zero, then a weight on a socket the connection does not have.  Both are
 * refused (equal shares); the 3 sockets it asks for still apply. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} share_connects SEC(".maps");

SEC("net") int share_bad(struct ncclbpf_net_ctx *ctx)
{
	__u32 k = 0;
	__u64 *n;

	if (ctx->event != NCCLBPF_NET_CONNECT)
		return NCCLBPF_NET_APPLY;
	n = bpf_map_lookup_elem(&share_connects, &k);
	if (!n)
		return NCCLBPF_NET_APPLY;
	ctx->n_socks = 3;
	if (*n & 1) {
		ctx->sock_weight[0] = 1;
		ctx->sock_weight[1] = 1;
		ctx->sock_weight[2] = 1;
		ctx->sock_weight[9] = 7;
	} else {
		ctx->sock_weight[0] = 0;
		ctx->sock_weight[1] = 0;
	}
	*n += 1;
	return NCCLBPF_NET_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
