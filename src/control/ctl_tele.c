/*
 * ctl_tele.c - telemetry collection over control sockets (see ctl_tele.h).
 */
#include "ctl_tele.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_client.h"

struct comm_ref {
	uint64_t id, comm_id;
	uint32_t n_ranks;
};

static uint64_t get_u64(const struct nbpf_ctl_rec *r, const char *k)
{
	uint64_t v = 0;

	return nbpf_ctl_rec_u64(r, k, &v) ? 0 : v;
}

static void add_list(uint64_t *dst, size_t n, const char *s)
{
	uint64_t v[64];
	int k = nbpf_ctl_parse_u64s(s, v, n < 64 ? n : 64);

	for (int i = 0; i < k; i++)
		dst[i] += v[i];
}

/* One "npeer" record (net plugin traffic with one peer) into the set. */
static void merge_peer(struct nbpf_tele_set *s, const struct nbpf_ctl_rec *r)
{
	const char *label = nbpf_ctl_rec_get(r, "peer");
	struct nbpf_tele_peer *p = nbpf_tele_peer(s, label && *label ? label : "?");
	uint64_t e = 0;

	if (!p)
		return;
	add_list(p->msgs, 2, nbpf_ctl_rec_get(r, "msgs"));
	add_list(p->bytes, 2, nbpf_ctl_rec_get(r, "bytes"));
	add_list(p->sum_ns, 2, nbpf_ctl_rec_get(r, "sum_ns"));
	add_list(p->hist[0], NBPF_LAT_BUCKETS, nbpf_ctl_rec_get(r, "hist_send"));
	add_list(p->hist[1], NBPF_LAT_BUCKETS, nbpf_ctl_rec_get(r, "hist_recv"));
	if (!nbpf_ctl_rec_u64(r, "errors", &e))
		p->errors += e;
}

/*
 * A "proc" record's load counters; an older plugin without them adds no
 * series.  Returns the process's entry, where its net refusals go too.
 */
static struct nbpf_tele_loads *merge_loads(struct nbpf_tele_set *s, const struct nbpf_ctl_rec *r)
{
	struct nbpf_tele_loads *l;
	uint64_t v = 0;

	if (nbpf_ctl_rec_u64(r, "loads", &v) || !(l = nbpf_tele_loads(s, get_u64(r, "pid"))))
		return NULL;
	l->attempts += v;
	l->refused_verifier += get_u64(r, "loads_refused_verifier");
	l->refused_loader += get_u64(r, "loads_refused_loader");
	l->rollbacks += get_u64(r, "rollbacks");
	return l;
}

