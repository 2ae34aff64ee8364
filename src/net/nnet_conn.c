// SPDX-License-Identifier: Apache-2.0
/*
 * nnet_conn.c - listen, connect and accept as non-blocking state machines.
 *
 * NCCL calls connect() again and again with the same handle buffer until
 * it returns a comm, so the connector's state lives in a registry and the
 * handle carries only its id: a corrupted or foreign handle is refused
 * (-EINVAL) instead of being dereferenced.  The connector sends a hello on
 * each socket, then waits for the acceptor's ack on the control socket.
 *
 * The acceptor collects sockets from its listening socket until one
 * connection's control socket and all its data sockets have said hello,
 * then acks.  Its table of sockets still saying hello is bounded, and
 * nothing can hold a place in it for long: a socket whose first 16 bytes
 * are not our magic and the listener's token (port scanners, stale peers,
 * another wire version) is closed at once; one that has not finished its
 * hello within NCCLBPF_NET_HELLO_TIMEOUT of being accepted is closed; and
 * when the table is full, the oldest socket that has not proven the token
 * makes room for the new one.  Idle connections, however many, thus
 * delay a real connection by at most their own accept, never for ever.
 * (No smaller per-peer quota: a real connector opens up to 65 sockets at
 * once, before any of them has said hello.)
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "nnet_internal.h"

/* Room for two whole connections (one is what NCCL waits for). */
#define NNET_MAX_PENDING (2 * (NNET_MAX_SOCKS + 1))
#define NNET_PROOF (2 * sizeof(uint64_t)) /* hello bytes that prove the token: magic, token */

struct nnet_pending {
	int fd;
	union nnet_addr peer;
	size_t got;
	uint64_t since_ms;       /* accepted at */
	struct nnet_hello hello;
};

struct nnet_listen {
	int fd;
	int dev;
	uint64_t token;
	int npend;
	struct nnet_pending pend[NNET_MAX_PENDING];
};

/* Connector state, found through the id kept in the handle. */
struct nnet_connect {
	uint64_t id;
	struct nnet_connect *next;
	int dev;
	union nnet_addr addr;
	uint64_t token, conn_id;
	int nsocks;              /* data sockets; fds[nsocks] is the control socket */
	int tos, priority;
	uint8_t weights[NNET_MAX_SOCKS]; /* all zero: equal shares */
	int fds[NNET_MAX_SOCKS + 1];
	size_t sent[NNET_MAX_SOCKS + 1];
	bool connected[NNET_MAX_SOCKS + 1];
	struct nnet_ack ack;     /* the acceptor's, arriving on the control socket */
	size_t ack_got;
};

static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nnet_connect *conn_list;

uint64_t nnet_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t nnet_random64(void)
{
	uint64_t v = 0;

	while (getrandom(&v, sizeof(v), 0) != sizeof(v) || !v)
		;
	return v;
}

static socklen_t addr_len(const union nnet_addr *a)
{
	return a->sa.sa_family == AF_INET6 ? sizeof(a->in6) : sizeof(a->in);
}

int nnet_sock_opts(int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		return -errno;
	return 0;
}

static int sock_set_tos(int fd, int family, int tos, int priority)
{
	if (tos >= 0) {
		int lvl = family == AF_INET6 ? IPPROTO_IPV6 : IPPROTO_IP;
		int opt = family == AF_INET6 ? IPV6_TCLASS : IP_TOS;

		if (setsockopt(fd, lvl, opt, &tos, sizeof(tos)))
			return -errno;
	}
	if (priority >= 0 && setsockopt(fd, SOL_SOCKET, SO_PRIORITY, &priority, sizeof(priority)))
		return -errno;
	return 0;
}

