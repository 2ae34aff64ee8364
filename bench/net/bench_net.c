// SPDX-License-Identifier: Apache-2.0
/*
 * bench_net.c - the net plugin's transport against plain TCP, and the
 * per-message cost of the net hooks.
 *
 *   bench_net plugin [--streams N] [--min B] [--max B] [--budget B]
 *       Our socket transport through ncclNetPlugin_v11 over loopback: one
 *       thread drives the send comm, one the receive comm, 4 messages in
 *       flight (NCCL keeps up to 8 steps per connection), N data sockets
 *       (NCCL_SOCKET_NTHREADS=N, NCCL_NSOCKS_PERTHREAD=1).  Whatever
 *       NCCLBPF_POLICY names runs on every event.
 *   bench_net tcp [--streams N] ...
 *       The reference: N plain TCP connections over loopback, each message
 *       cut into N equal parts, one blocking sender and one blocking
 *       receiver thread per stream, the same 4-message window.
 *   bench_net hook [--msgs N]
 *       ns per message (isend + irecv + their tests; best of 40 runs of N
 *       messages, default 20000) through the library
 *       wrapping bench/net/null_plugin.c (NCCLBPF_NET=inner:...), which
 *       moves nothing: run with and without a policy, the difference is
 *       what the hooks cost per message.
 *
 * BENCH_NET_PLUGIN and BENCH_NULL_PLUGIN, when set, replace the libraries'
 * build-tree paths (for a copy of the build run on another machine).
 *
 * Sizes: --min, then powers of 4 from 16 up to --max (8 B, 16 B, 64 B ...
 * 1 GiB by default); the driving loops sched_yield() after a pass that
 * completed nothing, as NCCL's proxy thread does;
 * each size moves about --budget bytes (default 256 MiB), at least 3 and
 * at most 20000 messages.  Both sides' buffers are written before any
 * timing (no page is faulted in on the clock), and each size first moves
 * a quarter of its messages (at least 2) untimed, so the timed run starts
 * in the steady state (TCP windows open after the idle gap between sizes,
 * helper threads awake).  Output: one line per size, GB/s and us per
 * message (throughput is the timed run's bytes over its wall time).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../bench_util.h"
#include "../../tests/net/net_drv.h"

#define WINDOW 4
#define MAX_STREAMS 16

static const char *lib_path(const char *env, const char *built)
{
	const char *p = getenv(env);

	return p && *p ? p : built;
}

static size_t opt_min = 8, opt_max = 1ull << 30, opt_budget = 256ull << 20;
static int opt_streams = 2;
static long opt_msgs = 20000;

static long msgs_for(size_t size)
{
	long n = (long)(opt_budget / (size ? size : 1));

	return n < 3 ? 3 : n > 20000 ? 20000 : n;
}

/* Messages moved untimed before each size's timed run. */
static long warmup_for(long n)
{
	return n / 4 < 2 ? 2 : n / 4;
}

/* 8, 16, 64, 256, ... 1 GiB: powers of 4 from 16, so 64 KiB, 4 MiB and 1 GiB are hit. */
static size_t next_size(size_t size)
{
	return size < 16 ? 16 : size * 4;
}

/* ---- ours, through the ABI -------------------------------------------------- */

struct side {
	struct drv *d;
	void *comm;
	char *buf;
	size_t size;
	long n;
	int err;
};

static void *send_main(void *arg)
{
	struct side *s = arg;
	void *req[WINDOW] = { NULL };
	long posted = 0, done = 0;

	while (done < s->n && !s->err) {
		bool moved = false;

		for (int w = 0; w < WINDOW; w++) {
			int fin = 0;

			if (!req[w] && posted < s->n) {
				if (drv_isend(s->d, s->comm, s->buf, s->size, 0, NULL, &req[w]))
					s->err = 1;
				if (req[w])
					posted++;
			}
			if (req[w]) {
				if (drv_test(s->d, req[w], &fin, NULL))
					s->err = 1;
				if (fin) {
					req[w] = NULL;
					done++;
					moved = true;
				}
			}
		}
		/* As NCCL's proxy progress loop does when a pass completes nothing. */
		if (!moved)
			sched_yield();
	}
	return NULL;
}

static void *recv_main(void *arg)
{
	struct side *s = arg;
	void *req[WINDOW] = { NULL };
	long posted = 0, done = 0;

	while (done < s->n && !s->err) {
		bool moved = false;

		for (int w = 0; w < WINDOW; w++) {
			int fin = 0;

			if (!req[w] && posted < s->n) {
				if (drv_irecv(s->d, s->comm, s->buf, s->size, 0, NULL, &req[w]))
					s->err = 1;
				if (req[w])
					posted++;
			}
			if (req[w]) {
				if (drv_test(s->d, req[w], &fin, NULL))
					s->err = 1;
				if (fin) {
					req[w] = NULL;
					done++;
					moved = true;
				}
			}
		}
		/* As NCCL's proxy progress loop does when a pass completes nothing. */
		if (!moved)
			sched_yield();
	}
	return NULL;
}

