// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_load_counts.c - the policy load counters a NcclbpfPolicyLoadRefused
 * or NcclbpfPolicyRolledBack alert reads, end to end: a live emulated job
 * (`ncclbpf sim --serve`) gets a reload the verifier refuses, one the
 * loader refuses (not an ELF object), a good reload and a rollback, all
 * through `ncclbpf reload/rollback`; `ncclbpf export` must then show each
 * counter moved by exactly one, labelled with the job's pid, and the
 * exposition must pass `promtool check metrics` where installed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "webhook_rx.h"

static char out[1 << 20];

/* Runs the ncclbpf command with args; its exit status, stdout+stderr in out. */
static int cli(const char *fmt, ...)
{
	char args[2048], cmd[4096];
	va_list ap;
	size_t n;
	FILE *p;
	int st;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", NCCLBPF_CLI, args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The value of one exported sample (series with its labels, as printed), or -1 if absent. */
static long long sample(int pid, const char *family, const char *extra)
{
	char series[256];
	const char *p;

	snprintf(series, sizeof(series), "%s{pid=\"%d\"%s} ", family, pid, extra);
	p = strstr(out, series);
	return p ? atoll(p + strlen(series)) : -1;
}

struct counts {
	long long attempts, verifier, loader, rollbacks;
};

static int export_counts(int pid, struct counts *c)
{
	int rc = cli("export %d", pid);

	c->attempts = sample(pid, "ncclbpf_policy_load_attempts_total", "");
	c->verifier = sample(pid, "ncclbpf_policy_load_refusals_total", ",stage=\"verifier\"");
	c->loader = sample(pid, "ncclbpf_policy_load_refusals_total", ",stage=\"loader\"");
	c->rollbacks = sample(pid, "ncclbpf_policy_rollbacks_total", "");
	return rc;
}

/*
 * The exporter's own webhook (no Prometheus): its first collection counts
 * everything since the job started, so the refusals and rollbacks above
 * must each arrive as a firing alert.
 */
static void webhook_alerts(int pid)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	char url[96], pidarg[16], *body = NULL;
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), st = -1;
	pid_t ex = -1;

	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 4) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl)) {
		CHECK_MSG(0, "loopback listener: %s", strerror(errno));
		goto out;
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/api/v2/alerts", ntohs(sa.sin_port));
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	ex = fork();
	if (!ex) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(devnull, 1);
		execl(NCCLBPF_CLI, NCCLBPF_CLI, "export", "--count", "1", "--alert-webhook", url,
		      "--alert-refused", pidarg, (char *)NULL);
		_exit(127);
	}
	body = webhook_receive(lfd);
	CHECK_MSG(body != NULL, "no alert posted");
	if (body) {
		char want[128];

		snprintf(want, sizeof(want), "\"pid\":\"%d\",\"stage\":\"verifier\"", pid);
		CHECK_STR_CONTAINS(body, want);
		snprintf(want, sizeof(want), "\"pid\":\"%d\",\"stage\":\"loader\"", pid);
		CHECK_STR_CONTAINS(body, want);
		CHECK_STR_CONTAINS(body, "\"alertname\":\"NcclbpfPolicyLoadRefused\"");
		CHECK_STR_CONTAINS(body, "\"alertname\":\"NcclbpfPolicyRolledBack\"");
		CHECK_STR_CONTAINS(body, "\"summary\":\"2 policy rollbacks\"");
	}
	waitpid(ex, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
out:
	free(body);
	if (lfd >= 0)
		close(lfd);
}

int main(void)
{
	char dir[] = "/tmp/ncclbpf-loadcount.XXXXXX", junk[256], prom[256];
	const char *good = POLICY_DIR "/latency_hist.bpf.o";
	struct counts c0, c1;
	pid_t job;
	FILE *f;
	int st;

	if (!mkdtemp(dir))
		return 1;
	setenv("NCCLBPF_CTL_DIR", dir, 1);
	setenv("NCCLBPF_MAP_DIR", dir, 1);
	snprintf(junk, sizeof(junk), "%s/junk.bpf.o", dir);
	f = fopen(junk, "w");
	if (!f)
		return 1;
	fputs("not an ELF object\n", f);
	fclose(f);

	job = fork();
	if (!job) {
		int devnull = open("/dev/null", 1);

		dup2(devnull, 1);
		execl(NCCLBPF_CLI, NCCLBPF_CLI, "sim", "--serve", good, "--ranks", "2", "--rate", "200",
		      "--duration", "30", (char *)NULL);
		_exit(127);
	}
	/* Its control socket is up once `ps` answers for it. */
	for (int i = 0; i < 200 && cli("ps %d", (int)job); i++)
		usleep(50000);

	CHECK(export_counts(job, &c0) == 0);
	CHECK_MSG(c0.attempts == 1 && c0.verifier == 0 && c0.loader == 0 && c0.rollbacks == 0,
		  "at start: attempts %lld verifier %lld loader %lld rollbacks %lld", c0.attempts,
		  c0.verifier, c0.loader, c0.rollbacks);

	CHECK(cli("reload %d %s", (int)job, BAD_POLICY) != 0);
	CHECK_STR_CONTAINS(out, "rejected");
	CHECK(cli("reload %d %s", (int)job, junk) != 0);
	CHECK(cli("reload %d %s", (int)job, good) == 0);
	CHECK(cli("rollback %d", (int)job) == 0);
	CHECK(cli("rollback %d", (int)job) == 0); /* back to the reloaded image: counts again */

	CHECK(export_counts(job, &c1) == 0);
	CHECK_MSG(c1.attempts == 4 && c1.verifier == 1 && c1.loader == 1 && c1.rollbacks == 2,
		  "after: attempts %lld verifier %lld loader %lld rollbacks %lld", c1.attempts,
		  c1.verifier, c1.loader, c1.rollbacks);
	CHECK_STR_CONTAINS(out, "# TYPE ncclbpf_policy_load_refusals_total counter");
	webhook_alerts(job);

	if (access("/usr/bin/promtool", X_OK) == 0) {
		char cmd[600];

		snprintf(prom, sizeof(prom), "%s/export.prom", dir);
		f = fopen(prom, "w");
		if (f) {
			fputs(out, f);
			fclose(f);
		}
		snprintf(cmd, sizeof(cmd), "/usr/bin/promtool check metrics < %s", prom);
		CHECK_MSG(system(cmd) == 0, "promtool check metrics rejected the export");
		unlink(prom);
	} else {
		printf("promtool: skipped (not installed)\n");
	}

	kill(job, SIGTERM);
	waitpid(job, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	unlink(junk);
	rmdir(dir);
	return check_summary("alerts_load_counts");
}
