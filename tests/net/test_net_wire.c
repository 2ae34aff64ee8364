// SPDX-License-Identifier: Apache-2.0
/*
 * test_net_wire.c - what two processes agree on over the wire, through the
 * v11 table as NCCL drives it; peers are this binary re-executed, each with
 * its own environment.
 *
 *   - NCCLBPF_NET_MIN_CHUNK differs between sender and receiver, both ways
 *     (the receiver's larger: messages between the two sizes hung; the
 *     sender's larger: they were reported done with corrupt data).  The
 *     connector's value travels in its hello: every message, 0 B to 4 MiB,
 *     arrives whole and with its size.
 *   - NCCLBPF_NET_TIMEOUT=4 on the sender (it travels in the hello too): a
 *     receiver stopped (SIGSTOP) with a message half-sent makes the
 *     sender's test() fail with ncclRemoteError after the timeout, not pend
 *     for ever; a receiver that is alive but posts its receive only after
 *     three timeouts gets the message, and the sender no error.
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "net_drv.h"

#define TMO 60000
#define STR_(x) #x
#define STR(x) STR_(x)
#define BIG (64u << 20)
/* NCCLBPF_NET_TIMEOUT here: keepalives every second leave room for a sanitizer on a loaded machine. */
#define STALL_S 4

static const size_t sizes[] = { 0, 1, 100, 1000, 1024, 1025, 3000, 65536, 65537, 100000, 300000,
				 4u << 20 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define MAXSZ (4u << 20)

static struct drv d;

static void pattern(unsigned char *b, size_t n, size_t salt)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 131 + salt * 7 + (i >> 11));
}

static int open_plugin(void)
{
	void *lib = drv_open(NET_PLUGIN);

	return lib && !drv_bind(&d, lib, 11) && !drv_init(&d, 7, -1, NULL) ? 0 : -1;
}

/* ---- peers --------------------------------------------------------------------- */

static void *child_lc;

/* Listens, hands its handle to stdout, accepts. */
static int child_accept(void **rc)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE];
	void *sc;

	if (open_plugin() || drv_listen(&d, 0, handle, &child_lc) ||
	    write(1, handle, sizeof(handle)) != (ssize_t)sizeof(handle) ||
	    drv_pair(&d, 0, NULL, child_lc, &sc, rc, TMO))
		return -1;
	return 0;
}

/* What a peer does; 0 or the step that failed. */
static int child_run(const char *mode, unsigned char *buf, unsigned char *want, void **sc,
		     void **rc)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE];
	void *req, *none;
	int sz;

	if (!strcmp(mode, "recv")) {
		if (child_accept(rc))
			return 11;
		for (size_t i = 0; i < NSIZES; i++) {
			memset(buf, 0xee, MAXSZ);
			pattern(want, sizes[i], i);
			sz = -1;
			if (drv_irecv(&d, *rc, buf, MAXSZ, 0, NULL, &req) || !req ||
			    drv_wait(&d, req, &sz, TMO))
				return 12;
			if ((size_t)sz != sizes[i] || memcmp(buf, want, sizes[i])) {
				fprintf(stderr, "message %zu: %d bytes of %zu, %s\n", i, sz, sizes[i],
					memcmp(buf, want, sizes[i]) ? "corrupt" : "intact");
				return 13;
			}
		}
		return 0;
	}
	if (!strcmp(mode, "send")) {
		if (open_plugin() || read(0, handle, sizeof(handle)) != (ssize_t)sizeof(handle) ||
		    drv_pair(&d, 0, handle, NULL, sc, &none, TMO))
			return 20;
		for (size_t i = 0; i < NSIZES; i++) {
			pattern(buf, sizes[i], i);
			if (drv_isend(&d, *sc, buf, sizes[i], 0, NULL, &req) || !req ||
			    drv_wait(&d, req, NULL, TMO))
				return 21;
		}
		/* Stay until the receiver has it all: our close would cut what is in flight. */
		return read(0, buf, 1) == 1 ? 0 : 22;
	}
	if (!strcmp(mode, "stop")) {
		if (child_accept(rc) || write(1, "r", 1) != 1)
			return 30;
		raise(SIGSTOP);
		return 31;
	}
	if (!strcmp(mode, "late")) {
		if (child_accept(rc))
			return 40;
		sleep(3 * STALL_S);
		if (drv_irecv(&d, *rc, buf, BIG, 0, NULL, &req) || !req || drv_wait(&d, req, &sz, TMO))
			return 41;
		return (size_t)sz == BIG ? 0 : 42;
	}
	return 2;
}

static int child_main(const char *mode)
{
	unsigned char *buf = malloc(BIG), *want = malloc(MAXSZ);
	void *sc = NULL, *rc = NULL;
	int r;

	alarm(120);
	r = buf && want ? child_run(mode, buf, want, &sc, &rc) : 10;
	if (sc)
		drv_close_send(&d, sc);
	if (rc)
		drv_close_recv(&d, rc);
	if (child_lc)
		drv_close_listen(&d, child_lc);
	if (d.tbl)
		drv_finalize(&d);
	free(buf);
	free(want);
	return r;
}

