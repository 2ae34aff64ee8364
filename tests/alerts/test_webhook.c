// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_webhook.c - `ncclbpf export --alert-webhook` against a receiver on
 * loopback: an emulated rank (its own process, the plugin as profiler)
 * runs 4 MiB AllReduces of 8 ms, the exporter must POST a firing
 * Alertmanager-style alert for the 4M bound of 5 ms (and none for other
 * sizes); after the rank's collectives drop to 1 ms it must POST the
 * resolution (endsAt).
 *
 * With --alertmanager the receiver is Debian's prometheus-alertmanager,
 * started on loopback by the test (skipped, exit 77, where it is not
 * installed): the alert must show up in its API as active with the
 * exporter's labels, and be gone once the exporter resolved it.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "emu_prof.h"
#include "emu_test.h"
#include "webhook_rx.h"

struct shared {
	_Atomic int phase; /* 0 slow, 1 go fast, 2 fast done, 3 stop */
	_Atomic int ready;
};
static struct shared *sh;

static void burst(struct prof *p, uint64_t *seq, uint64_t lat, int n)
{
	static uint64_t clock_ns = 1000000;

	for (int i = 0; i < n; i++) {
		void *g = start_group(p), *c = start_coll(p, g, (*seq)++, (4u << 20) / 4, 1);
		void *k = start_kch(p, c, 0, clock_ns);

		record_kch_stop(p, k, clock_ns + lat);
		stop(p, k);
		stop(p, c);
		stop(p, g);
		clock_ns += lat + 1000;
	}
}

static void run_rank(void)
{
	struct prof p = { .v = 5 };
	char err[256];
	uint64_t seq = 0;

	if (emu_open(&p.pl, EMU_PROFILER, EMU_PLUGIN, 5, err, sizeof(err)) || prof_init(&p, 0xa1e7))
		_exit(2);
	burst(&p, &seq, 8000000, 500);
	atomic_store(&sh->ready, 1);
	while (atomic_load(&sh->phase) == 0)
		usleep(1000);
	burst(&p, &seq, 1000000, 500);
	atomic_store(&sh->phase, 2);
	while (atomic_load(&sh->phase) != 3)
		usleep(1000);
	prof_fini(&p);
	_exit(0);
}

#define ALERTMANAGER "/usr/bin/prometheus-alertmanager"

