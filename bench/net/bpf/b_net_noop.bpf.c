// SPDX-License-Identifier: GPL-2.0
/* Benchmark net program that does nothing: the hook plumbing's own cost. */
#include <ncclbpf/policy.h>

SEC("net") int noop(struct ncclbpf_net_ctx *ctx)
{
	return NCCLBPF_NET_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