static pid_t spawn(const char *mode, const char *env, int *to, int *from)
{
	int a[2], b[2];
	pid_t pid;

	if (pipe(a) || pipe(b))
		return -1;
	pid = fork();
	if (pid == 0) {
		if (env)
			putenv((char *)env);
		dup2(a[0], 0);
		dup2(b[1], 1);
		close(a[1]);
		close(b[0]);
		execl("/proc/self/exe", "test_net_wire", "--child", mode, (char *)NULL);
		_exit(127);
	}
	close(a[0]);
	close(b[1]);
	*to = a[1];
	*from = b[0];
	return pid;
}

static int reap(pid_t pid)
{
	int st = 0;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- cases ------------------------------------------------------------------- */

/* A receiver with one NCCLBPF_NET_MIN_CHUNK, a sender with another. */
static void min_chunk_mismatch(const char *recv_env, const char *send_env)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE];
	int rto, rfrom, sto, sfrom, rr, rs;
	pid_t r = spawn("recv", recv_env, &rto, &rfrom), s;

	CHECK(read(rfrom, handle, sizeof(handle)) == (ssize_t)sizeof(handle));
	s = spawn("send", send_env, &sto, &sfrom);
	CHECK(write(sto, handle, sizeof(handle)) == (ssize_t)sizeof(handle));
	rr = reap(r);
	CHECK(write(sto, "x", 1) == 1);
	rs = reap(s);
	CHECK_MSG(rr == 0 && rs == 0, "receiver (%s) exit %d, sender (%s) exit %d", recv_env, rr,
		  send_env, rs);
	close(rto);
	close(rfrom);
	close(sto);
	close(sfrom);
}

static void *big_buf(void)
{
	void *p = malloc(BIG);

	if (p)
		memset(p, 0x5a, BIG);
	return p;
}

/* This process sends (NCCLBPF_NET_TIMEOUT=STALL_S, main) to a child in mode. */
static void *connect_to(const char *mode, pid_t *pid, int *to, int *from)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE];
	void *sc = NULL, *rc;

	*pid = spawn(mode, NULL, to, from);
	CHECK(read(*from, handle, sizeof(handle)) == (ssize_t)sizeof(handle));
	CHECK(drv_pair(&d, 0, handle, NULL, &sc, &rc, TMO) == 0 && sc);
	return sc;
}

static void stopped_receiver(void)
{
	void *buf = big_buf(), *req = NULL, *sc;
	int to, from, st, r;
	uint64_t t0;
	pid_t pid;
	char c;

	sc = connect_to("stop", &pid, &to, &from);
	CHECK(read(from, &c, 1) == 1);
	CHECK(waitpid(pid, &st, WUNTRACED) == pid && WIFSTOPPED(st));
	t0 = drv_now_ms();
	CHECK(drv_isend(&d, sc, buf, BIG, 0, NULL, &req) == 0 && req);
	r = drv_wait(&d, req, NULL, TMO);
	CHECK_MSG(r == NBPF_NCCL_REMOTE_ERROR, "send to a stopped receiver: %d after %llu ms", r,
		  (unsigned long long)(drv_now_ms() - t0));
	/* After the timeout, not before it; the margin is the machine's, not ours. */
	CHECK(drv_now_ms() - t0 >= STALL_S * 1000 - 100);
	CHECK(drv_close_send(&d, sc) == 0);
	kill(pid, SIGKILL);
	reap(pid);
	close(to);
	close(from);
	free(buf);
}

static void late_receiver(void)
{
	void *buf = big_buf(), *req = NULL, *sc;
	int to, from, r;
	pid_t pid;

	sc = connect_to("late", &pid, &to, &from);
	CHECK(drv_isend(&d, sc, buf, BIG, 0, NULL, &req) == 0 && req);
	r = drv_wait(&d, req, NULL, TMO);
	CHECK_MSG(r == 0, "send to a receiver late by three timeouts: %d", r);
	CHECK_EQ_U64(reap(pid), 0);
	CHECK(drv_close_send(&d, sc) == 0);
	close(to);
	close(from);
	free(buf);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--child"))
		return child_main(argv[2]);
	signal(SIGPIPE, SIG_IGN);
	setenv("NCCL_SOCKET_IFNAME", "lo", 0);
	min_chunk_mismatch("NCCLBPF_NET_MIN_CHUNK=65536", "NCCLBPF_NET_MIN_CHUNK=1024");
	min_chunk_mismatch("NCCLBPF_NET_MIN_CHUNK=1024", "NCCLBPF_NET_MIN_CHUNK=65536");
	min_chunk_mismatch("NCCLBPF_NET_MIN_CHUNK=0", "NCCLBPF_NET_MIN_CHUNK=2000000");
	setenv("NCCLBPF_NET_TIMEOUT", STR(STALL_S), 1);
	CHECK(open_plugin() == 0);
	stopped_receiver();
	late_receiver();
	CHECK(drv_finalize(&d) == 0);
	return check_summary("net_wire");
}
