// SPDX-License-Identifier: GPL-2.0
/* Benchmark net program that acts on every connection (DSCP AF41, TOS
 * 0x88, and priority 4 on both ends) and counts every message as
 * b_net_count does: at completion, bytes per peer and a per-peer log2
 * latency histogram. */
#include <ncclbpf/policy.h>

struct lat_key {
	__u64 peer;
	__u32 bucket;
	__u32 ev;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u64);
} b_peer_bytes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct lat_key);
	__type(value, __u64);
} b_peer_lat SEC(".maps");

static __always_inline void bump(void *map, void *key, __u64 v)
{
	__u64 zero = 0, *p = bpf_map_lookup_elem(map, key);

	if (!p) {
		bpf_map_update_elem(map, key, &zero, BPF_NOEXIST);
		p = bpf_map_lookup_elem(map, key);
	}
	if (p)
		__sync_fetch_and_add(p, v);
}

SEC("net") int act(struct ncclbpf_net_ctx *ctx)
{
	__u64 peer = ctx->peer_key;
	struct lat_key lk = { .peer = peer, .bucket = ncclbpf_log2(ctx->latency_ns),
			      .ev = ctx->event };

	if (ctx->event == NCCLBPF_NET_CONNECT || ctx->event == NCCLBPF_NET_ACCEPT) {
		ctx->tos = 0x88;
		ctx->priority = 4;
		return NCCLBPF_NET_APPLY;
	}
	if (ctx->event != NCCLBPF_NET_SEND_DONE && ctx->event != NCCLBPF_NET_RECV_DONE)
		return NCCLBPF_NET_APPLY;
	bump(&b_peer_bytes, &peer, ctx->bytes);
	bump(&b_peer_lat, &lk, 1);
	return NCCLBPF_NET_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
