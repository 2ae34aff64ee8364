// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tune_nccl.c - tune's real-NCCL back-end: bench/gpu/nccl_sweep --serve
 * as a child process, with the plugin as its tuner and the sweep policy
 * loaded, driving every local GPU in one communicator; or, with --ranks N,
 * N such children on one GPU, each its own NCCL host (NCCL_HOSTID), rank 0
 * handing the others the communicator's id through a file in a private
 * temporary directory.  Every child gets every request; the slowest
 * answers for the run.
 *
 * The protocol is one line each way: "ready N" once the communicators
 * exist (N GPUs), then per request "OP BYTES ITERS WARMUP" the answer
 * "ok BYTES TIME_US WRONG", "skip" (too small for N ranks) or "err TEXT".
 * The child is idle between requests, which is when tune writes the
 * forced cell: no collective is ever in flight while the map changes.
 * A child that answers nothing in time is taken for hung and killed, so
 * tune ends with a message instead of waiting forever.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tune_backend.h"

/* After end of input, the child's time to destroy its communicators. */
#define NCCL_EXIT_TIMEOUT_MS (30 * 1000)

/* One nccl_sweep --serve process: a rank, or every local GPU. */
struct child {
	pid_t pid;
	int to, from;         /* its stdin and stdout */
	char buf[4096];       /* bytes read past the last line returned */
	size_t len;
};

struct be_nccl {
	struct tune_be be;
	struct child ch[TUNE_MAX_PROCS];
	int n;                /* children */
	char id_dir[64];      /* ranks mode: where rank 0 puts the unique id ("" none) */
	int iters, warmup;
	int timeout_ms;       /* longest wait for one answer (a run, or the start) */
	bool hung;            /* a deadline passed: killed at close, not waited for */
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The next line of a child's output into line (without its newline):
 * 0, -ETIMEDOUT, -EPIPE (end of output) or -EPROTO (a line too long).
 */
static int read_line(struct child *c, char *line, size_t n, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;

	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);
		struct pollfd pfd = { .fd = c->from, .events = POLLIN };
		int64_t left = deadline - now_ms();
		ssize_t r;

		if (nl) {
			size_t l = (size_t)(nl - c->buf);

			snprintf(line, n, "%.*s", (int)l, c->buf);
			memmove(c->buf, nl + 1, c->len - l - 1);
			c->len -= l + 1;
			return 0;
		}
		if (c->len == sizeof(c->buf))
			return -EPROTO;
		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -ETIMEDOUT;
		r = read(c->from, c->buf + c->len, sizeof(c->buf) - c->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -EPIPE;
		c->len += (size_t)r;
	}
}

static const char *const op_names[] = { "broadcast", "reduce", "allgather", "reducescatter",
					"allreduce" };

/*
 * Every child runs the request (the ranks meet in each collective); the
 * time is the slowest one's, the wrong results are everyone's.
 */
static int nccl_run(struct tune_be *be, int coll, uint64_t n_bytes, double *us, char *err,
		    size_t errlen)
{
	struct be_nccl *b = (struct be_nccl *)be;
	char line[512];
	unsigned long long got = 0;
	long wrong = 0;
	int n, ret = 0, skips = 0;

	n = snprintf(line, sizeof(line), "%s %llu %d %d\n", op_names[coll],
		     (unsigned long long)n_bytes, b->iters, b->warmup);
	for (int i = 0; i < b->n; i++)
		if (write(b->ch[i].to, line, (size_t)n) != n) {
			snprintf(err, errlen, "nccl_sweep: cannot write its input (exited?)");
			return -EPIPE;
		}
	*us = 0;
	for (int i = 0; i < b->n; i++) {
		unsigned long long g;
		double t;
		long w;
		int r = read_line(&b->ch[i], line, sizeof(line), b->timeout_ms);

		if (r) {
			b->hung |= r == -ETIMEDOUT;
			snprintf(err, errlen, "nccl_sweep%s %s during %s %llu B",
				 b->n > 1 ? " (a rank)" : "",
				 r == -ETIMEDOUT ? "answered nothing in time (hung? --run-timeout)" : "exited",
				 op_names[coll], (unsigned long long)n_bytes);
			return r;
		}
		if (!strcmp(line, "skip")) {
			skips++;
			continue;
		}
		if (sscanf(line, "ok %llu %lf %ld", &g, &t, &w) != 3) {
			snprintf(err, errlen, "nccl_sweep: %s", line);
			ret = -EPROTO;
			continue; /* read every rank's answer: the next request starts clean */
		}
		got = g;
		wrong += w;
		if (t > *us)
			*us = t;
	}
	if (ret)
		return ret;
	if (skips)
		return -ERANGE;
	if (wrong) {
		snprintf(err, errlen, "%s %llu B: %ld wrong result element(s)", op_names[coll],
			 (unsigned long long)n_bytes, wrong);
		return -EIO;
	}
	if (tune_size_bucket(got) != tune_size_bucket(n_bytes))
		return -ERANGE; /* rounded to whole elements per rank into another band */
	return 0;
}

