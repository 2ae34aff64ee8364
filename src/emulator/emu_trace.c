/* SPDX-License-Identifier: Apache-2.0 */
/*
 * emu_trace.c - reading traces of NCCL's plugin calls and joining each
 * tuner decision with the collective NCCL ran (see emu_trace.h).
 */
#include "emu_trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "emu.h"

int emu_trace_load(const char *path, struct emu_trace *t, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	size_t cap = 0, len = 0, got;
	double c0_ns = 0, c0_tsc = 0, c1_ns = 0, c1_tsc = 0;
	char *p, *end;

	memset(t, 0, sizeof(*t));
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	for (;;) {
		if (len + 65536 + 1 > cap) {
			char *nb = realloc(t->buf, cap = cap ? 2 * cap : 1 << 20);

			if (!nb) {
				fclose(f);
				emu_trace_free(t);
				snprintf(err, errlen, "out of memory");
				return -ENOMEM;
			}
			t->buf = nb;
		}
		got = fread(t->buf + len, 1, cap - len - 1, f);
		len += got;
		if (!got)
			break;
	}
	fclose(f);
	if (!t->buf)
		t->buf = calloc(1, 1);
	t->buf[len] = 0;
	t->path = strdup(path);
	for (p = t->buf, end = t->buf + len; p < end; p++)
		t->n += *p == '\n';
	t->ev = calloc(t->n + 1, sizeof(*t->ev));
	if (!t->ev || !t->path) {
		emu_trace_free(t);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	t->n = 0;
	for (p = t->buf; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p)), *sp;
		struct emu_trace_ev *e;

		if (!nl)
			nl = end;
		*nl = 0;
		if (p[0] == '#') {
			double ns, tsc;

			if (sscanf(p, "# clock %lf %lf", &ns, &tsc) == 2) {
				if (!c0_ns) {
					c0_ns = ns;
					c0_tsc = tsc;
				}
				c1_ns = ns;
				c1_tsc = tsc;
			} else if (!strncmp(p, "# policy ", 9)) {
				snprintf(t->policy, sizeof(t->policy), "%s", p + 9);
			} else if (!strncmp(p, "# pid ", 6) && strstr(p, " target ")) {
				sscanf(strstr(p, " target ") + 8, "%511s", t->target);
			}
		} else if (*p) {
			e = &t->ev[t->n++];
			e->line = p;
			sp = strchr(p, ' ');
			snprintf(e->kind, sizeof(e->kind), "%.*s", sp ? (int)(sp - p) : (int)strlen(p), p);
			e->tid = (int)emu_trace_int(e, "t", 0);
		}
		p = nl + 1;
	}
	if (c1_ns > c0_ns + 1e6 && c1_tsc > c0_tsc)
		t->tsc_per_ns = (c1_tsc - c0_tsc) / (c1_ns - c0_ns);
	return 0;
}

void emu_trace_free(struct emu_trace *t)
{
	free(t->ev);
	free(t->buf);
	free(t->path);
	memset(t, 0, sizeof(*t));
}

const char *emu_trace_get(const struct emu_trace_ev *e, const char *key, size_t *len)
{
	size_t kl = strlen(key);

	for (const char *p = strchr(e->line, ' '); p; p = strchr(p + 1, ' ')) {
		if (!strncmp(p + 1, key, kl) && p[1 + kl] == '=') {
			const char *v = p + 2 + kl, *sp = strchr(v, ' ');

			if (len)
				*len = sp ? (size_t)(sp - v) : strlen(v);
			return v;
		}
	}
	return NULL;
}

long long emu_trace_int(const struct emu_trace_ev *e, const char *key, long long def)
{
	const char *v = emu_trace_get(e, key, NULL);

	return v ? strtoll(v, NULL, 0) : def;
}

uint64_t emu_trace_u64(const struct emu_trace_ev *e, const char *key, uint64_t def)
{
	const char *v = emu_trace_get(e, key, NULL);

	return v ? strtoull(v, NULL, 0) : def;
}

