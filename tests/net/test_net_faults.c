// SPDX-License-Identifier: Apache-2.0
/*
 * test_net_faults.c - what NCCL sees when things go wrong: every fault
 * must end in an error result within a bounded time, never a hang or a
 * crash.  Faults: peer killed mid-message (receiver and sender side),
 * connection reset (RST), peer closing with a receive posted, a message
 * larger than the receive buffer (inline and sliced; the sender must fail
 * too), bad and stale handles, comms of the wrong kind, test on a
 * finished, NULL or foreign request.  Peers that die are this binary
 * re-executed.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "net_drv.h"

#define TMO 10000
/* Pairing with a child just started: its start and the plugin's load take
 * seconds under a sanitizer on a loaded machine. */
#define PAIR_TMO 120000
#define BIG (64u << 20)
#define V 11

static struct drv d;

static void *big_buf(void)
{
	void *p = malloc(BIG);

	if (p)
		memset(p, 0x5a, BIG);
	return p;
}

/* ---- the dying peer ------------------------------------------------------- */

static void set_rst_on_close(void)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	for (int fd = 3; fd < 1024; fd++)
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

/*
 * Modes: "send-die" connects, posts a BIG send and stops itself (SIGSTOP,
 * so its helpers send no more) for the parent to kill;
 * "recv-die" accepts the parent's connection and dies without receiving;
 * "rst" connects and exits with every socket set to reset on close.
 */
static int child_main(const char *lib_path, const char *mode)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE], go;
	void *lib = drv_open(lib_path), *sc = NULL, *rc = NULL, *lc = NULL, *req = NULL;
	void *buf = big_buf();

	if (!lib || !buf || drv_bind(&d, lib, V) || drv_init(&d, 5, -1, NULL))
		return 10;
	if (!strcmp(mode, "recv-die")) {
		if (drv_listen(&d, 0, handle, &lc) ||
		    write(1, handle, sizeof(handle)) != (ssize_t)sizeof(handle) ||
		    drv_pair(&d, 0, NULL, lc, &sc, &rc, PAIR_TMO))
			return 11;
		if (read(0, &go, 1) != 1)
			return 12;
		raise(SIGKILL);
	}
	if (read(0, handle, sizeof(handle)) != (ssize_t)sizeof(handle) ||
	    drv_pair(&d, 0, handle, NULL, &sc, &rc, PAIR_TMO))
		return 13;
	if (!strcmp(mode, "rst")) {
		set_rst_on_close();
		_exit(0);
	}
	if (drv_isend(&d, sc, buf, BIG, 0, NULL, &req) || !req)
		return 14;
	/* Push what the socket buffers take, then vanish mid-message. */
	for (int i = 0; i < 1000; i++) {
		int done = 0;

		drv_test(&d, req, &done, NULL);
	}
	if (write(1, "r", 1) != 1)
		return 15;
	raise(SIGSTOP);
	return 16;
}

static pid_t spawn(const char *mode, int *to, int *from)
{
	int a[2], b[2];
	pid_t pid;

	if (pipe(a) || pipe(b))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(a[0], 0);
		dup2(b[1], 1);
		close(a[1]);
		close(b[0]);
		execl("/proc/self/exe", "test_net_faults", "--child", NET_PLUGIN, mode, (char *)NULL);
		_exit(127);
	}
	close(a[0]);
	close(b[1]);
	*to = a[1];
	*from = b[0];
	return pid;
}

static void reap(pid_t pid, int to, int from)
{
	int st;

	close(to);
	close(from);
	waitpid(pid, &st, 0);
}

