/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_coord.c - an agreed change over local processes (ctl_coord.h).
 */
#include "ctl_coord.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl_client.h"

const char *nbpf_coord_res_name(enum nbpf_coord_res r)
{
	switch (r) {
	case NBPF_COORD_NONE: return "none";
	case NBPF_COORD_OK: return "ok";
	case NBPF_COORD_REFUSED: return "refused";
	case NBPF_COORD_UNKNOWN: return "unknown";
	}
	return "?";
}

uint64_t nbpf_coord_rt_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int nbpf_coord_merge_known(uint64_t **set, uint32_t *n_set, const uint64_t *ids, uint32_t n)
{
	uint64_t *v = realloc(*set, (*n_set + n + 1) * sizeof(*v));
	uint32_t k = 0, total = *n_set + n;

	if (!v)
		return -ENOMEM;
	memcpy(v + *n_set, ids, n * sizeof(*v));
	qsort(v, total, sizeof(*v), cmp_u64);
	for (uint32_t i = 0; i < total; i++)
		if (!k || v[k - 1] != v[i])
			v[k++] = v[i];
	*set = v;
	*n_set = k;
	return 0;
}

void nbpf_coord_put_known(struct nbpf_ctl_buf *b, const char *key, const uint64_t *ids,
			  uint32_t n)
{
	nbpf_ctl_buf_u64s(b, key, ids, n);
}

int nbpf_coord_init(struct nbpf_coord *c, const char *id, const char *owner, const int *pids,
		    int n, int timeout_ms)
{
	uint64_t now = nbpf_coord_rt_ns();

	memset(c, 0, sizeof(*c));
	if (id) {
		snprintf(c->id, sizeof(c->id), "%s", id);
	} else {
		char host[64] = "";
		struct timespec ts;

		gethostname(host, sizeof(host) - 1);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		/* Unique per coordinator run: a change id is used once everywhere. */
		snprintf(c->id, sizeof(c->id), "%.24s-%d-%" PRIx64, host, (int)getpid(),
			 now ^ ((uint64_t)ts.tv_nsec << 20));
	}
	snprintf(c->owner, sizeof(c->owner), "%s", owner ? owner : "ncclbpf");
	c->t_init = now;
	c->deadline = now + (uint64_t)timeout_ms * 1000000ull;
	c->hold = now + 3ull * (uint64_t)timeout_ms * 1000000ull;
	c->p = calloc((size_t)(n ? n : 1), sizeof(*c->p));
	if (!c->p)
		return -ENOMEM;
	c->n = n;
	for (int i = 0; i < n; i++) {
		c->p[i].pid = pids[i];
		if (nbpf_ctl_pid_path(pids[i], c->p[i].path, sizeof(c->p[i].path)))
			c->p[i].path[0] = 0;
	}
	return 0;
}

void nbpf_coord_free(struct nbpf_coord *c)
{
	free(c->p);
	free(c->known);
	memset(c, 0, sizeof(*c));
}

/* ms left until t (CLOCK_REALTIME ns), at least 1. */
static int ms_until(uint64_t t)
{
	uint64_t now = nbpf_coord_rt_ns();

	return t > now + 1000000ull ? (int)((t - now) / 1000000ull) : 1;
}

static void set_msg(struct nbpf_coord_proc *p, const struct nbpf_ctl_call *k)
{
	p->err = k->err;
	p->answered = k->answered;
	snprintf(p->msg, sizeof(p->msg), "%s", k->errmsg ? k->errmsg : "");
}

/* The tuner comms a process answered with (highest call, ids into known), a rollback's target. */
static int merge_comms(struct nbpf_coord *c, struct nbpf_coord_proc *p, const struct nbpf_ctl_msg *m)
{
	uint64_t ids[256];
	uint32_t n = 0;
	int err = 0;

	for (uint32_t k = 0; k < m->n_recs && !err; k++) {
		uint64_t id = 0, calls = 0;

		if (!strcmp(m->recs[k].kind, "staged"))
			nbpf_ctl_rec_u64(&m->recs[k], "target", &p->target);
		if (strcmp(m->recs[k].kind, "comm") || nbpf_ctl_rec_u64(&m->recs[k], "comm_id", &id))
			continue;
		nbpf_ctl_rec_u64(&m->recs[k], "calls", &calls);
		if (calls > p->max_calls)
			p->max_calls = calls;
		ids[n++] = id;
		if (n == 256) {
			err = nbpf_coord_merge_known(&c->known, &c->n_known, ids, n);
			n = 0;
		}
	}
	if (!err && n)
		err = nbpf_coord_merge_known(&c->known, &c->n_known, ids, n);
	if (p->max_calls > c->max_calls)
		c->max_calls = p->max_calls;
	return err;
}

