// SPDX-License-Identifier: Apache-2.0
/*
 * test_net_telemetry.c - the operator's view of the net plugin, through the
 * ncclbpf command against this process: `ps` lists the net role with the
 * messages it moved (no rank count: the net ABI gives none), `prog list`
 * counts every run of the net program, `export` carries per-peer series
 * whose message and byte counts match the traffic sent (and passes
 * promtool where installed), and `top` shows the per-peer pane.
 */
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "net_drv.h"

#define TMO 10000

static int run(char *out, size_t len, const char *fmt, ...)
{
	char args[1024], cmd[2048];
	va_list ap;
	FILE *p;
	size_t n;
	int st;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", NET_CLI, args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(out, 1, len - 1, p);
	out[n] = 0;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static uint64_t metric(const char *text, const char *series)
{
	const char *p = strstr(text, series);

	return p ? strtoull(p + strlen(series), NULL, 10) : UINT64_MAX;
}

int main(void)
{
	char dir[] = "/tmp/ncclbpf-nettele-XXXXXX", ctl[300], handle[NBPF_NET_HANDLE_MAXSIZE];
	static char out[1 << 20], buf[1 << 20];
	void *lib, *lc = NULL, *sc, *rc, *sr, *rr;
	uint64_t bytes = 0;
	struct drv d;
	int n = 12;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(ctl, sizeof(ctl), "%s/ctl", dir);
	setenv("NCCLBPF_CTL_DIR", ctl, 1);
	setenv("NCCL_SOCKET_IFNAME", "lo", 0);
	setenv("NCCLBPF_POLICY", EMU_BPF_DIR "/t_net_count.bpf.o", 1);
	lib = drv_open(NET_PLUGIN);
	CHECK(lib && drv_bind(&d, lib, 11) == 0 && drv_init(&d, 0xabc, -1, NULL) == 0);
	if (!lib)
		return check_summary("net_telemetry");
	CHECK(drv_listen(&d, 0, handle, &lc) == 0);
	CHECK(drv_pair(&d, 0, handle, lc, &sc, &rc, TMO) == 0 && sc && rc);
	for (int i = 0; i < n; i++) {
		size_t sz = (size_t)i * 40000;

		bytes += sz;
		CHECK(drv_irecv(&d, rc, buf, sizeof(buf), 0, NULL, &rr) == 0 && rr);
		CHECK(drv_isend(&d, sc, buf, sz, 0, NULL, &sr) == 0 && sr);
		CHECK(drv_wait(&d, sr, NULL, TMO) == 0 && drv_wait(&d, rr, NULL, TMO) == 0);
	}

	CHECK(run(out, sizeof(out), "ps %d", getpid()) == 0);
	CHECK_STR_CONTAINS(out, " net ");
	/* One context moved n messages each way; the ranks are NCCL's to know, not ours. */
	snprintf(buf, sizeof(buf), "net      rank -    ranks -    nodes -   calls %d\n", 2 * n);
	CHECK_STR_CONTAINS(out, buf);
	/* The program ran on connect, accept, and each message's post and completion on both ends. */
	CHECK(run(out, sizeof(out), "prog list %d", getpid()) == 0);
	snprintf(buf, sizeof(buf), "hook net  runs %d ", 2 + 4 * n);
	CHECK_STR_CONTAINS(out, buf);
	CHECK(run(out, sizeof(out), "export %d", getpid()) == 0);
	/* At least ours: other tests' traffic never reaches this process's counters. */
	CHECK_EQ_U64(metric(out, "ncclbpf_net_peer_messages_total{peer=\"127.0.0.1\",dir=\"send\"} "), n);
	CHECK_EQ_U64(metric(out, "ncclbpf_net_peer_messages_total{peer=\"127.0.0.1\",dir=\"recv\"} "), n);
	CHECK_EQ_U64(metric(out, "ncclbpf_net_peer_bytes_total{peer=\"127.0.0.1\",dir=\"recv\"} "), bytes);
	CHECK_EQ_U64(metric(out, "ncclbpf_net_peer_latency_seconds_count{peer=\"127.0.0.1\",dir=\"send\"} "), n);
	CHECK_EQ_U64(metric(out, "ncclbpf_net_peer_latency_seconds_bucket{peer=\"127.0.0.1\",dir=\"recv\",le=\"+Inf\"} "), n);
	CHECK_EQ_U64(metric(out, "ncclbpf_net_peer_errors_total{peer=\"127.0.0.1\"} "), 0);
	if (access("/usr/bin/promtool", X_OK) == 0) {
		char path[400], cmd[600];
		FILE *f;

		snprintf(path, sizeof(path), "%s/metrics.prom", dir);
		f = fopen(path, "w");
		if (f) {
			fputs(out, f);
			fclose(f);
		}
		snprintf(cmd, sizeof(cmd), "/usr/bin/promtool check metrics < %s > /dev/null 2>&1", path);
		CHECK(system(cmd) == 0);
		unlink(path);
	} else {
		printf("promtool: skipped (not installed)\n");
	}
	CHECK(run(out, sizeof(out), "top %d 0.05 1", getpid()) == 0);
	CHECK_STR_CONTAINS(out, "NET PEER");
	CHECK_STR_CONTAINS(out, "127.0.0.1");

	CHECK(drv_close_send(&d, sc) == 0);
	CHECK(drv_close_recv(&d, rc) == 0);
	CHECK(drv_close_listen(&d, lc) == 0);
	CHECK(drv_finalize(&d) == 0);
	dlclose(lib);
	rmdir(ctl);
	rmdir(dir);
	return check_summary("net_telemetry");
}
