// SPDX-License-Identifier: Apache-2.0
/*
 * test_nnet.c - the transport layer on its own (src/net, no NCCL ABI, no
 * host): NCCL_SOCKET_IFNAME grammar, IPv6 through NCCL_SOCKET_FAMILY, the
 * number of sockets a connection opens (settings and per-connection
 * option, seen on both ends), TOS / priority visible with getsockopt,
 * socket weights (both ends cut alike, an idle zero-weight socket, weights
 * that do not fit ignored), traffic from two threads on two comms at
 * once (a TSan target), and the accept path under idle and foreign
 * connections: 70 idle ones before a real connection, 8 before one of 64
 * data sockets, 200 before and 150 during one; foreign hellos closed at
 * once, silent or half-said ones at the hello deadline
 * (NCCLBPF_NET_HELLO_TIMEOUT, 2 s here); a listener that closes before
 * acknowledging makes connect fail (-ECONNABORTED) rather than succeed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/tcp.h>
#include <poll.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "net/nnet.h"
#include "net/nnet_internal.h"

static void ifname_grammar(void)
{
	CHECK(nnet_ifname_match("eth", "eth0"));
	CHECK(nnet_ifname_match("eth", "eth10"));
	CHECK(!nnet_ifname_match("eth", "lo"));
	CHECK(nnet_ifname_match("ib,eth", "eth1"));
	CHECK(nnet_ifname_match("=eth0", "eth0"));
	CHECK(!nnet_ifname_match("=eth0", "eth01"));
	CHECK(!nnet_ifname_match("=eth", "eth0"));
	CHECK(!nnet_ifname_match("^docker,lo", "lo"));
	CHECK(!nnet_ifname_match("^docker,lo", "docker0"));
	CHECK(nnet_ifname_match("^docker,lo", "eth0"));
	CHECK(nnet_ifname_match("^=docker", "docker0"));
	CHECK(!nnet_ifname_match("^=docker0", "docker0"));
	CHECK(!nnet_ifname_match("", "eth0"));
	CHECK(nnet_ifname_match("^", "eth0"));
	CHECK(!nnet_ifname_match(NULL, "eth0"));
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int pair(const struct nnet_conn_opts *opts, struct nnet_comm **s, struct nnet_comm **r)
{
	char handle[NNET_HANDLE_SIZE];
	struct nnet_listen *l;
	uint64_t end = now_ms() + 10000;
	int err = nnet_listen(0, handle, &l);

	*s = *r = NULL;
	while (!err && (!*s || !*r) && now_ms() < end) {
		if (!*s)
			err = nnet_connect(0, handle, opts, s);
		if (!err && !*r)
			err = nnet_accept(l, r);
	}
	nnet_close_listen(l);
	return err ? err : (*s && *r) ? 0 : -ETIMEDOUT;
}

static int wait_req(void *req, size_t *size)
{
	uint64_t end = now_ms() + 10000;
	int done = 0, err = 0;

	while (!err && !done && now_ms() < end)
		err = nnet_test(req, &done, size);
	return err ? err : done ? 0 : -ETIMEDOUT;
}

static int roundtrip(struct nnet_comm *s, struct nnet_comm *r, size_t n)
{
	char *a = malloc(n + 1), *b = malloc(n + 1);
	void *sr, *rr;
	size_t got = 0;
	int err;

	for (size_t i = 0; i < n; i++)
		a[i] = (char)(i * 13);
	err = nnet_irecv(r, b, n, &rr);
	if (!err)
		err = nnet_isend(s, a, n, &sr);
	if (!err)
		err = wait_req(sr, NULL);
	if (!err)
		err = wait_req(rr, &got);
	if (!err && (got != n || memcmp(a, b, n)))
		err = -EBADMSG;
	free(a);
	free(b);
	return err;
}

static void socket_counts(void)
{
	struct nnet_conn_opts o = { .nsocks = 5, .tos = -1, .priority = -1 };
	struct nnet_comm *s, *r;

	/* Settings: NCCL_SOCKET_NTHREADS=3 x NCCL_NSOCKS_PERTHREAD=2 (main sets them). */
	CHECK(pair(NULL, &s, &r) == 0);
	CHECK_EQ_U64(nnet_comm_nsocks(s), 6);
	CHECK_EQ_U64(nnet_comm_nsocks(r), 6);
	CHECK(roundtrip(s, r, 3u << 20) == 0);
	nnet_close(s);
	nnet_close(r);
	/* Per connection: the receiver learns the count from the connector. */
	CHECK(pair(&o, &s, &r) == 0);
	CHECK_EQ_U64(nnet_comm_nsocks(s), 5);
	CHECK_EQ_U64(nnet_comm_nsocks(r), 5);
	CHECK(nnet_comm_fd(s, 4) >= 0 && nnet_comm_fd(s, 5) < 0);
	CHECK(roundtrip(s, r, (1u << 20) + 17) == 0);
	nnet_close(s);
	nnet_close(r);
}