/* A loopback port nobody listens on now. */
static unsigned free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	unsigned port = 0;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
	    !getsockname(fd, (struct sockaddr *)&sa, &sl))
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* GET path from the Alertmanager on port: the body (malloc'ed), NULL when it did not answer. */
static char *am_get(unsigned port, const char *path)
{
	char cmd[256], *buf = calloc(1, 65536);
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "curl -sf --max-time 2 http://127.0.0.1:%u%s", port, path);
	if (!buf || !(p = popen(cmd, "r"))) {
		free(buf);
		return NULL;
	}
	n = fread(buf, 1, 65535, p);
	buf[n] = 0;
	if (pclose(p)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Polls the alert list for 10 s until the P99 alert is there (firing) or gone; the last list. */
static char *am_wait(unsigned port, bool firing)
{
	for (int i = 0; i < 100; i++) {
		char *b = am_get(port, "/api/v2/alerts");

		if (b && !!strstr(b, "NcclbpfCollectiveLatencyP99High") == firing)
			return b;
		free(b);
		usleep(100000);
	}
	return NULL;
}

static pid_t am_start(const char *dir, unsigned port)
{
	char cfg[300], data[300], listen[64], cfgarg[320], dataarg[320];
	pid_t pid;
	FILE *f;

	snprintf(cfg, sizeof(cfg), "%s/am.yml", dir);
	snprintf(data, sizeof(data), "%s/am-data", dir);
	f = fopen(cfg, "w");
	if (!f)
		return -1;
	fputs("route: { receiver: 'none', group_wait: 1s, group_interval: 1s }\n"
	      "receivers: [ { name: 'none' } ]\n", f);
	fclose(f);
	snprintf(listen, sizeof(listen), "--web.listen-address=127.0.0.1:%u", port);
	snprintf(cfgarg, sizeof(cfgarg), "--config.file=%s", cfg);
	snprintf(dataarg, sizeof(dataarg), "--storage.path=%s", data);
	pid = fork();
	if (!pid) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(devnull, 1);
		dup2(devnull, 2);
		execl(ALERTMANAGER, ALERTMANAGER, cfgarg, dataarg, listen, "--cluster.listen-address=",
		      "--log.level=warn", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; pid > 0 && i < 100; i++) {
		char *b = am_get(port, "/-/ready");

		free(b);
		if (b)
			return pid;
		usleep(100000);
	}
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
	return -1;
}

int main(int argc, char **argv)
{
	bool am = argc > 1 && !strcmp(argv[1], "--alertmanager");
	unsigned am_port = 0;
	pid_t amp = -1;
	char rmcmd[300];
	char dir[] = "/tmp/ncclbpf-alerts.XXXXXX", url[128], pidarg[16];
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	pid_t rank, exporter;
	char *b1, *b2;
	int lfd, st = 0;

	if (!mkdtemp(dir))
		return 1;
	setenv("NCCLBPF_CTL_DIR", dir, 1);
	setenv("NCCLBPF_MAP_DIR", dir, 1);
	setenv("NCCLBPF_POLICY", EMU_BPF_DIR "/latency_hist.bpf.o", 1); /* a profiler program: GPU timing on */
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (sh == MAP_FAILED || lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(lfd, 4) || getsockname(lfd, (struct sockaddr *)&sa, &sl))
		return 1;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/api/v2/alerts", ntohs(sa.sin_port));
	if (am) {
		if (access(ALERTMANAGER, X_OK) || system("command -v curl >/dev/null")) {
			printf("SKIP alerts_alertmanager: %s or curl not installed "
			       "(apt-get install prometheus-alertmanager curl)\n", ALERTMANAGER);
			rmdir(dir);
			return 77;
		}
		am_port = free_port();
		amp = am_start(dir, am_port);
		CHECK_MSG(amp > 0, "prometheus-alertmanager did not start on port %u", am_port);
		if (amp <= 0)
			return check_summary("alerts_alertmanager");
		snprintf(url, sizeof(url), "http://127.0.0.1:%u/api/v2/alerts", am_port);
	}
	rank = fork();
	if (!rank)
		run_rank();
	while (!atomic_load(&sh->ready))
		usleep(1000);
	snprintf(pidarg, sizeof(pidarg), "%d", (int)rank);
	exporter = fork();
	if (!exporter) {
		int devnull = open("/dev/null", 1);

		if (!getenv("ALERTS_VERBOSE"))
			dup2(devnull, 1);
		execl(NCCLBPF_CLI, NCCLBPF_CLI, "export", "--count", am ? "5" : "3", "--interval", "1",
		      "--alert-webhook", url, "--alert-p99", "4M=0.005,16K=0.0001", "--alert-refused",
		      pidarg, (char *)NULL);
		_exit(127);
	}
	b1 = am ? am_wait(am_port, true) : webhook_receive(lfd);
	CHECK(b1 != NULL);
	if (b1 && am) {
		/* Alertmanager's view: the labels as posted, the alert active. */
		CHECK_STR_CONTAINS(b1, "\"alertname\":\"NcclbpfCollectiveLatencyP99High\"");
		CHECK_STR_CONTAINS(b1, "\"size\":\"4M\"");
		CHECK_STR_CONTAINS(b1, "\"communicator\":\"0xa1e7\"");
		CHECK_STR_CONTAINS(b1, "\"state\":\"active\"");
		CHECK_STR_CONTAINS(b1, "\"summary\":\"AllReduce 4M P99");
		CHECK(!strstr(b1, "\"size\":\"16K\"") && !strstr(b1, "NcclbpfPolicyOutputRefused"));
	} else if (b1) {
		CHECK_STR_CONTAINS(b1, "\"alertname\":\"NcclbpfCollectiveLatencyP99High\"");
		CHECK_STR_CONTAINS(b1, "\"size\":\"4M\"");
		CHECK_STR_CONTAINS(b1, "\"communicator\":\"0xa1e7\"");
		CHECK_STR_CONTAINS(b1, "\"startsAt\":");
		CHECK(!strstr(b1, "\"size\":\"16K\"") && !strstr(b1, "endsAt") &&
		      !strstr(b1, "NcclbpfPolicyOutputRefused"));
		CHECK(b1[0] == '[' && b1[strlen(b1) - 1] == ']');
	}
	atomic_store(&sh->phase, 1);
	while (atomic_load(&sh->phase) != 2)
		usleep(1000);
	b2 = am ? am_wait(am_port, false) : webhook_receive(lfd);
	CHECK_MSG(b2 != NULL, "%s", am ? "Alertmanager still lists the alert" : "no resolution");
	if (b2 && !am) {
		CHECK_STR_CONTAINS(b2, "\"alertname\":\"NcclbpfCollectiveLatencyP99High\"");
		CHECK_STR_CONTAINS(b2, "\"endsAt\":");
	}
	waitpid(exporter, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	atomic_store(&sh->phase, 3);
	waitpid(rank, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	free(b1);
	free(b2);
	if (amp > 0) {
		kill(amp, SIGTERM);
		waitpid(amp, &st, 0);
	}
	/* Alertmanager leaves its config and data directory in dir. */
	snprintf(rmcmd, sizeof(rmcmd), "rm -rf '%s'", dir);
	if (system(rmcmd))
		rmdir(dir);
	return check_summary(am ? "alerts_alertmanager" : "alerts_webhook");
}
