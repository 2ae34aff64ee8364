// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * net.bpf.c - the job's TCP connections: bytes each way, retransmits and
 * smoothed RTT per socket, keyed by the socket and labelled by its peer.
 *
 * Sockets are learnt in the job's own context (send/recv), so the
 * connection table holds only the job's sockets; retransmits happen in
 * timers and softirqs, on any CPU, and are matched by the socket pointer.
 * RDMA traffic never passes through these paths.
 */
#include "observe.bpf.h"

#define AF_INET_ 2
#define AF_INET6_ 10
#define IPPROTO_TCP_ 6

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64); /* struct sock * */
	__type(value, struct obs_conn);
} conns SEC(".maps");

/* Fills the addresses of a new record; a reused socket address starts again. */
static __always_inline void conn_fill(struct obs_conn *c, struct sock *sk, __u32 tgid)
{
	__builtin_memset(c, 0, sizeof(*c));
	c->tgid = tgid;
	c->family = sk->__sk_common.skc_family;
	c->sport = sk->__sk_common.skc_num;
	c->dport = __builtin_bswap16(sk->__sk_common.skc_dport);
	if (c->family == AF_INET_) {
		__builtin_memcpy(c->saddr, &sk->__sk_common.skc_rcv_saddr, 4);
		__builtin_memcpy(c->daddr, &sk->__sk_common.skc_daddr, 4);
	} else {
		BPF_CORE_READ_INTO(&c->saddr, sk, __sk_common.skc_v6_rcv_saddr);
		BPF_CORE_READ_INTO(&c->daddr, sk, __sk_common.skc_v6_daddr);
	}
	c->srtt_min_us = ~0u;
}

static __always_inline struct obs_conn *conn_get(struct sock *sk)
{
	__u64 key = (__u64)sk;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u16 dport = __builtin_bswap16(sk->__sk_common.skc_dport);
	struct obs_conn *c = bpf_map_lookup_elem(&conns, &key);
	struct obs_conn fresh;

	if (c && c->tgid == tgid && c->dport == dport && c->sport == sk->__sk_common.skc_num)
		return c;
	conn_fill(&fresh, sk, tgid);
	bpf_map_update_elem(&conns, &key, &fresh, BPF_ANY);
	return bpf_map_lookup_elem(&conns, &key);
}

static __always_inline void conn_rtt(struct obs_conn *c, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 srtt = BPF_CORE_READ(tp, srtt_us) >> 3;

	if (!srtt)
		return;
	c->srtt_us = srtt;
	if (srtt < c->srtt_min_us)
		c->srtt_min_us = srtt;
	if (srtt > c->srtt_max_us)
		c->srtt_max_us = srtt;
	__sync_fetch_and_add(&c->srtt_sum_us, srtt);
	__sync_fetch_and_add(&c->srtt_n, 1);
}

static __always_inline bool is_tcp(struct sock *sk)
{
	__u16 fam;

	if (!sk || sk->sk_protocol != IPPROTO_TCP_)
		return false;
	fam = sk->__sk_common.skc_family;
	return fam == AF_INET_ || fam == AF_INET6_;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(net_send, struct sock *sk, int ret, int flags)
{
	struct obs_conn *c;

	if (ret <= 0 || !obs_current_is_target() || !is_tcp(sk))
		return 0;
	c = conn_get(sk);
	if (!c)
		return 0;
	__sync_fetch_and_add(&c->bytes_sent, ret);
	__sync_fetch_and_add(&c->sends, 1);
	conn_rtt(c, sk);
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(net_recv, struct sock *sk, int ret, int flags)
{
	struct obs_conn *c;

	if (ret <= 0 || !obs_current_is_target() || !is_tcp(sk))
		return 0;
	c = conn_get(sk);
	if (!c)
		return 0;
	__sync_fetch_and_add(&c->bytes_recv, ret);
	__sync_fetch_and_add(&c->recvs, 1);
	conn_rtt(c, sk);
	return 0;
}

/*
 * Kernels before sock_send_length/sock_recv_length (6.3): fexit on TCP's
 * sendmsg/recvmsg.  The return value is read with bpf_get_func_ret, since
 * tcp_recvmsg's argument count changed (5.19).
 */
static __always_inline void count_fexit(void *ctx, struct sock *sk, bool send)
{
	struct obs_conn *c;
	__u64 ret = 0;

	if (bpf_get_func_ret(ctx, &ret) || (__s64)ret <= 0 || !is_tcp(sk) ||
	    !obs_current_is_target())
		return;
	c = conn_get(sk);
	if (!c)
		return;
	if (send) {
		__sync_fetch_and_add(&c->bytes_sent, ret);
		__sync_fetch_and_add(&c->sends, 1);
	} else {
		__sync_fetch_and_add(&c->bytes_recv, ret);
		__sync_fetch_and_add(&c->recvs, 1);
	}
	conn_rtt(c, sk);
}

SEC("fexit/tcp_sendmsg")
int net_send_fexit(unsigned long long *ctx)
{
	count_fexit(ctx, (struct sock *)ctx[0], true);
	return 0;
}

SEC("fexit/tcp_recvmsg")
int net_recv_fexit(unsigned long long *ctx)
{
	count_fexit(ctx, (struct sock *)ctx[0], false);
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int net_retrans(unsigned long long *ctx)
{
	__u64 key = ctx[0];
	struct obs_conn *c;
	__u32 d4 = 0;

	/*
	 * A failed attempt (the queue was busy) is tried again and counted then;
	 * the kernel's tcpi_total_retrans counts only those that went out.  On
	 * kernels whose tracepoint has no result the branch is dead: the
	 * verifier never sees the third argument read.
	 */
	if ((obs_cfg.flags & OBS_CFG_RETRANS_ERR) && (int)ctx[2] != 0)
		return 0;
	c = bpf_map_lookup_elem(&conns, &key);
	if (!c)
		return 0;
	__sync_fetch_and_add(&c->retrans, 1);
	__builtin_memcpy(&d4, c->daddr, 4);
	obs_outlier(OBS_EV_RETRANS, c->tgid, 0, 0, c->dport, d4);
	return 0;
}