static uint64_t bytes_received(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len))
		return UINT64_MAX;
	return ti.tcpi_bytes_received;
}

/*
 * nnet_cut on its own: two comms fed the same weights and sizes (the two
 * ends) cut alike; every cut covers the message, at most one slice per
 * socket, none on a zero weight; messages of one chunk per weighted socket
 * or more follow the weights to a byte per socket and message.
 */
static void cut_properties(void)
{
	static struct nnet_comm a, b;
	uint64_t seed = 12345, sum[NNET_MAX_SOCKS];

	for (int round = 0; round < 50; round++) {
		uint8_t w[NNET_MAX_SOCKS] = { 0 };
		uint32_t wsum = 0;
		int n;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		n = 1 + (int)(seed >> 59) % 12;
		for (int i = 0; i < n; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			w[i] = (seed >> 60) < 3 ? 0 : (uint8_t)(seed >> 56);
			wsum += w[i];
		}
		a.nsocks = b.nsocks = n;
		a.min_chunk = b.min_chunk = 65536;
		nnet_cut_init(&a, w);
		nnet_cut_init(&b, w);
		memset(sum, 0, sizeof(sum));
		for (int m = 0; m < 200; m++) {
			size_t la[NNET_MAX_SOCKS], lb[NNET_MAX_SOCKS], size, total = 0;
			bool large = m < 100;
			int k;

			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			size = large ? (size_t)n * 65536 + (seed >> 44) : 65537 + (seed >> 50) % 300000;
			k = nnet_cut(&a, size, la);
			CHECK_EQ_U64(nnet_cut(&b, size, lb), k);
			CHECK(!memcmp(la, lb, sizeof(la)));
			for (int i = 0; i < NNET_MAX_SOCKS; i++) {
				total += la[i];
				CHECK(!la[i] || (i < n && (!wsum || w[i])));
				if (large)
					sum[i] += la[i];
			}
			CHECK_EQ_U64(total, size);
			CHECK(k >= 1 && k <= n);
		}
		for (int i = 0; i < n && wsum; i++) {
			uint64_t all = 0;

			for (int j = 0; j < n; j++)
				all += sum[j];
			CHECK_MSG(sum[i] * wsum + 100ull * n * wsum >= all * w[i] &&
				  sum[i] * wsum <= all * w[i] + 100ull * n * wsum,
				  "round %d socket %d: %llu of %llu, weight %u/%u", round, i,
				  (unsigned long long)sum[i], (unsigned long long)all, w[i], wsum);
		}
	}
}

