// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tune.c - the sweep: for each collective and size, NCCL's default and
 * every offered (algorithm, protocol, channels, chunk size) cell, repeated,
 * with the forced cell written into the sweep policy's map between runs.
 *
 * Repetitions are interleaved (one run of every cell, then the next
 * round), so a drift of the machine during the sweep falls on every cell
 * alike instead of on whichever cell ran last.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "control/ctl_client.h"
#include "ncclbpf/runtime.h"
#include "tune.h"
#include "tune_backend.h"

/* ---- the sweep policy's maps, through the control sockets ------------------ */

/* The sweep policy's maps in each process of the back-end (one per rank process). */
struct tune_maps {
	/* chunk: NULL in sweep objects before it */
	struct ncclbpf_map *cell[TUNE_MAX_PROCS], *seen[TUNE_MAX_PROCS], *chunk[TUNE_MAX_PROCS];
	int n;
};

static void maps_close(struct tune_maps *m)
{
	for (int i = 0; i < m->n; i++) {
		if (m->cell[i])
			ncclbpf_map__put(m->cell[i]);
		if (m->seen[i])
			ncclbpf_map__put(m->seen[i]);
		if (m->chunk[i])
			ncclbpf_map__put(m->chunk[i]);
	}
	memset(m, 0, sizeof(*m));
}

/*
 * sweep_cell, sweep_seen and (where the object has it) sweep_chunk_seen of
 * one process into *cell, *seen, *chunk (the caller puts them).
 */
static int maps_open_one(int pid, struct ncclbpf_map **cell, struct ncclbpf_map **seen,
			 struct ncclbpf_map **chunk, char *err, size_t errlen)
{
	struct nbpf_ctl_msg msg;
	const char *em = NULL;
	int ret = nbpf_ctl_call_pid(pid, NBPF_CTL_MAPS, NULL, &msg, &em);

	if (ret) {
		snprintf(err, errlen, "pid %d: control socket: %s", pid, em ? em : "no answer");
		goto out;
	}
	for (uint32_t i = 0; i < msg.n_recs && !ret; i++) {
		const struct nbpf_ctl_rec *r = &msg.recs[i];
		const char *name = nbpf_ctl_rec_get(r, "name"), *path = nbpf_ctl_rec_get(r, "path");
		struct ncclbpf_map **slot;

		if (strcmp(r->kind, "map") || !name || !path)
			continue;
		slot = !strcmp(name, "sweep_cell") ? cell : !strcmp(name, "sweep_seen") ? seen :
		       !strcmp(name, "sweep_chunk_seen") ? chunk : NULL;
		if (!slot || *slot)
			continue;
		ret = ncclbpf_map__open_path(path, true, slot);
		if (ret)
			snprintf(err, errlen, "%s: %s", path, ncclbpf_errmsg());
	}
	if (!ret && (!*cell || !*seen)) {
		snprintf(err, errlen, "pid %d has no sweep_cell/sweep_seen maps: is the sweep policy loaded?", pid);
		ret = -ENOENT;
	}
	if (!ret && (ncclbpf_map__value_size(*cell) != sizeof(struct tune_sweep_cell) ||
		     ncclbpf_map__value_size(*seen) != sizeof(struct tune_sweep_seen) ||
		     ncclbpf_map__max_entries(*seen) < TUNE_NUM_COLLS * TUNE_NUM_BUCKETS ||
		     (*chunk && (ncclbpf_map__value_size(*chunk) != sizeof(struct tune_sweep_chunk_seen) ||
				 ncclbpf_map__max_entries(*chunk) < TUNE_NUM_COLLS * TUNE_NUM_BUCKETS)))) {
		snprintf(err, errlen, "the sweep policy's maps have another shape than this tool expects");
		ret = -EPROTO;
	}
out:
	nbpf_ctl_msg_free(&msg);
	return ret;
}