static void nccl_close(struct tune_be *be)
{
	struct be_nccl *b = (struct be_nccl *)be;
	int64_t deadline = now_ms() + NCCL_EXIT_TIMEOUT_MS;
	int st;

	for (int i = 0; i < b->n; i++) {
		struct child *c = &b->ch[i];

		if (b->hung && c->pid > 0)
			kill(c->pid, SIGKILL); /* a collective that never ends: nothing to wait for */
		if (c->to >= 0)
			close(c->to); /* end of input: it leaves its loop and destroys its comms */
		if (c->from >= 0)
			close(c->from);
	}
	for (int i = 0; i < b->n; i++) {
		struct child *c = &b->ch[i];

		while (c->pid > 0 && waitpid(c->pid, &st, WNOHANG) == 0) {
			if (now_ms() > deadline) {
				kill(c->pid, SIGKILL);
				waitpid(c->pid, &st, 0);
				break;
			}
			usleep(20 * 1000);
		}
	}
	if (b->id_dir[0]) {
		char f[96];

		snprintf(f, sizeof(f), "%s/id", b->id_dir);
		unlink(f);
		rmdir(b->id_dir);
	}
	free(b);
}

/* Starts one nccl_sweep --serve (rank < 0: over ngpus local GPUs). */
static int spawn(struct be_nccl *b, const struct tune_opts *o, int rank, char *err, size_t errlen)
{
	struct child *c = &b->ch[b->n];
	int in[2] = { -1, -1 }, outp[2] = { -1, -1 };
	char gpus[16], rk[16], nr[16], idf[96], host[64];
	pid_t pid;

	if (pipe2(in, O_CLOEXEC) || pipe2(outp, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto fail;
	}
	snprintf(gpus, sizeof(gpus), "%d", o->ngpus);
	snprintf(rk, sizeof(rk), "%d", rank);
	snprintf(nr, sizeof(nr), "%d", o->ranks);
	snprintf(idf, sizeof(idf), "%s/id", b->id_dir);
	/* Unique per tool run, so two tunes on one machine never join each other. */
	snprintf(host, sizeof(host), "ncclbpf-tune-%d-node%d", (int)getpid(), rank);
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		if (dup2(in[0], 0) < 0 || dup2(outp[1], 1) < 0)
			_exit(127);
		setenv("NCCL_TUNER_PLUGIN", o->plugin, 1);
		setenv("NCCLBPF_POLICY", o->sweep_obj, 1);
		unsetenv("NCCL_ALGO");
		unsetenv("NCCL_PROTO");
		if (rank < 0) {
			execl(o->sweep_bin, o->sweep_bin, "--serve", "--ngpus", gpus, "--max-bytes", "1G",
			      (char *)NULL);
		} else {
			/* Each rank its own NCCL host: NCCL joins them over its network transport. */
			setenv("NCCL_HOSTID", host, 1);
			setenv("NCCL_SOCKET_IFNAME", getenv("NCCL_SOCKET_IFNAME") ? getenv("NCCL_SOCKET_IFNAME")
										: "lo", 1);
			execl(o->sweep_bin, o->sweep_bin, "--serve", "--rank", rk, "--nranks", nr,
			      "--id-file", idf, "--max-bytes", "1G", (char *)NULL);
		}
		_exit(127);
	}
	close(in[0]);
	close(outp[1]);
	*c = (struct child){ .pid = pid, .to = in[1], .from = outp[0] };
	b->n++;
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (outp[i] >= 0)
			close(outp[i]);
	}
	return -EINVAL;
}

