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
 *   test_net_hooks share   every ABI version v6..v12: weights 1:2:5 on 3
 *                          sockets; the bytes each data socket carried
 *                          (TCP_INFO on both ends) follow them, and every
 *                          message arrives intact (both ends cut alike)
 *   test_net_hooks share_bad  hostile weights (all zero, a socket beyond
 *                          n_socks): equal shares, each refusal counted
 */
#include <dirent.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "control/ctl_client.h"
#include "control/ctl_tele.h"
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

/* ---- the share of each socket --------------------------------------------- */

#define SHARE_SOCKS 3
#define SHARE_MSGS 12
#define SHARE_SIZE ((1u << 20) + 5)

/* tcpi_bytes_received (or tcpi_bytes_acked) of a socket, UINT64_MAX if unknown. */
static uint64_t tcp_bytes(int fd, bool received)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) ||
	    len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
		return UINT64_MAX;
	return received ? ti.tcpi_bytes_received : ti.tcpi_bytes_acked;
}

/*
 * Opens one connection and finds its data sockets in index order on both
 * ends: the connector creates data sockets 0..n-1, then the control
 * socket, so by ascending fd; a receiving socket is matched to its sender
 * by ports.  Returns the number of data sockets, or -1.
 */
static int share_connection(struct drv *d, void **sc, void **rc, int *sfd, int *rfd)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE];
	struct tcp before[MAXFD], after[MAXFD], snd[MAXFD];
	int nb = list_tcp(before, MAXFD), na, ns = 0, lport = -1;
	void *lc = NULL;

	if (drv_listen(d, 0, handle, &lc) || drv_pair(d, 0, handle, lc, sc, rc, TMO))
		return -1;
	drv_close_listen(d, lc);
	na = list_tcp(after, MAXFD);
	for (int i = 0; i < na; i++) {
		int same = 0;

		for (int j = 0; j < na; j++)
			same += after[j].lport == after[i].lport;
		if (same > 1)
			lport = after[i].lport; /* the accepted sockets share the listener's port */
	}
	for (int i = 0; i < na; i++) {
		bool old = false;

		for (int j = 0; j < nb; j++)
			old |= before[j].fd == after[i].fd;
		if (!old && after[i].pport == lport && after[i].lport != lport)
			snd[ns++] = after[i];
	}
	for (int i = 1; i < ns; i++) /* insertion sort by fd */
		for (int j = i; j > 0 && snd[j - 1].fd > snd[j].fd; j--) {
			struct tcp t = snd[j];

			snd[j] = snd[j - 1];
			snd[j - 1] = t;
		}
	for (int i = 0; i + 1 < ns; i++) {
		sfd[i] = snd[i].fd;
		rfd[i] = -1;
		for (int j = 0; j < na; j++)
			if (after[j].lport == lport && after[j].pport == snd[i].lport)
				rfd[i] = after[j].fd;
		if (rfd[i] < 0)
			return -1;
	}
	return ns - 1;
}

/* Moves SHARE_MSGS messages, checking each arrives intact; per-socket bytes received in got. */
static void share_traffic(struct drv *d, void *sc, void *rc, const int *rfd, int n, uint64_t *got)
{
	unsigned char *a = malloc(SHARE_SIZE), *b = malloc(SHARE_SIZE);
	uint64_t base[64];

	CHECK(a && b);
	if (!a || !b)
		goto out;
	for (int i = 0; i < n; i++)
		base[i] = tcp_bytes(rfd[i], true);
	for (int m = 0; m < SHARE_MSGS; m++) {
		void *sr = NULL, *rr = NULL;
		size_t sz = m % 3 == 2 ? 150000 : SHARE_SIZE; /* some cut into fewer slices */

		for (size_t i = 0; i < sz; i++)
			a[i] = (unsigned char)(m * 31 + i * 7 + (i >> 11));
		memset(b, 0, sz);
		CHECK(drv_irecv(d, rc, b, SHARE_SIZE, 5, NULL, &rr) == 0 && rr);
		CHECK(drv_isend(d, sc, a, sz, 5, NULL, &sr) == 0 && sr);
		CHECK(drv_wait(d, sr, NULL, TMO) == 0 && drv_wait(d, rr, NULL, TMO) == 0);
		CHECK_MSG(!memcmp(a, b, sz), "v%d: message %d of %zu bytes arrived intact", d->v, m, sz);
	}
	for (int i = 0; i < n; i++)
		got[i] = tcp_bytes(rfd[i], true) - base[i];
out:
	free(a);
	free(b);
}

/* Each socket's bytes within 2% of the total from its weight's share. */
static void check_shares(int v, const uint64_t *got, const unsigned *w, int n)
{
	uint64_t total = 0, wsum = 0;

	for (int i = 0; i < n; i++) {
		total += got[i];
		wsum += w[i];
	}
	for (int i = 0; i < n; i++) {
		double want = (double)total * w[i] / (double)wsum, dev = (double)got[i] - want;

		CHECK_MSG(dev < 0.02 * (double)total && -dev < 0.02 * (double)total,
			  "v%d: socket %d carried %llu of %llu bytes, weight %u/%llu", v, i,
			  (unsigned long long)got[i], (unsigned long long)total, w[i],
			  (unsigned long long)wsum);
	}
}