int nnet_listen(int dev, void *handle, struct nnet_listen **out)
{
	const struct nnet_dev *d = nnet_dev_get(dev);
	struct nnet_handle *h = handle;
	struct nnet_listen *l;
	union nnet_addr a;
	socklen_t len;
	int err, one = 1;

	if (!d || !handle || !out)
		return -EINVAL;
	*out = NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	a = d->addr;
	a.in.sin_port = 0; /* same offset in sockaddr_in6 */
	l->fd = socket(a.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->fd < 0) {
		err = -errno;
		goto fail;
	}
	len = addr_len(&a);
	if (setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(l->fd, &a.sa, len) || listen(l->fd, 2 * NNET_MAX_PENDING) ||
	    getsockname(l->fd, &a.sa, &len)) {
		err = -errno;
		goto fail;
	}
	l->dev = dev;
	l->token = nnet_random64();
	memset(h, 0, NNET_HANDLE_SIZE);
	h->magic = NNET_MAGIC;
	h->token = l->token;
	h->addr = a;
	h->nsocks_hint = (uint32_t)(nnet_settings()->nthreads * nnet_settings()->nsocks_per_thread);
	*out = l;
	return 0;
fail:
	if (l->fd >= 0)
		close(l->fd);
	free(l);
	return err;
}

int nnet_close_listen(struct nnet_listen *l)
{
	if (!l)
		return 0;
	for (int i = 0; i < l->npend; i++)
		close(l->pend[i].fd);
	close(l->fd);
	free(l);
	return 0;
}

static bool handle_ok(const struct nnet_handle *h)
{
	return h && h->magic == NNET_MAGIC &&
	       (h->addr.sa.sa_family == AF_INET || h->addr.sa.sa_family == AF_INET6);
}

int nnet_handle_peer(const void *handle, union nnet_addr *out)
{
	const struct nnet_handle *h = handle;

	if (!handle_ok(h) || !out)
		return -EINVAL;
	*out = h->addr;
	return 0;
}

bool nnet_handle_started(const void *handle)
{
	const struct nnet_handle *h = handle;

	return handle_ok(h) && h->connect_id != 0;
}

/* ---- connect ------------------------------------------------------------ */

static void connect_free(struct nnet_connect *s)
{
	for (int i = 0; i <= s->nsocks; i++)
		if (s->fds[i] >= 0)
			close(s->fds[i]);
	free(s);
}

static struct nnet_connect *connect_take(uint64_t id)
{
	struct nnet_connect **pp, *s = NULL;

	pthread_mutex_lock(&conn_lock);
	for (pp = &conn_list; *pp; pp = &(*pp)->next) {
		if ((*pp)->id == id) {
			s = *pp;
			*pp = s->next;
			break;
		}
	}
	pthread_mutex_unlock(&conn_lock);
	return s;
}

static void connect_put(struct nnet_connect *s)
{
	pthread_mutex_lock(&conn_lock);
	s->next = conn_list;
	conn_list = s;
	pthread_mutex_unlock(&conn_lock);
}

/* Forgets every unfinished connect (the last nnet_fini). */
void nnet_conn_cleanup(void)
{
	struct nnet_connect *s;

	pthread_mutex_lock(&conn_lock);
	s = conn_list;
	conn_list = NULL;
	pthread_mutex_unlock(&conn_lock);
	while (s) {
		struct nnet_connect *next = s->next;

		connect_free(s);
		s = next;
	}
}

