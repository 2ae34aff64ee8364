/* SPDX-License-Identifier: Apache-2.0 */
/*
 * etcd_cluster.c - a real three-member etcd cluster on loopback for the
 * tester's cross-node cases: Debian's etcd-server, ports the kernel hands
 * out, data under the run's directory, and members killed (-9) and
 * restarted while changes go through it.  No etcd installed: the case is
 * skipped (exit 77), visibly.
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "etcd.h"
#include "model.h"

/*
 * A port for a member to listen on.  Not one bind(0) hands out: those come
 * from the ephemeral range, where the members' own connections to each
 * other (and every other test's) take their source ports, so one could be
 * taken between this check and the member's bind.  Below that range only
 * listeners take ports; the bind check still catches one already in use.
 */
static int free_port(unsigned *rng)
{
	int lo = 32768, fd, port = -1;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	if (f) {
		if (fscanf(f, "%d", &lo) != 1)
			lo = 32768;
		fclose(f);
	}
	for (int i = 0; i < 200 && port < 0; i++) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		int p;

		*rng = *rng * 1103515245u + 12345u;
		/* 10000..lo-1 when the range leaves room; else any port bind(0) gives. */
		p = lo > 11000 ? 10000 + (int)((*rng >> 8) % (unsigned)(lo - 10000)) : 0;
		sa.sin_port = htons((uint16_t)p);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			return -1;
		if (!bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			socklen_t len = sizeof(sa);

			if (!getsockname(fd, (struct sockaddr *)&sa, &len))
				port = ntohs(sa.sin_port);
		}
		close(fd);
	}
	return port;
}

static char g_endpoints[256];
static char g_cluster[512];
static int g_client[3], g_peer[3];
static pid_t g_pid[3];
static char g_root[256]; /* the cluster's: it outlives each run's directory */

static pid_t spawn(const struct rm_conf *c, int m, bool existing)
{
	char name[16], dir[300], cu[64], pu[64], tok[64];
	pid_t pid;

	snprintf(name, sizeof(name), "m%d", m);
	(void)c;
	snprintf(dir, sizeof(dir), "%s/etcd%d", g_root, m);
	snprintf(cu, sizeof(cu), "http://127.0.0.1:%d", g_client[m]);
	snprintf(pu, sizeof(pu), "http://127.0.0.1:%d", g_peer[m]);
	snprintf(tok, sizeof(tok), "rank-%d", (int)getpid());
	pid = fork();
	if (pid == 0) {
		char log[320];
		FILE *f;

		snprintf(log, sizeof(log), "%s/etcd%d.log", g_root, m);
		f = freopen(log, "a", stdout);
		if (f)
			dup2(fileno(f), 2);
		execlp("etcd", "etcd", "--name", name, "--data-dir", dir, "--listen-client-urls", cu,
		       "--advertise-client-urls", cu, "--listen-peer-urls", pu,
		       "--initial-advertise-peer-urls", pu, "--initial-cluster", g_cluster,
		       "--initial-cluster-state", existing ? "existing" : "new", "--initial-cluster-token",
		       tok, "--heartbeat-interval", "100", "--election-timeout", "1000", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void show_logs(void)
{
	for (int m = 0; m < 3; m++) {
		char cmd[400];

		snprintf(cmd, sizeof(cmd), "echo '--- etcd member %d:' >&2; tail -n 15 '%s/etcd%d.log' >&2", m,
			 g_root, m);
		if (system(cmd)) {
			/* best effort: the logs only explain a failure already reported */
		}
	}
}

/* 0 when a write went through (a leader was elected); -1 when a member exited or none came. */
static int start_once(struct rm_conf *c, unsigned *rng)
{
	struct nbpf_etcd *e = NULL;
	size_t len = 0, lc = 0;
	char cmd[3 * sizeof(g_root) + 40];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'/etcd0 '%s'/etcd1 '%s'/etcd2", g_root, g_root, g_root);
	if (system(cmd))
		return -1;
	for (int m = 0; m < 3; m++) {
		g_client[m] = free_port(rng);
		g_peer[m] = free_port(rng);
		if (g_client[m] < 0 || g_peer[m] < 0)
			return -1;
		len += (size_t)snprintf(g_endpoints + len, sizeof(g_endpoints) - len, "%shttp://127.0.0.1:%d",
					m ? "," : "", g_client[m]);
		lc += (size_t)snprintf(g_cluster + lc, sizeof(g_cluster) - lc, "%sm%d=http://127.0.0.1:%d",
				       m ? "," : "", m, g_peer[m]);
	}
	for (int m = 0; m < 3; m++)
		g_pid[m] = spawn(c, m, false);
	c->etcd = g_endpoints;
	/* 60 s: three members electing on a loaded 2-core machine. */
	for (int i = 0; i < 600; i++) {
		for (int m = 0; m < 3; m++) {
			if (g_pid[m] > 0 && waitpid(g_pid[m], NULL, WNOHANG) == g_pid[m]) {
				fprintf(stderr, "rank_model: etcd member %d exited while starting\n", m);
				g_pid[m] = 0;
				goto fail;
			}
		}
		if (!e && nbpf_etcd_open(g_endpoints, 500, &e))
			goto fail;
		if (e && !nbpf_etcd_put(e, "/ncclbpf-test/up", "1", 0)) {
			nbpf_etcd_close(e);
			return 0;
		}
		usleep(100000);
	}
	fprintf(stderr, "rank_model: no etcd leader within 60 s\n");
fail:
	nbpf_etcd_close(e);
	show_logs();
	rm_etcd_stop(c);
	return -1;
}

int rm_etcd_start(struct rm_conf *c)
{
	unsigned rng = (unsigned)getpid() * 2654435761u ^ (unsigned)time(NULL);

	snprintf(g_root, sizeof(g_root), "%s", c->root);
	if (system("command -v etcd >/dev/null 2>&1")) {
		fprintf(stderr, "rank_model: SKIP: no etcd (Debian: etcd-server) for the etcd exchange\n");
		return 77;
	}
	/* A member that could not listen (a port taken meanwhile) gets a fresh cluster. */
	for (int attempt = 0; attempt < 3; attempt++)
		if (!start_once(c, &rng))
			return 0;
	fprintf(stderr, "rank_model: the etcd cluster did not come up in 3 attempts (logs in %s/etcd*.log)\n",
		c->root);
	return -1;
}

void rm_etcd_member(const struct rm_conf *c, int m, bool up)
{
	if (m < 0 || m > 2)
		return;
	if (!up && g_pid[m] > 0) {
		kill(g_pid[m], SIGKILL);
		waitpid(g_pid[m], NULL, 0);
		g_pid[m] = 0;
	} else if (up && (!g_pid[m] || waitpid(g_pid[m], NULL, WNOHANG) == g_pid[m])) {
		/* Killed here, or by a helper process (etcdkill): a new member with the old data. */
		g_pid[m] = spawn(c, m, true);
	}
}

void rm_etcd_stop(const struct rm_conf *c)
{
	for (int m = 0; m < 3; m++)
		rm_etcd_member(c, m, false);
}
