// SPDX-License-Identifier: Apache-2.0
/*
 * test_net_hooks.c - SEC("net") programs through the net ABI, observed
 * from outside the plugin: the TCP sockets a connection opens in this
 * process (counted in /proc/self/fd), their IP_TOS and SO_PRIORITY
 * (getsockopt), and what a counting net program measured, read back
 * through a tuner program of the same library that shares its map (one
 * host, one image for the net and tuner roles: the closed loop).
 *
 *   test_net_hooks act     NCCLBPF_POLICY = count + act + probe objects
 *   test_net_hooks bad     outputs out of range: all refused, defaults stay
 *   test_net_hooks reject  a program the verifier rejects: fail open
 *   test_net_hooks reload  NCCLBPF_WATCH=1: a counting policy file replaced
 *                          by an acting one changes the next connection,
 *                          while the open one keeps working
 */
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "emu_test.h"
#include "net_drv.h"

#define TMO 10000
#define MAXFD 256
#define DEF_SOCKS 2 /* NCCL_SOCKET_NTHREADS=2 x NCCL_NSOCKS_PERTHREAD=1 (ctest sets them) */

struct tcp { int fd, lport, pport, fam; };

static int tcp_port(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? ntohs(((const struct sockaddr_in6 *)ss)->sin6_port)
					 : ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

/* Connected TCP sockets of this process. */
static int list_tcp(struct tcp *out, int max)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)) && n < max) {
		struct sockaddr_storage a, b;
		socklen_t la = sizeof(a), lb = sizeof(b);
		int fd = atoi(e->d_name), type = 0;
		socklen_t lt = sizeof(type);
		struct stat st;

		if (fd <= 2 || fd == dirfd(d) || fstat(fd, &st) || !S_ISSOCK(st.st_mode))
			continue;
		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &lt) || type != SOCK_STREAM ||
		    getsockname(fd, (struct sockaddr *)&a, &la) || getpeername(fd, (struct sockaddr *)&b, &lb) ||
		    (a.ss_family != AF_INET && a.ss_family != AF_INET6))
			continue;
		out[n++] = (struct tcp){ fd, tcp_port(&a), tcp_port(&b), a.ss_family };
	}
	if (d)
		closedir(d);
	return n;
}

static int sockopt(int fd, int lvl, int opt)
{
	int v = -1;
	socklen_t len = sizeof(v);

	getsockopt(fd, lvl, opt, &v, &len);
	return v;
}

/*
 * Opens one connection and checks its sockets: want_socks data sockets
 * (+1 control) per side, and the marking on each side.
 */
static void check_connection(struct drv *d, int want_socks, int send_tos, int send_prio,
			     int recv_tos, int recv_prio, void **sc, void **rc)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE];
	struct tcp before[MAXFD], after[MAXFD];
	int nb = list_tcp(before, MAXFD), na, nsend = 0, nrecv = 0, lport = -1;
	void *lc = NULL;

	CHECK(drv_listen(d, 0, handle, &lc) == 0);
	CHECK(drv_pair(d, 0, handle, lc, sc, rc, TMO) == 0 && *sc && *rc);
	CHECK(drv_close_listen(d, lc) == 0);
	na = list_tcp(after, MAXFD);
	CHECK_EQ_U64(na - nb, 2 * (want_socks + 1));
	/* The accepted side's sockets all share the listener's local port. */
	for (int i = 0; i < na && lport < 0; i++) {
		int same = 0;

		for (int j = 0; j < na; j++)
			same += after[j].lport == after[i].lport;
		if (same == want_socks + 1)
			lport = after[i].lport;
	}
	for (int i = 0; i < na; i++) {
		bool old = false;
		int tos, prio;

		for (int j = 0; j < nb; j++)
			old |= before[j].fd == after[i].fd;
		if (old)
			continue;
		tos = sockopt(after[i].fd, IPPROTO_IP, IP_TOS);
		prio = sockopt(after[i].fd, SOL_SOCKET, SO_PRIORITY);
		if (after[i].lport == lport) {
			nrecv++;
			CHECK_MSG(tos == recv_tos && prio == recv_prio, "recv socket tos %#x prio %d", tos, prio);
		} else {
			nsend++;
			CHECK(after[i].pport == lport);
			CHECK_MSG(tos == send_tos && prio == send_prio, "send socket tos %#x prio %d", tos, prio);
		}
	}
	CHECK_EQ_U64(nsend, want_socks + 1);
	CHECK_EQ_U64(nrecv, want_socks + 1);
}

static int traffic(struct drv *d, void *sc, void *rc, int n, size_t size)
{
	char *buf = calloc(1, size + 1);
	int err = 0;

	for (int i = 0; i < n && !err; i++) {
		void *sr = NULL, *rr = NULL;

		err = drv_irecv(d, rc, buf, size, 3, NULL, &rr) || drv_isend(d, sc, buf, size, 3, NULL, &sr) ||
		      drv_wait(d, sr, NULL, TMO) || drv_wait(d, rr, NULL, TMO);
	}
	free(buf);
	return err;
}

/* net_stats[slot] as the probe tuner reports it: n_channels - 1 (mod 64). */
static int probe(struct emu_tuner *t, int slot)
{
	struct emu_decision dec;
	struct emu_topo topo = EMU_TOPO_DEFAULT;
	int coll = slot < 4 ? slot : slot - 4;

	if (emu_tuner_call(t, &topo, coll, slot < 4 ? 1 << 20 : 4, &dec))
		return -1;
	return dec.n_channels - 1;
}