/* Highest tuner call over the processes now (one CALLS round), for the rate. */
static uint64_t sample_calls(struct nbpf_coord *c)
{
	struct nbpf_ctl_call *k = calloc((size_t)(c->n ? c->n : 1), sizeof(*k));
	uint64_t max = 0;

	if (!k)
		return 0;
	for (int i = 0; i < c->n; i++)
		k[i] = (struct nbpf_ctl_call){ .path = c->p[i].path, .type = NBPF_CTL_CALLS };
	/* A stopped process answers nothing: it must not eat the stage's time. */
	nbpf_ctl_call_all(k, c->n, c->rate_window_ms * 2 + 100);
	for (int i = 0; i < c->n; i++) {
		for (uint32_t r = 0; k[i].answered && r < k[i].resp.n_recs; r++) {
			uint64_t v = 0;

			if (!strcmp(k[i].resp.recs[r].kind, "comm") &&
			    !strcmp(nbpf_ctl_rec_get(&k[i].resp.recs[r], "kind") ?: "", "tuner") &&
			    !nbpf_ctl_rec_u64(&k[i].resp.recs[r], "calls", &v) && v > max)
				max = v;
		}
		nbpf_ctl_msg_free(&k[i].resp);
	}
	free(k);
	return max;
}

int nbpf_coord_stage(struct nbpf_coord *c, const char *fields, const char *records)
{
	struct nbpf_ctl_buf b = { .max = NBPF_CTL_MAX_REQUEST };
	struct nbpf_ctl_call *k = calloc((size_t)(c->n ? c->n : 1), sizeof(*k));
	double t0 = mono_s(), t1;
	uint64_t before;
	int staged = 0;

	if (!k)
		return -ENOMEM;
	before = c->rate_window_ms ? sample_calls(c) : 0;
	if (c->rate_window_ms)
		usleep((useconds_t)c->rate_window_ms * 1000);
	/* The deadline and hold count from the stage itself, not from the sampling. */
	{
		uint64_t now = nbpf_coord_rt_ns(), d = c->deadline - c->t_init, h = c->hold - c->t_init;

		c->deadline = now + d;
		c->hold = now + h;
		c->t_init = now;
	}
	nbpf_ctl_buf_rec(&b, "stage");
	nbpf_ctl_buf_str(&b, "id", c->id);
	nbpf_ctl_buf_u64(&b, "deadline", c->deadline);
	nbpf_ctl_buf_u64(&b, "hold", c->hold);
	nbpf_ctl_buf_str(&b, "owner", c->owner);
	if (fields)
		nbpf_ctl_buf_append(&b, fields, strlen(fields));
	if (records && *records) {
		nbpf_ctl_buf_append(&b, "\n", 1);
		nbpf_ctl_buf_append(&b, records, strlen(records));
	}
	for (int i = 0; i < c->n; i++)
		k[i] = (struct nbpf_ctl_call){ .path = c->p[i].path, .type = NBPF_CTL_STAGE,
					       .payload = b.err ? NULL : b.data };
	/* A little past the deadline: an answer sent just before it still counts. */
	if (!b.err)
		nbpf_ctl_call_all(k, c->n, ms_until(c->deadline) + 200);
	t1 = mono_s();
	for (int i = 0; i < c->n; i++) {
		struct nbpf_coord_proc *p = &c->p[i];

		if (b.err) {
			p->stage = NBPF_COORD_REFUSED;
			snprintf(p->msg, sizeof(p->msg), "the change does not fit in one request");
		} else if (!p->path[0]) {
			p->stage = NBPF_COORD_REFUSED;
			p->err = -ESRCH;
			snprintf(p->msg, sizeof(p->msg), "pid %d: no control socket answers for it", p->pid);
		} else {
			set_msg(p, &k[i]);
			p->stage = k[i].answered ? (k[i].err ? NBPF_COORD_REFUSED : NBPF_COORD_OK)
				   : k[i].sent ? NBPF_COORD_UNKNOWN : NBPF_COORD_REFUSED;
			if (p->stage == NBPF_COORD_OK && merge_comms(c, p, &k[i].resp))
				p->stage = NBPF_COORD_UNKNOWN; /* staged, but its comms are not known */
		}
		staged += p->stage == NBPF_COORD_OK;
		nbpf_ctl_msg_free(&k[i].resp);
	}
	/*
	 * The answers came over the whole stage: one that was slow (a stopped
	 * process) makes the early ones old by the time the call is agreed.
	 */
	if (staged) {
		uint64_t again = sample_calls(c);

		if (again > c->max_calls)
			c->max_calls = again;
		t1 = mono_s();
	}
	c->calls_at = nbpf_coord_rt_ns();
	if (c->rate_window_ms && t1 > t0 && c->max_calls > before)
		c->rate = (double)(c->max_calls - before) / (t1 - t0);
	nbpf_ctl_buf_free(&b);
	free(k);
	return staged;
}