static int connect_start(struct nnet_connect *s)
{
	for (int i = 0; i <= s->nsocks; i++) {
		int fd = socket(s->addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		int err;

		if (fd < 0)
			return -errno;
		s->fds[i] = fd;
		err = nnet_sock_opts(fd);
		if (!err)
			err = sock_set_tos(fd, s->addr.sa.sa_family, s->tos, s->priority);
		if (err)
			return err;
		if (connect(fd, &s->addr.sa, addr_len(&s->addr)) && errno != EINPROGRESS)
			return -errno;
	}
	return 0;
}

/* One non-blocking step for socket i: finish the TCP connect, then send its hello. */
static int connect_step(struct nnet_connect *s, int i)
{
	struct nnet_hello hello = {
		.magic = NNET_MAGIC, .token = s->token, .conn_id = s->conn_id,
		.index = i == s->nsocks ? NNET_HELLO_CTRL : (uint32_t)i,
		.nsocks = (uint32_t)s->nsocks,
	};
	ssize_t n;

	if (i == s->nsocks) {
		hello.min_chunk = nnet_settings()->min_chunk;
		hello.timeout_ms = nnet_settings()->timeout_ms;
		memcpy(hello.weights, s->weights, sizeof(hello.weights));
	}
	if (!s->connected[i]) {
		struct pollfd p = { .fd = s->fds[i], .events = POLLOUT };
		int soerr = 0;
		socklen_t len = sizeof(soerr);

		if (poll(&p, 1, 0) <= 0)
			return 0;
		if (getsockopt(s->fds[i], SOL_SOCKET, SO_ERROR, &soerr, &len))
			return -errno;
		if (soerr)
			return -soerr;
		s->connected[i] = true;
	}
	while (s->sent[i] < sizeof(hello)) {
		n = send(s->fds[i], (char *)&hello + s->sent[i], sizeof(hello) - s->sent[i],
			 MSG_NOSIGNAL);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		s->sent[i] += (size_t)n;
	}
	return 0;
}

static int connect_finish(struct nnet_connect *s, struct nnet_comm **out)
{
	struct nnet_comm *c;
	int err;

	c = aligned_alloc(64, (sizeof(*c) + 63) & ~(size_t)63);
	if (!c)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	c->send = true;
	c->dev = s->dev;
	c->peer = s->addr;
	c->nsocks = s->nsocks;
	c->ctrl_fd = s->fds[s->nsocks];
	for (int i = 0; i < s->nsocks; i++)
		c->socks[i].fd = s->fds[i];
	nnet_cut_init(c, s->weights);
	err = nnet_comm_start(c, nnet_settings()->min_chunk, nnet_settings()->timeout_ms);
	if (err) {
		free(c);
		return err;
	}
	/* The comm owns the sockets now. */
	for (int i = 0; i <= s->nsocks; i++)
		s->fds[i] = -1;
	*out = c;
	return 0;
}

/*
 * Reads the acceptor's ack: 1 once it has come, 0 not yet.  A listener
 * that closes first refused the connection (-ECONNABORTED): a peer of
 * another wire version drops our hello, and so does one whose hello
 * deadline passed before all our sockets arrived.
 */
static int connect_ack(struct nnet_connect *s)
{
	int fd = s->fds[s->nsocks];

	while (s->ack_got < sizeof(s->ack)) {
		ssize_t n = recv(fd, (char *)&s->ack + s->ack_got, sizeof(s->ack) - s->ack_got, 0);

		if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE)))
			return -ECONNABORTED;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		s->ack_got += (size_t)n;
	}
	return s->ack.magic == NNET_MAGIC && s->ack.conn_id == s->conn_id ? 1 : -EPROTO;
}

static int connect_new(int dev, struct nnet_handle *h, const struct nnet_conn_opts *opts,
		       struct nnet_connect **out)
{
	const struct nnet_settings *st = nnet_settings();
	struct nnet_connect *s = calloc(1, sizeof(*s));
	int n = opts && opts->nsocks > 0 ? opts->nsocks : st->nthreads * st->nsocks_per_thread;

	if (!s)
		return -ENOMEM;
	s->id = nnet_random64();
	s->dev = dev;
	s->addr = h->addr;
	s->token = h->token;
	s->conn_id = nnet_random64();
	s->nsocks = n < 1 ? 1 : n > NNET_MAX_SOCKS ? NNET_MAX_SOCKS : n;
	s->tos = opts ? opts->tos : -1;
	s->priority = opts ? opts->priority : -1;
	if (opts && nnet_weights_check(opts->weights, s->nsocks) > 0)
		memcpy(s->weights, opts->weights, sizeof(s->weights));
	for (int i = 0; i <= NNET_MAX_SOCKS; i++)
		s->fds[i] = -1;
	*out = s;
	return connect_start(s);
}