/* A response's records refer to communicators by registry id; map them to NCCL's ids first. */
void cli_tele_merge(struct nbpf_tele_set *s, const struct nbpf_ctl_msg *m)
{
	struct comm_ref *refs = calloc(m->n_recs ? m->n_recs : 1, sizeof(*refs));
	struct nbpf_tele_loads *proc = NULL; /* the "proc" record comes first */
	size_t n_refs = 0;

	if (!refs)
		return;
	s->processes++;
	for (uint32_t i = 0; i < m->n_recs; i++) {
		const struct nbpf_ctl_rec *r = &m->recs[i];
		const char *kind = nbpf_ctl_rec_get(r, "kind");

		if (!strcmp(r->kind, "proc"))
			proc = merge_loads(s, r);
		if (strcmp(r->kind, "comm"))
			continue;
		refs[n_refs].id = get_u64(r, "id");
		refs[n_refs].comm_id = get_u64(r, "comm_id");
		refs[n_refs].n_ranks = (uint32_t)get_u64(r, "ranks");
		n_refs++;
		if (kind && !strcmp(kind, "tuner")) {
			struct nbpf_tele_tuner *t = nbpf_tele_tuner(s, get_u64(r, "comm_id"));

			if (!t)
				continue;
			t->n_ranks = (uint32_t)get_u64(r, "ranks");
			t->calls += get_u64(r, "calls");
			t->applied += get_u64(r, "applied");
			t->skipped += get_u64(r, "skipped");
			add_list(t->coll_calls, NBPF_TELE_COLLS, nbpf_ctl_rec_get(r, "coll_calls"));
			add_list(t->refused, NBPF_TELE_REFUSE, nbpf_ctl_rec_get(r, "refused"));
		} else if (kind && !strcmp(kind, "profiler") && nbpf_ctl_rec_get(r, "events")) {
			struct nbpf_tele_events *e = nbpf_tele_events(s, get_u64(r, "comm_id"));

			if (e)
				add_list(e->n, NBPF_TELE_EVENTS, nbpf_ctl_rec_get(r, "events"));
		} else if (kind && !strcmp(kind, "net") && proc) {
			proc->net = true;
			add_list(proc->net_refused, NBPF_TELE_REFUSE, nbpf_ctl_rec_get(r, "refused"));
		}
	}
	for (uint32_t i = 0; i < m->n_recs; i++) {
		const struct nbpf_ctl_rec *r = &m->recs[i];
		const struct comm_ref *ref = NULL;
		struct nbpf_tele_cell *c;
		uint64_t id = get_u64(r, "comm");

		if (!strcmp(r->kind, "npeer"))
			merge_peer(s, r);
		if (strcmp(r->kind, "tele"))
			continue;
		for (size_t k = 0; k < n_refs && !ref; k++)
			if (refs[k].id == id)
				ref = &refs[k];
		c = nbpf_tele_cell(s, ref ? ref->comm_id : 0, (int)get_u64(r, "coll"),
				   (int)get_u64(r, "size"));
		if (!c)
			continue;
		if (ref && ref->n_ranks)
			c->n_ranks = ref->n_ranks;
		c->contributors++;
		c->count += get_u64(r, "count");
		c->bytes += get_u64(r, "bytes");
		c->sum_ns += get_u64(r, "sum_ns");
		c->gpu_timed += get_u64(r, "gpu_timed");
		add_list(c->hist, NBPF_LAT_BUCKETS, nbpf_ctl_rec_get(r, "hist"));
		add_list(&c->mix[0][0], NBPF_TELE_ALGOS * NBPF_TELE_PROTOS, nbpf_ctl_rec_get(r, "mix"));
	}
	for (uint32_t i = 0; i < m->n_recs; i++) {
		const struct nbpf_ctl_rec *r = &m->recs[i];
		struct nbpf_tele_map *tm;

		if (strcmp(r->kind, "map") || !(tm = nbpf_tele_map(s, nbpf_ctl_rec_get(r, "name") ?: "?")))
			continue;
		tm->lock_timeouts += get_u64(r, "lock_timeouts");
		tm->lock_recoveries += get_u64(r, "lock_recoveries");
		tm->lock_discarded += get_u64(r, "lock_discarded");
	}
	/* Program statistics: "prog" names a slot, "progstat" counts it. */
	for (uint32_t i = 0; i < m->n_recs; i++) {
		const struct nbpf_ctl_rec *r = &m->recs[i];

		if (strcmp(r->kind, "progstat"))
			continue;
		for (uint32_t k = 0; k < m->n_recs; k++) {
			const struct nbpf_ctl_rec *p = &m->recs[k];
			struct nbpf_tele_prog *tp;

			if (strcmp(p->kind, "prog") || get_u64(p, "slot") != get_u64(r, "slot") ||
			    get_u64(p, "gen") != get_u64(r, "gen"))
				continue;
			tp = nbpf_tele_prog(s, nbpf_ctl_rec_get(p, "name") ?: "?",
					    nbpf_ctl_rec_get(p, "hook") ?: "?",
					    nbpf_ctl_rec_get(p, "tag") ?: "?");
			if (tp) {
				tp->runs += get_u64(r, "runs");
				tp->ns += get_u64(r, "ns");
			}
			break;
		}
	}
	free(refs);
}

int cli_tele_collect(const int *pids, int n_pids, struct nbpf_tele_set *s, FILE *err)
{
	int *all = NULL, answered = 0;

	if (!n_pids) {
		n_pids = nbpf_ctl_list_pids(&all);
		if (n_pids < 0)
			return n_pids;
		pids = all;
	}
	for (int i = 0; i < n_pids; i++) {
		struct nbpf_ctl_msg m;
		const char *em;
		int e = nbpf_ctl_call_pid(pids[i], NBPF_CTL_TELEMETRY, NULL, &m, &em);

		if (e) {
			if (err)
				fprintf(err, "ncclbpf: pid %d: %s\n", pids[i], em);
		} else {
			cli_tele_merge(s, &m);
			answered++;
		}
		nbpf_ctl_msg_free(&m);
	}
	free(all);
	return answered;
}

static uint64_t sub(uint64_t a, uint64_t b)
{
	return a >= b ? a - b : a;
}