uint64_t nbpf_coord_at_call(const struct nbpf_coord *c, uint64_t margin, double margin_s)
{
	return c->max_calls + (margin ? margin : (uint64_t)(c->rate * margin_s) + 1000);
}

uint64_t nbpf_coord_calls_now(uint64_t calls, uint64_t calls_at, double rate, uint64_t now)
{
	/* calls_at 0: a vote of an older version, which did not say. */
	double s = calls_at && now > calls_at ? (double)(now - calls_at) / 1e9 : 0;

	return calls + (uint64_t)(rate * (s < 120 ? s : 120));
}

/* One round of requests of type to the processes whose res is in want (stage or commit). */
static void round_trip(struct nbpf_coord *c, int type, const char *payload,
		       enum nbpf_coord_res *(*res)(struct nbpf_coord_proc *), bool (*want)(const struct nbpf_coord_proc *),
		       int timeout_ms)
{
	struct nbpf_ctl_call *k = calloc((size_t)(c->n ? c->n : 1), sizeof(*k));
	int *idx = calloc((size_t)(c->n ? c->n : 1), sizeof(*idx)), n = 0;

	if (!k || !idx) {
		free(k);
		free(idx);
		return;
	}
	for (int i = 0; i < c->n; i++)
		if (want(&c->p[i])) {
			k[n] = (struct nbpf_ctl_call){ .path = c->p[i].path, .type = type, .payload = payload };
			idx[n++] = i;
		}
	nbpf_ctl_call_all(k, n, timeout_ms);
	for (int j = 0; j < n; j++) {
		struct nbpf_coord_proc *p = &c->p[idx[j]];
		enum nbpf_coord_res *r = res(p);

		if (k[j].answered) {
			set_msg(p, &k[j]);
			*r = k[j].err ? NBPF_COORD_REFUSED : NBPF_COORD_OK;
			for (uint32_t m = 0; !k[j].err && m < k[j].resp.n_recs; m++)
				if (!strcmp(k[j].resp.recs[m].kind, "change")) {
					nbpf_ctl_rec_u64(&k[j].resp.recs[m], "gen", &p->gen);
					nbpf_ctl_rec_u64(&k[j].resp.recs[m], "late", &p->late);
				}
		} else if (k[j].sent || *r == NBPF_COORD_UNKNOWN) {
			*r = NBPF_COORD_UNKNOWN;
			set_msg(p, &k[j]);
		} else {
			*r = NBPF_COORD_REFUSED; /* never reached: it cannot act on this request */
			set_msg(p, &k[j]);
		}
		nbpf_ctl_msg_free(&k[j].resp);
	}
	free(k);
	free(idx);
}

