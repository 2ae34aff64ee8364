// SPDX-License-Identifier: Apache-2.0
/*
 * test_repin_cli.c - closed loop 3 end to end: `ncclbpf observe --pin-numa`
 * with a fake two-node NUMA table (CPU 0 on node 0, CPU 1 on node 1) over a
 * process with two threads.  The test moves the free thread to the other
 * node with sched_setaffinity; observe must move it back within 500 ms and
 * count the move, must leave a thread pinned before it started alone, and
 * must do nothing with --no-repin or without --pin-numa.
 *
 * Needs root, kernel BTF and two CPUs; prints SKIP and exits 77 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SKIP 77

static int failures;

#define CHECK(cond, ...)                                                                   \
	do {                                                                               \
		if (!(cond)) {                                                             \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);                         \
			printf(__VA_ARGS__);                                               \
			printf("\n");                                                      \
			failures++;                                                        \
		}                                                                          \
	} while (0)

static const char *cli;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static cpu_set_t one_cpu(int c)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(c, &s);
	return s;
}

/* ---- the watched job: a free thread and a pinned one, both waking every ms ---- */

static int tid_pipe[2];

static void *worker(void *arg)
{
	int tid = (int)syscall(SYS_gettid);

	if (arg) {
		cpu_set_t s = one_cpu(1);

		sched_setaffinity(0, sizeof(s), &s);
	}
	if (write(tid_pipe[1], &tid, sizeof(tid)) != sizeof(tid))
		return NULL;
	for (;;)
		usleep(1000);
	return NULL;
}

static pid_t start_job(int *free_tid, int *pinned_tid)
{
	pid_t pid;

	if (pipe(tid_pipe))
		return -1;
	pid = fork();
	if (pid == 0) {
		pthread_t a, b;

		pthread_create(&a, NULL, worker, NULL);
		pthread_create(&b, NULL, worker, (void *)1);
		pause();
		_exit(0);
	}
	/* The free thread's tid first: the pinned one may report before it. */
	for (int i = 0; i < 2; i++) {
		int t = 0;
		cpu_set_t s;

		if (read(tid_pipe[0], &t, sizeof(t)) != sizeof(t))
			return -1;
		if (sched_getaffinity(t, sizeof(s), &s) == 0 && CPU_COUNT(&s) == 1)
			*pinned_tid = t;
		else
			*free_tid = t;
	}
	return pid;
}

/* ---- ncclbpf observe in the background, its stderr and stdout in files ---- */

static pid_t start_observe(int job, const char *mode, const char *out, const char *err)
{
	char pidstr[16];
	pid_t pid;

	snprintf(pidstr, sizeof(pidstr), "%d", job);
	pid = fork();
	if (pid == 0) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		const char *argv[16] = { cli, "-j", "observe", "--pid", pidstr, "--probes", "sched",
					 "--interval", "200", "--duration", "3" };
		int n = 11;

		dup2(o, 1);
		dup2(e, 2);
		setenv("NCCLBPF_OBSERVE_NUMA", "0,1", 1);
		if (!strcmp(mode, "on") || !strcmp(mode, "off-switch")) {
			argv[n++] = "--pin-numa";
			argv[n++] = "0";
		}
		if (!strcmp(mode, "off-switch"))
			argv[n++] = "--no-repin";
		execv(cli, (char **)argv);
		_exit(127);
	}
	return pid;
}