int tune_be_nccl_open(const struct tune_opts *o, struct tune_be **out, char *err, size_t errlen)
{
	struct be_nccl *b = calloc(1, sizeof(*b));
	int n = 0, ret, procs = o->ranks >= 2 ? o->ranks : 1;
	char line[512] = "";

	if (!b) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	b->timeout_ms = (o->run_timeout_s > 0 ? o->run_timeout_s : 300) * 1000;
	if (!o->sweep_bin || access(o->sweep_bin, X_OK)) {
		snprintf(err, errlen, "no nccl_sweep binary at %s (--sweep-bin)", o->sweep_bin ? o->sweep_bin : "?");
		free(b);
		return -EINVAL;
	}
	if (!o->plugin || access(o->plugin, R_OK)) {
		snprintf(err, errlen, "no plugin library at %s (--plugin)", o->plugin ? o->plugin : "?");
		free(b);
		return -EINVAL;
	}
	if (procs > TUNE_MAX_PROCS) {
		snprintf(err, errlen, "--ranks: at most %d processes on one GPU", TUNE_MAX_PROCS);
		free(b);
		return -EINVAL;
	}
	if (procs > 1) {
		snprintf(b->id_dir, sizeof(b->id_dir), "/tmp/ncclbpf-tune.XXXXXX");
		if (!mkdtemp(b->id_dir)) {
			snprintf(err, errlen, "mkdtemp: %s", strerror(errno));
			b->id_dir[0] = 0;
			nccl_close(&b->be);
			return -EINVAL;
		}
	}
	/* A child that exits makes our writes fail with EPIPE instead of killing us. */
	signal(SIGPIPE, SIG_IGN);
	for (int r = 0; r < procs; r++)
		if (spawn(b, o, procs > 1 ? r : -1, err, errlen)) {
			nccl_close(&b->be);
			return -EINVAL;
		}
	/* Their own "# ..." lines come first; "ready N" once the communicators exist. */
	for (int i = 0; i < b->n; i++) {
		int got = 0;

		while (!(ret = read_line(&b->ch[i], line, sizeof(line), b->timeout_ms)) && line[0] == '#')
			;
		b->hung |= ret == -ETIMEDOUT;
		if (ret || sscanf(line, "ready %d", &got) != 1 || got < 2 || (i && got != n)) {
			if (!ret && got == 1)
				snprintf(err, errlen, "nccl_sweep: one GPU: NCCL does not tune one-rank "
					 "communicators (--ranks N runs N ranks on it)");
			else
				snprintf(err, errlen, "nccl_sweep --serve did not start (%s)",
					 ret == -ETIMEDOUT ? "no answer in time" : ret ? "exited" : line);
			nccl_close(&b->be);
			return -ENODEV;
		}
		n = got;
		b->be.pids[i] = b->ch[i].pid;
	}
	b->iters = o->iters;
	b->warmup = o->warmup;
	b->be.pid = b->be.pids[0];
	b->be.n_pids = b->n;
	b->be.n_ranks = n;
	b->be.n_nodes = procs > 1 ? n : 1;
	if (procs > 1)
		snprintf(b->be.desc, sizeof(b->be.desc),
			 "NCCL: %d ranks as %d processes on one GPU (each its own NCCL host, joined by "
			 "the network transport; time-sliced GPU: function only), %d+%d operations per run",
			 n, procs, o->warmup, o->iters);
	else
		snprintf(b->be.desc, sizeof(b->be.desc),
			 "NCCL: %d GPUs in one process (nccl_sweep --serve), %d+%d operations per run", n,
			 o->warmup, o->iters);
	b->be.run = nccl_run;
	b->be.close = nccl_close;
	*out = &b->be;
	return 0;
}