static int maps_open(const struct tune_be *be, struct tune_maps *m, char *err, size_t errlen)
{
	int ret = 0;

	memset(m, 0, sizeof(*m));
	for (int i = 0; i < be->n_pids && !ret; i++, m->n++)
		ret = maps_open_one(be->pids[i], &m->cell[i], &m->seen[i], &m->chunk[i], err, errlen);
	if (ret)
		maps_close(m);
	return ret;
}

/* The same cell in every process, before any of them runs a collective with it. */
static int force_cell(struct tune_maps *m, int algo, int proto, int nch, uint32_t chunk)
{
	struct tune_sweep_cell c = { .enabled = algo >= 0, .algo = algo, .proto = proto,
				     .n_channels = nch, .chunk = chunk };
	uint32_t zero = 0;
	int ret = 0;

	for (int i = 0; i < m->n && !ret; i++)
		ret = ncclbpf_map__update(m->cell[i], &zero, &c, NCCLBPF_ANY);
	return ret;
}

static int read_seen_one(struct tune_maps *m, int i, int coll, uint64_t n_bytes,
			 struct tune_sweep_seen *s)
{
	uint32_t key = (uint32_t)coll * TUNE_NUM_BUCKETS + (uint32_t)tune_size_bucket(n_bytes);

	return ncclbpf_map__lookup(m->seen[i], &key, s);
}

/* What the first process saw (every rank sees the same calls). */
static int read_seen(struct tune_maps *m, int coll, uint64_t n_bytes, struct tune_sweep_seen *s)
{
	return read_seen_one(m, 0, coll, n_bytes, s);
}

int tune_size_bucket(uint64_t n)
{
	int b = 0;

	while (n >>= 1)
		b++;
	return b < TUNE_NUM_BUCKETS ? b : TUNE_NUM_BUCKETS - 1;
}

/* ---- one point ------------------------------------------------------------- */

static void meas_finish(struct tune_meas *m, const double *x, int n, int coll, uint64_t bytes,
			int n_ranks)
{
	double half;

	m->n = n;
	tune_mean_ci(x, n, &m->mean_us, &half);
	m->lo_us = m->mean_us - half;
	m->hi_us = m->mean_us + half;
	m->busbw = m->mean_us > 0 ? (double)bytes / (m->mean_us * 1e3) * tune_bus_factor(coll, n_ranks) : 0;
}

/* Process i's getChunkSize calls and applied chunks so far over every part bucket of coll. */
struct chunk_sum {
	uint64_t calls[TUNE_NUM_BUCKETS], applied;
};

static void read_chunks(struct tune_maps *m, int i, int coll, struct chunk_sum *s)
{
	memset(s, 0, sizeof(*s));
	for (uint32_t b = 0; m->chunk[i] && b < TUNE_NUM_BUCKETS; b++) {
		struct tune_sweep_chunk_seen v;
		uint32_t key = (uint32_t)coll * TUNE_NUM_BUCKETS + b;

		if (!ncclbpf_map__lookup(m->chunk[i], &key, &v)) {
			s->calls[b] = v.calls;
			s->applied += v.applied;
		}
	}
}

/*
 * One run of cell c forced (c->algo -1: nothing forced).  *ok is false
 * when the plugin did not apply the forced cell (NCCL does not offer it
 * for this call) or, with a chunk size forced, did not apply it to every
 * getChunkSize of the run (a chunk below the protocol's grain), in any
 * process: such a run measured something else.  A NCCL that asks for no
 * chunk at all (a tuner before v6) is an error: nothing can be swept.  The
 * part buckets NCCL asked chunks for are added to c->parts.
 */
static int run_cell(struct tune_be *be, struct tune_maps *m, int coll, uint64_t bytes,
		    struct tune_meas *c, double *us, bool *ok, char *err, size_t errlen)
{
	struct tune_sweep_seen before[TUNE_MAX_PROCS] = { 0 }, after;
	struct chunk_sum cb[TUNE_MAX_PROCS], ca;
	uint64_t calls = 0;
	int ret = force_cell(m, c->algo, c->proto, c->n_channels, c->chunk);

