/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nnet.h - ncclbpf's TCP transport: NCCL's socket model (several sockets
 * per connection driven by helper threads, a control socket carrying each
 * message's size) behind a small C API that knows nothing of NCCL's ABI or
 * of the policy host.  src/nccl/net.c maps every net ABI version onto it.
 *
 * Conventions: 0 or a negative errno; nothing blocks (connect/accept/isend/
 * irecv return 0 with a NULL result when they cannot proceed yet; call
 * again).  Error codes that reach NCCL:
 *   -EINVAL        bad argument, bad handle, request not in flight;
 *   -EMSGSIZE      the peer sent more than the receive buffer holds;
 *   -ECONNRESET    the peer closed, died or reset the connection;
 *   -ECONNABORTED  connect: the listener closed the connection before
 *                  accepting it (another wire version, or its hello deadline);
 *   -ETIMEDOUT     a send made no progress, and the peer showed no sign of
 *                  life, for the connection's timeout (NCCLBPF_NET_TIMEOUT);
 *   other          a system call failed (-errno).
 * A failed connection stays failed: every later call on it returns the
 * same error, and its sockets are shut down so the peer fails too instead
 * of waiting forever.
 *
 * Threads: the calls on one comm may come from different threads (NCCL's
 * proxy service and progress threads); a comm serialises them with its own
 * mutex.  Different comms share nothing but the device list.
 */
#ifndef NCCLBPF_NET_NNET_H
#define NCCLBPF_NET_NNET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>

#define NNET_HANDLE_SIZE   128 /* NCCL_NET_HANDLE_MAXSIZE */
#define NNET_MAX_REQS      32  /* requests in flight per comm (NCCL_NET_MAX_REQUESTS) */
#define NNET_MAX_SOCKS     64  /* data sockets per connection */
#define NNET_MAX_THREADS   16  /* helper threads per connection */
#define NNET_MAX_DEVS      16
#define NNET_IFNAME_LEN    16

union nnet_addr {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

struct nnet_dev {
	char name[NNET_IFNAME_LEN];  /* interface name */
	char *pci_path;              /* realpath of /sys/class/net/<if>/device, NULL if virtual */
	union nnet_addr addr;        /* the address the device listens on */
	int speed_mbps;              /* /sys/class/net/<if>/speed, 10000 if unknown */
};

#define NNET_TIMEOUT_MS       60000 /* NCCLBPF_NET_TIMEOUT's default */
#define NNET_HELLO_TIMEOUT_MS 10000 /* NCCLBPF_NET_HELLO_TIMEOUT's default */

/*
 * Settings read once by nnet_init from the environment (NCCL's names and
 * ours).  Those that shape the wire (min_chunk, timeout_ms) are the
 * connector's: they travel in its hello and the acceptor adopts them for
 * that connection, so two processes set differently still agree.
 */
struct nnet_settings {
	int nthreads;           /* NCCL_SOCKET_NTHREADS (1..16, default 2) */
	int nsocks_per_thread;  /* NCCL_NSOCKS_PERTHREAD (1..64, default 1) */
	size_t min_chunk;       /* NCCLBPF_NET_MIN_CHUNK: messages above this go to the data sockets */
	uint32_t timeout_ms;    /* NCCLBPF_NET_TIMEOUT: a send stalled this long fails (0: never) */
	uint32_t hello_timeout_ms; /* NCCLBPF_NET_HELLO_TIMEOUT: an accepted socket has this long to say hello */
};

/*
 * Discovers the devices (interfaces selected by NCCL_SOCKET_IFNAME and
 * NCCL_SOCKET_FAMILY, NCCL's defaults otherwise) and reads the settings.
 * Reference-counted; each successful call needs one nnet_fini.
 */
int nnet_init(void);
void nnet_fini(void);
int nnet_ndev(void);
/* Device dev (0..ndev-1), or NULL. Valid until the last nnet_fini. */
const struct nnet_dev *nnet_dev_get(int dev);
const struct nnet_settings *nnet_settings(void);

/*
 * Interface filter with NCCL_SOCKET_IFNAME's grammar: comma-separated
 * names, each a prefix unless the list starts with '='; a leading '^'
 * makes the list an exclusion list ("^=docker0" combines both).
 */
bool nnet_ifname_match(const char *spec, const char *ifname);

/*
 * Per-connection options the caller may set before connecting.  weights[i]
 * is data socket i's relative share of the bytes of sliced messages; all
 * zero means equal shares, and so do weights that nnet_weights_check
 * refuses.  The connector sends them in its hello, so the acceptor cuts
 * every message exactly as the sender does.
 */
struct nnet_conn_opts {
	int nsocks;     /* data sockets; 0: the settings' threads x sockets per thread */
	int tos;        /* IP_TOS / IPV6_TCLASS byte; -1: leave */
	int priority;   /* SO_PRIORITY; -1: leave */
	uint8_t weights[NNET_MAX_SOCKS];
};

struct nnet_listen;
struct nnet_comm;

/* Fills handle (NNET_HANDLE_SIZE bytes, no pointers) and a listener. */
int nnet_listen(int dev, void *handle, struct nnet_listen **out);
int nnet_close_listen(struct nnet_listen *l);
/* Peer address a handle names, for policies; -EINVAL for a bad handle. */
int nnet_handle_peer(const void *handle, union nnet_addr *out);
/* Whether connect() has already started on this handle (its options are taken). */
bool nnet_handle_started(const void *handle);

/*
 * Connects to the listener handle names.  Keeps its state in the handle
 * (NCCL passes the same buffer on every call): returns 0 with *out NULL
 * until the connection is ready.  opts are read on the first call only.
 */
int nnet_connect(int dev, void *handle, const struct nnet_conn_opts *opts,
		 struct nnet_comm **out);
/* Returns 0 with *out NULL until a whole connection has arrived. */
int nnet_accept(struct nnet_listen *l, struct nnet_comm **out);
/* Closes a comm; requests in flight are abandoned.  NULL ok. */
int nnet_close(struct nnet_comm *c);

/*
 * Checks socket weights for a connection of nsocks data sockets: 1 when
 * they are usable, 0 when all are zero (equal shares), -EINVAL when a
 * socket beyond nsocks has a weight.
 */
int nnet_weights_check(const uint8_t *w, int nsocks);
/* The weights a comm cuts by (equal shares: 1 each); returns its socket count. */
int nnet_comm_weights(const struct nnet_comm *c, uint8_t w[NNET_MAX_SOCKS]);

/* Applies IP TOS / traffic class and SO_PRIORITY to every socket (-1: leave). */
int nnet_comm_set_tos(struct nnet_comm *c, int tos, int priority);
int nnet_comm_nsocks(const struct nnet_comm *c);
int nnet_comm_dev(const struct nnet_comm *c);
const union nnet_addr *nnet_comm_peer(const struct nnet_comm *c);
/* Data socket fd i (0..nsocks-1) or the control socket (i == -1); for tests. */
int nnet_comm_fd(const struct nnet_comm *c, int i);

/*
 * Posts one message.  *req is an opaque handle for nnet_test, or NULL when
 * NNET_MAX_REQS requests are already in flight (try again later).
 */
int nnet_isend(struct nnet_comm *c, void *data, size_t size, void **req);
int nnet_irecv(struct nnet_comm *c, void *data, size_t capacity, void **req);
/*
 * Progresses the comm and reports whether req is done; when done, *size is
 * the message's size and req is finished (testing it again is -EINVAL).
 */
int nnet_test(void *req, int *done, size_t *size);
/* Three words the caller may keep with a request in flight (post time...). */
uint64_t *nnet_req_user(void *req);

#endif
