/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nnet_internal.h - the transport's private structures, shared by the
 * connection code (nnet_conn.c) and the data path (nnet_data.c).
 *
 * Wire format.  A connection is one control socket and nsocks data
 * sockets, each opening with a struct nnet_hello; the acceptor answers a
 * struct nnet_ack on the control socket once the whole connection has
 * arrived, and the connector returns its comm only then.  Every message
 * starts with a struct nnet_hdr on the control socket.  A message of at
 * most min_chunk bytes follows its header there; a larger one is cut into
 * at most one contiguous slice per data socket, in socket order, by the
 * connection's weights and a per-socket byte credit both ends keep
 * (nnet_cut.c).  The cut depends only on the weights, min_chunk and the
 * sequence of message sizes, so both ends derive the same placement and
 * every data socket carries its slices in message order.
 *
 * Everything that shapes the wire is the connector's and travels in its
 * control hello (socket count, weights, min_chunk, the stall timeout that
 * sets the acceptor's keepalive period); the acceptor adopts it for that
 * connection.  The control socket's other direction carries only the ack
 * and then keepalive bytes from the acceptor (nnet_data.c).
 */
#ifndef NCCLBPF_NET_INTERNAL_H
#define NCCLBPF_NET_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "nnet.h"

#define NNET_MAGIC       0x6e63636c62706633ull /* "ncclbpf3": hello with min_chunk, acked */
#define NNET_HELLO_CTRL  0xffffffffu

/* The listener's handle; connect() keeps its state id in it. */
struct nnet_handle {
	uint64_t magic;
	uint64_t token;          /* random per listener: stray connections are refused */
	union nnet_addr addr;
	uint32_t nsocks_hint;    /* listener's default, for information */
	uint32_t pad;
	uint64_t connect_id;     /* 0 until connect() starts; then its state's id */
};
_Static_assert(sizeof(struct nnet_handle) <= NNET_HANDLE_SIZE, "handle fits NCCL's");

struct nnet_hello {
	uint64_t magic;
	uint64_t token;          /* the listener's */
	uint64_t conn_id;        /* random per connection: groups its sockets */
	uint32_t index;          /* data socket index, or NNET_HELLO_CTRL */
	uint32_t nsocks;
	/* Control hello only (zero on data sockets): the connection's wire settings. */
	uint64_t min_chunk;      /* NCCLBPF_NET_MIN_CHUNK */
	uint32_t timeout_ms;     /* NCCLBPF_NET_TIMEOUT: the acceptor keeps alive every quarter */
	uint32_t pad;
	uint8_t weights[NNET_MAX_SOCKS]; /* the cut's weights, all 0: equal */
};

/* The acceptor's answer on the control socket: the whole connection is in. */
struct nnet_ack {
	uint64_t magic;
	uint64_t conn_id;
};

struct nnet_hdr {
	uint64_t size;
	uint64_t seq;            /* message number: a desynchronised stream is an error */
};

struct nnet_req;

/* One slice of a message on one data socket. */
struct nnet_slice {
	struct nnet_req *req;
	char *ptr;
	size_t len;
	size_t done;
};

/* A data socket; its queue is filled by the progress path, drained by one helper. */
struct nnet_sock {
	int fd;
	atomic_bool busy;        /* held by whoever moves its slices (nnet_data.c) */
	_Atomic uint64_t moved;  /* bytes moved, written by the busy flag's holder */
	unsigned head, tail;     /* under the helper's mutex */
	struct nnet_slice q[NNET_MAX_REQS];
};

struct nnet_helper {
	pthread_t tid;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct nnet_comm *comm;
	int first, stride;       /* owns sockets first, first + stride, ... */
	bool stop;               /* under mu */
	bool started;
	bool aborted;            /* its sockets aborted (helper thread only) */
	uint64_t keepalive_ms;   /* the acceptor's first helper: next keepalive due (its own) */
};

enum nnet_req_state { NNET_REQ_FREE = 0, NNET_REQ_POSTED };

struct nnet_req {
	_Alignas(64) struct nnet_comm *comm;
	uint16_t gen;            /* bumped when the slot is freed: stale handles fail */
	uint8_t state;           /* enum nnet_req_state; owner: the comm mutex */
	bool send;
	bool ctrl_done;          /* header (and inline data) through */
	char *data;
	size_t size;             /* send: size; recv: capacity, then the size received */
	size_t ctrl_off;         /* bytes of header + inline data moved */
	struct nnet_hdr hdr;
	atomic_int pending;      /* slices not yet moved by the helpers */
	uint64_t user[3];
};

struct nnet_comm {
	pthread_mutex_t mu;      /* serialises the calls on this comm */
	bool send;
	int dev;
	int ctrl_fd;
	int nsocks, nthreads;
	union nnet_addr peer;
	atomic_int err;          /* first fatal error (negative errno), sticky */
	atomic_bool abort;       /* failed: each socket's owner aborts it (sock_abort) */
	bool ctrl_aborted;       /* under mu */
	uint64_t post_seq;       /* messages posted */
	uint64_t ctrl_seq;       /* messages whose control part is done */
	size_t min_chunk;        /* the connector's (nnet_hello) */
	uint32_t timeout_ms;     /* the connector's stall timeout, 0: none */
	/* Stall detection (sender), under mu: see stall_check(). */
	uint64_t ctrl_moved;     /* bytes of the control stream moved */
	uint64_t moved_seen;     /* bytes moved at the last check */
	uint64_t alive_ms;       /* last progress or keepalive seen; 0: not watching */
	uint64_t check_ms;       /* next check */
	/* The cut (cut()): identical on both ends, driven under mu. */
	uint8_t weight[NNET_MAX_SOCKS]; /* 0 beyond nsocks; equal shares are 1 each */
	uint32_t wsum;
	int nactive;             /* sockets with a weight */
	int64_t credit[NNET_MAX_SOCKS]; /* bytes owed to socket i, times wsum */
	struct nnet_req reqs[NNET_MAX_REQS];
	struct nnet_sock socks[NNET_MAX_SOCKS];
	struct nnet_helper helpers[NNET_MAX_THREADS];
};

/* nnet_data.c; min_chunk and timeout_ms: the connector's settings. */
int nnet_comm_start(struct nnet_comm *c, size_t min_chunk, uint32_t timeout_ms);
void nnet_comm_fail(struct nnet_comm *c, int err);

/* nnet_cut.c */
void nnet_cut_init(struct nnet_comm *c, const uint8_t *weights);
int nnet_cut(struct nnet_comm *c, size_t size, size_t len[NNET_MAX_SOCKS]);

/* nnet_conn.c */
int nnet_sock_opts(int fd);
uint64_t nnet_random64(void);
uint64_t nnet_now_ms(void);      /* CLOCK_MONOTONIC in ms: deadlines */
void nnet_conn_cleanup(void);

#endif
