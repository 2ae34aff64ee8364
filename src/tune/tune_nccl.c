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
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tune_backend.h"

struct be_nccl {
	struct tune_be be;
	FILE *to, *from;
	int iters, warmup;
};

static const char *const op_names[] = { "broadcast", "reduce", "allgather", "reducescatter",
					"allreduce" };

static int nccl_run(struct tune_be *be, int coll, uint64_t n_bytes, double *us, char *err,
		    size_t errlen)
{
	struct be_nccl *b = (struct be_nccl *)be;
	char line[512];
	unsigned long long got;
	long wrong;

	if (fprintf(b->to, "%s %llu %d %d\n", op_names[coll], (unsigned long long)n_bytes,
		    b->iters, b->warmup) < 0 || fflush(b->to)) {
		snprintf(err, errlen, "nccl_sweep: cannot write its input (exited?)");
		return -EPIPE;
	}
	if (!fgets(line, sizeof(line), b->from)) {
		snprintf(err, errlen, "nccl_sweep exited during %s %llu B", op_names[coll],
			 (unsigned long long)n_bytes);
		return -EPIPE;
	}
	if (!strncmp(line, "skip", 4))
		return -ERANGE;
	if (sscanf(line, "ok %llu %lf %ld", &got, us, &wrong) != 3) {
		line[strcspn(line, "\n")] = 0;
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
	int st;

	if (b->to)
		fclose(b->to); /* EOF: the child leaves its loop and destroys its comms */
	if (b->from)
		fclose(b->from);
	if (b->be.pid > 0)
		waitpid(b->be.pid, &st, 0);
	free(b);
}

int tune_be_nccl_open(const struct tune_opts *o, struct tune_be **out, char *err, size_t errlen)
{
	struct be_nccl *b = calloc(1, sizeof(*b));
	int in[2] = { -1, -1 }, outp[2] = { -1, -1 }, n = 0;
	char line[512], gpus[16];
	pid_t pid;

	if (!b) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (!o->sweep_bin || access(o->sweep_bin, X_OK)) {
		snprintf(err, errlen, "no nccl_sweep binary at %s (--sweep-bin)", o->sweep_bin ? o->sweep_bin : "?");
		goto fail;
	}
	if (!o->plugin || access(o->plugin, R_OK)) {
		snprintf(err, errlen, "no plugin library at %s", o->plugin ? o->plugin : "?");
		goto fail;
	}
	if (pipe(in) || pipe(outp)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto fail;
	}
	snprintf(gpus, sizeof(gpus), "%d", o->ngpus);
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(outp[1], 1);
		close(in[0]); close(in[1]); close(outp[0]); close(outp[1]);
		setenv("NCCL_TUNER_PLUGIN", o->plugin, 1);
		setenv("NCCLBPF_POLICY", o->sweep_obj, 1);
		unsetenv("NCCL_ALGO");
		unsetenv("NCCL_PROTO");
		execl(o->sweep_bin, o->sweep_bin, "--serve", "--ngpus", gpus,
		      "--max-bytes", "1G", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(outp[1]);
	b->be.pid = pid;
	b->to = fdopen(in[1], "w");
	b->from = fdopen(outp[0], "r");
	in[1] = outp[0] = -1;
	if (!b->to || !b->from) {
		snprintf(err, errlen, "fdopen: %s", strerror(errno));
		nccl_close(&b->be);
		return -ENOMEM;
	}
	/* Its own "# ..." lines come first; "ready N" once the communicators exist. */
	while (fgets(line, sizeof(line), b->from) && line[0] == '#')
		;
	if (sscanf(line, "ready %d", &n) != 1 || n < 2) {
		line[strcspn(line, "\n")] = 0;
		snprintf(err, errlen, n == 1 ? "nccl_sweep: one GPU: NCCL does not tune one-rank communicators"
				     : "nccl_sweep --serve did not start (%s)", line);
		nccl_close(&b->be);
		return -ENODEV;
	}
	b->iters = o->iters;
	b->warmup = o->warmup;
	b->be.n_ranks = n;
	b->be.n_nodes = 1;
	snprintf(b->be.desc, sizeof(b->be.desc), "NCCL: %d GPUs in one process (nccl_sweep pid %d), %d+%d iterations per run",
		 n, (int)pid, o->warmup, o->iters);
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
