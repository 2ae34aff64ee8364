// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_loop_kernel.c - closed loop 2 end to end: the kernel's per-peer TCP
 * signals -> policies/lossy_peer.bpf.o's maps -> socket marking of new
 * connections, and one tuner plan switched on the same call everywhere.
 *
 * Three emulated ranks (processes running the plugin's tuner with the
 * policy, paced at a latency model's time, never more than PACE calls
 * apart) record their decision on every call; a fourth process runs the
 * plugin's net transport over loopback and reports the IP_TOS and
 * SO_PRIORITY of the sockets each new connection opens (getsockopt).
 *
 *   loops_kernel fake   no root: the feed (nbpf_kfeed_step) is given
 *                       made-up kernel records: rates, hold, the srtt
 *                       bound, IPv6 keys, the cardinality bound, bad input
 *   loops_kernel real   root and BTF: a network namespace of the test's
 *                       own, a tc program dropping data packets on lo;
 *                       `ncclbpf loop --kernel` with observe's net probes
 *                       sees the net process's retransmits and reacts
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "emu_test.h"
#include "loop.h"
#include "loop_test.h"
#include "ncclbpf/runtime.h"
#include "net_drv.h"

#define N_RANKS   3
#define MAX_CALLS 600000
#define BYTES     (64u << 10)
#define PACE      256
#define CALL_NS   50000   /* the model's time per collective: 20k calls/s */
#define LOSSY_CH  2
#define TMO       10000
#define PROTO_SIMPLE 2    /* NCCLBPF_PROTO_SIMPLE (policy.h is the BPF side's) */

struct probe {
	int n, tos_min, tos_max, prio_min, prio_max;
};

struct agg_out {
	int err, switched, late;
	uint64_t at;
};

struct shared {
	struct agg_out agg[2];
	_Atomic uint64_t done[N_RANKS];
	_Atomic int stop, ready;
	/* net process: commands and results */
	_Atomic int net_cmd, net_ack, net_traffic, net_ready;
	_Atomic uint64_t net_bytes;
	struct probe probe[4];
	int8_t ch[N_RANKS][MAX_CALLS];
	int8_t proto[N_RANKS][MAX_CALLS];
};

static struct shared *sh;

static uint64_t slowest(void)
{
	uint64_t m = UINT64_MAX;

	for (int r = 0; r < N_RANKS; r++) {
		uint64_t v = atomic_load(&sh->done[r]);

		m = v < m ? v : m;
	}
	return m;
}

static void pace(const struct timespec *t0, uint64_t sim_ns)
{
	struct timespec now, d;
	uint64_t real_ns;

	clock_gettime(CLOCK_MONOTONIC, &now);
	real_ns = (uint64_t)(now.tv_sec - t0->tv_sec) * 1000000000ull + (uint64_t)now.tv_nsec -
		  (uint64_t)t0->tv_nsec;
	if (real_ns >= sim_ns)
		return;
	d.tv_sec = (time_t)((sim_ns - real_ns) / 1000000000ull);
	d.tv_nsec = (long)((sim_ns - real_ns) % 1000000000ull);
	nanosleep(&d, NULL);
}

static void run_rank(int rank)
{
	const struct emu_topo topo = EMU_TOPO_DEFAULT;
	struct emu_plugin tpl;
	struct emu_tuner t;
	char err[256];
	struct timespec t0;
	int rc = 1;

	if (emu_open(&tpl, EMU_TUNER, EMU_PLUGIN, 5, err, sizeof(err)) ||
	    emu_tuner_init(&t, &tpl, 0x200d, &topo, emu_logger))
		_exit(2);
	atomic_fetch_add(&sh->ready, 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t i = 0; i < MAX_CALLS && !atomic_load(&sh->stop); i++) {
		struct emu_decision d;

		while (i > slowest() + PACE && !atomic_load(&sh->stop))
			sched_yield();
		if (emu_tuner_call(&t, &topo, 4, BYTES, &d))
			goto out;
		sh->ch[rank][i] = (int8_t)d.n_channels;
		sh->proto[rank][i] = (int8_t)d.proto;
		if (!(i % 64))
			pace(&t0, i * CALL_NS);
		atomic_store(&sh->done[rank], i + 1);
	}
	rc = 0;
out:
	atomic_store(&sh->done[rank], UINT64_MAX);
	emu_tuner_fini(&t);
	_exit(rc);
}

