// SPDX-License-Identifier: Apache-2.0
/*
 * test_net_abi.c - two endpoints through every net ABI version (v6..v12)
 * of libnccl-ncclbpf.so over loopback: in one process, and across two
 * processes (the peer is this binary re-executed, so it starts with a
 * clean address space instead of a fork of a threaded one).
 *
 * Checks: properties, connect/accept as non-blocking state machines,
 * 0-byte and odd-sized messages, inline and sliced messages, content and
 * reported sizes, NBPF_NET_MAX_REQUESTS in flight and the busy answer
 * beyond, a receive buffer larger than the message, the v9+ pre-set
 * request, and the library's short name (libnccl-net-ncclbpf.so).
 *
 * Run with NCCL_SOCKET_IFNAME=lo (ctest sets it).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "net_drv.h"

#define TMO 10000

static const size_t sizes[] = { 0, 1, 8, 4095, 65536, 65537, (1 << 20) + 3, 8 << 20 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 9));
}

static int same(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed * 131 + i * 7 + (i >> 9)))
			return 0;
	return 1;
}

/* ---- a stand-in for NCCL's profiler callback (net v10+) ----------------------- */

static int prof_marker;
static int prof_starts, prof_stops, prof_bad;

static int fake_prof(void **eh, int type, void *ph, int64_t plugin_id, void *ext)
{
	const nbpf_net_prof_sock_descr_t *d = ext;

	if (!eh) {
		prof_bad++;
		return 0;
	}
	if (type == NBPF_NET_PROF_START) {
		if (*eh != NULL || ph != &prof_marker || plugin_id != ((2 << 16) | 1) || !d ||
		    d->type != NBPF_NET_PROF_SOCKET || d->sock.fd < 0 || d->sock.op < 0 || d->sock.op > 1)
			prof_bad++;
		*eh = (void *)(intptr_t)(0x1000 + ++prof_starts);
	} else if (type == NBPF_NET_PROF_STOP) {
		intptr_t h = (intptr_t)*eh;

		if (h <= 0x1000 || h > 0x1000 + prof_starts)
			prof_bad++;
		prof_stops++;
	}
	return 0;
}

static void check_props(struct drv *d)
{
	struct drv_props p;
	int n = 0;

	CHECK(drv_devices(d, &n) == 0);
	CHECK_MSG(n >= 1, "v%d: %d devices", d->v, n);
	CHECK(drv_props(d, 0, &p) == 0);
	CHECK(p.name && !strcmp(p.name, "lo"));
	CHECK_EQ_U64(p.ptr_support, NBPF_NET_PTR_HOST);
	CHECK_EQ_U64(p.max_recvs, 1);
	CHECK(p.speed > 0 && p.max_comms > 0);
	if (d->v >= 9)
		CHECK(p.max_p2p >= (1ull << 30));
	CHECK(drv_props(d, n, &p) != 0);  /* no such device */
	CHECK(drv_props(d, -1, &p) != 0);
}

