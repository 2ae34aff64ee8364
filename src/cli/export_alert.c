// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * export_alert.c - threshold alerts posted to a webhook (export_alert.h).
 *
 * Evaluated on the delta between two collections, so a P99 is "over the
 * last interval", like rate() in a rule.  Delivery is best effort: one
 * POST per state change with a short deadline; a receiver that is down
 * costs one error line, never a stalled exporter.
 */
#include <errno.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "control/ctl_tele.h"
#include "export_alert.h"

int export_alert_parse_p99(struct export_alerts *a, const char *spec)
{
	char buf[256], *save = NULL, *tok;

	if (strlen(spec) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, spec);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end;
		int cls;
		double v;

		if (!eq)
			return -EINVAL;
		*eq = 0;
		for (cls = 0; cls < NBPF_SIZE_CLASSES && strcmp(nbpf_tele_size_name(cls), tok); cls++)
			;
		v = strtod(eq + 1, &end);
		if (cls == NBPF_SIZE_CLASSES || *end || !(v > 0))
			return -EINVAL;
		a->p99_bound_s[cls] = v;
	}
	return 0;
}

static void rfc3339(char *out, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* One POST with a 2 s deadline per phase; 0 on a 2xx answer. */
static int http_post(const char *url, const char *body)
{
	char host[256], port[8] = "80", req[512], resp[64];
	const char *p, *path;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	struct timeval tv = { .tv_sec = 2 };
	size_t hl;
	int fd = -1, err = -EIO;
	ssize_t n;

	if (strncmp(url, "http://", 7))
		return -EINVAL;
	p = url + 7;
	path = strchr(p, '/');
	hl = path ? (size_t)(path - p) : strlen(p);
	if (!path)
		path = "/";
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, p, hl);
	host[hl] = 0;
	if (strchr(host, ':')) {
		snprintf(port, sizeof(port), "%s", strchr(host, ':') + 1);
		*strchr(host, ':') = 0;
	}
	if (getaddrinfo(host, port, &hints, &ai) || !ai)
		return -EHOSTUNREACH;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto out;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		err = -errno;
		goto out;
	}
	snprintf(req, sizeof(req),
		 "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
		 "Content-Length: %zu\r\nConnection: close\r\n\r\n", path, host, strlen(body));
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) < 0 ||
	    send(fd, body, strlen(body), MSG_NOSIGNAL) < 0) {
		err = -errno;
		goto out;
	}
	n = recv(fd, resp, sizeof(resp) - 1, 0);
	if (n > 12) {
		resp[n] = 0;
		err = !strncmp(resp, "HTTP/1.", 7) && resp[9] == '2' ? 0 : -EPROTO;
	}
out:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return err;
}

/* Appends one alert object to the body. */
static void add_alert(FILE *f, bool *first, bool firing, const char *name, const char *labels,
		      const char *summary)
{
	char ts[32];

	rfc3339(ts, sizeof(ts));
	fprintf(f, "%s{\"labels\":{\"alertname\":\"%s\",\"severity\":\"warning\",\"source\":\"ncclbpf-export\",%s},"
		"\"annotations\":{\"summary\":\"%s\"},\"%s\":\"%s\"}",
		*first ? "" : ",", name, labels, summary, firing ? "startsAt" : "endsAt", ts);
	*first = false;
}

/* An alert's state: its name and labels, and whether it is firing. */
struct export_alert_key {
	char *key;
	uint64_t hash;
	bool firing;
};

static uint64_t key_hash(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

/* Open addressing on the whole key, kept at most half full: no two alerts share a state. */
static struct export_alert_key *find_slot(struct export_alert_key *t, size_t cap, const char *key,
					  uint64_t h)
{
	size_t i = h & (cap - 1);

	while (t[i].key && (t[i].hash != h || strcmp(t[i].key, key)))
		i = (i + 1) & (cap - 1);
	return &t[i];
}

static int grow(struct export_alerts *a)
{
	size_t cap = a->cap_keys ? a->cap_keys * 2 : 64;
	struct export_alert_key *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < a->cap_keys; i++)
		if (a->keys[i].key)
			*find_slot(t, cap, a->keys[i].key, a->keys[i].hash) = a->keys[i];
	free(a->keys);
	a->keys = t;
	a->cap_keys = cap;
	return 0;
}

/* The state of key, created not firing; NULL when out of memory. */
static struct export_alert_key *key_state(struct export_alerts *a, const char *key)
{
	uint64_t h = key_hash(key);
	struct export_alert_key *k;

	if ((a->n_keys + 1) * 2 > a->cap_keys && grow(a))
		return NULL;
	k = find_slot(a->keys, a->cap_keys, key, h);
	if (!k->key) {
		k->key = strdup(key);
		if (!k->key)
			return NULL;
		k->hash = h;
		a->n_keys++;
	}
	return k;
}

/* Records the state of one alert; adds it to the body when it changed. */
static void judge(struct export_alerts *a, FILE *f, bool *first, bool firing, const char *name,
		  const char *labels, const char *summary)
{
	char key[512];
	struct export_alert_key *k;

	snprintf(key, sizeof(key), "%s|%s", name, labels);
	k = key_state(a, key);
	if (!k || k->firing == firing)
		return;
	k->firing = firing;
	add_alert(f, first, firing, name, labels, summary);
}

