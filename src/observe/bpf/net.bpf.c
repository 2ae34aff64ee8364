// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * net.bpf.c - the job's TCP connections: bytes each way, retransmitted
 * segments and RTT per connection, labelled by its peer.
 *
 * The kernel already counts all of it per socket (tcp_sock: bytes_acked,
 * bytes_received, total_retrans, srtt_us, rtt_min), the very counters
 * TCP_INFO reports.  So nothing runs on the data path: an iterator over
 * the job's open files (run by user space once per interval, for the
 * target processes only where the kernel filters iterators by pid) copies
 * the counters of each TCP socket it finds, and a program on TCP state
 * changes copies them one last time when a known connection reaches
 * TCP_CLOSE, and learns the connections the job opens or closes itself
 * between two scans.  Sockets of other processes cost a state-change run
 * per connection setup and teardown, returning at the first test, and
 * nothing per byte.  RDMA traffic never passes through here.
 */
#include "observe.bpf.h"

#define AF_INET_ 2
#define AF_INET6_ 10
#define IPPROTO_TCP_ 6
#define SOCK_STREAM_ 1
#define S_IFMT_ 0170000
#define S_IFSOCK_ 0140000
#define TCP_SYN_SENT_ 2
#define TCP_FIN_WAIT1_ 4
#define TCP_CLOSE_ 7
#define TCP_LAST_ACK_ 9
#define TCP_LISTEN_ 10

/*
 * Keyed by the socket's address (a number here); the record's id tells a
 * reused address from the connection it first belonged to.  A hash map:
 * records come and go with connections, not with packets.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct obs_conn);
} conns SEC(".maps");

/* The last record id handed out. */
__u64 conn_ids = 0;

/* Addresses and ports; the local port is bound only after connect's SYN_SENT. */
static __always_inline void conn_addr(struct obs_conn *c, const struct sock *sk)
{
	c->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	c->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	c->dport = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (c->family == AF_INET_) {
		BPF_CORE_READ_INTO((__u32 *)c->saddr, sk, __sk_common.skc_rcv_saddr);
		BPF_CORE_READ_INTO((__u32 *)c->daddr, sk, __sk_common.skc_daddr);
	} else {
		BPF_CORE_READ_INTO(&c->saddr, sk, __sk_common.skc_v6_rcv_saddr);
		BPF_CORE_READ_INTO(&c->daddr, sk, __sk_common.skc_v6_daddr);
	}
}

/* The kernel's counters for the connection, as TCP_INFO has them. */
static __always_inline void conn_counters(struct obs_conn *c, const struct sock *sk)
{
	const struct tcp_sock *tp = (const void *)sk;

	if (!c->sport || !c->dport)
		conn_addr(c, sk);
	c->bytes_sent = BPF_CORE_READ(tp, bytes_acked);
	c->bytes_recv = BPF_CORE_READ(tp, bytes_received);
	c->retrans = BPF_CORE_READ(tp, total_retrans);
	c->srtt_us = BPF_CORE_READ(tp, srtt_us) >> 3;
	c->min_rtt_us = BPF_CORE_READ(tp, rtt_min.s[0].v);
}

/*
 * A record for sk, created with the counters as they are now.  A full
 * table (16,384 open connections of the job) leaves new ones out.
 */
static __always_inline void conn_new(__u64 key, const struct sock *sk, __u32 tgid)
{
	struct obs_conn fresh = {};

	fresh.tgid = tgid;
	fresh.id = __sync_fetch_and_add(&conn_ids, 1) + 1;
	conn_addr(&fresh, sk);
	conn_counters(&fresh, sk);
	bpf_map_update_elem(&conns, &key, &fresh, BPF_NOEXIST);
}

/*
 * One open file of a target process: a connected TCP socket has its
 * counters copied.  A closed one is left alone: its record already holds
 * the final counters, and a new record would count them again.
 */
SEC("iter/task_file")
int net_iter(struct bpf_iter__task_file *ctx)
{
	struct task_struct *task = ctx->task;
	struct file *file = ctx->file;
	struct obs_conn *c;
	struct socket *sock;
	struct sock *sk;
	__u64 key;
	__u8 state;

	if (!task || !file || !obs_is_target(task))
		return 0;
	if ((BPF_CORE_READ(file, f_inode, i_mode) & S_IFMT_) != S_IFSOCK_)
		return 0;
	sock = BPF_CORE_READ(file, private_data);
	sk = BPF_CORE_READ(sock, sk);
	if (!sk || BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP_ ||
	    BPF_CORE_READ(sk, sk_type) != SOCK_STREAM_)
		return 0;
	state = BPF_CORE_READ(sk, __sk_common.skc_state);
	if (state == TCP_CLOSE_ || state == TCP_LISTEN_)
		return 0;
	key = (__u64)sk;
	c = bpf_map_lookup_elem(&conns, &key);
	if (!c) {
		conn_new(key, sk, task->tgid);
		return 0;
	}
	/* Closed records wait for user space to retire them; a reused address waits with them. */
	if (!c->closed)
		conn_counters(c, sk);
	return 0;
}

/*
 * A connection of the job changes state.  At TCP_CLOSE, before the port is
 * released: the final counters.  In the job's own calls (connect: SYN_SENT;
 * close or shutdown: FIN_WAIT1, LAST_ACK), a connection the scans have not
 * seen yet is learnt, so one opened and closed between two scans counts too.
 */
static __always_inline void conn_state(const struct sock *sk, int newstate)
{
	__u64 key = (__u64)sk;
	struct obs_conn *c;

	if (newstate == TCP_CLOSE_) {
		c = bpf_map_lookup_elem(&conns, &key);
		if (c && !c->closed) {
			conn_counters(c, sk);
			c->closed = 1;
		}
		return;
	}
	if (newstate != TCP_SYN_SENT_ && newstate != TCP_FIN_WAIT1_ && newstate != TCP_LAST_ACK_)
		return;
	if (!obs_current_is_target() || BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP_)
		return;
	c = bpf_map_lookup_elem(&conns, &key);
	if (!c)
		conn_new(key, sk, bpf_get_current_pid_tgid() >> 32);
	else if (!c->closed)
		conn_counters(c, sk);
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(net_state_btf, const struct sock *sk, const int oldstate, const int newstate)
{
	conn_state(sk, newstate);
	return 0;
}

SEC("tp/sock/inet_sock_set_state")
int net_state(struct trace_event_raw_inet_sock_set_state *ctx)
{
	if (ctx->protocol == IPPROTO_TCP_)
		conn_state((const struct sock *)ctx->skaddr, ctx->newstate);
	return 0;
}

/* Each retransmission of a job connection, with its peer, to the outlier ring. */
SEC("tp_btf/tcp_retransmit_skb")
int net_retrans(unsigned long long *ctx)
{
	__u64 key = ctx[0];
	struct obs_conn *c;
	__u32 d4 = 0;

	/*
	 * A failed attempt (the queue was busy) is tried again and reported
	 * then.  On kernels whose tracepoint has no result the branch is dead:
	 * the verifier never sees the third argument read.
	 */
	if ((obs_cfg.flags & OBS_CFG_RETRANS_ERR) && (int)ctx[2] != 0)
		return 0;
	c = bpf_map_lookup_elem(&conns, &key);
	if (!c)
		return 0;
	__builtin_memcpy(&d4, c->daddr, 4);
	obs_outlier(OBS_EV_RETRANS, c->tgid, 0, 0, c->dport, d4);
	return 0;
}
