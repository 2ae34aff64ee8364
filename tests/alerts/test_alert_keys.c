// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_alert_keys.c - the webhook keeps one state per alert, whatever
 * their number: 48 communicators whose 4M AllReduce P99 crosses its bound
 * at once give 48 firing alerts, and 48 resolutions when they come back
 * under it.  (The state used to be 256 slots picked by an 8-bit hash of
 * the key: alerts whose keys met in a slot were never sent.)  Drives the
 * exporter's alert code (src/cli/export_alert.c) directly with collected
 * telemetry, against a receiver on loopback.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#include "check.h"
#include "export_alert.h"
#include "webhook_rx.h"

#define N_COMMS 48

static int lfd;
static char *body;

static void *receive(void *arg)
{
	(void)arg;
	body = webhook_receive(lfd);
	return NULL;
}

/* Adds `calls` 4M AllReduces of 2^log2_ns ns to each communicator's cell. */
static void add_calls(struct nbpf_tele_set *s, int log2_ns, uint64_t calls)
{
	for (uint64_t id = 1; id <= N_COMMS; id++) {
		/* Size class 3 is "4M" (1K 16K 256K 4M 64M 1G inf). */
		struct nbpf_tele_cell *c = nbpf_tele_cell(s, 0x1000 + id * 0x10001, 4, 3);

		c->n_ranks = 8;
		c->count += calls;
		c->bytes += calls << 22;
		c->sum_ns += calls << log2_ns;
		c->hist[log2_ns] += calls;
	}
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; p && (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* One tick, its POST caught by the receiver; the body (or NULL). */
static char *tick(struct export_alerts *a, const struct nbpf_tele_set *s)
{
	pthread_t t;

	body = NULL;
	pthread_create(&t, NULL, receive, NULL);
	export_alert_tick(a, s);
	pthread_join(t, NULL);
	return body;
}

int main(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	struct export_alerts a = { 0 };
	struct nbpf_tele_set s = { .processes = 1 };
	char url[64], *b;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(lfd, 8) == 0);
	CHECK(getsockname(lfd, (struct sockaddr *)&sa, &sl) == 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/alerts", ntohs(sa.sin_port));
	a.url = url;
	CHECK(export_alert_parse_p99(&a, "4M=0.005") == 0);

	/* 8 ms (2^23 ns) against a 5 ms bound, in every communicator. */
	add_calls(&s, 23, 100);
	b = tick(&a, &s);
	CHECK_MSG(count(b, "\"alertname\":\"NcclbpfCollectiveLatencyP99High\"") == N_COMMS,
		  "%d of %d communicators alerted", count(b, "NcclbpfCollectiveLatencyP99High"), N_COMMS);
	CHECK_EQ_U64(count(b, "\"startsAt\""), N_COMMS);
	for (uint64_t id = 1; id <= N_COMMS; id++) {
		char want[64];

		snprintf(want, sizeof(want), "\"communicator\":\"0x%llx\"",
			 (unsigned long long)(0x1000 + id * 0x10001));
		CHECK_MSG(count(b, want) == 1, "%s: %d alerts", want, count(b, want));
	}
	free(b);

	/* The next interval at 0.5 ms (2^19 ns): every one of them resolves. */
	add_calls(&s, 19, 10000);
	b = tick(&a, &s);
	CHECK_MSG(count(b, "\"endsAt\"") == N_COMMS, "%d of %d resolved", count(b, "\"endsAt\""),
		  N_COMMS);
	CHECK(count(b, "\"startsAt\"") == 0);
	free(b);
	CHECK_EQ_U64(a.posts, 2);
	CHECK_EQ_U64(a.post_errors, 0);
	export_alert_free(&a);
	nbpf_tele_free(&s);
	close(lfd);
	return check_summary("alerts_keys");
}