/* ---- the net process ---------------------------------------------------- */

/* TCP sockets of this process, by descriptor (1 = present). */
static void tcp_fds(uint8_t *set, int max)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	memset(set, 0, (size_t)max);
	while (d && (e = readdir(d))) {
		int fd = atoi(e->d_name), type = 0;
		socklen_t lt = sizeof(type);
		struct sockaddr_storage a;
		socklen_t la = sizeof(a);
		struct stat st;

		if (fd <= 2 || fd >= max || fd == dirfd(d) || fstat(fd, &st) || !S_ISSOCK(st.st_mode) ||
		    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &lt) || type != SOCK_STREAM ||
		    getpeername(fd, (struct sockaddr *)&a, &la))
			continue;
		set[fd] = 1;
	}
	if (d)
		closedir(d);
}

static int sockopt(int fd, int lvl, int opt)
{
	int v = -1;
	socklen_t len = sizeof(v);

	getsockopt(fd, lvl, opt, &v, &len);
	return v;
}

/* A new connection (both ends here): the marking of every socket it opened. */
static void net_probe(struct drv *d, struct probe *p)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE];
	uint8_t before[1024], after[1024];
	void *lc = NULL, *sc = NULL, *rc = NULL;

	*p = (struct probe){ 0, 256, -1, 256, -1 };
	tcp_fds(before, 1024);
	if (drv_listen(d, 0, handle, &lc) || drv_pair(d, 0, handle, lc, &sc, &rc, TMO))
		return;
	tcp_fds(after, 1024);
	for (int fd = 0; fd < 1024; fd++) {
		int tos, prio;

		if (!after[fd] || before[fd])
			continue;
		tos = sockopt(fd, IPPROTO_IP, IP_TOS);
		prio = sockopt(fd, SOL_SOCKET, SO_PRIORITY);
		p->n++;
		p->tos_min = tos < p->tos_min ? tos : p->tos_min;
		p->tos_max = tos > p->tos_max ? tos : p->tos_max;
		p->prio_min = prio < p->prio_min ? prio : p->prio_min;
		p->prio_max = prio > p->prio_max ? prio : p->prio_max;
	}
	drv_close_listen(d, lc);
	drv_close_send(d, sc);
	drv_close_recv(d, rc);
}

static void run_net(void)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE];
	size_t size = 1 << 20;
	char *buf = calloc(1, size);
	void *lib = drv_open(EMU_PLUGIN), *lc = NULL, *sc = NULL, *rc = NULL;
	struct drv d;
	int n = 0;

	if (!buf || !lib || drv_bind(&d, lib, 12) || drv_init(&d, 0x300e, -1, NULL) ||
	    drv_devices(&d, &n) || n < 1 || drv_listen(&d, 0, handle, &lc) ||
	    drv_pair(&d, 0, handle, lc, &sc, &rc, TMO))
		_exit(2);
	drv_close_listen(&d, lc);
	atomic_store(&sh->net_ready, 1);
	while (!atomic_load(&sh->stop)) {
		int cmd = atomic_load(&sh->net_cmd);

		if (cmd != atomic_load(&sh->net_ack)) {
			net_probe(&d, &sh->probe[cmd & 3]);
			atomic_store(&sh->net_ack, cmd);
		} else if (atomic_load(&sh->net_traffic)) {
			void *sr = NULL, *rr = NULL;

			if (drv_irecv(&d, rc, buf, size, 1, NULL, &rr) || drv_isend(&d, sc, buf, size, 1, NULL, &sr) ||
			    drv_wait(&d, sr, NULL, TMO) || drv_wait(&d, rr, NULL, TMO))
				_exit(3);
			atomic_fetch_add(&sh->net_bytes, size);
		} else {
			usleep(2000);
		}
	}
	drv_close_send(&d, sc);
	drv_close_recv(&d, rc);
	drv_finalize(&d);
	free(buf);
	_exit(0);
}

static struct probe net_probe_now(int k)
{
	atomic_store(&sh->net_cmd, k);
	for (int i = 0; i < 20000 && atomic_load(&sh->net_ack) != k; i++)
		usleep(1000);
	return sh->probe[k & 3];
}

/* ---- the job -------------------------------------------------------------- */

