// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tune_nccl.c - tune's real-NCCL back-end: bench/gpu/nccl_sweep --serve
 * as a child process, with the plugin as its tuner and the sweep policy
 * loaded, driving every local GPU in one communicator.
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

struct be_nccl {
	struct tune_be be;
	int to, from;         /* the child's stdin and stdout */
	char buf[4096];       /* bytes read past the last line returned */
	size_t len;
	int iters, warmup;
	int timeout_ms;       /* longest wait for one answer (a run, or the start) */
	bool hung;            /* it let a deadline pass: killed at close, not waited for */
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The next line of the child's output into line (without its newline):
 * 0, -ETIMEDOUT, -EPIPE (end of output) or -EPROTO (a line too long).
 */
static int read_line(struct be_nccl *b, char *line, size_t n, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;

	for (;;) {
		char *nl = memchr(b->buf, '\n', b->len);
		struct pollfd pfd = { .fd = b->from, .events = POLLIN };
		int64_t left = deadline - now_ms();
		ssize_t r;

		if (nl) {
			size_t l = (size_t)(nl - b->buf);

			snprintf(line, n, "%.*s", (int)l, b->buf);
			memmove(b->buf, nl + 1, b->len - l - 1);
			b->len -= l + 1;
			return 0;
		}
		if (b->len == sizeof(b->buf))
			return -EPROTO;
		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -ETIMEDOUT;
		r = read(b->from, b->buf + b->len, sizeof(b->buf) - b->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -EPIPE;
		b->len += (size_t)r;
	}
}

static const char *const op_names[] = { "broadcast", "reduce", "allgather", "reducescatter",
					"allreduce" };

static int nccl_run(struct tune_be *be, int coll, uint64_t n_bytes, double *us, char *err,
		    size_t errlen)
{
	struct be_nccl *b = (struct be_nccl *)be;
	char line[512];
	unsigned long long got;
	long wrong;
	int n, ret;

	n = snprintf(line, sizeof(line), "%s %llu %d %d\n", op_names[coll],
		     (unsigned long long)n_bytes, b->iters, b->warmup);
	if (write(b->to, line, (size_t)n) != n) {
		snprintf(err, errlen, "nccl_sweep: cannot write its input (exited?)");
		return -EPIPE;
	}
	ret = read_line(b, line, sizeof(line), b->timeout_ms);
	b->hung = ret == -ETIMEDOUT;
	if (ret) {
		snprintf(err, errlen, "nccl_sweep %s during %s %llu B",
			 ret == -ETIMEDOUT ? "answered nothing in time (hung? --run-timeout)" : "exited",
			 op_names[coll], (unsigned long long)n_bytes);
		return ret;
	}
	if (!strcmp(line, "skip"))
		return -ERANGE;
	if (sscanf(line, "ok %llu %lf %ld", &got, us, &wrong) != 3) {
		snprintf(err, errlen, "nccl_sweep: %s", line);
		return -EPROTO;
	}
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

	if (b->hung && b->be.pid > 0)
		kill(b->be.pid, SIGKILL); /* a collective that never ends: nothing to wait for */
	if (b->to >= 0)
		close(b->to); /* end of input: the child leaves its loop and destroys its comms */
	if (b->from >= 0)
		close(b->from);
	while (b->be.pid > 0 && waitpid(b->be.pid, &st, WNOHANG) == 0) {
		if (now_ms() > deadline) {
			kill(b->be.pid, SIGKILL);
			waitpid(b->be.pid, &st, 0);
			break;
		}
		usleep(20 * 1000);
	}
	free(b);
}

int tune_be_nccl_open(const struct tune_opts *o, struct tune_be **out, char *err, size_t errlen)
{
	struct be_nccl *b = calloc(1, sizeof(*b));
	int in[2] = { -1, -1 }, outp[2] = { -1, -1 }, n = 0, ret;
	char line[512] = "", gpus[16];
	pid_t pid;

	if (!b) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	b->to = b->from = -1;
	b->timeout_ms = (o->run_timeout_s > 0 ? o->run_timeout_s : 300) * 1000;
	if (!o->sweep_bin || access(o->sweep_bin, X_OK)) {
		snprintf(err, errlen, "no nccl_sweep binary at %s (--sweep-bin)", o->sweep_bin ? o->sweep_bin : "?");
		goto fail;
	}
	if (!o->plugin || access(o->plugin, R_OK)) {
		snprintf(err, errlen, "no plugin library at %s (--plugin)", o->plugin ? o->plugin : "?");
		goto fail;
	}
	if (pipe2(in, O_CLOEXEC) || pipe2(outp, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto fail;
	}
	snprintf(gpus, sizeof(gpus), "%d", o->ngpus);
	/* A child that exits makes our writes fail with EPIPE instead of killing us. */
	signal(SIGPIPE, SIG_IGN);
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
		execl(o->sweep_bin, o->sweep_bin, "--serve", "--ngpus", gpus, "--max-bytes", "1G",
		      (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(outp[1]);
	b->be.pid = pid;
	b->to = in[1];
	b->from = outp[0];
	/* Its own "# ..." lines come first; "ready N" once the communicators exist. */
	while (!(ret = read_line(b, line, sizeof(line), b->timeout_ms)) && line[0] == '#')
		;
	b->hung = ret == -ETIMEDOUT;
	if (ret || sscanf(line, "ready %d", &n) != 1 || n < 2) {
		if (!ret && n == 1)
			snprintf(err, errlen, "nccl_sweep: one GPU: NCCL does not tune one-rank communicators");
		else
			snprintf(err, errlen, "nccl_sweep --serve did not start (%s)",
				 ret == -ETIMEDOUT ? "no answer in time" : ret ? "exited" : line);
		nccl_close(&b->be);
		return -ENODEV;
	}
	b->iters = o->iters;
	b->warmup = o->warmup;
	b->be.n_ranks = n;
	b->be.n_nodes = 1;
	snprintf(b->be.desc, sizeof(b->be.desc),
		 "NCCL: %d GPUs in one process (nccl_sweep --serve), %d+%d operations per run", n,
		 o->warmup, o->iters);
	b->be.run = nccl_run;
	b->be.close = nccl_close;
	*out = &b->be;
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (outp[i] >= 0)
			close(outp[i]);
	}
	free(b);
	return -EINVAL;
}