static enum nbpf_coord_res *res_commit(struct nbpf_coord_proc *p) { return &p->commit; }
static enum nbpf_coord_res *res_abort(struct nbpf_coord_proc *p) { return &p->abort; }
static bool want_commit(const struct nbpf_coord_proc *p)
{
	return p->stage == NBPF_COORD_OK && (p->commit == NBPF_COORD_NONE || p->commit == NBPF_COORD_UNKNOWN);
}
static bool want_abort(const struct nbpf_coord_proc *p)
{
	return p->path[0] && p->stage != NBPF_COORD_REFUSED && p->abort != NBPF_COORD_OK;
}

int nbpf_coord_commit(struct nbpf_coord *c, uint64_t at_call, const uint64_t *known,
		      uint32_t n_known)
{
	struct nbpf_ctl_buf b = { .max = NBPF_CTL_MAX_REQUEST };
	int done = 0, per_try = ms_until(c->deadline);

	if (per_try < 500)
		per_try = 500;
	nbpf_ctl_buf_rec(&b, "commit");
	nbpf_ctl_buf_str(&b, "id", c->id);
	nbpf_ctl_buf_u64(&b, "at_call", at_call);
	if (known ? n_known : c->n_known)
		nbpf_coord_put_known(&b, "known", known ? known : c->known, known ? n_known : c->n_known);
	if (b.err) {
		for (int i = 0; i < c->n; i++)
			if (c->p[i].stage == NBPF_COORD_OK) {
				c->p[i].commit = NBPF_COORD_REFUSED;
				snprintf(c->p[i].msg, sizeof(c->p[i].msg), "the commit does not fit in one request");
			}
		nbpf_ctl_buf_free(&b);
		return 0;
	}
	/* Retried while the staged copies live: a stopped process answers once it runs again. */
	for (;;) {
		bool pending = false;

		round_trip(c, NBPF_CTL_COMMIT, b.data, res_commit, want_commit,
			   per_try < ms_until(c->hold) ? per_try : ms_until(c->hold));
		for (int i = 0; i < c->n; i++)
			pending |= c->p[i].commit == NBPF_COORD_UNKNOWN;
		if (!pending || nbpf_coord_rt_ns() >= c->hold)
			break;
		usleep(50000);
	}
	for (int i = 0; i < c->n; i++)
		done += c->p[i].commit == NBPF_COORD_OK;
	nbpf_ctl_buf_free(&b);
	return done;
}

int nbpf_coord_target_differs(const struct nbpf_coord *c)
{
	int first = -1;

	for (int i = 0; i < c->n; i++) {
		if (c->p[i].stage != NBPF_COORD_OK)
			continue;
		if (first < 0)
			first = i;
		else if (c->p[i].target != c->p[first].target)
			return i;
	}
	return -1;
}

int nbpf_coord_abort(struct nbpf_coord *c)
{
	struct nbpf_ctl_buf b = { .max = NBPF_CTL_MAX_REQUEST };
	int done = 0;

	nbpf_ctl_buf_rec(&b, "abort");
	nbpf_ctl_buf_str(&b, "id", c->id);
	round_trip(c, NBPF_CTL_ABORT, b.data, res_abort, want_abort, 1000);
	for (int i = 0; i < c->n; i++)
		done += c->p[i].abort == NBPF_COORD_OK;
	nbpf_ctl_buf_free(&b);
	return done;
}

void nbpf_coord_status(const char *path, const char *id, char *state, size_t n, uint64_t *at_call,
		       int timeout_ms)
{
	struct nbpf_ctl_msg m;
	const char *em;

	snprintf(state, n, "unknown");
	if (at_call)
		*at_call = 0;
	if (nbpf_ctl_call_path_ms(path, NBPF_CTL_CHANGES, NULL, timeout_ms, &m, &em)) {
		nbpf_ctl_msg_free(&m);
		return;
	}
	snprintf(state, n, "none");
	for (uint32_t i = 0; i < m.n_recs; i++)
		if (!strcmp(m.recs[i].kind, "change") &&
		    !strcmp(nbpf_ctl_rec_get(&m.recs[i], "id") ?: "", id)) {
			snprintf(state, n, "%s", nbpf_ctl_rec_get(&m.recs[i], "state") ?: "?");
			if (at_call)
				nbpf_ctl_rec_u64(&m.recs[i], "at_call", at_call);
			break;
		}
	nbpf_ctl_msg_free(&m);
}