static int start_job(pid_t *pids)
{
	memset(sh, 0, sizeof(*sh));
	for (int r = 0; r <= N_RANKS; r++) {
		pids[r] = fork();
		if (pids[r] < 0)
			return -errno;
		if (!pids[r]) {
			if (r == N_RANKS)
				run_net();
			run_rank(r);
		}
	}
	for (int i = 0; i < 20000 && (atomic_load(&sh->ready) < N_RANKS || !atomic_load(&sh->net_ready)); i++)
		usleep(1000);
	return atomic_load(&sh->ready) == N_RANKS && atomic_load(&sh->net_ready) ? 0 : -ETIMEDOUT;
}

static uint64_t stop_job(pid_t *pids)
{
	uint64_t n = UINT64_MAX;

	for (int r = 0; r < N_RANKS; r++) {
		uint64_t v = atomic_load(&sh->done[r]);

		n = v < n ? v : n;
	}
	atomic_store(&sh->stop, 1);
	for (int r = 0; r <= N_RANKS; r++) {
		int st = 0;

		waitpid(pids[r], &st, 0);
		CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "process %d: status %#x", r, st);
	}
	return n;
}

static void wait_calls(uint64_t target)
{
	for (int i = 0; i < 30000 && slowest() < target; i++)
		usleep(1000);
}

/* Calls among the first n on which ranks chose differently. */
static uint64_t disagreements(uint64_t n)
{
	uint64_t bad = 0;

	for (uint64_t i = 0; i < n; i++)
		for (int r = 1; r < N_RANKS; r++)
			if (sh->ch[r][i] != sh->ch[0][i] || sh->proto[r][i] != sh->proto[0][i]) {
				bad++;
				break;
			}
	return bad;
}

/* Every rank: NCCL's own before `at`, the lossy plan from it on (or the reverse). */
static void check_switch(uint64_t at, bool to_lossy, uint64_t until)
{
	CHECK_MSG(at > 0 && at < MAX_CALLS, "activation call %llu", (unsigned long long)at);
	if (!at || at >= MAX_CALLS)
		return;
	for (int r = 0; r < N_RANKS; r++) {
		int before = sh->ch[r][at - 1], after = sh->ch[r][at];

		CHECK_MSG(before == (to_lossy ? 0 : LOSSY_CH) && after == (to_lossy ? LOSSY_CH : 0),
			  "rank %d: %d channels at call %llu, %d at %llu", r, before,
			  (unsigned long long)at - 1, after, (unsigned long long)at);
		CHECK_MSG(sh->proto[r][at] == (to_lossy ? PROTO_SIMPLE : sh->proto[r][0]),
			  "rank %d: protocol %d at call %llu", r, sh->proto[r][at], (unsigned long long)at);
		for (uint64_t i = at; i < until; i++)
			if (sh->ch[r][i] != after) {
				CHECK_MSG(false, "rank %d: %d channels at call %llu", r, sh->ch[r][i],
					  (unsigned long long)i);
				break;
			}
	}
}

static struct nbpf_kfeed_sock sock4(const char *a, uint64_t retrans, uint32_t srtt)
{
	struct nbpf_kfeed_sock s = { .family = AF_INET, .retrans = retrans, .srtt_us = srtt };

	inet_pton(AF_INET, a, s.addr);
	return s;
}

static int peer_val(int pid, uint64_t key, struct nbpf_kfeed_peer_val *v)
{
	const struct nbpf_loop_map_spec spec = { "kernel_peer", 8, sizeof(*v), false };
	struct nbpf_loop_opts o = { .pids = &pid, .n_pids = 1, .ranks = 1, .timeout_ms = 2000 };
	struct nbpf_loop_ranks rk;
	int err = nbpf_loop_ranks_find(&rk, &o, &spec, 1);

	if (!err)
		err = ncclbpf_map__lookup(rk.r[0].map[0], &key, v);
	nbpf_loop_ranks_close(&rk);
	return err;
}

/* ---- fake: the feed's logic with made-up kernel records ------------------- */