	if (ret) {
		snprintf(err, errlen, "writing sweep_cell: %s", strerror(-ret));
		return ret;
	}
	for (int i = 0; i < m->n; i++) {
		read_seen_one(m, i, coll, bytes, &before[i]);
		read_chunks(m, i, coll, &cb[i]);
	}
	ret = be->run(be, coll, bytes, us, err, errlen);
	if (ret)
		return ret;
	/* Applied in every process, on every call of the run. */
	*ok = true;
	for (int i = 0; i < m->n; i++) {
		uint64_t n = 0;

		memset(&after, 0, sizeof(after));
		read_seen_one(m, i, coll, bytes, &after);
		read_chunks(m, i, coll, &ca);
		for (int b = 0; b < TUNE_NUM_BUCKETS; b++) {
			n += ca.calls[b] - cb[i].calls[b];
			if (ca.calls[b] > cb[i].calls[b])
				c->parts |= 1u << b;
		}
		*ok = *ok && (c->algo < 0 ? after.calls > before[i].calls
					  : after.applied > before[i].applied &&
					    after.applied - before[i].applied ==
					    after.calls - before[i].calls);
		if (c->chunk)
			*ok = *ok && ca.applied - cb[i].applied == n;
		calls += n;
	}
	if (c->chunk && !calls) {
		snprintf(err, errlen, "%s %llu B: NCCL asked for no chunk size (getChunkSize comes with "
			 "tuner v6, NCCL 2.30): --chunks cannot be swept here", emu_coll_name(coll),
			 (unsigned long long)bytes);
		return -EOPNOTSUPP;
	}
	return 0;
}