/* Waits for s in file (up to 20 s: loading the programs on a busy machine). */
static bool wait_for(const char *file, const char *s, pid_t obs)
{
	char buf[8192];

	for (int i = 0; i < 2000; i++) {
		FILE *f = fopen(file, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = 0;
		if (strstr(buf, s))
			return true;
		if (waitpid(obs, NULL, WNOHANG) == obs)
			return false;
		usleep(10000);
	}
	return false;
}

static char *slurp(const char *file)
{
	static char buf[1 << 16];
	FILE *f = fopen(file, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = 0;
	return buf;
}

/* The cumulative "moved" of the last JSON sample, or -1. */
static long last_moved(const char *out)
{
	const char *p = out, *q, *last = NULL;

	while ((q = strstr(p, "\"moved\":"))) {
		last = q;
		p = q + 1;
	}
	return last ? strtol(last + 8, NULL, 10) : -1;
}

static void run(const char *mode)
{
	char out[] = "/tmp/ncclbpf-repin-outXXXXXX", err[] = "/tmp/ncclbpf-repin-errXXXXXX";
	int free_tid = 0, pinned_tid = 0, st = 0, fd;
	cpu_set_t node0 = one_cpu(0), node1 = one_cpu(1), s;
	bool on = !strcmp(mode, "on"), back = false;
	pid_t job, obs;
	double t0, dt = -1;

	if ((fd = mkstemp(out)) >= 0)
		close(fd);
	if ((fd = mkstemp(err)) >= 0)
		close(fd);
	job = start_job(&free_tid, &pinned_tid);
	CHECK(job > 0 && free_tid && pinned_tid, "%s: job did not start", mode);
	if (job <= 0)
		return;
	obs = start_observe(job, mode, out, err);
	/* Attached and, when on, every thread has its home. */
	if (!wait_for(on ? err : out, on ? "numa re-pin: on" : "\"sample\"", obs)) {
		CHECK(0, "%s: observe did not start: %s", mode, slurp(err));
		goto done;
	}
	/* Off node 0: the kernel migrates the free thread to CPU 1 (node 1) at its next wakeup. */
	sched_setaffinity(free_tid, sizeof(node1), &node1);
	t0 = now_s();
	while (now_s() - t0 < (on ? 0.5 : 1.0)) {
		if (sched_getaffinity(free_tid, sizeof(s), &s) == 0 && CPU_EQUAL(&s, &node0)) {
			back = true;
			dt = now_s() - t0;
			break;
		}
		usleep(1000);
	}
	printf("%s: free thread %s", mode, back ? "moved back" : "left on node 1");
	if (back)
		printf(" after %.1f ms", dt * 1000);
	printf("\n");
	CHECK(back == on, "%s: free thread %s", mode, back ? "moved" : "not moved within 500 ms");
	/* Pinned to CPU 1 before observe met it: never moved, whatever the home. */
	CHECK(sched_getaffinity(pinned_tid, sizeof(s), &s) == 0 && CPU_EQUAL(&s, &node1),
	      "%s: pinned thread moved", mode);
	waitpid(obs, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: observe failed: %s", mode, slurp(err));
	if (on) {
		long moved = last_moved(slurp(out)), lines = 0;
		const char *e = slurp(err), *ready = strstr(e, "numa re-pin: on");
		char me[48];

		/* Every move is reported once and counted once. */
		for (const char *p = e; (p = strstr(p, "back to node 0")); p++)
			lines++;
		CHECK(moved >= 1 && moved == lines, "on: moved %ld, reported %ld", moved, lines);
		/*
		 * The test's move was undone after observe was ready: by the
		 * migration event, or by the interval's scan if it came first.
		 */
		snprintf(me, sizeof(me), "numa re-pin: tid %d ", free_tid);
		CHECK(ready && strstr(ready, me), "on: no report for tid %d: %s", free_tid, e);
		CHECK(strstr(slurp(out), "\"pinned_elsewhere\":") &&
		      !strstr(slurp(out), "\"pinned_elsewhere\":0}"), "on: pinned thread not counted");
	} else {
		CHECK(!strstr(slurp(out), "\"repin\""), "%s: re-pinning reported while off", mode);
	}
done:
	kill(obs, SIGKILL);
	waitpid(obs, NULL, 0);
	kill(job, SIGKILL);
	waitpid(job, NULL, 0);
	close(tid_pipe[0]);
	close(tid_pipe[1]);
	if (getenv("REPIN_KEEP"))
		printf("kept %s %s\n", out, err);
	else
		unlink(out), unlink(err);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	cli = argv[1];
	if (geteuid() != 0 || access("/sys/kernel/btf/vmlinux", R_OK)) {
		printf("SKIP repin_cli: needs root and kernel BTF\n");
		return SKIP;
	}
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("SKIP repin_cli: needs two CPUs\n");
		return SKIP;
	}
	run("on");
	run("off-switch");
	run("off");
	if (!failures)
		printf("repin_cli: ok\n");
	return failures ? 1 : 0;
}