static void test_fake(void)
{
	struct nbpf_loop_opts lo = { .ranks = N_RANKS + 1, .margin = 10000, .timeout_ms = 10000,
				     .log = getenv("LOOP_VERBOSE") ? stderr : NULL };
	struct nbpf_kfeed_opts ko = {
		.retrans_per_s = 50, .retrans_per_mib = 4, .srtt_us = 200000, .hold_s = 1, .lossy_channels = LOSSY_CH,
		.lossy_proto = PROTO_SIMPLE,
	};
	struct nbpf_kfeed_sock s[100];
	struct nbpf_kfeed_report r;
	struct nbpf_kfeed_peer_val v;
	struct nbpf_kfeed *f = NULL, *g = NULL;
	uint64_t a, b, at_on, at_off, at_last, n;
	uint8_t v6[16];
	struct probe p;
	pid_t pids[N_RANKS + 1], second;
	double t;
	int st = 0;

	CHECK(!start_job(pids));
	lo.pids = pids;
	lo.n_pids = N_RANKS + 1;
	wait_calls(2000);
	CHECK(!nbpf_kfeed_open(&lo, &ko, &f));
	if (!f)
		goto out;
	s[0] = sock4("127.0.0.1", 0, 100);
	s[1] = sock4("10.0.0.3", 7, 100);
	s[2] = sock4("10.0.0.3", 3, 150); /* a second socket to the same peer: summed */
	a = nbpf_kfeed_peer_key(AF_INET, s[0].addr);
	b = nbpf_kfeed_peer_key(AF_INET, s[1].addr);
	CHECK_EQ_U64(a, htonl(INADDR_LOOPBACK)); /* ctx->peer_key: the address as stored */
	t = nbpf_loop_now_s();
	CHECK(!nbpf_kfeed_step(f, s, 3, t + 1, &r));
	CHECK_EQ_U64(r.n_peers, 2);
	CHECK_EQ_U64(r.n_lossy, 0);
	CHECK(!r.switched && !r.degraded);
	CHECK(!peer_val(pids[1], b, &v));
	CHECK_EQ_U64(v.retrans, 10);
	CHECK_EQ_U64(v.srtt_us, 150);
	CHECK_EQ_U64(v.lossy, 0);
	/* 500 retransmits to 127.0.0.1 in a second: lossy, the plan switches. */
	s[0].retrans = 500;
	CHECK(!nbpf_kfeed_step(f, s, 3, t + 2, &r));
	CHECK_EQ_U64(r.n_lossy, 1);
	CHECK(r.switched && r.degraded && !r.late);
	CHECK_EQ_U64(r.peers[0].key, a); /* the worst first */
	at_on = r.at;
	for (int i = 0; i <= N_RANKS; i++) {
		CHECK(!peer_val(pids[i], a, &v));
		CHECK_EQ_U64(v.lossy, 1);
		CHECK_EQ_U64(v.retrans_per_s, 500);
	}
	/* A new connection to the lossy peer: lower priority and class on every socket. */
	p = net_probe_now(1);
	CHECK_MSG(p.n == 6 && p.tos_min == 0x20 && p.tos_max == 0x20 && p.prio_min == 2 && p.prio_max == 2,
		  "lossy: %d sockets, tos %#x..%#x, priority %d..%d", p.n, p.tos_min, p.tos_max,
		  p.prio_min, p.prio_max);
	/* No new retransmits, but within the hold: still lossy, no new plan. */
	CHECK(!nbpf_kfeed_step(f, s, 3, t + 2.5, &r));
	CHECK(r.degraded && !r.switched && !r.deferred && r.n_lossy == 1);
	/*
	 * The hold is over: healthy again.  While a rank has not reached the
	 * lossy plan's call the switch back waits; then it is written.
	 */
	CHECK(slowest() < at_on);
	CHECK(!nbpf_kfeed_step(f, s, 3, t + 3.5, &r));
	CHECK(r.deferred && !r.switched && r.degraded && r.n_lossy == 0);
	wait_calls(at_on);
	CHECK(!nbpf_kfeed_step(f, s, 3, t + 3.6, &r));
	CHECK(r.switched && !r.degraded && !r.deferred && r.n_lossy == 0 && !r.late);
	at_off = r.at;
	CHECK(at_off > at_on);
	p = net_probe_now(2);
	CHECK_MSG(p.n == 6 && p.tos_max == 0 && p.prio_max == 0, "healthy: %d sockets, tos %#x, prio %d",
		  p.n, p.tos_max, p.prio_max);
	/* Per MiB sent: 10 retransmits in 2 MiB are 5 per MiB, over a bound of 4; under 1 MiB, no share. */
	wait_calls(at_off);
	s[1].bytes_sent = 1000;
	CHECK(!nbpf_kfeed_step(f, s, 3, t + 3.7, &r));
	CHECK(r.n_lossy == 0 && !r.switched && r.peers[0].per_mib == 0);
	s[1].bytes_sent += 2u << 20;
	s[1].retrans += 10; /* 9 a second: under the rate bound */
	CHECK(!nbpf_kfeed_step(f, s, 3, t + 4.8, &r));
	CHECK(r.n_lossy == 1 && r.peers[0].key == b && r.peers[0].per_mib == 5 && r.switched);
	CHECK(!peer_val(pids[2], b, &v) && v.retrans_per_gib == 5 * 1024 && v.lossy == 1);
	wait_calls(r.at);
	CHECK(!nbpf_kfeed_step(f, s, 3, t + 5.9, &r)); /* the hold (1 s) is over */
	CHECK(r.n_lossy == 0 && r.switched && !r.degraded);
	wait_calls(r.at);
	/* A smoothed RTT over the bound alone makes a peer lossy. */
	s[1].srtt_us = 250000;
	CHECK(!nbpf_kfeed_step(f, s, 3, t + 7, &r));
	CHECK(r.n_lossy == 1 && r.peers[0].key == b && r.switched && r.degraded);
	wait_calls(r.at);
	/* A second loop (another process) on the same ranks is refused, saying why. */
	second = fork();
	if (second == 0) {
		int e = nbpf_kfeed_open(&lo, &ko, &g);

		if (e != -EBUSY)
			fprintf(stderr, "second loop: %d: %s\n", e, ncclbpf_errmsg());
		_exit(e == -EBUSY && strstr(ncclbpf_errmsg(), "another `ncclbpf loop` writes this job's plan")
			      ? 0 : 1);
	}
	CHECK_MSG(second > 0 && waitpid(second, &st, 0) == second && WIFEXITED(st) && !WEXITSTATUS(st),
		  "a second kernel loop was not refused");
	/*
	 * Run again: the new loop starts from the lossy plan the ranks run (not
	 * from its own empty memory), so a healthy peer switches them back.
	 */
	nbpf_kfeed_close(f);
	f = NULL;
	CHECK(!nbpf_kfeed_open(&lo, &ko, &f));
	if (!f)
		goto out;
	s[0].retrans = s[1].retrans = s[2].retrans = 0; /* its probes count from their start */
	s[1].srtt_us = 100;
	CHECK_MSG(!nbpf_kfeed_step(f, s, 3, t + 8, &r), "%s", ncclbpf_errmsg());
	CHECK(r.n_lossy == 0 && r.switched && !r.degraded);
	at_last = r.at;
	/* IPv6: the key the net hooks compute (folded, top bit set). */
	memset(v6, 0, sizeof(v6));
	v6[0] = 0xfd, v6[15] = 2;
	CHECK_EQ_U64(nbpf_kfeed_peer_key(AF_INET6, v6), (1ull << 63) | ((uint64_t)htonl(0xfd000000) << 32) |
							 htonl(2));
	/* At most NBPF_KFEED_MAX_PEERS peers in the map; the rest counted; gone peers removed. */
	for (int i = 0; i < 100; i++) {
		char addr[32];

		snprintf(addr, sizeof(addr), "10.1.%d.%d", i / 200, i % 200 + 1);
		s[i] = sock4(addr, (uint64_t)i / 4, 10); /* at most 24/s: none lossy */
	}
	CHECK(!nbpf_kfeed_step(f, s, 100, t + 9, &r));
	CHECK(r.n_lossy == 0 && !r.switched);
	CHECK_EQ_U64(r.n_peers, NBPF_KFEED_MAX_PEERS);
	CHECK_EQ_U64(r.not_fed, 100 - NBPF_KFEED_MAX_PEERS);
	CHECK_EQ_U64(peer_val(pids[0], a, &v), -ENOENT); /* fed before, not now */
	CHECK(!peer_val(pids[0], nbpf_kfeed_peer_key(AF_INET, s[99].addr), &v)); /* the worst */
	CHECK(peer_val(pids[0], nbpf_kfeed_peer_key(AF_INET, s[0].addr), &v) == -ENOENT);
	CHECK_EQ_U64(nbpf_kfeed_step(f, s, -1, t + 10, &r), -EINVAL);
	/* The net side alone (no plan map, no agreement): the net process's map only. */
	lo.pids = &pids[N_RANKS];
	lo.n_pids = 1;
	lo.ranks = 1;
	ko.plan_map = "";
	CHECK(!nbpf_kfeed_open(&lo, &ko, &g));
	s[0] = sock4("10.2.0.1", 0, 10);
	CHECK(g && !nbpf_kfeed_step(g, s, 1, t + 30, &r));
	s[0].retrans = 1000;
	CHECK(g && !nbpf_kfeed_step(g, s, 1, t + 31, &r));
	CHECK(r.n_lossy == 1 && !r.switched && !r.degraded);
	CHECK(!peer_val(pids[N_RANKS], nbpf_kfeed_peer_key(AF_INET, s[0].addr), &v) && v.lossy == 1);
	CHECK(peer_val(pids[0], nbpf_kfeed_peer_key(AF_INET, s[0].addr), &v) == -ENOENT);
	nbpf_kfeed_close(g);
	g = NULL;
	ko.plan_map = NULL;
	/* Bad input: clear errors. */
	lo.pids = pids;
	lo.timeout_ms = 300;
	ko.peer_map = "nope";
	CHECK_EQ_U64(nbpf_kfeed_open(&lo, &ko, &g), -ETIMEDOUT);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "no map 'nope'");
	ko.peer_map = "kernel_plan";
	CHECK_EQ_U64(nbpf_kfeed_open(&lo, &ko, &g), -ETIMEDOUT);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "has 4-byte keys and 8-byte values, this loop needs 8 and 24");
	ko.peer_map = NULL;
	ko.lossy_channels = 65;
	CHECK_EQ_U64(nbpf_kfeed_open(&lo, &ko, &g), -EINVAL);
	CHECK(g == NULL);
	CHECK_EQ_U64(WEXITSTATUS(system(NCCLBPF_CLI " loop --kernel --pids 1 2>/dev/null")), 2);
	CHECK_EQ_U64(WEXITSTATUS(system(NCCLBPF_CLI " loop --kernel --no-tuner --lossy-channels 2 2>/dev/null")), 2);
	wait_calls(at_last + 2000);
	n = stop_job(pids);
	fprintf(stderr, "loops_kernel fake: %llu calls per rank, lossy plan from call %llu, normal "
		"from %llu\n", (unsigned long long)n, (unsigned long long)at_on, (unsigned long long)at_off);
	CHECK(n > at_last);
	if (getenv("LOOP_VERBOSE"))
		for (uint64_t i = 1; i < n; i++)
			if (sh->ch[0][i] != sh->ch[0][i - 1] || sh->proto[0][i] != sh->proto[0][i - 1])
				fprintf(stderr, "rank 0: call %llu: %d channels, protocol %d\n",
					(unsigned long long)i, sh->ch[0][i], sh->proto[0][i]);
	CHECK_EQ_U64(disagreements(n), 0);
	if (n > at_last) {
		check_switch(at_on, true, at_off);
		check_switch(at_off, false, at_off + 1);
	}
	nbpf_kfeed_close(f);
	f = NULL;