static void weighted_cut(void)
{
	static const size_t sizes[] = { 65537, 100000, 200000, 3u << 20, 1, 0, (1u << 20) + 3, 150001 };
	struct nnet_conn_opts o = { .nsocks = 4, .tos = -1, .priority = -1, .weights = { 0, 1, 3, 2 } };
	uint8_t w[NNET_MAX_SOCKS];
	struct nnet_comm *s, *r;
	uint64_t idle;

	/* The receiver cuts by the connector's weights: every size arrives intact. */
	CHECK(pair(&o, &s, &r) == 0);
	CHECK_EQ_U64(nnet_comm_weights(r, w), 4);
	CHECK(w[0] == 0 && w[1] == 1 && w[2] == 3 && w[3] == 2 && w[4] == 0);
	idle = bytes_received(nnet_comm_fd(r, 0));
	for (int k = 0; k < 3; k++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			CHECK_MSG(roundtrip(s, r, sizes[i]) == 0, "%zu bytes, pass %d", sizes[i], k);
	/* A zero weight leaves its socket idle. */
	CHECK_EQ_U64(bytes_received(nnet_comm_fd(r, 0)) - idle, 0);
	CHECK(bytes_received(nnet_comm_fd(r, 2)) > bytes_received(nnet_comm_fd(r, 1)));
	nnet_close(s);
	nnet_close(r);
	/* A weight on a socket the connection lacks: ignored, equal shares. */
	memset(o.weights, 0, sizeof(o.weights));
	o.weights[0] = 1;
	o.weights[6] = 9;
	CHECK(pair(&o, &s, &r) == 0);
	CHECK_EQ_U64(nnet_comm_weights(r, w), 4);
	CHECK(w[0] == 1 && w[1] == 1 && w[2] == 1 && w[3] == 1 && w[6] == 0);
	CHECK(roundtrip(s, r, (2u << 20) + 1) == 0);
	nnet_close(s);
	nnet_close(r);
	CHECK(nnet_weights_check(o.weights, 4) < 0);
	CHECK(nnet_weights_check(o.weights, 7) == 1);
	memset(o.weights, 0, sizeof(o.weights));
	CHECK(nnet_weights_check(o.weights, 4) == 0);
}

static int get_tos(int fd, int family)
{
	int v = -1;
	socklen_t len = sizeof(v);

	if (family == AF_INET6)
		getsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &v, &len);
	else
		getsockopt(fd, IPPROTO_IP, IP_TOS, &v, &len);
	return v;
}

static int get_prio(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);

	getsockopt(fd, SOL_SOCKET, SO_PRIORITY, &v, &len);
	return v;
}

static void tos_and_priority(void)
{
	struct nnet_conn_opts o = { .nsocks = 2, .tos = 0x88, .priority = 4 };
	struct nnet_comm *s, *r;
	int fam;

	CHECK(pair(&o, &s, &r) == 0);
	fam = nnet_comm_peer(s)->sa.sa_family;
	for (int i = -1; i < 2; i++) {
		CHECK_EQ_U64(get_tos(nnet_comm_fd(s, i), fam), 0x88);
		CHECK_EQ_U64(get_prio(nnet_comm_fd(s, i)), 4);
	}
	/* Later, on an established connection (the accept side). */
	CHECK(get_tos(nnet_comm_fd(r, 0), fam) == 0);
	CHECK(nnet_comm_set_tos(r, 0xb8, 2) == 0);
	for (int i = -1; i < 2; i++) {
		CHECK_EQ_U64(get_tos(nnet_comm_fd(r, i), fam), 0xb8);
		CHECK_EQ_U64(get_prio(nnet_comm_fd(r, i)), 2);
	}
	CHECK(roundtrip(s, r, 100) == 0);
	nnet_close(s);
	nnet_close(r);
}

struct flow { struct nnet_comm *s, *r; int err; };

static void *flow_main(void *arg)
{
	struct flow *f = arg;

	for (int i = 0; i < 20 && !f->err; i++)
		f->err = roundtrip(f->s, f->r, (size_t)(i * 37) << 12);
	return NULL;
}

static void two_threads(void)
{
	struct flow f[2] = { 0 };
	pthread_t t[2];

	for (int i = 0; i < 2; i++)
		CHECK(pair(NULL, &f[i].s, &f[i].r) == 0);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, flow_main, &f[i]);
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		CHECK_EQ_U64(f[i].err, 0);
		nnet_close(f[i].s);
		nnet_close(f[i].r);
	}
}

static void ipv6(void)
{
	struct nnet_comm *s, *r;
	const struct nnet_dev *d;

	setenv("NCCL_SOCKET_FAMILY", "AF_INET6", 1);
	CHECK(nnet_init() == 0);
	d = nnet_dev_get(0);
	if (!d) {
		printf("ipv6: skipped (no IPv6 address on lo)\n");
		nnet_fini();
		unsetenv("NCCL_SOCKET_FAMILY");
		return;
	}
	CHECK_EQ_U64(d->addr.sa.sa_family, AF_INET6);
	CHECK(pair(NULL, &s, &r) == 0);
	CHECK_EQ_U64(nnet_comm_peer(s)->sa.sa_family, AF_INET6);
	CHECK(roundtrip(s, r, (2u << 20) + 1) == 0);
	CHECK(roundtrip(s, r, 0) == 0);
	nnet_close(s);
	nnet_close(r);
	nnet_fini();
	unsetenv("NCCL_SOCKET_FAMILY");
}