void export_alert_tick(struct export_alerts *a, const struct nbpf_tele_set *now)
{
	struct nbpf_tele_set d = { 0 };
	char *body = NULL, labels[256], summary[256];
	size_t len = 0;
	bool first = true;
	FILE *f;

	if (!a->have_prev) {
		d = *now; /* the first collection: everything since the processes started */
	} else if (cli_tele_delta(&d, now, &a->prev)) {
		return;
	}
	f = open_memstream(&body, &len);
	if (!f)
		goto out;
	fputc('[', f);
	for (size_t i = 0; i < d.n_cells; i++) {
		const struct nbpf_tele_cell *c = &d.cells[i];
		double bound = c->size_cls >= 0 && c->size_cls < NBPF_SIZE_CLASSES ? a->p99_bound_s[c->size_cls] : 0;
		double p99;

		if (!bound || !c->count)
			continue;
		p99 = nbpf_tele_quantile_ns(c->hist, NBPF_LAT_BUCKETS, 0.99) / 1e9;
		snprintf(labels, sizeof(labels), "\"communicator\":\"0x%llx\",\"collective\":\"%s\",\"size\":\"%s\"",
			 (unsigned long long)c->comm_id, nbpf_tele_coll_name(c->coll),
			 nbpf_tele_size_name(c->size_cls));
		snprintf(summary, sizeof(summary), "%s %s P99 %.3g s above %.3g s",
			 nbpf_tele_coll_name(c->coll), nbpf_tele_size_name(c->size_cls), p99, bound);
		judge(a, f, &first, p99 > bound, "NcclbpfCollectiveLatencyP99High", labels, summary);
	}
	for (size_t i = 0; a->refused && i < d.n_tuners; i++) {
		uint64_t n = 0;

		for (int r = 0; r < NBPF_TELE_REFUSE; r++)
			n += d.tuners[i].refused[r];
		snprintf(labels, sizeof(labels), "\"communicator\":\"0x%llx\"",
			 (unsigned long long)d.tuners[i].comm_id);
		snprintf(summary, sizeof(summary), "%llu policy outputs refused", (unsigned long long)n);
		judge(a, f, &first, n > 0, "NcclbpfPolicyOutputRefused", labels, summary);
	}
	for (size_t i = 0; a->refused && i < d.n_loads; i++) {
		const struct nbpf_tele_loads *l = &d.loads[i];
		static const char *const stage[] = { "verifier", "loader" };
		uint64_t n[] = { l->refused_verifier, l->refused_loader };

		for (int k = 0; k < 2; k++) {
			snprintf(labels, sizeof(labels), "\"pid\":\"%llu\",\"stage\":\"%s\"",
				 (unsigned long long)l->pid, stage[k]);
			snprintf(summary, sizeof(summary), "%llu policy loads refused by the %s",
				 (unsigned long long)n[k], stage[k]);
			judge(a, f, &first, n[k] > 0, "NcclbpfPolicyLoadRefused", labels, summary);
		}
		snprintf(labels, sizeof(labels), "\"pid\":\"%llu\"", (unsigned long long)l->pid);
		snprintf(summary, sizeof(summary), "%llu policy rollbacks", (unsigned long long)l->rollbacks);
		judge(a, f, &first, l->rollbacks > 0, "NcclbpfPolicyRolledBack", labels, summary);
		for (int r = 0; l->net && r < NBPF_TELE_REFUSE; r++) {
			snprintf(labels, sizeof(labels), "\"pid\":\"%llu\",\"reason\":\"%s\"",
				 (unsigned long long)l->pid, nbpf_tele_refuse_name(r));
			snprintf(summary, sizeof(summary), "%llu net policy outputs refused (%s)",
				 (unsigned long long)l->net_refused[r], nbpf_tele_refuse_name(r));
			judge(a, f, &first, l->net_refused[r] > 0, "NcclbpfNetPolicyOutputRefused", labels,
			      summary);
		}
	}
	fputc(']', f);
	if (fclose(f))
		goto out;
	if (!first) {
		int err = http_post(a->url, body);

		a->posts++;
		if (err) {
			a->post_errors++;
			fprintf(stderr, "ncclbpf: alert webhook %s: %s\n", a->url, strerror(-err));
		}
	}
out:
	free(body);
	if (a->have_prev)
		nbpf_tele_free(&d);
	nbpf_tele_free(&a->prev);
	memset(&a->prev, 0, sizeof(a->prev));
	/* Keep a copy of now for the next delta. */
	if (!cli_tele_delta(&a->prev, now, &(struct nbpf_tele_set){ 0 }))
		a->have_prev = true;
}

void export_alert_free(struct export_alerts *a)
{
	nbpf_tele_free(&a->prev);
	for (size_t i = 0; i < a->cap_keys; i++)
		free(a->keys[i].key);
	free(a->keys);
	a->keys = NULL;
	a->n_keys = a->cap_keys = 0;
}