int cli_tele_delta(struct nbpf_tele_set *out, const struct nbpf_tele_set *now,
		   const struct nbpf_tele_set *before)
{
	memset(out, 0, sizeof(*out));
	out->processes = now->processes;
	for (size_t i = 0; i < now->n_cells; i++) {
		const struct nbpf_tele_cell *n = &now->cells[i], *b = NULL;
		struct nbpf_tele_cell *o = nbpf_tele_cell(out, n->comm_id, n->coll, n->size_cls);

		if (!o)
			return -ENOMEM;
		for (size_t k = 0; before && k < before->n_cells && !b; k++)
			if (before->cells[k].comm_id == n->comm_id && before->cells[k].coll == n->coll &&
			    before->cells[k].size_cls == n->size_cls)
				b = &before->cells[k];
		*o = *n;
		if (!b)
			continue;
		if (n->count < b->count) /* restarted: counts start again from zero */
			continue;
		o->count = sub(n->count, b->count);
		o->bytes = sub(n->bytes, b->bytes);
		o->sum_ns = sub(n->sum_ns, b->sum_ns);
		o->gpu_timed = sub(n->gpu_timed, b->gpu_timed);
		for (int h = 0; h < NBPF_LAT_BUCKETS; h++)
			o->hist[h] = sub(n->hist[h], b->hist[h]);
		for (int a = 0; a < NBPF_TELE_ALGOS; a++)
			for (int p = 0; p < NBPF_TELE_PROTOS; p++)
				o->mix[a][p] = sub(n->mix[a][p], b->mix[a][p]);
	}
	for (size_t i = 0; i < now->n_tuners; i++) {
		const struct nbpf_tele_tuner *n = &now->tuners[i], *b = NULL;
		struct nbpf_tele_tuner *o = nbpf_tele_tuner(out, n->comm_id);

		if (!o)
			return -ENOMEM;
		for (size_t k = 0; before && k < before->n_tuners && !b; k++)
			if (before->tuners[k].comm_id == n->comm_id)
				b = &before->tuners[k];
		*o = *n;
		if (!b || n->calls < b->calls)
			continue;
		o->calls = n->calls - b->calls;
		o->applied = sub(n->applied, b->applied);
		o->skipped = sub(n->skipped, b->skipped);
		for (int k = 0; k < NBPF_TELE_COLLS; k++)
			o->coll_calls[k] = sub(n->coll_calls[k], b->coll_calls[k]);
		for (int k = 0; k < NBPF_TELE_REFUSE; k++)
			o->refused[k] = sub(n->refused[k], b->refused[k]);
	}
	for (size_t i = 0; i < now->n_peers; i++) {
		const struct nbpf_tele_peer *n = &now->peers[i], *b = NULL;
		struct nbpf_tele_peer *o = nbpf_tele_peer(out, n->peer);

		if (!o)
			return -ENOMEM;
		for (size_t k = 0; before && k < before->n_peers && !b; k++)
			if (!strcmp(before->peers[k].peer, n->peer))
				b = &before->peers[k];
		*o = *n;
		if (!b)
			continue;
		for (int d = 0; d < 2; d++) {
			o->msgs[d] = sub(n->msgs[d], b->msgs[d]);
			o->bytes[d] = sub(n->bytes[d], b->bytes[d]);
			o->sum_ns[d] = sub(n->sum_ns[d], b->sum_ns[d]);
			for (int h = 0; h < NBPF_LAT_BUCKETS; h++)
				o->hist[d][h] = sub(n->hist[d][h], b->hist[d][h]);
		}
		o->errors = sub(n->errors, b->errors);
	}
	for (size_t i = 0; i < now->n_loads; i++) {
		const struct nbpf_tele_loads *n = &now->loads[i], *b = NULL;
		struct nbpf_tele_loads *o = nbpf_tele_loads(out, n->pid);

		if (!o)
			return -ENOMEM;
		for (size_t k = 0; before && k < before->n_loads && !b; k++)
			if (before->loads[k].pid == n->pid)
				b = &before->loads[k];
		*o = *n;
		if (!b || n->attempts < b->attempts) /* a new process under a reused pid */
			continue;
		o->attempts = n->attempts - b->attempts;
		o->refused_verifier = sub(n->refused_verifier, b->refused_verifier);
		o->refused_loader = sub(n->refused_loader, b->refused_loader);
		o->rollbacks = sub(n->rollbacks, b->rollbacks);
		for (int k = 0; k < NBPF_TELE_REFUSE; k++)
			o->net_refused[k] = sub(n->net_refused[k], b->net_refused[k]);
	}
	return 0;
}