static void run_act(struct drv *d)
{
	struct emu_plugin tpl;
	struct emu_tuner t;
	struct emu_topo topo = EMU_TOPO_DEFAULT;
	char err[256];
	void *sc, *rc;

	check_connection(d, 3, 0x88, 5, 0xb8, 2, &sc, &rc);
	CHECK(traffic(d, sc, rc, 5, 100) == 0);
	CHECK(traffic(d, sc, rc, 2, 1 << 20) == 0);
	/* The tuner role of the same library reads what the net program counted. */
	CHECK(emu_open(&tpl, EMU_TUNER, NET_PLUGIN, 5, err, sizeof(err)) == 0);
	CHECK(emu_tuner_init(&t, &tpl, 42, &topo, emu_logger) == 0);
	CHECK_EQ_U64(probe(&t, 0), 1);         /* connects */
	CHECK_EQ_U64(probe(&t, 1), 1);         /* accepts */
	CHECK_EQ_U64(probe(&t, 2), 7);         /* send posts */
	CHECK_EQ_U64(probe(&t, 3), 7);         /* recv posts */
	CHECK_EQ_U64(probe(&t, 4), 7);         /* send completions */
	CHECK_EQ_U64(probe(&t, 5), 7);         /* recv completions */
	CHECK_EQ_U64(probe(&t, 6), (5 * 100 + 2 * (1 << 20)) % 64); /* bytes received */
	CHECK_EQ_U64(probe(&t, 7), 14);        /* completions with a latency */
	CHECK(emu_tuner_fini(&t) == 0);
	emu_close(&tpl);
	CHECK(drv_close_send(d, sc) == 0);
	CHECK(drv_close_recv(d, rc) == 0);
}

/* Sockets the next connection opens (both sides), or -1. */
static int probe_socks(struct drv *d)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE];
	struct tcp before[MAXFD], after[MAXFD];
	int nb = list_tcp(before, MAXFD), na;
	void *lc = NULL, *sc, *rc;

	if (drv_listen(d, 0, handle, &lc) || drv_pair(d, 0, handle, lc, &sc, &rc, TMO))
		return -1;
	na = list_tcp(after, MAXFD);
	drv_close_listen(d, lc);
	drv_close_send(d, sc);
	drv_close_recv(d, rc);
	return na - nb;
}

static void copy_file(const char *from, const char *to)
{
	char tmp[600], buf[4096];
	FILE *in = fopen(from, "rb"), *out;
	size_t n;

	snprintf(tmp, sizeof(tmp), "%s.tmp", to);
	out = fopen(tmp, "wb");
	while (in && out && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, n, out);
	if (in)
		fclose(in);
	if (out)
		fclose(out);
	CHECK(in && out && rename(tmp, to) == 0); /* atomic, as deployment tools do */
}

static void run_reload(struct drv *d, const char *policy)
{
	void *sc, *rc;
	int n = -1;

	check_connection(d, DEF_SOCKS, 0, 0, 0, 0, &sc, &rc);
	copy_file(EMU_BPF_DIR "/t_net_act.bpf.o", policy);
	for (uint64_t end = drv_now_ms() + TMO; n != 2 * (3 + 1) && drv_now_ms() < end;) {
		usleep(20000);
		n = probe_socks(d);
	}
	CHECK_EQ_U64(n, 2 * (3 + 1));
	/* The connection opened before the swap still carries traffic. */
	CHECK(traffic(d, sc, rc, 3, 200000) == 0);
	CHECK(drv_close_send(d, sc) == 0);
	CHECK(drv_close_recv(d, rc) == 0);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/ncclbpf-net-XXXXXX", policy[600] = "";
	const char *mode = argc > 1 ? argv[1] : "act";
	void *lib, *sc, *rc;
	struct drv d;

	setenv("NCCL_SOCKET_IFNAME", "lo", 0);
	if (!strcmp(mode, "act"))
		emu_set_policy(EMU_BPF_DIR "/t_net_count.bpf.o:" EMU_BPF_DIR "/t_net_act.bpf.o:"
			       EMU_BPF_DIR "/t_net_probe.bpf.o");
	else if (!strcmp(mode, "reload")) {
		CHECK(mkdtemp(dir) != NULL);
		snprintf(policy, sizeof(policy), "%s/policy.bpf.o", dir);
		copy_file(EMU_BPF_DIR "/t_net_count.bpf.o", policy);
		emu_set_policy(policy);
		setenv("NCCLBPF_WATCH", "1", 1);
	} else if (!strcmp(mode, "bad"))
		emu_set_policy(EMU_BPF_DIR "/t_net_bad.bpf.o");
	else
		emu_set_policy(EMU_BPF_DIR "/t_net_reject.bpf.o");
	lib = drv_open(NET_PLUGIN);
	CHECK(lib && drv_bind(&d, lib, 11) == 0);
	if (!lib)
		return check_summary("net_hooks");
	CHECK(drv_init(&d, 7, -1, NULL) == 0);
	if (!strcmp(mode, "act")) {
		run_act(&d);
	} else if (policy[0]) {
		run_reload(&d, policy);
	} else {
		/* Nothing applies: the configured socket count, no marking. */
		check_connection(&d, DEF_SOCKS, 0, 0, 0, 0, &sc, &rc);
		CHECK(traffic(&d, sc, rc, 3, 70000) == 0);
		CHECK(drv_close_send(&d, sc) == 0);
		CHECK(drv_close_recv(&d, rc) == 0);
	}
	CHECK(drv_finalize(&d) == 0);
	dlclose(lib);
	if (policy[0]) {
		unlink(policy);
		rmdir(dir);
	}
	return check_summary("net_hooks");
}