/* Sends every size both ways sequentially, then a burst of requests in flight. */
static void exchange(struct drv *d, void *sc, void *rc)
{
	size_t max = sizes[NSIZES - 1];
	unsigned char *sb = malloc(max), *rb = malloc(max + 64);
	void *smh = NULL, *rmh = NULL, *sr, *rr;
	int sz;

	CHECK(drv_regmr(d, sc, sb, max, NBPF_NET_PTR_HOST, &smh) == 0);
	CHECK(drv_regmr(d, rc, rb, max + 64, NBPF_NET_PTR_HOST, &rmh) == 0);
	CHECK(drv_regmr(d, rc, rb, 64, NBPF_NET_PTR_CUDA, &rmh) != 0); /* host memory only */
	for (size_t i = 0; i < NSIZES; i++) {
		fill(sb, sizes[i], (unsigned)i);
		memset(rb, 0xee, max + 64);
		sr = rr = NULL;
		CHECK(drv_irecv(d, rc, rb, max + 64, 7, rmh, &rr) == 0 && rr && rr != (void *)0x1);
		CHECK(drv_isend(d, sc, sb, sizes[i], 7, smh, &sr) == 0 && sr);
		sz = -1;
		CHECK(drv_wait(d, sr, &sz, TMO) == 0);
		CHECK_EQ_U64(sz, sizes[i]);
		sz = -1;
		CHECK(drv_wait(d, rr, &sz, TMO) == 0);
		CHECK_MSG(sz == (int)sizes[i], "v%d size %zu got %d", d->v, sizes[i], sz);
		CHECK(same(rb, sizes[i], (unsigned)i));
		CHECK(rb[sizes[i]] == 0xee); /* nothing past the message */
	}

	/* All NBPF_NET_MAX_REQUESTS in flight on both sides, mixed sizes; one more is "busy". */
	enum { N = NBPF_NET_MAX_REQUESTS, SL = 96 << 10 };
	unsigned char *big_s = malloc((size_t)N * SL), *big_r = malloc((size_t)N * SL);
	void *sreq[N], *rreq[N], *extra = (void *)0x2;

	for (int i = 0; i < N; i++) {
		size_t n = (size_t)(i * 3001) % SL;

		fill(big_s + (size_t)i * SL, n, 100u + (unsigned)i);
		CHECK(drv_irecv(d, rc, big_r + (size_t)i * SL, SL, 0, rmh, &rreq[i]) == 0 && rreq[i]);
		CHECK(drv_isend(d, sc, big_s + (size_t)i * SL, n, 0, smh, &sreq[i]) == 0 && sreq[i]);
	}
	CHECK(drv_isend(d, sc, big_s, 1, 0, smh, &extra) == 0 && extra == NULL);
	for (int i = N - 1; i >= 0; i--) { /* out of order on purpose */
		sz = -1;
		CHECK(drv_wait(d, rreq[i], &sz, TMO) == 0);
		CHECK_EQ_U64(sz, (size_t)(i * 3001) % SL);
		CHECK(same(big_r + (size_t)i * SL, (size_t)sz, 100u + (unsigned)i));
		CHECK(drv_wait(d, sreq[i], NULL, TMO) == 0);
	}
	CHECK(drv_deregmr(d, sc, smh) == 0);
	CHECK(drv_deregmr(d, rc, rmh) == 0);
	free(big_s);
	free(big_r);
	free(sb);
	free(rb);
}

static void in_process(void *lib, int v)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE];
	void *lc = NULL, *sc, *rc;
	struct drv d;

	CHECK(drv_bind(&d, lib, v) == 0);
	prof_starts = prof_stops = prof_bad = 0;
	drv_phandle = &prof_marker;
	CHECK_MSG(drv_init(&d, 0x1234 + (uint64_t)v, -1, fake_prof) == 0, "v%d init", v);
	check_props(&d);
	memset(handle, 0, sizeof(handle));
	CHECK(drv_listen(&d, 0, handle, &lc) == 0 && lc);
	CHECK_MSG(drv_pair(&d, 0, handle, lc, &sc, &rc, TMO) == 0, "v%d connect/accept", v);
	CHECK(drv_close_listen(&d, lc) == 0);
	if (sc && rc)
		exchange(&d, sc, rc);
	CHECK(drv_close_send(&d, sc) == 0);
	CHECK(drv_close_recv(&d, rc) == 0);
	CHECK(drv_finalize(&d) == 0);
	/* v10+: one NetPlugin event per message, every one stopped; none before v10. */
	CHECK_EQ_U64(prof_starts, v >= 10 ? 2 * NSIZES + 2 * NBPF_NET_MAX_REQUESTS : 0);
	CHECK_EQ_U64(prof_stops, prof_starts);
	CHECK_EQ_U64(prof_bad, 0);
	drv_phandle = NULL;
}

/* ---- two processes --------------------------------------------------------- */

static const char *self_exe = "/proc/self/exe";

/* Child: connect to the handle read from fd 0, send every size, receive an echo of the last. */
static int child_main(const char *libpath, int v)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE];
	void *lib = drv_open(libpath), *sc = NULL, *rc = NULL, *lc = NULL, *req, *unused;
	size_t max = sizes[NSIZES - 1];
	unsigned char *b;
	struct drv d;
	int sz;

	if (!lib || drv_bind(&d, lib, v) || drv_init(&d, 99, -1, NULL))
		return 10;
	if (read(0, handle, sizeof(handle)) != (ssize_t)sizeof(handle))
		return 11;
	if (drv_pair(&d, 0, handle, NULL, &sc, &unused, TMO))
		return 12;
	/* Second connection the other way: our listen handle goes to the parent. */
	if (drv_listen(&d, 0, handle, &lc) || write(1, handle, sizeof(handle)) != (ssize_t)sizeof(handle))
		return 13;
	if (drv_pair(&d, 0, NULL, lc, &unused, &rc, TMO))
		return 14;
	b = malloc(max);
	for (size_t i = 0; i < NSIZES; i++) {
		fill(b, sizes[i], (unsigned)i + 7);
		if (drv_isend(&d, sc, b, sizes[i], 1, NULL, &req) || !req || drv_wait(&d, req, &sz, TMO))
			return 15;
	}
	if (drv_irecv(&d, rc, b, max, 1, NULL, &req) || !req || drv_wait(&d, req, &sz, TMO) ||
	    sz != 12345 || !same(b, 12345, 3))
		return 16;
	drv_close_send(&d, sc);
	drv_close_recv(&d, rc);
	drv_close_listen(&d, lc);
	drv_finalize(&d);
	free(b);
	return 0;
}

