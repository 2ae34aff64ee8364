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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "etcd.h"
#include "model.h"

static int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
	    !getsockname(fd, (struct sockaddr *)&sa, &len))
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
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

int rm_etcd_start(struct rm_conf *c)
{
	struct nbpf_etcd *e = NULL;
	size_t len = 0, lc = 0;

	snprintf(g_root, sizeof(g_root), "%s", c->root);
	if (system("command -v etcd >/dev/null 2>&1")) {
		fprintf(stderr, "rank_model: SKIP: no etcd (Debian: etcd-server) for the etcd exchange\n");
		return 77;
	}
	for (int m = 0; m < 3; m++) {
		g_client[m] = free_port();
		g_peer[m] = free_port();
		len += (size_t)snprintf(g_endpoints + len, sizeof(g_endpoints) - len, "%shttp://127.0.0.1:%d",
					m ? "," : "", g_client[m]);
		lc += (size_t)snprintf(g_cluster + lc, sizeof(g_cluster) - lc, "%sm%d=http://127.0.0.1:%d",
				       m ? "," : "", m, g_peer[m]);
	}
	for (int m = 0; m < 3; m++)
		g_pid[m] = spawn(c, m, false);
	c->etcd = g_endpoints;
	/* Up when a write goes through (a leader was elected). */
	for (int i = 0; i < 300; i++) {
		if (!e && nbpf_etcd_open(g_endpoints, 500, &e))
			break;
		if (e && !nbpf_etcd_put(e, "/ncclbpf-test/up", "1", 0)) {
			nbpf_etcd_close(e);
			return 0;
		}
		usleep(100000);
	}
	nbpf_etcd_close(e);
	fprintf(stderr, "rank_model: the etcd cluster did not come up (logs in %s/etcd*.log)\n", c->root);
	rm_etcd_stop(c);
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
