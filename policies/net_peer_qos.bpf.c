// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * net_peer_qos - per-peer network telemetry, and DSCP marking and socket
 * counts an operator sets from outside the job.
 *
 * A net program.  It counts, for every peer (ctx->peer_key: the peer's
 * IPv4 address, or its IPv6 address folded to 64 bits):
 *
 *     net_peer_bytes[peer]                  bytes received from / sent to it
 *     net_peer_lat[{peer, log2(latency)}]   completions by post->done latency
 *
 * and it acts on new connections with what operators wrote into its maps
 * (`ncclbpf map update`), all empty by default, which means "leave it":
 *
 *     net_qos_cfg[0]          data sockets for every new send connection (1..64)
 *     net_qos_cfg[1]          TOS byte for every connection (DSCP << 2, e.g.
 *                             AF41 = 34 << 2 = 0x88), 0 = unmarked
 *     net_peer_tos[peer]      TOS byte for connections with that peer (wins over cfg[1])
 *     net_qos_share[0]        64 bytes: the share of each data socket of every
 *                             new send connection (weights, socket 0 first;
 *                             all zero = equal shares)
 *     net_peer_share[peer]    the same for connections to that peer (wins)
 *
 * Weights are relative: "01 03" puts a quarter of the bytes on socket 0 and
 * three quarters on socket 1 of a two-socket connection.  Weights that do
 * not fit the connection (a weight beyond its socket count) are refused by
 * the plugin, which then keeps equal shares and counts the refusal.
 *
 * Marking is applied on both ends (CONNECT for the sender's sockets,
 * ACCEPT for the receiver's), so the ACKs carry the class too.  The
 * counters are rank-local telemetry: a tuner may read them (the maps are
 * shared by name) but the verifier warns that a decision on them is
 * rank-local; aggregate them across ranks first (docs/net.md).
 */
#include <ncclbpf/policy.h>

#define LAT_BUCKETS 32
#define MAX_PEERS 256

struct peer_lat_key {
	__u64 peer;
	__u32 bucket;
	__u32 send;     /* 1: send completions, 0: receive completions */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MAX_PEERS);
	__type(key, __u64);
	__type(value, __u64);
} net_peer_bytes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MAX_PEERS * 8);
	__type(key, struct peer_lat_key);
	__type(value, __u64);
} net_peer_lat SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} net_qos_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PEERS);
	__type(key, __u64);
	__type(value, __u32);
} net_peer_tos SEC(".maps");

struct share {
	__u64 w[NCCLBPF_NET_MAX_SOCKS / 8]; /* the weights' bytes, 8 at a time */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct share);
} net_qos_share SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PEERS);
	__type(key, __u64);
	__type(value, struct share);
} net_peer_share SEC(".maps");

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

static __always_inline void mark(struct ncclbpf_net_ctx *ctx)
{
	__u64 peer = ctx->peer_key;
	__u32 k = 1, *tos = bpf_map_lookup_elem(&net_peer_tos, &peer);

	if (!tos)
		tos = bpf_map_lookup_elem(&net_qos_cfg, &k);
	if (tos && *tos && *tos <= 255)
		ctx->tos = (__s32)*tos;
}

/* Copies the operator's weights, 8 sockets per store; an all-zero entry leaves the default. */
static __always_inline void share(struct ncclbpf_net_ctx *ctx)
{
	__u64 peer = ctx->peer_key, any = 0, *out = (__u64 *)ctx->sock_weight;
	__u32 k = 0;
	struct share *s = bpf_map_lookup_elem(&net_peer_share, &peer);

	if (!s)
		s = bpf_map_lookup_elem(&net_qos_share, &k);
	if (!s)
		return;
#pragma unroll
	for (int i = 0; i < NCCLBPF_NET_MAX_SOCKS / 8; i++)
		any |= s->w[i];
	if (!any)
		return;
#pragma unroll
	for (int i = 0; i < NCCLBPF_NET_MAX_SOCKS / 8; i++)
		out[i] = s->w[i];
}

SEC("net") int net_peer_qos(struct ncclbpf_net_ctx *ctx)
{
	__u32 ev = ctx->event;

	if (ev == NCCLBPF_NET_CONNECT) {
		__u32 k = 0, *socks = bpf_map_lookup_elem(&net_qos_cfg, &k);

		if (socks && *socks >= 1 && *socks <= 64)
			ctx->n_socks = *socks;
		mark(ctx);
		share(ctx);
	} else if (ev == NCCLBPF_NET_ACCEPT) {
		mark(ctx);
	} else if (ev == NCCLBPF_NET_SEND_DONE || ev == NCCLBPF_NET_RECV_DONE) {
		struct peer_lat_key lk = {
			.peer = ctx->peer_key,
			.bucket = ncclbpf_log2(ctx->latency_ns),
			.send = ev == NCCLBPF_NET_SEND_DONE,
		};
		__u64 peer = ctx->peer_key;

		if (lk.bucket >= LAT_BUCKETS)
			lk.bucket = LAT_BUCKETS - 1;
		bump(&net_peer_bytes, &peer, ctx->bytes);
		if (ctx->latency_ns)
			bump(&net_peer_lat, &lk, 1);
	}
	return NCCLBPF_NET_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