int nnet_connect(int dev, void *handle, const struct nnet_conn_opts *opts,
		 struct nnet_comm **out)
{
	struct nnet_handle *h = handle;
	struct nnet_connect *s = NULL;
	bool ready = true;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!handle_ok(h) || !nnet_dev_get(dev))
		return -EINVAL;
	if (h->connect_id == 0) {
		err = connect_new(dev, h, opts, &s);
		if (err)
			goto fail;
		h->connect_id = s->id;
	} else {
		s = connect_take(h->connect_id);
		if (!s)
			return -EINVAL;
	}
	for (int i = 0; i <= s->nsocks; i++) {
		err = connect_step(s, i);
		if (err)
			goto fail;
		ready &= s->sent[i] == sizeof(struct nnet_hello);
	}
	if (ready) {
		err = connect_ack(s);
		if (err < 0)
			goto fail;
		ready = err;
	}
	if (!ready) {
		connect_put(s);
		return 0;
	}
	err = connect_finish(s, out);
	if (err)
		goto fail;
	h->connect_id = 0;
	connect_free(s);
	return 0;
fail:
	h->connect_id = 0;
	if (s)
		connect_free(s);
	return err == -ECONNREFUSED || err == -ECONNRESET || err == -EPIPE ? -ECONNRESET : err;
}

/* ---- accept ------------------------------------------------------------- */

static void pend_drop(struct nnet_listen *l, int i)
{
	close(l->pend[i].fd);
	l->pend[i] = l->pend[--l->npend];
}

/* Whether the socket has shown it knows the listener's token. */
static bool pend_proven(const struct nnet_listen *l, const struct nnet_pending *p)
{
	return p->got >= NNET_PROOF && p->hello.magic == NNET_MAGIC && p->hello.token == l->token;
}

/* A control hello's weights must fit its socket count: the cut depends on them. */
static bool hello_ok(const struct nnet_listen *l, const struct nnet_hello *h)
{
	return h->magic == NNET_MAGIC && h->token == l->token && h->nsocks >= 1 &&
	       h->nsocks <= NNET_MAX_SOCKS && (h->index == NNET_HELLO_CTRL || h->index < h->nsocks) &&
	       (h->index != NNET_HELLO_CTRL || nnet_weights_check(h->weights, (int)h->nsocks) >= 0);
}

/*
 * Reads what has arrived of pending hello i; drops it when broken, foreign
 * (as soon as its first 16 bytes are in), invalid or past its deadline.
 * Returns whether it is still pending.
 */
static bool pend_read(struct nnet_listen *l, int i, uint64_t now)
{
	struct nnet_pending *p = &l->pend[i];
	ssize_t n = 1;

	while (p->got < sizeof(p->hello) && n > 0) {
		n = recv(p->fd, (char *)&p->hello + p->got, sizeof(p->hello) - p->got, 0);
		if (n > 0)
			p->got += (size_t)n;
	}
	if ((n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) ||
	    (p->got >= NNET_PROOF && !pend_proven(l, p)) ||
	    (p->got == sizeof(p->hello) && !hello_ok(l, &p->hello)) ||
	    now - p->since_ms > nnet_settings()->hello_timeout_ms) {
		pend_drop(l, i);
		return false;
	}
	return true;
}

/* Drops the oldest socket that has not proven the token; false when there is none. */
static bool pend_evict(struct nnet_listen *l)
{
	int victim = -1;

	for (int i = 0; i < l->npend; i++)
		if (!pend_proven(l, &l->pend[i]) &&
		    (victim < 0 || l->pend[i].since_ms < l->pend[victim].since_ms))
			victim = i;
	if (victim >= 0)
		pend_drop(l, victim);
	return victim >= 0;
}

