// SPDX-License-Identifier: GPL-2.0
/* Test net program: counts every event in net_stats (the probe tuner reads
 * it by name): [0] connects, [1] accepts, [2] send posts, [3] recv posts,
 * [4] send completions, [5] recv completions, [6] bytes received,
 * [7] completions that carried a latency; and bytes per peer. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} net_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u64);
} net_peer_bytes SEC(".maps");

static __always_inline void add(__u32 k, __u64 v)
{
	__u64 *p = bpf_map_lookup_elem(&net_stats, &k);

	if (p)
		__sync_fetch_and_add(p, v);
}

SEC("net") int count(struct ncclbpf_net_ctx *ctx)
{
	__u32 ev = ctx->event;

	if (ev > NCCLBPF_NET_RECV_DONE)
		return NCCLBPF_NET_APPLY;
	add(ev, 1);
	if (ev == NCCLBPF_NET_RECV_DONE) {
		__u64 key = ctx->peer_key, zero = 0, *v;

		add(6, ctx->bytes);
		v = bpf_map_lookup_elem(&net_peer_bytes, &key);
		if (!v) {
			bpf_map_update_elem(&net_peer_bytes, &key, &zero, BPF_NOEXIST);
			v = bpf_map_lookup_elem(&net_peer_bytes, &key);
		}
		if (v)
			__sync_fetch_and_add(v, ctx->bytes);
	}
	if ((ev == NCCLBPF_NET_SEND_DONE || ev == NCCLBPF_NET_RECV_DONE) && ctx->latency_ns > 0)
		add(7, 1);
	return NCCLBPF_NET_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