/* The receiver gets an error, not a hang, when the sender dies mid-message. */
static void peer_killed_sending(void)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE], c;
	void *lc = NULL, *sc, *rc = NULL, *req = NULL, *buf = big_buf();
	int to, from, st, r;
	pid_t pid;

	CHECK(drv_listen(&d, 0, handle, &lc) == 0);
	pid = spawn("send-die", &to, &from);
	CHECK(write(to, handle, sizeof(handle)) == (ssize_t)sizeof(handle));
	CHECK(drv_pair(&d, 0, NULL, lc, &sc, &rc, PAIR_TMO) == 0 && rc);
	/*
	 * Start receiving: part of the message is in, the rest never comes.  The
	 * peer is stopped before it is killed, so what it sent is bounded by the
	 * socket buffers however fast this side drains them.
	 */
	CHECK(drv_irecv(&d, rc, buf, BIG, 0, NULL, &req) == 0 && req);
	CHECK(read(from, &c, 1) == 1);
	CHECK(waitpid(pid, &st, WUNTRACED) == pid && WIFSTOPPED(st));
	for (int i = 0; i < 100; i++) {
		int done = 0;

		CHECK(drv_test(&d, req, &done, NULL) == 0 && !done);
	}
	CHECK(kill(pid, SIGKILL) == 0);
	CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st));
	r = drv_wait(&d, req, NULL, TMO);
	CHECK_MSG(r == NBPF_NCCL_REMOTE_ERROR, "receiver of a killed peer got %d", r);
	/* Sticky: later calls fail the same way, no new request is accepted. */
	req = NULL;
	CHECK(drv_irecv(&d, rc, buf, 16, 0, NULL, &req) == NBPF_NCCL_REMOTE_ERROR && !req);
	CHECK(drv_close_recv(&d, rc) == 0);
	CHECK(drv_close_listen(&d, lc) == 0);
	close(to);
	close(from);
	free(buf);
}

/* The sender gets an error when the receiver dies with the message half-sent. */
static void peer_killed_receiving(void)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE];
	void *sc = NULL, *rc, *req = NULL, *buf = big_buf();
	int to, from, st, r;
	pid_t pid;

	pid = spawn("recv-die", &to, &from);
	CHECK(read(from, handle, sizeof(handle)) == (ssize_t)sizeof(handle));
	CHECK(drv_pair(&d, 0, handle, NULL, &sc, &rc, PAIR_TMO) == 0 && sc);
	CHECK(drv_isend(&d, sc, buf, BIG, 0, NULL, &req) == 0 && req);
	CHECK(write(to, "k", 1) == 1);
	CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st));
	r = drv_wait(&d, req, NULL, TMO);
	CHECK_MSG(r == NBPF_NCCL_REMOTE_ERROR, "sender to a killed peer got %d", r);
	CHECK(drv_close_send(&d, sc) == 0);
	close(to);
	close(from);
	free(buf);
}

/* A reset (RST) connection fails the next receive. */
static void connection_reset(void)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE], buf[64];
	void *lc = NULL, *sc, *rc = NULL, *req = NULL;
	int to, from, r;
	pid_t pid;

	CHECK(drv_listen(&d, 0, handle, &lc) == 0);
	pid = spawn("rst", &to, &from);
	CHECK(write(to, handle, sizeof(handle)) == (ssize_t)sizeof(handle));
	CHECK(drv_pair(&d, 0, NULL, lc, &sc, &rc, PAIR_TMO) == 0 && rc);
	reap(pid, to, from);
	CHECK(drv_irecv(&d, rc, buf, sizeof(buf), 0, NULL, &req) == 0 || req == NULL);
	r = req ? drv_wait(&d, req, NULL, TMO) : NBPF_NCCL_REMOTE_ERROR;
	CHECK_MSG(r == NBPF_NCCL_REMOTE_ERROR, "receive on a reset connection got %d", r);
	CHECK(drv_close_recv(&d, rc) == 0);
	CHECK(drv_close_listen(&d, lc) == 0);
}

/* ---- in one process ----------------------------------------------------------- */

static void connected(void **sc, void **rc)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE];
	void *lc = NULL;

	CHECK(drv_listen(&d, 0, handle, &lc) == 0);
	CHECK(drv_pair(&d, 0, handle, lc, sc, rc, TMO) == 0 && *sc && *rc);
	CHECK(drv_close_listen(&d, lc) == 0);
}

