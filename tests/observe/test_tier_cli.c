// SPDX-License-Identifier: Apache-2.0
/*
 * test_tier_cli.c - tiered tracing end to end: `ncclbpf observe
 * --deep-when runq-p99=0.001` over a process whose two threads wake each
 * other for a second and then sleep.  While they run, the run-queue P99 is
 * far above 1 us: the deep tier must switch on, send at most its budget and
 * count what it dropped; once they sleep, it must switch off after its
 * window.
 *
 * Needs root and kernel BTF; prints SKIP and exits 77 otherwise.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static int pp[2][2];
static volatile int stop;

static void *pong(void *arg)
{
	char c;

	(void)arg;
	while (read(pp[0][0], &c, 1) == 1 && write(pp[1][1], &c, 1) == 1)
		;
	return NULL;
}

/* Wakes its two threads for about 1.5 s (after a start signal), then sleeps. */
static pid_t start_job(int go_fd)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct timespec t0, t;
		pthread_t th;
		char c = 'x';

		if (pipe(pp[0]) || pipe(pp[1]) || read(go_fd, &c, 1) != 1)
			_exit(1);
		pthread_create(&th, NULL, pong, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			for (int i = 0; i < 100; i++)
				if (write(pp[0][1], &c, 1) != 1 || read(pp[1][0], &c, 1) != 1)
					_exit(1);
			clock_gettime(CLOCK_MONOTONIC, &t);
		} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 < 1.5);
		pause();
		_exit(0);
	}
	return pid;
}

static char *slurp(const char *file, char *buf, size_t n)
{
	FILE *f = fopen(file, "r");
	size_t k = f ? fread(buf, 1, n - 1, f) : 0;

	if (f)
		fclose(f);
	buf[k] = 0;
	return buf;
}

/* Where the last occurrence of key ends, or NULL. */
static const char *after_last(const char *s, const char *key)
{
	const char *p = s, *q, *last = NULL;

	while ((q = strstr(p, key))) {
		last = q;
		p = q + 1;
	}
	return last ? last + strlen(key) : NULL;
}

/* The value after the last occurrence of key, or -1. */
static long long last_num(const char *s, const char *key)
{
	const char *p = s, *q, *last = NULL;

	while ((q = strstr(p, key))) {
		last = q;
		p = q + 1;
	}
	return last ? strtoll(last + strlen(key), NULL, 10) : -1;
}

int main(int argc, char **argv)
{
	char out[] = "/tmp/ncclbpf-tier-outXXXXXX", err[] = "/tmp/ncclbpf-tier-errXXXXXX";
	static char o[1 << 18], e[1 << 14];
	const long long budget = 50;
	int go[2], st = 0, fd;
	char pidstr[16];
	long long sent, dropped;
	pid_t job, obs;
	const char *on, *off;

	if (argc < 2)
		return 2;
	if (geteuid() != 0 || access("/sys/kernel/btf/vmlinux", R_OK)) {
		printf("SKIP tier_cli: needs root and kernel BTF\n");
		return SKIP;
	}
	if ((fd = mkstemp(out)) >= 0)
		close(fd);
	if ((fd = mkstemp(err)) >= 0)
		close(fd);
	if (pipe(go))
		return 1;
	job = start_job(go[0]);
	snprintf(pidstr, sizeof(pidstr), "%d", job);
	obs = fork();
	if (obs == 0) {
		const char *av[] = { argv[1], "-j", "observe", "--pid", pidstr, "--probes", "sched",
				     "--interval", "200", "--duration", "4", "--deep-when",
				     "runq-p99=0.001", "--deep-window", "0.6", "--deep-budget", "50",
				     NULL };

		dup2(open(out, O_WRONLY | O_TRUNC), 1);
		dup2(open(err, O_WRONLY | O_TRUNC), 2);
		execv(argv[1], (char **)av);
		_exit(127);
	}
	/* Start the load once observe has printed its first sample. */
	for (int i = 0; i < 2000 && !strstr(slurp(out, o, sizeof(o)), "\"sample\""); i++)
		usleep(10000);
	if (write(go[1], "g", 1) != 1)
		return 1;
	waitpid(obs, &st, 0);
	kill(job, SIGKILL);
	waitpid(job, NULL, 0);
	slurp(out, o, sizeof(o));
	slurp(err, e, sizeof(e));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "observe failed: %s", e);
	on = strstr(e, "deep tier: on");
	off = on ? strstr(on, "deep tier: off") : NULL;
	CHECK(on && off, "deep tier did not switch on and off: %s", e);
	CHECK(strstr(o, "\"deep\":{\"on\":true") && after_last(o, "\"deep\":{\"on\":") &&
	      !strncmp(after_last(o, "\"deep\":{\"on\":"), "false", 5),
	      "JSON: not on, then off at the end");
	sent = last_num(o, "\"sent\":");
	dropped = last_num(o, "\"dropped\":");
	printf("tier_cli: sent %lld, dropped %lld\n", sent, dropped);
	/* On for at most the 4 s run: the budget each second plus a full bucket. */
	CHECK(sent > 0 && sent <= budget * 5 + 4, "sent %lld", sent);
	CHECK(dropped > 0, "nothing dropped over a budget of %lld/s", budget);
	unlink(out);
	unlink(err);
	if (!failures)
		printf("tier_cli: ok\n");
	return failures ? 1 : 0;
}
