// SPDX-License-Identifier: Apache-2.0
/*
 * nnet_data.c - the data path: requests, the control stream and the helper
 * threads that move slices on the data sockets.
 *
 * The caller's thread (NCCL's proxy progress thread) drives the control
 * socket without blocking from isend/irecv/test: headers and small
 * messages go through it at once, so a small message costs no thread
 * hand-off.  A large message is cut into slices (nnet_cut.c) queued to
 * the helper threads; each helper serves sockets first, first + nthreads,
 * ... and moves their slices with non-blocking I/O, sleeping in poll()
 * only while every socket it serves would block, and on its condition
 * variable while it has nothing queued.  While a request's slices are
 * queued, test() moves some of them too, on sockets whose helper is not
 * on them at that moment (comm_assist); a socket's busy flag says who
 * moves it.  A request is done when its control part is through and its
 * pending slice count reaches zero.
 *
 * Request handles carry the slot's generation in their top 16 bits
 * (user-space addresses fit in 47), so testing a finished request, or a
 * request whose slot has been reused since, is refused with -EINVAL.
 *
 * Stalls (NCCL_IB_TIMEOUT's role).  A sender whose data the peer stops
 * taking would wait for ever: the peer's kernel keeps acknowledging a
 * closed window.  So the acceptor (the receiving end) writes one byte on
 * the control socket's idle direction every quarter of the connector's
 * timeout while the connection is open, from a helper thread: a process
 * that is merely late to post its receive stays alive, one that no longer
 * runs (stopped, hung, its host gone) goes silent.  The sender's test()
 * fails the connection with -ETIMEDOUT once a message has moved no byte
 * and no keepalive has come for the whole timeout.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "nnet_internal.h"

#define REQ_GEN_SHIFT 48
#define REQ_PTR_MASK  ((UINT64_C(1) << REQ_GEN_SHIFT) - 1)
#define HELPER_POLL_MS 100
#define STALL_CHECK_MS 50    /* a stalled sender looks at its peer this often */
/* Bytes one test() call moves at most (comm_assist): a bounded detour for the proxy thread. */
#define ASSIST_BUDGET (512u << 10)
#define ASSIST_SOCK_BUDGET (256u << 10)

static int io_err(ssize_t n)
{
	if (n == 0)
		return -ECONNRESET;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return 0;
	return errno == EPIPE || errno == ENOTCONN || errno == ECONNABORTED ? -ECONNRESET
									     : -errno;
}

/*
 * A TCP socket whose peer only shut it down keeps accepting bytes until its
 * receive window closes; a sender facing a zero window then waits forever,
 * since window probes carry no new data and never draw the reset.  So a
 * failing comm aborts its sockets: connect() to AF_UNSPEC makes Linux send
 * a RST at once, without closing the descriptor.
 *
 * Only the thread that does a socket's I/O aborts it (the helper owning a
 * data socket, the caller under the comm mutex for the control socket):
 * a disconnect racing with a send() on the same descriptor from another
 * thread is the descriptor's re-creation as far as a race detector is
 * concerned.  The failing thread shuts everything down at once, which wakes
 * the owners (poll() reports the hang-up, idle helpers are signalled), and
 * each owner then aborts its own sockets.
 */
static void sock_abort(int fd)
{
	struct sockaddr unspec = { .sa_family = AF_UNSPEC };

	(void)connect(fd, &unspec, sizeof(unspec));
	shutdown(fd, SHUT_RDWR);
}

static bool comm_stop(struct nnet_comm *c, int err, bool abort)
{
	int zero = 0;

	if (!atomic_compare_exchange_strong(&c->err, &zero, err))
		return false;
	if (abort)
		atomic_store(&c->abort, true);
	/* Wake both ends: our helpers leave poll(), the peer sees EOF (RST once aborted). */
	for (int i = -1; i < c->nsocks; i++)
		shutdown(i < 0 ? c->ctrl_fd : c->socks[i].fd, SHUT_RDWR);
	for (int t = 0; abort && t < c->nthreads; t++) {
		struct nnet_helper *hp = &c->helpers[t];

		pthread_mutex_lock(&hp->mu);
		pthread_cond_signal(&hp->cv);
		pthread_mutex_unlock(&hp->mu);
	}
	return true;
}