/*
 * settle_ms lets the sender fill the receiver's socket buffers before the
 * receiver sees the header: the sender then faces a zero window, which a
 * mere shutdown on the receiving side never reopens (it hung until TMO).
 */
static void truncated(size_t send, size_t cap, unsigned settle_ms)
{
	void *sc, *rc, *sreq = NULL, *rreq = NULL, *buf = big_buf();
	int r;

	connected(&sc, &rc);
	CHECK(drv_irecv(&d, rc, buf, cap, 0, NULL, &rreq) == 0 && rreq);
	CHECK(drv_isend(&d, sc, buf, send, 0, NULL, &sreq) == 0 && sreq);
	if (settle_ms)
		usleep(settle_ms * 1000u);
	r = drv_wait(&d, rreq, NULL, TMO);
	CHECK_MSG(r == NBPF_NCCL_INVALID_USAGE, "truncated %zu into %zu: %d", send, cap, r);
	/*
	 * The receiver shut the connection: the sender fails too instead of
	 * waiting.  A message the kernel's socket buffers took whole before the
	 * shutdown (up to a few MiB per socket on loopback) completes on the
	 * sending side, as with any TCP send; BIG never fits.
	 */
	r = drv_wait(&d, sreq, NULL, TMO);
	CHECK_MSG(r == NBPF_NCCL_REMOTE_ERROR || (send < BIG && r == 0),
		  "sender of a truncated message got %d", r);
	CHECK(drv_close_send(&d, sc) == 0);
	CHECK(drv_close_recv(&d, rc) == 0);
	free(buf);
}

static void peer_closed(void)
{
	void *sc, *rc, *req = NULL;
	char buf[16];
	int r;

	connected(&sc, &rc);
	CHECK(drv_irecv(&d, rc, buf, sizeof(buf), 0, NULL, &req) == 0 && req);
	CHECK(drv_close_send(&d, sc) == 0);
	r = drv_wait(&d, req, NULL, TMO);
	CHECK_MSG(r == NBPF_NCCL_REMOTE_ERROR, "receive after the peer closed: %d", r);
	CHECK(drv_close_recv(&d, rc) == 0);
}

static void bad_handles(void)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE], real[NBPF_NET_HANDLE_MAXSIZE];
	void *sc = (void *)0x1, *lc = NULL, *rc;
	int r;

	memset(handle, 0, sizeof(handle));
	CHECK(drv_connect(&d, 0, handle, &sc) == NBPF_NCCL_INVALID_ARGUMENT && sc == NULL);
	for (size_t i = 0; i < sizeof(handle); i++)
		handle[i] = (char)(i * 37 + 11);
	CHECK(drv_connect(&d, 0, handle, &sc) == NBPF_NCCL_INVALID_ARGUMENT && sc == NULL);
	/* A real handle whose connect state has been tampered with. */
	CHECK(drv_listen(&d, 0, real, &lc) == 0);
	memcpy(handle, real, sizeof(handle));
	memset(handle + sizeof(handle) - 80, 0x77, 80);
	r = drv_connect(&d, 0, handle, &sc);
	CHECK_MSG(r == NBPF_NCCL_INVALID_ARGUMENT && !sc, "tampered handle: %d", r);
	CHECK(drv_connect(&d, 99, real, &sc) == NBPF_NCCL_INVALID_ARGUMENT); /* no such device */
	/* A handle of a listener that is gone: refused, not a hang. */
	CHECK(drv_close_listen(&d, lc) == 0);
	r = 0;
	sc = NULL;
	for (uint64_t end = drv_now_ms() + TMO; !r && !sc && drv_now_ms() < end;)
		r = drv_connect(&d, 0, real, &sc);
	CHECK_MSG(r == NBPF_NCCL_REMOTE_ERROR && !sc, "connect to a closed listener: %d", r);
	CHECK(drv_accept(&d, NULL, &rc) == NBPF_NCCL_INVALID_ARGUMENT);
}