const char *emu_trace_str(const struct emu_trace_ev *e, const char *key, char *buf, size_t n,
			  const char *def)
{
	size_t len;
	const char *v = emu_trace_get(e, key, &len);

	if (!v)
		return def;
	snprintf(buf, n, "%.*s", (int)len, v);
	return buf;
}

int emu_trace_floats(const struct emu_trace_ev *e, const char *key, float *out, int max)
{
	size_t len;
	const char *v = emu_trace_get(e, key, &len), *end;
	int n = 0;

	if (!v)
		return 0;
	end = v + len;
	while (v < end && n < max) {
		char *next;

		out[n++] = strtof(v, &next);
		if (next == v)
			break;
		v = next;
		if (*v == ',')
			v++;
	}
	return n;
}

int emu_trace_algo(const char *s)
{
	for (int a = 0; a < 7; a++)
		if (!strcasecmp(s, emu_algo_name(a)))
			return a;
	return -1;
}

int emu_trace_proto(const char *s)
{
	for (int p = 0; p < 3; p++)
		if (!strcasecmp(s, emu_proto_name(p)))
			return p;
	return -1;
}

int emu_trace_dtype_size(const char *s)
{
	static const struct { const char *n; int sz; } t[] = {
		{ "ncclInt8", 1 }, { "ncclUint8", 1 }, { "ncclInt32", 4 }, { "ncclUint32", 4 },
		{ "ncclInt64", 8 }, { "ncclUint64", 8 }, { "ncclFloat16", 2 }, { "ncclFloat32", 4 },
		{ "ncclFloat64", 8 }, { "ncclBfloat16", 2 }, { "ncclFloat8e4m3", 1 },
		{ "ncclFloat8e5m2", 1 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(s, t[i].n))
			return t[i].sz;
	return 0;
}

/* ---- the join ------------------------------------------------------------- */

struct ctxmap {
	long long ctx;
	size_t comm;      /* index into the comm array */
	size_t pending;   /* tuner: the call whose tret is next, SIZE_MAX none */
};

/*
 * The nth view of communicator id: a process driving several ranks of one
 * communicator (ncclCommInitAll, the emulator) inits its tuner and its
 * profiler once per rank, in the same order, so the nth tuner context of a
 * communicator and its nth profiler context are one rank.
 */
static struct emu_trace_comm *comm_for(struct emu_trace_comm **c, size_t *n, uint64_t id,
				       unsigned nth)
{
	struct emu_trace_comm *nc;

	for (size_t i = 0; i < *n; i++)
		if ((*c)[i].comm == id && nth-- == 0)
			return &(*c)[i];
	nc = realloc(*c, (*n + 1) * sizeof(**c));
	if (!nc)
		return NULL;
	*c = nc;
	nc = &(*c)[(*n)++];
	memset(nc, 0, sizeof(*nc));
	nc->comm = id;
	nc->rank = -1;
	return nc;
}

static struct emu_trace_coll *coll_at(struct emu_trace_comm *c, size_t k, size_t *cap)
{
	if (k >= *cap) {
		size_t ncap = *cap ? 2 * *cap : 256;
		struct emu_trace_coll *nc;

		while (ncap <= k)
			ncap *= 2;
		nc = realloc(c->colls, ncap * sizeof(*nc));
		if (!nc)
			return NULL;
		memset(nc + *cap, 0, (ncap - *cap) * sizeof(*nc));
		c->colls = nc;
		*cap = ncap;
	}
	if (k >= c->n_colls)
		c->n_colls = k + 1;
	return &c->colls[k];
}

/* NCCL 2.28's pick over a 7 x 3 table (tuner_core.h has the rule). */
static void pick(const float *v, int n, int *algo, int *proto)
{
	float min = 3.6e9f;

	*algo = *proto = -1;
	for (int i = 0; i < n; i++)
		if (v[i] != -1.0f && v[i] >= 0.0f && v[i] < min) {
			min = v[i];
			*algo = i / 3;
			*proto = i % 3;
		}
}

#define MAX_CTX 256
#define MAX_OPEN 4096u /* live events at once; a power of two */

/* An event handle's slot in a table of MAX_OPEN (linear probing; a new
 * handle takes the first free or stale slot, handles are never 0). */
struct open_ev {
	uint64_t h;
	size_t comm, k;
	bool stopped;
};

static struct open_ev *open_find(struct open_ev *tab, uint64_t h, bool insert)
{
	uint32_t i = (uint32_t)((h ^ h >> 29) * 0x9e3779b1u) & (MAX_OPEN - 1);

	for (uint32_t n = 0; h && n < 16; n++, i = (i + 1) & (MAX_OPEN - 1)) {
		if (tab[i].h == h)
			return &tab[i];
		if (insert && !tab[i].h) {
			tab[i].h = h;
			return &tab[i];
		}
	}
	if (!insert || !h)
		return NULL;
	/* Crowded: the slot's earlier occupant has long ended. */
	i = (uint32_t)((h ^ h >> 29) * 0x9e3779b1u) & (MAX_OPEN - 1);
	tab[i].h = h;
	return &tab[i];
}

int emu_trace_comms(const struct emu_trace *t, struct emu_trace_comm **out, size_t *n_out)
{
	struct ctxmap tctx[MAX_CTX], pctx[MAX_CTX];
	size_t nt = 0, np = 0, *tcap = NULL, *pnext = NULL;
	struct emu_trace_comm *c = NULL;
	size_t n = 0;
	/* Live Coll and KernelCh handles -> (comm index, coll index). */
	struct open_ev *open = calloc(MAX_OPEN, sizeof(*open)), *kopen = calloc(MAX_OPEN, sizeof(*kopen));
	struct emu_trace_coll *cur;
	char buf[64];
	int ret = -ENOMEM;

	*out = NULL;
	*n_out = 0;
	tcap = calloc(1024, sizeof(*tcap));
	pnext = calloc(1024, sizeof(*pnext));
	if (!open || !kopen || !tcap || !pnext)
		goto fail;
	for (size_t i = 0; i < t->n; i++) {
		const struct emu_trace_ev *e = &t->ev[i];
		struct emu_trace_comm *cm;
		long long ctx = emu_trace_int(e, "ctx", -1);

		if (!strcmp(e->kind, "tinit") || !strcmp(e->kind, "pinit")) {
			bool tuner = e->kind[0] == 't';
			uint64_t id = emu_trace_u64(e, "comm", 0);
			unsigned nth = 0;

			if ((tuner ? nt : np) == MAX_CTX || n == 1024)
				continue;
			/* Earlier inits of the same kind for this communicator. */
			for (size_t k = 0; k < (tuner ? nt : np); k++)
				nth += c[(tuner ? tctx : pctx)[k].comm].comm == id;
			cm = comm_for(&c, &n, id, nth);
			if (!cm)
				goto fail;
			if (tuner) {
				cm->n_ranks = (int)emu_trace_int(e, "ranks", 0);
				cm->n_nodes = (int)emu_trace_int(e, "nodes", 0);
				tctx[nt++] = (struct ctxmap){ ctx, (size_t)(cm - c), SIZE_MAX };
			} else {
				cm->rank = (int)emu_trace_int(e, "rank", -1);
				cm->n_ranks = (int)emu_trace_int(e, "ranks", 0);
				pctx[np++] = (struct ctxmap){ ctx, (size_t)(cm - c), SIZE_MAX };
			}
		} else if (!strcmp(e->kind, "tcall") || !strcmp(e->kind, "tret")) {
			/* Ranks of one process call concurrently: a tret answers its own context's tcall. */
			struct ctxmap *tm = NULL;

			for (size_t k = 0; k < nt; k++)
				if (tctx[k].ctx == ctx)
					tm = &tctx[k];
			if (!tm)
				continue;
			cm = &c[tm->comm];
			if (e->kind[1] == 'c') {
				tm->pending = cm->n_tuner_calls++;
				cur = coll_at(cm, tm->pending, &tcap[tm->comm]);
				if (!cur)
					goto fail;
				cur->coll = (int)emu_trace_int(e, "coll", -1);
				cur->bytes = emu_trace_u64(e, "bytes", 0);
				cur->nch_in = (int)emu_trace_int(e, "nch", -1);
				cur->n_cells = emu_trace_floats(e, "cost", cur->cost, 21);
				pick(cur->cost, cur->n_cells, &cur->nccl_algo, &cur->nccl_proto);
				cur->dec_algo = cur->nccl_algo;
				cur->dec_proto = cur->nccl_proto;
			} else if (tm->pending != SIZE_MAX) {
				float v[21];
				const char *ed;
				size_t len;

				cur = &cm->colls[tm->pending];
				tm->pending = SIZE_MAX;
				memcpy(v, cur->cost, sizeof(v));
				cur->nch_out = (int)emu_trace_int(e, "nch", -1);
				ed = emu_trace_get(e, "edit", &len);
				if (ed && len && *ed != '-') {
					const char *p = ed, *end = ed + len;

					while (p < end) {
						char *q;
						long cell = strtol(p, &q, 10);

						if (*q != ':')
							break;
						if (cell >= 0 && cell < 21)
							v[cell] = strtof(q + 1, &q);
						p = *q == ',' ? q + 1 : end;
					}
					cur->edited = true;
				}
				pick(v, cur->n_cells, &cur->dec_algo, &cur->dec_proto);
				if (t->tsc_per_ns > 0)
					cur->tuner_ns = (double)emu_trace_u64(e, "cyc", 0) / t->tsc_per_ns;
			}
		} else if (!strcmp(e->kind, "pstart")) {
			uint64_t type = emu_trace_u64(e, "type", 0), h = emu_trace_u64(e, "h", 0);
			size_t ci = SIZE_MAX;

			for (size_t k = 0; k < np; k++)
				if (pctx[k].ctx == ctx)
					ci = pctx[k].comm;
			if (ci != SIZE_MAX && type && !(type & (type - 1)) && __builtin_ctzll(type) < 16)
				c[ci].starts[__builtin_ctzll(type)]++;
			if (type == 0x2 && ci != SIZE_MAX) {
				struct emu_trace_coll *x;

				cm = &c[ci];
				x = coll_at(cm, pnext[ci], &tcap[ci]);
				if (!x)
					goto fail;
				pnext[ci]++;
				cm->n_prof_colls++;
				x->have_coll = true;
				x->seq = emu_trace_u64(e, "seq", 0);
				x->count = emu_trace_u64(e, "count", 0);
				x->dsize = emu_trace_dtype_size(emu_trace_str(e, "dtype", buf, sizeof(buf), "-"));
				x->ran_algo = emu_trace_algo(emu_trace_str(e, "algo", buf, sizeof(buf), "-"));
				x->ran_proto = emu_trace_proto(emu_trace_str(e, "proto", buf, sizeof(buf), "-"));
				x->ran_nch = (int)emu_trace_int(e, "nch", -1);
				struct open_ev *o = open_find(open, h, true);

				if (o) {
					o->comm = ci;
					o->k = pnext[ci] - 1;
					o->stopped = false;
				}
			} else if (type == 0x40) {
				struct open_ev *o = open_find(open, emu_trace_u64(e, "parent", 0), false), *ko;

				if (o) {
					struct emu_trace_coll *x = &c[o->comm].colls[o->k];

					x->kch++;
					x->kch_after_stop += o->stopped;
					ko = open_find(kopen, h, true);
					if (ko) {
						ko->comm = o->comm;
						ko->k = o->k;
					}
				}
			}
		} else if (!strcmp(e->kind, "pstop")) {
			struct open_ev *o = open_find(open, emu_trace_u64(e, "h", 0), false);

			if (o)
				o->stopped = true;
		} else if (!strcmp(e->kind, "pstate") && emu_trace_int(e, "state", 0) == 22) {
			struct open_ev *o = open_find(kopen, emu_trace_u64(e, "h", 0), false);

			if (o)
				c[o->comm].colls[o->k].kch_stop_states++;
		}
	}
	*out = c;
	*n_out = n;
	ret = 0;
	c = NULL;
fail:
	emu_trace_comms_free(c, n);
	free(open);
	free(kopen);
	free(tcap);
	free(pnext);
	return ret;
}

void emu_trace_comms_free(struct emu_trace_comm *c, size_t n)
{
	for (size_t i = 0; c && i < n; i++)
		free(c[i].colls);
	free(c);
}