out:
	nbpf_kfeed_close(f);
}

/*
 * Two aggregators ("nodes") through a shared directory: only node a sees
 * the lossy peer, and both write the same plan from the same call.
 */
static void test_fake_share(void)
{
	char share[] = "/tmp/ncclbpf-loopk-share.XXXXXX";
	pid_t pids[N_RANKS + 1], agg[2];
	uint64_t n;

	CHECK(mkdtemp(share) != NULL);
	CHECK(!start_job(pids));
	wait_calls(2000);
	for (int a = 0; a < 2; a++) {
		agg[a] = fork();
		if (!agg[a]) {
			int mine[2] = { pids[2 * a], a ? pids[N_RANKS] : pids[1] };
			struct nbpf_loop_opts lo = {
				/* A margin a loaded 2-core machine keeps: a rank past the call is late. */
				.pids = mine, .n_pids = 2, .ranks = 2, .margin_s = 2, .timeout_ms = 10000,
				.share_dir = share, .node = a ? "node-b" : "node-a", .nodes = 2,
			};
			struct nbpf_kfeed_opts ko = { .retrans_per_s = 50, .hold_s = 60, .lossy_channels = LOSSY_CH,
						      .lossy_proto = PROTO_SIMPLE };
			struct nbpf_kfeed_sock s = sock4("10.0.0.9", 0, 100);
			struct nbpf_kfeed_report r;
			struct agg_out *out = &sh->agg[a];
			struct nbpf_kfeed *f;
			double t = nbpf_loop_now_s();

			out->err = nbpf_kfeed_open(&lo, &ko, &f);
			if (!out->err)
				out->err = nbpf_kfeed_step(f, &s, 1, t + 1, &r);
			s.retrans = a ? 0 : 1000;
			if (!out->err)
				out->err = nbpf_kfeed_step(f, &s, 1, t + 2, &r);
			if (out->err)
				fprintf(stderr, "aggregator %d: %s\n", a, ncclbpf_errmsg());
			out->switched = r.switched && r.degraded;
			out->late = r.late;
			out->at = r.at;
			nbpf_kfeed_close(f);
			_exit(0);
		}
	}
	for (int a = 0; a < 2; a++)
		waitpid(agg[a], NULL, 0);
	for (int a = 0; a < 2; a++) {
		CHECK_EQ_U64(sh->agg[a].err, 0);
		CHECK_EQ_U64(sh->agg[a].switched, 1);
		CHECK_MSG(!sh->agg[a].late, "aggregator %d: a rank was past call %llu", a,
			  (unsigned long long)sh->agg[a].at);
	}
	CHECK_EQ_U64(sh->agg[0].at, sh->agg[1].at);
	wait_calls(sh->agg[0].at + 1000);
	n = stop_job(pids);
	CHECK(n > sh->agg[0].at);
	CHECK_EQ_U64(disagreements(n), 0);
	if (n > sh->agg[0].at)
		check_switch(sh->agg[0].at, true, n);
	loop_share_clean(share);
	CHECK_EQ_U64(rmdir(share), 0);
}