static int measure_point(const struct tune_opts *o, struct tune_be *be, struct tune_maps *m,
			 int coll, uint64_t bytes, struct tune_point *pt, char *err, size_t errlen)
{
	struct tune_sweep_seen seen = { 0 };
	double *x = NULL, us;
	int ncells = 0, ret, n_ranks = be->n_ranks;
	int *cnt = NULL;
	bool ok;

	memset(pt, 0, sizeof(*pt));
	pt->coll = coll;
	pt->n_bytes = bytes;
	pt->best = pt->choice = -1;
	/* A first, unrecorded default run: warms up, and tells which cells NCCL offers. */
	pt->def.algo = pt->def.proto = -1;
	ret = run_cell(be, m, coll, bytes, &pt->def, &us, &ok, err, errlen);
	if (ret)
		return ret;
	if (read_seen(m, coll, bytes, &seen) || !seen.calls) {
		snprintf(err, errlen, "%s %llu B: the sweep policy saw no call", emu_coll_name(coll),
			 (unsigned long long)bytes);
		return -EPROTO;
	}
	pt->nccl_algo = seen.nccl_algo;
	pt->nccl_proto = seen.nccl_proto;
	pt->avail_mask = seen.avail_mask;
	pt->cells = calloc(7 * 3 * TUNE_MAX_CHANS * TUNE_MAX_CHUNKS, sizeof(*pt->cells));
	x = calloc((size_t)(7 * 3 * TUNE_MAX_CHANS * TUNE_MAX_CHUNKS + 1) * (size_t)o->reps, sizeof(*x));
	cnt = calloc(7 * 3 * TUNE_MAX_CHANS * TUNE_MAX_CHUNKS + 1, sizeof(*cnt));
	if (!pt->cells || !x || !cnt) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (int a = 0; a < 7; a++)
		for (int p = 0; p < 3; p++) {
			if (!(seen.avail_mask & (1u << (a * 3 + p))))
				continue;
			for (int c = 0; c < o->n_channels; c++)
				for (int k = 0; k < (o->n_chunks ? o->n_chunks : 1); k++)
					pt->cells[ncells++] = (struct tune_meas){
						.algo = a, .proto = p, .n_channels = o->channels[c],
						.chunk = o->n_chunks ? o->chunks[k] : 0 };
		}
	pt->n_cells = ncells;
	for (int r = 0; r < o->reps; r++) {
		/* Slot 0 is the default, 1.. the cells. */
		for (int i = 0; i <= ncells; i++) {
			struct tune_meas *c = i ? &pt->cells[i - 1] : &pt->def;

			ret = run_cell(be, m, coll, bytes, c, &us, &ok, err, errlen);
			if (ret)
				goto out;
			if (ok)
				x[(size_t)i * o->reps + cnt[i]++] = us;
		}
	}
	/*
	 * NCCL's own cell forced with its own count runs exactly what the
	 * default runs: pool both into the reference, so one unlucky series
	 * of default runs cannot make a near-tie look like a win.
	 */
	for (int i = 0; i < ncells; i++) {
		const struct tune_meas *c = &pt->cells[i];

		if (c->algo == pt->nccl_algo && c->proto == pt->nccl_proto && !c->n_channels && !c->chunk) {
			double *ref = malloc(sizeof(*ref) * (size_t)(cnt[0] + cnt[i + 1]));

			if (!ref) {
				ret = -ENOMEM;
				snprintf(err, errlen, "out of memory");
				goto out;
			}
			memcpy(ref, x, sizeof(*ref) * (size_t)cnt[0]);
			memcpy(ref + cnt[0], x + (size_t)(i + 1) * o->reps, sizeof(*ref) * (size_t)cnt[i + 1]);
			meas_finish(&pt->def, ref, cnt[0] + cnt[i + 1], coll, bytes, n_ranks);
			pt->def.parts |= c->parts;
			free(ref);
			break;
		}
	}
	if (!pt->def.n)
		meas_finish(&pt->def, x, cnt[0], coll, bytes, n_ranks);
	for (int i = 0; i < ncells; i++)
		meas_finish(&pt->cells[i], x + (size_t)(i + 1) * o->reps, cnt[i + 1], coll, bytes, n_ranks);
	for (int i = 0; i < ncells; i++)
		if (pt->cells[i].n >= 2 && (pt->best < 0 || pt->cells[i].mean_us < pt->cells[pt->best].mean_us))
			pt->best = i;
	if (pt->best >= 0 && pt->cells[pt->best].mean_us > 0)
		pt->gain = pt->def.mean_us / pt->cells[pt->best].mean_us - 1.0;
	pt->choice = tune_choose(&pt->def, pt->cells, ncells, o->min_gain);
	/* NCCL's own cell with its own count and chunk is no change. */
	if (pt->choice >= 0 && pt->cells[pt->choice].algo == pt->nccl_algo &&
	    pt->cells[pt->choice].proto == pt->nccl_proto && !pt->cells[pt->choice].n_channels &&
	    !pt->cells[pt->choice].chunk)
		pt->choice = -1;
out:
	free(x);
	free(cnt);
	return ret;
}