/* ---- accept under idle and foreign connections ---------------------------- */

#define HELLO_TMO_MS 2000 /* NCCLBPF_NET_HELLO_TIMEOUT=2 (main) */

/* A plain TCP connection to the listener handle names; it never says hello. */
static int idle_conn(const void *handle)
{
	union nnet_addr a;
	int fd;

	if (nnet_handle_peer(handle, &a))
		return -1;
	fd = socket(a.sa.sa_family, SOCK_STREAM, 0);
	if (fd >= 0 && connect(fd, &a.sa, sizeof(a.in)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static int pair_on(struct nnet_listen *l, void *handle, const struct nnet_conn_opts *opts,
		   struct nnet_comm **s, struct nnet_comm **r, const void *flood_handle, int flood,
		   int *flood_fds)
{
	uint64_t end = now_ms() + 10000;
	int err = 0, opened = 0;

	*s = *r = NULL;
	while (!err && (!*s || !*r) && now_ms() < end) {
		if (!*s)
			err = nnet_connect(0, handle, opts, s);
		/* Idle connections keep arriving while this one is being made. */
		for (int k = 0; k < 10 && opened < flood; k++)
			flood_fds[opened++] = idle_conn(flood_handle);
		if (!err && !*r)
			err = nnet_accept(l, r);
	}
	return err ? err : (*s && *r) ? 0 : -ETIMEDOUT;
}

/* A real connection of nsocks data sockets made after (and while) idle ones arrive. */
static int starved(int idle_before, int idle_during, int nsocks)
{
	struct nnet_conn_opts o = { .nsocks = nsocks, .tos = -1, .priority = -1 };
	char handle[NNET_HANDLE_SIZE];
	int *fds = calloc((size_t)(idle_before + idle_during), sizeof(int)), err;
	struct nnet_listen *l;
	struct nnet_comm *s, *r;

	if (!fds || nnet_listen(0, handle, &l)) {
		free(fds);
		return -ENOMEM;
	}
	for (int i = 0; i < idle_before; i++)
		fds[i] = idle_conn(handle);
	/* The listener sees them all first (NCCL polls accept before the peer connects). */
	for (int i = 0; i < 3; i++)
		nnet_accept(l, &r);
	err = pair_on(l, handle, &o, &s, &r, handle, idle_during, fds + idle_before);
	if (!err) {
		err = roundtrip(s, r, (1u << 20) + 5);
		nnet_close(s);
		nnet_close(r);
	}
	for (int i = 0; i < idle_before + idle_during; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	nnet_close_listen(l);
	return err;
}

static void accept_starvation(void)
{
	/* The cases: 72 pending slots filled by idle sockets starved a connection for ever. */
	CHECK_EQ_U64(starved(70, 0, 0), 0);
	CHECK_EQ_U64(starved(8, 0, 64), 0);
	CHECK_EQ_U64(starved(200, 0, 64), 0);
	CHECK_EQ_U64(starved(50, 150, 64), 0);
}

/* Whether the peer closed fd within ms (EOF or reset). */
static bool closed_within(int fd, unsigned ms, struct nnet_listen *l)
{
	uint64_t end = now_ms() + ms;
	struct nnet_comm *r;
	char b;

	while (now_ms() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		nnet_accept(l, &r); /* the deadline is the listener's, kept by NCCL's accept polls */
		if (poll(&p, 1, 20) > 0 && recv(fd, &b, 1, MSG_DONTWAIT) <= 0)
			return true;
	}
	return false;
}

static void hello_deadline(void)
{
	char handle[NNET_HANDLE_SIZE], junk[16];
	const struct nnet_handle *h = (const void *)handle;
	struct nnet_listen *l;
	int idle, foreign, half, old;
	uint64_t t0, half_hello[2];
	struct nnet_hello v2;

	CHECK(nnet_listen(0, handle, &l) == 0);
	idle = idle_conn(handle);
	foreign = idle_conn(handle);
	half = idle_conn(handle);
	old = idle_conn(handle);
	memset(junk, 0x42, sizeof(junk));
	CHECK(send(foreign, junk, sizeof(junk), 0) == sizeof(junk));
	/* The right token and magic, then silence: proven, yet bounded all the same. */
	half_hello[0] = NNET_MAGIC;
	half_hello[1] = h->token;
	CHECK(send(half, half_hello, sizeof(half_hello), 0) == sizeof(half_hello));
	/* A peer of the previous wire version ("ncclbpf2"). */
	memset(&v2, 0, sizeof(v2));
	v2.magic = 0x6e63636c62706632ull;
	v2.token = h->token;
	v2.index = NNET_HELLO_CTRL;
	v2.nsocks = 1;
	CHECK(send(old, &v2, sizeof(v2), 0) == sizeof(v2));
	t0 = now_ms();
	CHECK(closed_within(foreign, 1000, l));
	CHECK(closed_within(old, 1000, l));
	CHECK(closed_within(idle, HELLO_TMO_MS + 10000, l));
	CHECK(closed_within(half, HELLO_TMO_MS + 10000, l));
	/* Not before the deadline. */
	CHECK(now_ms() - t0 >= HELLO_TMO_MS);
	close(idle);
	close(foreign);
	close(half);
	close(old);
	nnet_close_listen(l);
}

/* A listener that reads the hellos and closes: connect fails instead of handing out a comm. */
static void refused_before_ack(void)
{
	char handle[NNET_HANDLE_SIZE];
	struct nnet_handle *h = (void *)handle;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	struct nnet_listen *l;
	struct nnet_comm *s = NULL;
	uint64_t end;
	int fake = socket(AF_INET, SOCK_STREAM, 0), err = 0, n = 0;

	CHECK(fake >= 0 && bind(fake, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(fake, 16) == 0 &&
	      getsockname(fake, (struct sockaddr *)&sa, &len) == 0);
	CHECK(nnet_listen(0, handle, &l) == 0);
	h->addr.in.sin_port = sa.sin_port; /* our handle, someone else's port */
	end = now_ms() + 10000;
	while (!err && !s && now_ms() < end) {
		struct pollfd p = { .fd = fake, .events = POLLIN };

		err = nnet_connect(0, handle, NULL, &s);
		while (poll(&p, 1, 0) > 0) {
			int fd = accept(fake, NULL, NULL);

			if (fd >= 0)
				close(fd);
			n++;
		}
	}
	CHECK_MSG(err == -ECONNABORTED && !s, "connect to a listener that closed: %d, comm %p", err,
		  (void *)s);
	CHECK(n >= 1);
	if (s)
		nnet_close(s);
	nnet_close_listen(l);
	close(fake);
}

int main(void)
{
	ifname_grammar();
	setenv("NCCL_SOCKET_IFNAME", "=lo", 1);
	setenv("NCCL_SOCKET_NTHREADS", "3", 1);
	setenv("NCCL_NSOCKS_PERTHREAD", "2", 1);
	setenv("NCCLBPF_NET_HELLO_TIMEOUT", "2", 1);
	CHECK(nnet_init() == 0);
	CHECK_EQ_U64(nnet_ndev(), 1);
	CHECK(nnet_dev_get(0) && !strcmp(nnet_dev_get(0)->name, "lo"));
	CHECK_EQ_U64(nnet_dev_get(0)->addr.sa.sa_family, AF_INET);
	CHECK(nnet_dev_get(1) == NULL);
	socket_counts();
	cut_properties();
	weighted_cut();
	tos_and_priority();
	two_threads();
	accept_starvation();
	hello_deadline();
	refused_before_ack();
	nnet_fini();
	ipv6();
	/* An exclusion that leaves nothing: no devices, not a failure. */
	setenv("NCCL_SOCKET_IFNAME", "=no_such_if", 1);
	CHECK(nnet_init() == 0);
	CHECK_EQ_U64(nnet_ndev(), 0);
	nnet_fini();
	return check_summary("net_transport");
}