void nnet_comm_fail(struct nnet_comm *c, int err)
{
	comm_stop(c, err, true);
}

/* The control socket's share of an abort; under c->mu. */
static void ctrl_abort(struct nnet_comm *c)
{
	if (!c->ctrl_aborted && atomic_load(&c->abort)) {
		sock_abort(c->ctrl_fd);
		c->ctrl_aborted = true;
	}
}

/* ---- helper threads ------------------------------------------------------ */

/* Counts what a socket moved (the busy flag's holder writes it; stall_check reads it). */
static void sock_count(struct nnet_sock *sk, size_t n)
{
	atomic_store_explicit(&sk->moved,
			      atomic_load_explicit(&sk->moved, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/*
 * Moves bytes of slice s on socket sk, at most budget of them; 1 if it
 * moved any, 0 if it would block at once, <0 error.  Each call to the
 * kernel is counted as it returns: one slice can take seconds on a slow
 * link, and a sender watching for a stall must see it move meanwhile.
 */
static int slice_io(struct nnet_comm *c, struct nnet_slice *s, struct nnet_sock *sk, size_t budget)
{
	size_t end = s->len - s->done > budget ? s->done + budget : s->len;
	int moved = 0;

	while (s->done < end) {
		ssize_t n = c->send ? send(sk->fd, s->ptr + s->done, end - s->done,
					   MSG_DONTWAIT | MSG_NOSIGNAL)
				    : recv(sk->fd, s->ptr + s->done, end - s->done, MSG_DONTWAIT);

		if (n <= 0) {
			int err = io_err(n);

			return err ? err : moved;
		}
		s->done += (size_t)n;
		sock_count(sk, (size_t)n);
		moved = 1;
	}
	return 1;
}

/*
 * A data socket's I/O belongs to whoever holds its busy flag: its helper,
 * or the caller's thread helping from nnet_test (comm_assist).
 */
static bool sock_try(struct nnet_sock *sk)
{
	return !atomic_exchange_explicit(&sk->busy, true, memory_order_acquire);
}

static void sock_release(struct nnet_sock *sk)
{
	atomic_store_explicit(&sk->busy, false, memory_order_release);
}

/*
 * Moves sk's queued slices, in order, until it would block or *budget
 * bytes are moved (and taken off *budget); busy held.  1 if anything
 * moved, 0 if not, <0 error; *stuck: a slice is left that waits for the
 * socket.
 */
static int sock_move(struct nnet_comm *c, struct nnet_helper *hp, struct nnet_sock *sk,
		     size_t *budget, bool *stuck)
{
	int moved = 0;

	*stuck = false;
	for (;;) {
		struct nnet_slice *s;
		size_t before;
		int r;

		pthread_mutex_lock(&hp->mu);
		s = sk->head != sk->tail ? &sk->q[sk->head % NNET_MAX_REQS] : NULL;
		pthread_mutex_unlock(&hp->mu);
		if (!s || !*budget)
			return moved;
		/* The head slot is stable until head moves: the producer only writes at tail. */
		before = s->done;
		r = slice_io(c, s, sk, *budget);
		if (r < 0)
			return r;
		moved |= r;
		*budget -= s->done - before;
		if (s->done < s->len) {
			*stuck = *budget != 0;
			return moved;
		}
		atomic_fetch_sub_explicit(&s->req->pending, 1, memory_order_release);
		pthread_mutex_lock(&hp->mu);
		if (sk->head != sk->tail) /* not dropped by a failure meanwhile */
			sk->head++;
		pthread_mutex_unlock(&hp->mu);
		moved = 1;
	}
}

/* One pass over the helper's sockets; returns whether anything moved. */
static int helper_pass(struct nnet_helper *hp, struct pollfd *pfd, int *npfd, bool *contended)
{
	struct nnet_comm *c = hp->comm;
	int moved = 0;

	*npfd = 0;
	*contended = false;
	for (int i = hp->first; i < c->nsocks; i += hp->stride) {
		struct nnet_sock *sk = &c->socks[i];
		size_t budget = SIZE_MAX;
		bool stuck = false;
		int r = 0;

		if (sock_try(sk)) {
			r = sock_move(c, hp, sk, &budget, &stuck);
			sock_release(sk);
		} else {
			/* The caller is moving it: come back soon, without spinning on its readiness. */
			*contended = true;
		}
		if (r < 0)
			return r;
		moved |= r;
		if (stuck) {
			pfd[*npfd].fd = sk->fd;
			pfd[*npfd].events = c->send ? POLLOUT : POLLIN;
			pfd[*npfd].revents = 0;
			(*npfd)++;
		}
	}
	return moved;
}

static bool helper_has_work(struct nnet_helper *hp)
{
	struct nnet_comm *c = hp->comm;

	for (int i = hp->first; i < c->nsocks; i += hp->stride)
		if (c->socks[i].head != c->socks[i].tail)
			return true;
	return false;
}

static void helper_drop_all(struct nnet_helper *hp)
{
	struct nnet_comm *c = hp->comm;

	pthread_mutex_lock(&hp->mu);
	for (int i = hp->first; i < c->nsocks; i += hp->stride)
		c->socks[i].head = c->socks[i].tail;
	pthread_mutex_unlock(&hp->mu);
}

/* Aborts the sockets this helper owns once the comm has failed (see sock_abort). */
static bool helper_abort(struct nnet_helper *hp)
{
	struct nnet_comm *c = hp->comm;

	if (hp->aborted || !atomic_load(&c->abort))
		return false;
	for (int i = hp->first; i < c->nsocks; i += hp->stride) {
		/* The caller holds a socket only for one bounded non-blocking move. */
		while (!sock_try(&c->socks[i]))
			sched_yield();
		sock_abort(c->socks[i].fd);
		sock_release(&c->socks[i]);
	}
	hp->aborted = true;
	return true;
}

/* The acceptor's first helper keeps the connection alive (see the file's comment). */
static bool helper_keeps_alive(const struct nnet_helper *hp)
{
	return !hp->comm->send && hp->first == 0 && hp->comm->timeout_ms;
}

/* Writes a keepalive byte when one is due; returns when the next is (ms). */
static uint64_t helper_keepalive(struct nnet_helper *hp)
{
	struct nnet_comm *c = hp->comm;
	uint64_t now = nnet_now_ms();

	if (now < hp->keepalive_ms)
		return hp->keepalive_ms;
	/* The caller drives (and aborts) the control socket under c->mu: never wait on it. */
	if (pthread_mutex_trylock(&c->mu))
		return now + 10;
	if (!atomic_load(&c->err))
		(void)!send(c->ctrl_fd, "", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	pthread_mutex_unlock(&c->mu);
	hp->keepalive_ms = now + (c->timeout_ms / 4 ? c->timeout_ms / 4 : 1);
	return hp->keepalive_ms;
}

static bool helper_idle(struct nnet_helper *hp)
{
	return !hp->stop && !helper_has_work(hp) && (hp->aborted || !atomic_load(&hp->comm->abort));
}

/* Waits under hp->mu for work; a keepalive helper wakes when its next byte is due. */
static void helper_wait(struct nnet_helper *hp)
{
	while (helper_idle(hp)) {
		uint64_t due;
		struct timespec ts;

		if (!helper_keeps_alive(hp)) {
			pthread_cond_wait(&hp->cv, &hp->mu);
			continue;
		}
		pthread_mutex_unlock(&hp->mu); /* c->mu comes first (dispatch holds it, then ours) */
		due = helper_keepalive(hp);
		pthread_mutex_lock(&hp->mu);
		if (!helper_idle(hp))
			break;
		ts.tv_sec = (time_t)(due / 1000);
		ts.tv_nsec = (long)(due % 1000) * 1000000;
		pthread_cond_timedwait(&hp->cv, &hp->mu, &ts);
	}
}

static void *helper_main(void *arg)
{
	struct nnet_helper *hp = arg;
	struct pollfd pfd[NNET_MAX_SOCKS];

	for (;;) {
		bool contended;
		int npfd, r;

		pthread_mutex_lock(&hp->mu);
		helper_wait(hp);
		if (hp->stop) {
			pthread_mutex_unlock(&hp->mu);
			break;
		}
		pthread_mutex_unlock(&hp->mu);
		if (helper_keeps_alive(hp))
			helper_keepalive(hp);
		if (helper_abort(hp)) {
			helper_drop_all(hp);
			continue;
		}
		r = helper_pass(hp, pfd, &npfd, &contended);
		if (r < 0) {
			nnet_comm_fail(hp->comm, r);
			helper_drop_all(hp);
		} else if (r == 0 && contended) {
			/*
			 * The caller holds one of our sockets for one bounded move
			 * (tens of microseconds): yield and take it back as soon as
			 * it lets go.  Sleeping here instead left the socket idle
			 * for the rest of the sleep on machines with cores to spare.
			 */
			sched_yield();
		} else if (r == 0 && npfd) {
			poll(pfd, (nfds_t)npfd, HELPER_POLL_MS);
		}
	}
	return NULL;
}

static void helpers_stop(struct nnet_comm *c)
{
	for (int t = 0; t < c->nthreads; t++) {
		struct nnet_helper *hp = &c->helpers[t];

		if (!hp->started)
			continue;
		pthread_mutex_lock(&hp->mu);
		hp->stop = true;
		pthread_cond_signal(&hp->cv);
		pthread_mutex_unlock(&hp->mu);
	}
	/*
	 * All joined before any is torn down: a helper that failed the comm
	 * (comm_stop) signals every helper under its lock, so one still
	 * running may lock a sibling already joined.
	 */
	for (int t = 0; t < c->nthreads; t++)
		if (c->helpers[t].started)
			pthread_join(c->helpers[t].tid, NULL);
	for (int t = 0; t < c->nthreads; t++) {
		struct nnet_helper *hp = &c->helpers[t];

		pthread_cond_destroy(&hp->cv);
		pthread_mutex_destroy(&hp->mu);
		hp->started = false;
	}
}

int nnet_comm_start(struct nnet_comm *c, size_t min_chunk, uint32_t timeout_ms)
{
	const struct nnet_settings *st = nnet_settings();
	pthread_condattr_t ca;
	int err;

	c->nthreads = st->nthreads < c->nsocks ? st->nthreads : c->nsocks;
	c->min_chunk = min_chunk;
	c->timeout_ms = timeout_ms;
	atomic_init(&c->err, 0);
	atomic_init(&c->abort, false);
	for (int i = 0; i < NNET_MAX_REQS; i++) {
		c->reqs[i].comm = c;
		atomic_init(&c->reqs[i].pending, 0);
	}
	for (int i = 0; i < c->nsocks; i++) {
		atomic_init(&c->socks[i].busy, false);
		atomic_init(&c->socks[i].moved, 0);
	}
	pthread_mutex_init(&c->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* keepalive deadlines are monotonic */
	for (int t = 0; t < c->nthreads; t++) {
		struct nnet_helper *hp = &c->helpers[t];

		hp->comm = c;
		hp->first = t;
		hp->stride = c->nthreads;
		pthread_mutex_init(&hp->mu, NULL);
		pthread_cond_init(&hp->cv, &ca);
	}
	pthread_condattr_destroy(&ca);
	for (int t = 0; t < c->nthreads; t++) {
		err = -pthread_create(&c->helpers[t].tid, NULL, helper_main, &c->helpers[t]);
		if (err) {
			helpers_stop(c);
			pthread_mutex_destroy(&c->mu);
			return err;
		}
		c->helpers[t].started = true;
	}
	return 0;
}

int nnet_close(struct nnet_comm *c)
{
	if (!c)
		return 0;
	/*
	 * An orderly close: data already handed to the kernel still reaches the
	 * peer.  shutdown wakes helpers blocked in poll(); the error is moot now.
	 */
	comm_stop(c, -ECONNRESET, false);
	helpers_stop(c);
	/* No helper runs now: abort what the owners of a failed comm had not reached. */
	for (int t = 0; t < c->nthreads; t++)
		helper_abort(&c->helpers[t]);
	ctrl_abort(c);
	close(c->ctrl_fd);
	for (int i = 0; i < c->nsocks; i++)
		close(c->socks[i].fd);
	pthread_mutex_destroy(&c->mu);
	free(c);
	return 0;
}

/* ---- requests and the control stream ------------------------------------ */

static void *req_handle(struct nnet_req *r)
{
	return (void *)((uintptr_t)r | ((uintptr_t)r->gen << REQ_GEN_SHIFT));
}

static struct nnet_req *req_decode(void *h, uint16_t *gen)
{
	uintptr_t v = (uintptr_t)h;
	struct nnet_req *r = (struct nnet_req *)(v & REQ_PTR_MASK);

	*gen = (uint16_t)(v >> REQ_GEN_SHIFT);
	if (!r || ((uintptr_t)r & (_Alignof(struct nnet_req) - 1)))
		return NULL;
	return r;
}

/* Queues the slices of a large message to the helpers owning their sockets. */
static void dispatch(struct nnet_comm *c, struct nnet_req *r)
{
	size_t len[NNET_MAX_SOCKS], off = 0;
	int n = nnet_cut(c, r->size, len);

	atomic_store_explicit(&r->pending, n, memory_order_relaxed);
	for (int sock = 0; sock < c->nsocks; sock++) {
		struct nnet_helper *hp = &c->helpers[sock % c->nthreads];
		struct nnet_sock *sk = &c->socks[sock];

		if (!len[sock])
			continue;
		pthread_mutex_lock(&hp->mu);
		sk->q[sk->tail % NNET_MAX_REQS] = (struct nnet_slice){
			.req = r, .ptr = r->data + off, .len = len[sock],
		};
		sk->tail++;
		pthread_cond_signal(&hp->cv);
		pthread_mutex_unlock(&hp->mu);
		off += len[sock];
	}
}

static bool is_inline(const struct nnet_comm *c, size_t size)
{
	return size <= c->min_chunk;
}

static int ctrl_send(struct nnet_comm *c, struct nnet_req *r)
{
	size_t body = is_inline(c, r->size) ? r->size : 0;
	size_t total = sizeof(r->hdr) + body;

	while (r->ctrl_off < total) {
		struct iovec iov[2];
		struct msghdr msg = { .msg_iov = iov };
		size_t off = r->ctrl_off;
		ssize_t n;

		if (off < sizeof(r->hdr)) {
			iov[msg.msg_iovlen++] = (struct iovec){ (char *)&r->hdr + off,
								sizeof(r->hdr) - off };
			off = sizeof(r->hdr);
		}
		if (body)
			iov[msg.msg_iovlen++] = (struct iovec){ r->data + (off - sizeof(r->hdr)),
								total - off };
		n = sendmsg(c->ctrl_fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0)
			return io_err(n);
		if (n == 0)
			return 0;
		r->ctrl_off += (size_t)n;
		c->ctrl_moved += (size_t)n;
	}
	return 1;
}

static int ctrl_recv(struct nnet_comm *c, struct nnet_req *r, uint64_t seq)
{
	for (;;) {
		size_t total = sizeof(r->hdr);
		ssize_t n;

		if (r->ctrl_off >= sizeof(r->hdr)) {
			if (r->hdr.seq != seq)
				return -EPROTO;
			if (r->hdr.size > r->size)
				return -EMSGSIZE;
			total += is_inline(c, r->hdr.size) ? r->hdr.size : 0;
		}
		if (r->ctrl_off == total)
			break;
		if (r->ctrl_off < sizeof(r->hdr))
			n = recv(c->ctrl_fd, (char *)&r->hdr + r->ctrl_off,
				 sizeof(r->hdr) - r->ctrl_off, MSG_DONTWAIT);
		else
			n = recv(c->ctrl_fd, r->data + (r->ctrl_off - sizeof(r->hdr)),
				 total - r->ctrl_off, MSG_DONTWAIT);
		if (n <= 0)
			return io_err(n);
		r->ctrl_off += (size_t)n;
	}
	r->size = r->hdr.size;
	return 1;
}

/* Moves the control stream as far as it goes without blocking; under c->mu. */
static int ctrl_progress(struct nnet_comm *c)
{
	while (c->ctrl_seq < c->post_seq) {
		struct nnet_req *r = &c->reqs[c->ctrl_seq % NNET_MAX_REQS];
		int done = r->send ? ctrl_send(c, r) : ctrl_recv(c, r, c->ctrl_seq);

		if (done <= 0)
			return done;
		r->ctrl_done = true;
		if (!is_inline(c, r->size))
			dispatch(c, r);
		c->ctrl_seq++;
	}
	return 0;
}

static int post(struct nnet_comm *c, bool send, void *data, size_t size, void **req)
{
	struct nnet_req *r;
	int err;

	if (!req)
		return -EINVAL;
	*req = NULL;
	if (!c || c->send != send || (!data && size))
		return -EINVAL;
	pthread_mutex_lock(&c->mu);
	err = atomic_load(&c->err);
	if (err) {
		ctrl_abort(c);
		goto out;
	}
	r = &c->reqs[c->post_seq % NNET_MAX_REQS];
	if (r->state != NNET_REQ_FREE)
		goto out; /* NNET_MAX_REQS in flight: NCCL retries */
	r->state = NNET_REQ_POSTED;
	r->send = send;
	r->ctrl_done = false;
	r->data = data;
	r->size = size;
	r->ctrl_off = 0;
	r->hdr = (struct nnet_hdr){ .size = size, .seq = c->post_seq };
	memset(r->user, 0, sizeof(r->user));
	atomic_store_explicit(&r->pending, 0, memory_order_relaxed);
	c->post_seq++;
	*req = req_handle(r);
	err = ctrl_progress(c);
	if (err) {
		nnet_comm_fail(c, err);
		ctrl_abort(c);
		err = atomic_load(&c->err);
		*req = NULL;
	}
out:
	pthread_mutex_unlock(&c->mu);
	return err;
}

int nnet_isend(struct nnet_comm *c, void *data, size_t size, void **req)
{
	return post(c, true, data, size, req);
}

int nnet_irecv(struct nnet_comm *c, void *data, size_t capacity, void **req)
{
	return post(c, false, data, capacity, req);
}

/*
 * NCCL's proxy thread calls test() in a loop until the request is done; a
 * bounded share of that time moves slices of sockets whose helper is not
 * on them at that moment (asleep in poll(), or not scheduled: on a
 * machine with fewer cores than threads the spinning caller would
 * otherwise take the helper's CPU time and move nothing).
 */
static int comm_assist(struct nnet_comm *c, const struct nnet_req *req)
{
	size_t budget = ASSIST_BUDGET;

	for (int i = 0; i < c->nsocks && budget; i++) {
		struct nnet_sock *sk = &c->socks[i];
		struct nnet_helper *hp = &c->helpers[i % c->nthreads];
		size_t b = budget < ASSIST_SOCK_BUDGET ? budget : ASSIST_SOCK_BUDGET, left = b;
		bool stuck, next;
		int r;

		/* Only where req's slice is next: one caller's try per socket and pass over its requests. */
		pthread_mutex_lock(&hp->mu);
		next = sk->head != sk->tail && sk->q[sk->head % NNET_MAX_REQS].req == req;
		pthread_mutex_unlock(&hp->mu);
		if (!next || !sock_try(sk))
			continue;
		r = sock_move(c, hp, sk, &left, &stuck);
		sock_release(sk);
		if (r < 0)
			return r;
		budget -= b - left;
	}
	return 0;
}

/*
 * A sender's watch on its peer (see the file's comment), from test() while
 * a request is not done; under c->mu.  0, or -ETIMEDOUT once nothing has
 * moved and no keepalive has come for the connection's timeout.
 */
static int stall_check(struct nnet_comm *c)
{
	uint64_t now = nnet_now_ms(), moved = c->ctrl_moved;
	bool alive = false;
	char buf[64];
	ssize_t n;

	if (c->alive_ms && now < c->check_ms)
		return 0;
	c->check_ms = now + STALL_CHECK_MS;
	for (int i = 0; i < c->nsocks; i++)
		moved += atomic_load_explicit(&c->socks[i].moved, memory_order_relaxed);
	while ((n = recv(c->ctrl_fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		alive = true;
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return io_err(n);
	if (!c->alive_ms || alive || moved != c->moved_seen) {
		c->alive_ms = now;
		c->moved_seen = moved;
		return 0;
	}
	return now - c->alive_ms >= c->timeout_ms ? -ETIMEDOUT : 0;
}

int nnet_test(void *req, int *done, size_t *size)
{
	uint16_t gen;
	struct nnet_req *r = req_decode(req, &gen);
	struct nnet_comm *c;
	int err;

	if (done)
		*done = 0;
	if (!r || !done)
		return -EINVAL;
	c = r->comm;
	pthread_mutex_lock(&c->mu);
	if (r->state != NNET_REQ_POSTED || r->gen != gen) {
		err = -EINVAL;
		goto out;
	}
	err = atomic_load(&c->err);
	if (!err)
		err = ctrl_progress(c);
	/* Only a request whose slices are queued has anything to assist (none inline). */
	if (!err && r->ctrl_done && atomic_load_explicit(&r->pending, memory_order_acquire))
		err = comm_assist(c, r);
	if (err) {
		nnet_comm_fail(c, err);
		ctrl_abort(c);
		err = atomic_load(&c->err);
		goto out;
	}
	if (r->ctrl_done && atomic_load_explicit(&r->pending, memory_order_acquire) == 0) {
		*done = 1;
		if (size)
			*size = r->size;
		r->state = NNET_REQ_FREE;
		r->gen++;
		c->alive_ms = 0; /* progress: a later stall is timed from its own start */
	} else if (c->send && c->timeout_ms && (err = stall_check(c))) {
		nnet_comm_fail(c, err);
		ctrl_abort(c);
		err = atomic_load(&c->err);
	}
out:
	pthread_mutex_unlock(&c->mu);
	return err;
}

uint64_t *nnet_req_user(void *req)
{
	uint16_t gen;
	struct nnet_req *r = req_decode(req, &gen);

	return r && r->gen == gen && r->state == NNET_REQ_POSTED ? r->user : NULL;
}

int nnet_comm_set_tos(struct nnet_comm *c, int tos, int priority)
{
	int fam, err = 0;

	if (!c)
		return -EINVAL;
	fam = c->peer.sa.sa_family;
	for (int i = -1; i < c->nsocks && !err; i++) {
		int fd = i < 0 ? c->ctrl_fd : c->socks[i].fd;

		if (tos >= 0 &&
		    setsockopt(fd, fam == AF_INET6 ? IPPROTO_IPV6 : IPPROTO_IP,
			       fam == AF_INET6 ? IPV6_TCLASS : IP_TOS, &tos, sizeof(tos)))
			err = -errno;
		if (!err && priority >= 0 &&
		    setsockopt(fd, SOL_SOCKET, SO_PRIORITY, &priority, sizeof(priority)))
			err = -errno;
	}
	return err;
}

int nnet_comm_nsocks(const struct nnet_comm *c)
{
	return c ? c->nsocks : 0;
}

int nnet_comm_dev(const struct nnet_comm *c)
{
	return c ? c->dev : -1;
}

const union nnet_addr *nnet_comm_peer(const struct nnet_comm *c)
{
	return c ? &c->peer : NULL;
}

int nnet_comm_fd(const struct nnet_comm *c, int i)
{
	if (!c || i < -1 || i >= c->nsocks)
		return -1;
	return i < 0 ? c->ctrl_fd : c->socks[i].fd;
}