static void bad_comms_and_requests(void)
{
	void *sc, *rc, *req = NULL, *mh, *stale;
	char buf[64];
	int done = 1, sz;

	connected(&sc, &rc);
	CHECK(drv_isend(&d, NULL, buf, 1, 0, NULL, &req) == NBPF_NCCL_INVALID_ARGUMENT && !req);
	CHECK(drv_isend(&d, rc, buf, 1, 0, NULL, &req) == NBPF_NCCL_INVALID_ARGUMENT && !req);
	CHECK(drv_irecv(&d, sc, buf, 1, 0, NULL, &req) == NBPF_NCCL_INVALID_ARGUMENT && !req);
	CHECK(drv_regmr(&d, NULL, buf, 1, NBPF_NET_PTR_HOST, &mh) == NBPF_NCCL_INVALID_ARGUMENT);
	CHECK(drv_close_send(&d, NULL) == 0);
	{ /* grouped receives are not offered (maxRecvs 1) */
		const nbpf_net_v11_t *t = d.tbl;
		void *data[2] = { buf, buf + 32 }, *mhs[2] = { NULL, NULL }, *phs[2] = { NULL, NULL };
		size_t szs[2] = { 32, 32 };
		int tags[2] = { 0, 0 };

		req = (void *)0x1;
		CHECK(t->irecv(rc, 2, data, szs, tags, mhs, phs, &req) == NBPF_NCCL_INVALID_ARGUMENT &&
		      !req);
	}
	/* test on a finished request, NULL and a foreign value: refused, no crash. */
	CHECK(drv_irecv(&d, rc, buf, sizeof(buf), 0, NULL, &req) == 0 && req);
	stale = req;
	CHECK(drv_isend(&d, sc, buf, 5, 0, NULL, &req) == 0 && req);
	CHECK(drv_wait(&d, req, &sz, TMO) == 0 && sz == 5);
	CHECK(drv_wait(&d, stale, &sz, TMO) == 0 && sz == 5);
	CHECK(drv_test(&d, stale, &done, &sz) == NBPF_NCCL_INVALID_ARGUMENT && done == 0);
	CHECK(drv_test(&d, req, &done, &sz) == NBPF_NCCL_INVALID_ARGUMENT && done == 0);
	CHECK(drv_test(&d, NULL, &done, &sz) == NBPF_NCCL_INVALID_ARGUMENT);
	CHECK(drv_test(&d, (void *)0x1, &done, &sz) == NBPF_NCCL_INVALID_ARGUMENT);
	/* The slot is reused by a new request: the old handle still does not match it. */
	CHECK(drv_irecv(&d, rc, buf, sizeof(buf), 0, NULL, &req) == 0 && req);
	CHECK(drv_test(&d, stale, &done, &sz) == NBPF_NCCL_INVALID_ARGUMENT);
	CHECK(drv_close_send(&d, sc) == 0);
	CHECK(drv_close_recv(&d, rc) == 0);
}

int main(int argc, char **argv)
{
	void *lib;

	if (argc == 4 && !strcmp(argv[1], "--child"))
		return child_main(argv[2], argv[3]);
	signal(SIGPIPE, SIG_IGN);
	setenv("NCCL_SOCKET_IFNAME", "lo", 0);
	lib = drv_open(NET_PLUGIN);
	CHECK(lib && drv_bind(&d, lib, V) == 0 && drv_init(&d, 1, -1, NULL) == 0);
	if (!lib)
		return check_summary("net_faults");
	bad_handles();
	bad_comms_and_requests();
	truncated(100, 10, 0);
	truncated(8u << 20, 4096, 0);
	truncated(BIG, 1u << 20, 0);
	truncated(BIG, 1u << 20, 500);
	peer_closed();
	peer_killed_sending();
	peer_killed_receiving();
	connection_reset();
	CHECK(drv_finalize(&d) == 0);
	dlclose(lib);
	return check_summary("net_faults");
}