/* ---- real: observe's net probes, loss induced by a tc program ------------- */

static int real_skip(const char *why)
{
	printf("SKIP loops_kernel real: %s\n", why);
	return 77;
}

#ifndef NCCLBPF_HAVE_OBSERVE
static int test_real(void)
{
	return real_skip("built without the observe layer (bpftool, kernel BTF)");
}
#else
#include <bpf/libbpf.h>

#include "netloss.h"

/*
 * The JSON line of the CLI's first switch to the lossy plan: its call, or
 * 0; the peer's retransmit rate then, and the highest rate before.
 */
static uint64_t lossy_from(const char *path, double *rate, double *before)
{
	FILE *fp = fopen(path, "r");
	char line[8192];
	uint64_t at = 0;

	*before = 0;
	while (fp && !at && fgets(line, sizeof(line), fp)) {
		const char *p = strstr(line, "\"from_call\":"), *q = strstr(line, "\"retransmits_per_mib\":");
		double r = q ? strtod(q + 22, NULL) : 0;

		if (p && strstr(line, "\"degraded\":true") && strstr(line, "\"switched\":true")) {
			at = strtoull(p + 12, NULL, 10);
			*rate = r;
		} else if (r > *before) {
			*before = r;
		}
	}
	if (fp)
		fclose(fp);
	return at;
}