static void accept_new(struct nnet_listen *l, uint64_t now)
{
	for (;;) {
		union nnet_addr peer = { 0 };
		socklen_t len = sizeof(peer);
		int fd = accept4(l->fd, &peer.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;
		if (nnet_sock_opts(fd) || (l->npend == NNET_MAX_PENDING && !pend_evict(l))) {
			close(fd);
			continue;
		}
		l->pend[l->npend] = (struct nnet_pending){ .fd = fd, .peer = peer, .since_ms = now };
		/* Its hello is usually in already: proven at once, it cannot be evicted. */
		pend_read(l, l->npend++, now);
	}
}

/* Reads what has arrived of each pending hello. */
static void accept_hellos(struct nnet_listen *l, uint64_t now)
{
	for (int i = 0; i < l->npend;)
		i += pend_read(l, i, now);
}

/* The complete connection among the pending sockets, or -1. */
static int accept_ready(struct nnet_listen *l, int *idx)
{
	for (int i = 0; i < l->npend; i++) {
		const struct nnet_hello *ctrl = &l->pend[i].hello;
		int have = 0;

		if (l->pend[i].got != sizeof(*ctrl) || ctrl->index != NNET_HELLO_CTRL)
			continue;
		for (uint32_t k = 0; k < ctrl->nsocks; k++)
			idx[k] = -1;
		for (int j = 0; j < l->npend; j++) {
			const struct nnet_hello *d = &l->pend[j].hello;

			if (l->pend[j].got == sizeof(*d) && d->conn_id == ctrl->conn_id &&
			    d->index != NNET_HELLO_CTRL && d->nsocks == ctrl->nsocks &&
			    idx[d->index] < 0) {
				idx[d->index] = j;
				have++;
			}
		}
		if (have == (int)ctrl->nsocks)
			return i;
	}
	return -1;
}

int nnet_accept(struct nnet_listen *l, struct nnet_comm **out)
{
	int idx[NNET_MAX_SOCKS], ci, err, nsocks;
	bool taken[NNET_MAX_PENDING] = { false };
	const struct nnet_hello *h;
	struct nnet_ack ack;
	struct nnet_comm *c;
	uint64_t now;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!l)
		return -EINVAL;
	now = nnet_now_ms();
	accept_new(l, now);
	accept_hellos(l, now);
	ci = accept_ready(l, idx);
	if (ci < 0)
		return 0;
	h = &l->pend[ci].hello;
	nsocks = (int)h->nsocks;
	c = aligned_alloc(64, (sizeof(*c) + 63) & ~(size_t)63);
	if (!c)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	c->dev = l->dev;
	c->nsocks = nsocks;
	c->ctrl_fd = l->pend[ci].fd;
	c->peer = l->pend[ci].peer;
	for (int k = 0; k < nsocks; k++)
		c->socks[k].fd = l->pend[idx[k]].fd;
	nnet_cut_init(c, h->weights);
	/*
	 * The connector returns its comm on this ack, so it goes before any
	 * keepalive of ours can.  A fresh socket takes 16 bytes whole; if the
	 * peer is gone, the data path reports it.
	 */
	ack = (struct nnet_ack){ .magic = NNET_MAGIC, .conn_id = h->conn_id };
	(void)!send(c->ctrl_fd, &ack, sizeof(ack), MSG_DONTWAIT | MSG_NOSIGNAL);
	/* The connector's wire settings, whatever ours are. */
	err = nnet_comm_start(c, (size_t)h->min_chunk, h->timeout_ms);
	if (err) {
		free(c);
		return err; /* the sockets stay pending; the connector fails on its first use */
	}
	/* Remove the sockets the comm owns now, highest index first (pend_drop moves the last). */
	taken[ci] = true;
	for (int k = 0; k < nsocks; k++)
		taken[idx[k]] = true;
	for (int i = l->npend - 1; i >= 0; i--) {
		if (taken[i]) {
			l->pend[i].fd = -1;
			l->pend[i] = l->pend[--l->npend];
		}
	}
	*out = c;
	return 0;
}