int tune_run(const struct tune_opts *o, struct tune_result *res, char *err, size_t errlen)
{
	struct tune_be *be = NULL;
	struct tune_maps m = { 0 };
	int ret, cap = 0;

	memset(res, 0, sizeof(*res));
	ret = o->backend == TUNE_BACKEND_EMU ? tune_be_emu_open(o, &be, err, errlen)
					     : tune_be_nccl_open(o, &be, err, errlen);
	if (ret)
		return ret;
	ret = maps_open(be, &m, err, errlen);
	if (ret)
		goto out;
	for (int k = 0; k < o->n_chunks; k++)
		for (int i = 0; o->chunks[k] && i < m.n; i++)
			if (!m.chunk[i]) {
				snprintf(err, errlen, "the sweep policy has no sweep_chunk_seen map: it cannot force chunk sizes");
				ret = -EPROTO;
				goto out;
			}
	res->n_ranks = be->n_ranks;
	res->n_nodes = be->n_nodes;
	snprintf(res->backend_desc, sizeof(res->backend_desc), "%s", be->desc);
	for (int coll = 0; coll < TUNE_NUM_COLLS; coll++) {
		if (!o->colls[coll])
			continue;
		for (uint64_t b = o->min_bytes; b && b <= o->max_bytes; b <<= 1) {
			struct tune_point *pt;

			if (res->n_pts == cap) {
				struct tune_point *np = realloc(res->pts, (size_t)(cap ? 2 * cap : 64) * sizeof(*np));

				if (!np) {
					ret = -ENOMEM;
					snprintf(err, errlen, "out of memory");
					goto out;
				}
				res->pts = np;
				cap = cap ? 2 * cap : 64;
			}
			pt = &res->pts[res->n_pts];
			ret = measure_point(o, be, &m, coll, b, pt, err, errlen);
			if (ret == -ERANGE) { /* too small for this many ranks: skipped */
				free(pt->cells);
				ret = 0;
				continue;
			}
			res->n_pts++;
			if (ret)
				goto out;
			if (o->log)
				fprintf(o->log, "tune: %s %llu B: %d cells x %d, NCCL %s/%s, %s\n",
					emu_coll_name(coll), (unsigned long long)b, pt->n_cells, o->reps,
					emu_algo_name(pt->nccl_algo), emu_proto_name(pt->nccl_proto),
					pt->choice < 0 ? "kept" : "changed");
			if (b > UINT64_MAX / 2)
				break;
		}
	}
out:
	maps_close(&m);
	be->close(be);
	return ret;
}

void tune_result_free(struct tune_result *res)
{
	for (int i = 0; i < res->n_pts; i++)
		free(res->pts[i].cells);
	free(res->pts);
	memset(res, 0, sizeof(*res));
}

/* ---- names -------------------------------------------------------------------- */

int tune_algo_from_name(const char *s)
{
	for (int a = 0; a < 7; a++)
		if (!strcasecmp(s, emu_algo_name(a)))
			return a;
	return -1;
}

int tune_proto_from_name(const char *s)
{
	for (int p = 0; p < 3; p++)
		if (!strcasecmp(s, emu_proto_name(p)))
			return p;
	return -1;
}

int tune_parse_skew(const char *s, struct tune_skew *sk)
{
	char buf[128], *f[4], *op, *slash, *at, *end, *save = NULL;
	int n = 0;

	if (!s || strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	for (char *t = strtok_r(buf, ":", &save); t; t = strtok_r(NULL, ":", &save)) {
		if (n == 4)
			return -EINVAL;
		f[n++] = t;
	}
	if (n != 4)
		return -EINVAL;
	op = strpbrk(f[3], "*~");
	slash = strchr(f[3], '/');
	if (!op || !slash || slash > op)
		return -EINVAL;
	sk->rel_nccl = *op == '~';
	*op = 0;
	*slash = 0;
	sk->chunk = 0;
	at = strchr(slash + 1, '@');
	if (at) {
		uint64_t v;

		*at = 0;
		if (emu_parse_size(at + 1, &v) || !v || v > UINT32_MAX)
			return -EINVAL;
		sk->chunk = (uint32_t)v;
	}
	sk->coll = emu_coll_from_name(f[0]);
	sk->algo = tune_algo_from_name(f[3]);
	sk->proto = tune_proto_from_name(slash + 1);
	errno = 0;
	sk->factor = strtod(op + 1, &end);
	if (sk->coll < 0 || sk->algo < 0 || sk->proto < 0 || errno || *end || end == op + 1 ||
	    !(sk->factor > 0) || emu_parse_size(f[1], &sk->lo) || emu_parse_size(f[2], &sk->hi) ||
	    sk->lo > sk->hi)
		return -EINVAL;
	return 0;
}