static int test_real(void)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, tco);
	char out[] = "/tmp/ncclbpf-loops-kernel.XXXXXX", cmd[1024], pidl[128];
	pid_t pids[N_RANKS + 1], cli;
	struct probe before, after;
	uint64_t at = 0, n, bytes0;
	double rate = 0, rate0 = 0, healthy = 0;
	double t0, t_on = 0, t_seen = 0;
	int pfd, fd, st = 0;

	if (geteuid())
		return real_skip("needs root");
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return real_skip("no kernel BTF");
	if (unshare(CLONE_NEWNET) || netloss_lo_up())
		return real_skip("cannot make a network namespace");
	CHECK(!start_job(pids));
	snprintf(pidl, sizeof(pidl), "%d,%d,%d,%d", pids[0], pids[1], pids[2], pids[3]);
	wait_calls(2000);
	atomic_store(&sh->net_traffic, 1);
	fd = mkstemp(out);
	CHECK(fd >= 0);
	snprintf(cmd, sizeof(cmd), "exec %s -j loop --kernel --pids %s --lossy-channels %d --lossy-proto simple "
		 "--retrans-per-mib 2 --interval 500 --hold 60 --duration 25 --margin-seconds 0.3",
		 NCCLBPF_CLI, pidl, LOSSY_CH);
	cli = fork();
	if (!cli) {
		dup2(fd, 1);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(fd);
	/* Healthy first: traffic, no loss, no switch, a new connection unmarked. */
	sleep(2);
	before = net_probe_now(1);
	CHECK(lossy_from(out, &rate, &healthy) == 0);
	/* Loss: drop 10% of data packets on lo's ingress. */
	pfd = netloss_drop_prog(10);
	CHECK_MSG(pfd >= 0, "drop program: %s", strerror(errno));
	hook.ifindex = (int)if_nametoindex("lo");
	CHECK(!bpf_tc_hook_create(&hook));
	tco.prog_fd = pfd;
	CHECK(!bpf_tc_attach(&hook, &tco));
	t_on = nbpf_loop_now_s();
	bytes0 = atomic_load(&sh->net_bytes);
	for (t0 = t_on; nbpf_loop_now_s() < t0 + 15 && !(at = lossy_from(out, &rate, &rate0));)
		usleep(20000);
	t_seen = nbpf_loop_now_s();
	bpf_tc_hook_destroy(&hook);
	close(pfd);
	after = net_probe_now(2);
	printf("loops_kernel real: lossy plan from call %llu, seen %.2f s after the loss began "
	       "(%llu MiB moved meanwhile); %.2f retransmits per MiB sent then, at most %.2f without loss\n",
	       (unsigned long long)at, t_seen - t_on,
	       (unsigned long long)((atomic_load(&sh->net_bytes) - bytes0) >> 20), rate, healthy);
	CHECK_MSG(at > 0, "the loop never switched (output %s)", out);
	CHECK(rate >= 2);
	CHECK_MSG(before.n == 6 && before.tos_max == 0 && before.prio_max == 0,
		  "before: %d sockets, tos %#x, prio %d", before.n, before.tos_max, before.prio_max);
	CHECK_MSG(after.n == 6 && after.tos_min == 0x20 && after.tos_max == 0x20 && after.prio_min == 2 &&
		  after.prio_max == 2, "after: %d sockets, tos %#x..%#x, prio %d..%d", after.n,
		  after.tos_min, after.tos_max, after.prio_min, after.prio_max);
	if (at)
		wait_calls(at + 1000);
	kill(cli, SIGTERM);
	waitpid(cli, &st, 0);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "loop --kernel: status %#x", st);
	n = stop_job(pids);
	CHECK(n > at);
	CHECK_EQ_U64(disagreements(n), 0);
	if (at && n > at)
		check_switch(at, true, n);
	if (!check_failed)
		unlink(out);
	/* Bad input through the command: no such map, no privileges, no BTF. */
	CHECK_EQ_U64(WEXITSTATUS(system(NCCLBPF_CLI " loop --kernel --no-tuner --peer-map nope --pids 1 "
				  "--timeout 0.3 2>/dev/null")), 1);
	CHECK_EQ_U64(WEXITSTATUS(system("NCCLBPF_OBSERVE_BTF=/nonexistent " NCCLBPF_CLI
				  " loop --kernel --no-tuner 2>&1 | grep -q BTF")), 0);
	CHECK_EQ_U64(WEXITSTATUS(system("setpriv --bounding-set=-all --inh-caps=-all "
				  NCCLBPF_CLI " loop --kernel --no-tuner 2>&1 | "
				  "grep -q 'needs root'")), 0);
	return 0;
}
#endif

int main(int argc, char **argv)
{
	char dir[] = "/tmp/ncclbpf-loopk.XXXXXX";
	int rc = 0;

	if (argc != 2 || (strcmp(argv[1], "fake") && strcmp(argv[1], "real"))) {
		fprintf(stderr, "usage: loops_kernel fake|real\n");
		return 2;
	}
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	setenv("NCCLBPF_CTL_DIR", dir, 1);
	setenv("NCCLBPF_MAP_DIR", dir, 1);
	setenv("NCCLBPF_POLICY", LOOP_POLICY, 1);
	setenv("NCCL_SOCKET_IFNAME", "lo", 1);
	setenv("NCCL_SOCKET_NTHREADS", "2", 1);
	setenv("NCCL_NSOCKS_PERTHREAD", "1", 1);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	if (!strcmp(argv[1], "fake")) {
		test_fake();
		test_fake_share();
	}
	else
		rc = test_real();
	rmdir(dir);
	if (rc == 77)
		return 77;
	return check_summary(!strcmp(argv[1], "fake") ? "loops_kernel fake" : "loops_kernel real");
}