static pid_t spawn_child(const char *libpath, int v, int *to_child, int *from_child)
{
	int a[2], b[2];
	char vs[8];
	pid_t pid;

	if (pipe(a) || pipe(b))
		return -1;
	snprintf(vs, sizeof(vs), "%d", v);
	pid = fork();
	if (pid == 0) {
		dup2(a[0], 0);
		dup2(b[1], 1);
		close(a[1]);
		close(b[0]);
		execl(self_exe, "test_net_abi", "--child", libpath, vs, (char *)NULL);
		_exit(127);
	}
	close(a[0]);
	close(b[1]);
	*to_child = a[1];
	*from_child = b[0];
	return pid;
}

static void two_processes(const char *libpath, void *lib, int v)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE];
	void *lc = NULL, *lc2 = NULL, *sc = NULL, *rc = NULL, *req;
	size_t max = sizes[NSIZES - 1];
	unsigned char *b = malloc(max);
	int to = -1, from = -1, st = -1, sz;
	struct drv d;
	pid_t pid;

	CHECK(drv_bind(&d, lib, v) == 0);
	CHECK(drv_init(&d, 77, -1, NULL) == 0);
	memset(handle, 0, sizeof(handle));
	CHECK(drv_listen(&d, 0, handle, &lc) == 0);
	pid = spawn_child(libpath, v, &to, &from);
	CHECK(pid > 0);
	CHECK(write(to, handle, sizeof(handle)) == (ssize_t)sizeof(handle));
	CHECK(drv_pair(&d, 0, NULL, lc, &sc, &rc, TMO) == 0 && rc);
	CHECK(read(from, handle, sizeof(handle)) == (ssize_t)sizeof(handle));
	CHECK(drv_pair(&d, 0, handle, NULL, &sc, &lc2, TMO) == 0 && sc);
	for (size_t i = 0; rc && i < NSIZES; i++) {
		req = NULL;
		memset(b, 0, max);
		CHECK(drv_irecv(&d, rc, b, max, 1, NULL, &req) == 0 && req);
		sz = -1;
		CHECK(drv_wait(&d, req, &sz, TMO) == 0);
		CHECK_MSG(sz == (int)sizes[i] && same(b, sizes[i], (unsigned)i + 7),
			  "v%d cross-process message %zu: size %d", v, i, sz);
	}
	fill(b, 12345, 3);
	CHECK(sc && drv_isend(&d, sc, b, 12345, 1, NULL, &req) == 0 && req);
	CHECK(drv_wait(&d, req, &sz, TMO) == 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "v%d child status 0x%x", v, st);
	drv_close_send(&d, sc);
	drv_close_recv(&d, rc);
	drv_close_listen(&d, lc);
	close(to);
	close(from);
	CHECK(drv_finalize(&d) == 0);
	free(b);
}

int main(int argc, char **argv)
{
	const char *libpath = NET_PLUGIN;
	void *lib;

	if (argc == 4 && !strcmp(argv[1], "--child"))
		return child_main(argv[2], atoi(argv[3]));
	signal(SIGPIPE, SIG_IGN);
	setenv("NCCL_SOCKET_IFNAME", "lo", 0);
	/* NCCL_NET_PLUGIN=ncclbpf resolves to this name. */
	lib = drv_open(NET_PLUGIN_SHORT);
	CHECK(lib != NULL);
	if (!lib)
		return check_summary("net_abi");
	for (int v = 12; v >= 6; v--)
		in_process(lib, v);
	for (int v = 12; v >= 6; v--)
		two_processes(libpath, lib, v);
	dlclose(lib);
	return check_summary("net_abi");
}