static int run_plugin(void)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE], n[16];
	void *lib, *lc = NULL, *sc, *rc;
	char *sb = malloc(opt_max ? opt_max : 1), *rb = malloc(opt_max ? opt_max : 1);
	struct drv d;

	snprintf(n, sizeof(n), "%d", opt_streams);
	setenv("NCCL_SOCKET_NTHREADS", n, 1);
	setenv("NCCL_NSOCKS_PERTHREAD", "1", 1);
	setenv("NCCL_SOCKET_IFNAME", "lo", 0);
	lib = drv_open(lib_path("BENCH_NET_PLUGIN", NET_PLUGIN));
	if (!sb || !rb || !lib || drv_bind(&d, lib, 11) || drv_init(&d, 1, -1, NULL) ||
	    drv_listen(&d, 0, handle, &lc) || drv_pair(&d, 0, handle, lc, &sc, &rc, 10000)) {
		fprintf(stderr, "bench_net: cannot set up the plugin\n");
		return 1;
	}
	memset(sb, 1, opt_max);
	memset(rb, 0, opt_max);
	printf("# ours: socket transport via ncclNetPlugin_v11, %d data sockets, window %d, policy %s\n",
	       opt_streams, WINDOW, getenv("NCCLBPF_POLICY") ? getenv("NCCLBPF_POLICY") : "(none)");
	printf("%12s %8s %10s %10s\n", "bytes", "msgs", "GB/s", "us/msg");
	for (size_t size = opt_min; size <= opt_max; size = next_size(size)) {
		long n = msgs_for(size);
		struct side s = { &d, sc, sb, size, 0, 0 }, r = { &d, rc, rb, size, 0, 0 };
		uint64_t t0 = 0, dt;

		for (int timed = 0; timed < 2 && !s.err && !r.err; timed++) {
			pthread_t ts, tr;

			s.n = r.n = timed ? n : warmup_for(n);
			if (timed)
				t0 = now_ns();
			pthread_create(&tr, NULL, recv_main, &r);
			pthread_create(&ts, NULL, send_main, &s);
			pthread_join(ts, NULL);
			pthread_join(tr, NULL);
		}
		dt = now_ns() - t0;
		if (s.err || r.err) {
			fprintf(stderr, "bench_net: transfer failed at %zu bytes\n", size);
			return 1;
		}
		printf("%12zu %8ld %10.3f %10.2f\n", size, s.n, (double)size * (double)s.n / (double)dt,
		       (double)dt / 1e3 / (double)s.n);
		fflush(stdout);
	}
	drv_close_send(&d, sc);
	drv_close_recv(&d, rc);
	drv_close_listen(&d, lc);
	drv_finalize(&d);
	free(sb);
	free(rb);
	return 0;
}

/* ---- the plain TCP reference ---------------------------------------------------- */

struct stream {
	int fd;
	char *buf;
	size_t part;
	long n;
	bool send;
	int err;
};

static void *stream_main(void *arg)
{
	struct stream *s = arg;

	for (long i = 0; i < s->n && !s->err; i++) {
		size_t off = 0;

		while (off < s->part) {
			ssize_t k = s->send ? send(s->fd, s->buf + off, s->part - off, MSG_NOSIGNAL)
					    : recv(s->fd, s->buf + off, s->part - off, 0);

			if (k <= 0) {
				s->err = 1;
				break;
			}
			off += (size_t)k;
		}
	}
	return NULL;
}

static int tcp_pair(int *a, int *b)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&sa, &len))
		return -1;
	*a = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(*a, (struct sockaddr *)&sa, sizeof(sa)))
		return -1;
	*b = accept(l, NULL, NULL);
	close(l);
	setsockopt(*a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return *b < 0 ? -1 : 0;
}

