// SPDX-License-Identifier: Apache-2.0
/*
 * stats_cost.c - what the kernel's run-time statistics (kernel.bpf_stats_enabled,
 * BPF_ENABLE_STATS) add to each program run, measured from outside the
 * program: one thread pinned to a CPU makes CALLS getppid() calls, timed
 * around the whole loop, with
 *
 *   bare     no program attached,
 *   off      an empty program (r0 = 0; exit) on raw_syscalls:sys_enter as a
 *            typed raw tracepoint, the statistics off,
 *   on       the same, the statistics on,
 *
 * the three alternating ROUNDS times; medians of ns per call.  on - off is
 * the statistics' own cost per run (their two clock reads and counter
 * update), which every ns-per-run figure of the observe benchmark
 * includes; the program's run time as the statistics report it is
 * printed beside it.  off - bare is an empty program's real cost here,
 * with the syscall's tracing slow path that any sys_enter program turns on.
 *
 * usage: obs_stats_cost CALLS ROUNDS [CPU]
 */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "empty_prog.h"

#define MAX_ROUNDS 64

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ns per getppid() over calls calls. */
static double loop(long calls)
{
	double t0 = now();

	for (long i = 0; i < calls; i++)
		syscall(SYS_getppid);
	return (now() - t0) / (double)calls;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int prog_stats(int pfd, __u64 *cnt, __u64 *ns)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(pfd, &info, &len))
		return -errno;
	*cnt = info.run_cnt;
	*ns = info.run_time_ns;
	return 0;
}

int main(int argc, char **argv)
{
	double bare[MAX_ROUNDS], off[MAX_ROUNDS], on[MAX_ROUNDS], rep[MAX_ROUNDS];
	long calls = argc > 2 ? atol(argv[1]) : 0;
	int rounds = argc > 2 ? atoi(argv[2]) : 0, cpu = argc > 3 ? atoi(argv[3]) : 1;
	int pfd = -1, lfd = -1, sfd = -1, rc = 1;
	struct btf *btf = NULL;
	cpu_set_t set;

	if (calls <= 0 || rounds <= 0 || rounds > MAX_ROUNDS || cpu < 0 || cpu >= CPU_SETSIZE) {
		fprintf(stderr, "usage: obs_stats_cost CALLS ROUNDS [CPU]   (ROUNDS at most %d)\n", MAX_ROUNDS);
		return 2;
	}
	CPU_ZERO(&set);
	CPU_SET((size_t)cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fprintf(stderr, "obs_stats_cost: not pinned: %s\n", strerror(errno));
	btf = btf__load_vmlinux_btf();
	pfd = btf ? empty_prog_load(btf, "sys_enter", "obs_stats_cost") : -ENOENT;
	if (pfd < 0) {
		fprintf(stderr, "obs_stats_cost: an empty program on sys_enter: %s\n",
			pfd == -ENOENT ? "no typed tracepoint (kernel BTF)" : strerror(-pfd));
		goto out;
	}
	loop(calls / 10); /* warm up */
	for (int r = 0; r < rounds; r++) {
		__u64 c0 = 0, n0 = 0, c1 = 0, n1 = 0;

		bare[r] = loop(calls);
		lfd = bpf_link_create(pfd, 0, BPF_TRACE_RAW_TP, NULL);
		if (lfd < 0) {
			fprintf(stderr, "obs_stats_cost: attach: %s\n", strerror(errno));
			goto out;
		}
		off[r] = loop(calls);
		sfd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (sfd < 0) {
			fprintf(stderr, "obs_stats_cost: enable stats: %s\n", strerror(errno));
			goto out;
		}
		if (prog_stats(pfd, &c0, &n0))
			c0 = n0 = 0;
		on[r] = loop(calls);
		if (prog_stats(pfd, &c1, &n1))
			c1 = n1 = 0;
		close(sfd);
		sfd = -1;
		close(lfd);
		lfd = -1;
		/* Every run on the machine counts, not only this loop's: per run, not per call. */
		rep[r] = c1 > c0 ? (double)(n1 - n0) / (double)(c1 - c0) : 0;
		printf("round %2d: bare %.1f, off %.1f, on %.1f ns per call; reported %.1f ns per run\n", r, bare[r],
		       off[r], on[r], rep[r]);
	}
	{
		double b = median(bare, rounds), f = median(off, rounds), o = median(on, rounds);

		printf("median of %d rounds of %ld calls: bare %.1f, off %.1f, on %.1f ns per call\n", rounds, calls,
		       b, f, o);
		printf("empty program, real cost (off - bare): %.1f ns per run\n", f - b);
		printf("statistics' own cost (on - off): %.1f ns per run; the program's run time as they "
		       "report it: %.1f ns per run\n", o - f, median(rep, rounds));
	}
	rc = 0;
out:
	if (sfd >= 0)
		close(sfd);
	if (lfd >= 0)
		close(lfd);
	if (pfd >= 0)
		close(pfd);
	btf__free(btf);
	return rc;
}
