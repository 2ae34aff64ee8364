// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * lossy_peer - the kernel's per-peer TCP signals drive socket marking and
 * the tuner, without letting ranks disagree (closed loop 2, `ncclbpf loop
 * --kernel`, docs/closed-loops.md).
 *
 * `ncclbpf loop --kernel` reads the retransmits and smoothed RTT that
 * `ncclbpf observe`'s net probes count in the kernel, per peer, and writes
 * them into two maps of this policy; no program writes either:
 *
 *   kernel_peer[peer]   per peer address, keyed like ctx->peer_key: the
 *                       job's retransmits to it, their rate over the last
 *                       interval (per second and per GiB sent), the
 *                       largest smoothed RTT, and whether the
 *                       loop holds the peer lossy (a bound crossed, held
 *                       for a while after);
 *   kernel_plan[0], [1] plan words (loop 1's format: the value from call
 *                       `from` on, the one before it, `from`) for the
 *                       channel count and the protocol (+1) to use while
 *                       any peer of the job is lossy; 0 = NCCL's own.
 *
 * The net program reads kernel_peer when a connection is made: a
 * connection to a lossy peer gets a lower socket priority and a lower
 * DSCP class, so the traffic of the healthy peers goes first where the
 * host's queues are short.  Ranks may mark their sockets differently;
 * NCCL does not compare them.  The tuner reads only kernel_plan: the
 * kernel's view is node-local, so a tuner deciding on kernel_peer would
 * split the ranks; the loop writes the plan to every rank with an agreed
 * activation call, and the tuner compares it with the per-communicator
 * call counter, the same on every rank for the same collective.
 *
 * lossy_qos_cfg (operators, `ncclbpf map update`): [0] SO_PRIORITY for a
 * lossy peer's sockets, 1..6 (0: 2, TC_PRIO_BULK, below the default 0's
 * band); [1] its TOS byte (0: 0x20, CS1, the lower-effort class).
 */
#include <ncclbpf/policy.h>

#define MAX_PEERS 256

struct kernel_peer_val {
	__u64 retrans;
	__u32 retrans_per_s;
	__u32 srtt_us;
	__u32 lossy;
	__u32 retrans_per_gib;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PEERS);
	__type(key, __u64);
	__type(value, struct kernel_peer_val);
} kernel_peer SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} kernel_plan SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} lossy_qos_cfg SEC(".maps");

#define DEF_PRIORITY 2    /* TC_PRIO_BULK */
#define DEF_TOS      0x20 /* CS1 */

static __always_inline __u32 cfg(__u32 k, __u32 def, __u32 max)
{
	__u32 *v = bpf_map_lookup_elem(&lossy_qos_cfg, &k);

	return v && *v >= 1 && *v <= max ? *v : def;
}

SEC("net") int lossy_peer_net(struct ncclbpf_net_ctx *ctx)
{
	struct kernel_peer_val *p;
	__u64 peer = ctx->peer_key;

	if (ctx->event != NCCLBPF_NET_CONNECT && ctx->event != NCCLBPF_NET_ACCEPT)
		return NCCLBPF_NET_APPLY;
	p = bpf_map_lookup_elem(&kernel_peer, &peer);
	if (!p || !p->lossy)
		return NCCLBPF_NET_APPLY;
	ctx->priority = (__s32)cfg(0, DEF_PRIORITY, 6);
	ctx->tos = (__s32)cfg(1, DEF_TOS, 255);
	return NCCLBPF_NET_APPLY;
}

/* The word's value at this call: one load, so the value and its call match. */
static __always_inline __u32 plan_at(__u32 key, __u64 call)
{
	__u64 *w = bpf_map_lookup_elem(&kernel_plan, &key), word;

	if (!w)
		return 0;
	word = *w;
	return call >= (word >> 16) ? (word & 0xff) : ((word >> 8) & 0xff);
}

SEC("tuner")
int lossy_peer_tune(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 ch = plan_at(0, ctx->call_seq), proto = plan_at(1, ctx->call_seq);

	if (ch >= 1 && ch <= 64)
		ctx->n_channels = ch;
	if (proto >= 1 && proto <= 3)
		ctx->proto = (__s32)proto - 1;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