/* Weight refusals (reason "range") counted by this process's net contexts. */
static uint64_t net_refusals(void)
{
	struct nbpf_ctl_msg m;
	const char *em = NULL;
	uint64_t sum = 0;

	memset(&m, 0, sizeof(m));
	if (nbpf_ctl_call_pid(getpid(), NBPF_CTL_PS, NULL, &m, &em) == 0) {
		for (uint32_t i = 0; i < m.n_recs; i++) {
			const char *kind = nbpf_ctl_rec_get(&m.recs[i], "kind");
			uint64_t r[16] = { 0 };

			if (!strcmp(m.recs[i].kind, "comm") && kind && !strcmp(kind, "net") &&
			    nbpf_ctl_parse_u64s(nbpf_ctl_rec_get(&m.recs[i], "refused"), r, 16) > 1)
				sum += r[1];
		}
	} else {
		sum = UINT64_MAX;
	}
	nbpf_ctl_msg_free(&m);
	return sum;
}

/* The same count as the exporter writes it: ncclbpf_net_refused_total{pid,reason="range"}. */
static void check_exported_refusals(uint64_t want)
{
	struct nbpf_tele_set s = { 0 };
	char series[96], *text = NULL, *p;
	int pid = getpid();
	size_t len = 0;
	FILE *f;

	CHECK(cli_tele_collect(&pid, 1, &s, stderr) == 1);
	f = open_memstream(&text, &len);
	CHECK(f && nbpf_prom_write(f, &s) == 0);
	if (f)
		fclose(f);
	snprintf(series, sizeof(series), "ncclbpf_net_refused_total{pid=\"%d\",reason=\"range\"} ", pid);
	p = text ? strstr(text, series) : NULL;
	CHECK_MSG(p != NULL, "the export has no %s", series);
	if (p)
		CHECK_EQ_U64(strtoull(p + strlen(series), NULL, 10), want);
	free(text);
	nbpf_tele_free(&s);
}

/*
 * Every version's connections first, the refusal count once at the end:
 * the control server's own descriptors come and go while it answers, and
 * list_tcp() must not look at them then.  v11+ contexts are finalized
 * after the count, since their counters go with them.
 */
static void run_share(void *lib, bool hostile)
{
	static const unsigned weights[SHARE_SOCKS] = { 1, 2, 5 }, equal[SHARE_SOCKS] = { 1, 1, 1 };
	struct drv d[13];

	for (int v = 6; v <= 12; v++) {
		int sfd[64], rfd[64], n;
		uint64_t got[64];
		void *sc, *rc;

		CHECK(drv_bind(&d[v], lib, v) == 0 && drv_init(&d[v], 40 + v, -1, NULL) == 0);
		/* Two connections: share_bad alternates its two hostile answers. */
		for (int c = 0; c < 2; c++) {
			n = share_connection(&d[v], &sc, &rc, sfd, rfd);
			CHECK_MSG(n == SHARE_SOCKS, "v%d: %d data sockets", v, n);
			if (n != SHARE_SOCKS)
				break;
			share_traffic(&d[v], sc, rc, rfd, n, got);
			check_shares(v, got, hostile ? equal : weights, n);
			CHECK(drv_close_send(&d[v], sc) == 0);
			CHECK(drv_close_recv(&d[v], rc) == 0);
		}
	}
	CHECK_EQ_U64(net_refusals(), hostile ? 2 * 7 : 0);
	check_exported_refusals(hostile ? 2 * 7 : 0);
	for (int v = 6; v <= 12; v++)
		CHECK(drv_finalize(&d[v]) == 0);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/ncclbpf-net-XXXXXX", policy[600] = "";
	const char *mode = argc > 1 ? argv[1] : "act";
	void *lib, *sc, *rc;
	struct drv d;

	setenv("NCCL_SOCKET_IFNAME", "lo", 0);
	if (!strcmp(mode, "share") || !strcmp(mode, "share_bad")) {
		CHECK(mkdtemp(dir) != NULL);
		snprintf(policy, sizeof(policy), "%s/ctl", dir);
		setenv("NCCLBPF_CTL_DIR", policy, 1);
		emu_set_policy(strcmp(mode, "share") ? EMU_BPF_DIR "/t_net_share_bad.bpf.o"
						     : EMU_BPF_DIR "/t_net_share.bpf.o");
		lib = drv_open(NET_PLUGIN);
		CHECK(lib != NULL);
		if (lib) {
			run_share(lib, strcmp(mode, "share") != 0);
			dlclose(lib);
		}
		rmdir(policy);
		rmdir(dir);
		return check_summary("net_hooks");
	}
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
