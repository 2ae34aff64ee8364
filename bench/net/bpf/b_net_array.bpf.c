// SPDX-License-Identifier: GPL-2.0
/* Benchmark net program that counts cheaply: messages and bytes per event
 * kind in an array map (one lookup and two atomic adds per event). */
#include <ncclbpf/policy.h>

struct cnt {
	__u64 n, bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, struct cnt);
} b_events SEC(".maps");

SEC("net") int count_array(struct ncclbpf_net_ctx *ctx)
{
	__u32 k = ctx->event & 7;
	struct cnt *c = bpf_map_lookup_elem(&b_events, &k);

	if (c) {
		__sync_fetch_and_add(&c->n, 1);
		__sync_fetch_and_add(&c->bytes, ctx->bytes);
	}
	return NCCLBPF_NET_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
