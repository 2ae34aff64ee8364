// SPDX-License-Identifier: Apache-2.0
/*
 * observe_deep.c - the deep tier switched by an alert: an Alertmanager
 * webhook receiver (POST /deep) for `observe --deep-listen` and for
 * `export --listen`.  A notification whose status is firing opens the deep
 * tier's window (pushed on by every later firing notification, the
 * receiver's repeat); resolved closes it.  The kernel switches the tier
 * off at the window's end by itself, so a receiver that never hears
 * "resolved" (Alertmanager down, the alert silenced) leaves it on for one
 * window at most.
 *
 * The HTTP thread only records the request; the caller's loop applies it
 * (obs_deep_hook_apply), so the deep tier is only ever switched from one
 * thread.
 */
#ifdef NCCLBPF_HAVE_OBSERVE
#include <arpa/inet.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ncclbpf/runtime.h"
#include "observe_cli.h"

/* Largest notification body kept: Alertmanager's group of alerts, labels included. */
#define BODY_MAX (256 * 1024)

struct body {
	char *buf;
	size_t len;
	bool too_long;
};

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "firing" anywhere in the group (one alert firing is enough), else "resolved". */
static int hook_verdict(const char *body)
{
	static const char *const firing[] = { "\"status\":\"firing\"", "\"status\": \"firing\"" };
	static const char *const resolved[] = { "\"status\":\"resolved\"", "\"status\": \"resolved\"" };

	for (int i = 0; i < 2; i++)
		if (strstr(body, firing[i]))
			return 1;
	for (int i = 0; i < 2; i++)
		if (strstr(body, resolved[i]))
			return 2;
	return 0;
}

enum MHD_Result obs_deep_hook_serve(struct obs_deep_hook *h, struct MHD_Connection *conn,
				    const char *upload, size_t *upload_size, void **con_cls)
{
	static const char ok[] = "ok\n", bad[] = "want an Alertmanager webhook notification\n";
	struct body *b = *con_cls;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	int v;

	if (!b) {
		if (!(b = calloc(1, sizeof(*b))))
			return MHD_NO;
		*con_cls = b;
		return MHD_YES;
	}
	if (*upload_size) {
		if (b->len + *upload_size > BODY_MAX) {
			b->too_long = true;
		} else {
			char *p = realloc(b->buf, b->len + *upload_size + 1);

			if (!p)
				return MHD_NO;
			memcpy(p + b->len, upload, *upload_size);
			b->buf = p;
			b->len += *upload_size;
			b->buf[b->len] = 0;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	v = b->buf && !b->too_long ? hook_verdict(b->buf) : 0;
	if (v)
		atomic_store(&h->request, v);
	free(b->buf);
	free(b);
	*con_cls = NULL;
	resp = MHD_create_response_from_buffer(v ? sizeof(ok) - 1 : sizeof(bad) - 1,
					       (void *)(v ? ok : bad), MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	ret = MHD_queue_response(conn, v ? MHD_HTTP_OK : MHD_HTTP_BAD_REQUEST, resp);
	MHD_destroy_response(resp);
	return ret;
}

void obs_deep_hook_done(void *cls, struct MHD_Connection *conn, void **con_cls,
			enum MHD_RequestTerminationCode toe)
{
	struct body *b = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (b) {
		free(b->buf);
		free(b);
		*con_cls = NULL;
	}
}

int obs_deep_hook_apply(struct obs_deep_hook *h, struct nbpf_obs *obs)
{
	int v = atomic_exchange(&h->request, 0);
	double now = mono();

	if (v == 1) {
		if (!h->until)
			fprintf(stderr, "deep tier: on (alert webhook), %g s, at most %llu records/s\n",
				h->window_s, (unsigned long long)h->budget);
		h->until = now + h->window_s;
		if (nbpf_obs_deep(obs, (uint64_t)(h->until * 1e9), h->budget))
			fprintf(stderr, "deep tier: %s\n", ncclbpf_errmsg());
	} else if (v == 2 && h->until) {
		h->until = 0;
		fprintf(stderr, "deep tier: off (alert resolved)\n");
		nbpf_obs_deep(obs, 0, h->budget);
	} else if (h->until && now >= h->until) {
		h->until = 0;
		fprintf(stderr, "deep tier: off (no firing notification for %g s)\n", h->window_s);
	}
	return h->until > 0;
}

/* POST /deep only: observe's own receiver. */
static enum MHD_Result serve(void *cls, struct MHD_Connection *conn, const char *url,
			     const char *method, const char *version, const char *upload,
			     size_t *upload_size, void **con_cls)
{
	static const char nf[] = "POST an Alertmanager webhook notification to /deep\n";
	struct MHD_Response *resp;
	enum MHD_Result ret;

	(void)version;
	if (!strcmp(method, "POST") && !strcmp(url, "/deep"))
		return obs_deep_hook_serve(cls, conn, upload, upload_size, con_cls);
	resp = MHD_create_response_from_buffer(sizeof(nf) - 1, (void *)nf, MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	ret = MHD_queue_response(conn, MHD_HTTP_NOT_FOUND, resp);
	MHD_destroy_response(resp);
	return ret;
}

int obs_deep_hook_listen(struct obs_deep_hook *h, const char *addr)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	const char *colon = strrchr(addr, ':');
	char host[64];
	char *end;
	long port;

	if (!colon || (size_t)(colon - addr) >= sizeof(host))
		return -1;
	port = strtol(colon + 1, &end, 10);
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = 0;
	if (*end || port <= 0 || port > 65535 || inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -1;
	sa.sin_port = htons((uint16_t)port);
	h->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, (uint16_t)port,
				     NULL, NULL, serve, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
				     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
				     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)16,
				     MHD_OPTION_NOTIFY_COMPLETED, obs_deep_hook_done, NULL, MHD_OPTION_END);
	return h->daemon ? 0 : -2;
}

void obs_deep_hook_close(struct obs_deep_hook *h)
{
	if (h->daemon)
		MHD_stop_daemon(h->daemon);
	h->daemon = NULL;
}
#endif