static int run_tcp(void)
{
	int sfd[MAX_STREAMS], rfd[MAX_STREAMS];
	char *sb = malloc(opt_max ? opt_max : 1), *rb = malloc(opt_max ? opt_max : 1);

	for (int i = 0; i < opt_streams; i++)
		if (tcp_pair(&sfd[i], &rfd[i])) {
			fprintf(stderr, "bench_net: loopback TCP failed\n");
			return 1;
		}
	/* Both buffers written first: the receiver's pages were faulted in on the clock. */
	memset(sb, 1, opt_max);
	memset(rb, 0, opt_max);
	printf("# reference: plain TCP, %d streams, blocking, one thread per stream and side\n",
	       opt_streams);
	printf("%12s %8s %10s %10s\n", "bytes", "msgs", "GB/s", "us/msg");
	for (size_t size = opt_min; size <= opt_max; size = next_size(size)) {
		struct stream st[2 * MAX_STREAMS];
		pthread_t t[2 * MAX_STREAMS];
		size_t part = (size + (size_t)opt_streams - 1) / (size_t)opt_streams;
		long n = msgs_for(size);
		uint64_t t0 = 0, dt;
		int err = 0;

		for (int timed = 0; timed < 2 && !err; timed++) {
			long k = timed ? n : warmup_for(n);

			for (int i = 0; i < opt_streams; i++) {
				size_t off = part * (size_t)i,
				       len = off >= size ? 0 : size - off < part ? size - off : part;

				st[2 * i] = (struct stream){ sfd[i], sb + (off < size ? off : 0), len, k,
							     true, 0 };
				st[2 * i + 1] = (struct stream){ rfd[i], rb + (off < size ? off : 0), len,
								 k, false, 0 };
			}
			if (timed)
				t0 = now_ns();
			for (int i = 0; i < 2 * opt_streams; i++)
				pthread_create(&t[i], NULL, stream_main, &st[i]);
			for (int i = 0; i < 2 * opt_streams; i++) {
				pthread_join(t[i], NULL);
				err |= st[i].err;
			}
		}
		dt = now_ns() - t0;
		if (err)
			return 1;
		printf("%12zu %8ld %10.3f %10.2f\n", size, n, (double)size * (double)n / (double)dt,
		       (double)dt / 1e3 / (double)n);
		fflush(stdout);
	}
	free(sb);
	free(rb);
	return 0;
}

/* ---- hook cost through the wrapper over a plugin that moves nothing ----------- */

static int run_hook(void)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE], spec[600], buf[64];
	void *lib, *lc = NULL, *sc, *rc, *req;
	struct drv d;
	uint64_t best = UINT64_MAX;
	int done;

	snprintf(spec, sizeof(spec), "inner:%s", lib_path("BENCH_NULL_PLUGIN", NULL_PLUGIN));
	setenv("NCCLBPF_NET", spec, 1);
	lib = drv_open(lib_path("BENCH_NET_PLUGIN", NET_PLUGIN));
	if (!lib || drv_bind(&d, lib, 11) || drv_init(&d, 1, -1, NULL) ||
	    drv_listen(&d, 0, handle, &lc) || drv_pair(&d, 0, handle, lc, &sc, &rc, 1000)) {
		fprintf(stderr, "bench_net: cannot set up the wrapper\n");
		return 1;
	}
	/* Best of 40 short runs: on a shared machine the minimum is the least disturbed. */
	for (int rep = 0; rep < 40; rep++) {
		uint64_t t0 = now_ns(), dt;

		for (long i = 0; i < opt_msgs; i++) {
			drv_isend(&d, sc, buf, 8, 0, NULL, &req);
			drv_test(&d, req, &done, NULL);
			drv_irecv(&d, rc, buf, 8, 0, NULL, &req);
			drv_test(&d, req, &done, NULL);
		}
		dt = now_ns() - t0;
		if (dt < best)
			best = dt;
	}
	printf("# wrapper over a null inner plugin, policy %s\n",
	       getenv("NCCLBPF_POLICY") ? getenv("NCCLBPF_POLICY") : "(none)");
	printf("ns per message (post + test, one send and one receive side each): %.1f\n",
	       (double)best / (double)opt_msgs / 2.0);
	drv_close_send(&d, sc);
	drv_close_recv(&d, rc);
	drv_finalize(&d);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	signal(SIGPIPE, SIG_IGN);
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--streams"))
			opt_streams = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--min"))
			opt_min = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--max"))
			opt_max = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--budget"))
			opt_budget = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--msgs"))
			opt_msgs = atol(argv[i + 1]);
	}
	if (opt_streams < 1 || opt_streams > MAX_STREAMS || opt_min < 1 || opt_max < opt_min)
		mode = "";
	if (!strcmp(mode, "plugin"))
		return run_plugin();
	if (!strcmp(mode, "tcp"))
		return run_tcp();
	if (!strcmp(mode, "hook"))
		return run_hook();
	fprintf(stderr, "usage: bench_net plugin|tcp|hook [--streams N] [--min B] [--max B] "
			"[--budget B] [--msgs N]\n");
	return 2;
}
