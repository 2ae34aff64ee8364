// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * loop.c - the aggregator of closed loop 1 (see loop.h): reads the
 * local ranks' telemetry maps and writes their plan maps directly (shared
 * memory: no job thread is involved), and steps through the candidates.
 * Finding the ranks and the agreed activation call: loop_ranks.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "loop.h"
#include "ncclbpf/runtime.h"
#include "xchg.h"

/* The policy's maps, in the order of struct nbpf_loop_rank's map[]. */
enum { M_TELE, M_PLAN };
static const struct nbpf_loop_map_spec ac_maps[] = {
	[M_TELE] = { "latency_ewma", sizeof(uint32_t), sizeof(struct nbpf_loop_tele), false },
	[M_PLAN] = { "channel_plan", sizeof(uint32_t), sizeof(uint64_t), true },
};

struct lstate {
	const struct nbpf_loop_opts *o;
	struct nbpf_loop_ranks rk;
	/* per rank and key: the samples and their sum when the candidate began */
	uint64_t (*base_n)[NBPF_LOOP_MAX_KEYS], (*base_sum)[NBPF_LOOP_MAX_KEYS];
	uint32_t key[NBPF_LOOP_MAX_KEYS];
	int n_keys;
};

static void logf_(const struct nbpf_loop_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void logf_(const struct nbpf_loop_opts *o, const char *fmt, ...)
{
	va_list ap;

	if (!o->log)
		return;
	va_start(ap, fmt);
	vfprintf(o->log, fmt, ap);
	va_end(ap);
	fflush(o->log);
}

static int read_tele(struct lstate *s, int i, uint32_t key, struct nbpf_loop_tele *t)
{
	return ncclbpf_map__lookup(s->rk.r[i].map[M_TELE], &key, t);
}

/* Keys with samples on any rank, in key order (the same order on every node). */
static int find_keys(struct lstate *s)
{
	double t_end = nbpf_loop_now_s() + s->o->timeout_ms / 1e3;

	for (;;) {
		s->n_keys = 0;
		for (uint32_t k = 0; k < NBPF_LOOP_N_KEYS && s->n_keys < NBPF_LOOP_MAX_KEYS; k++) {
			for (int i = 0; i < s->rk.n; i++) {
				struct nbpf_loop_tele t;

				if (!read_tele(s, i, k, &t) && t.samples) {
					s->key[s->n_keys++] = k;
					break;
				}
			}
		}
		if (s->n_keys || s->rk.x)
			return 0; /* with other nodes, their keys count too */
		if (nbpf_loop_now_s() > t_end)
			return nbpf_err(-ETIMEDOUT, "no telemetry yet: is the profiler plugin loaded?");
		usleep(20000);
	}
}

static void snapshot(struct lstate *s, int ch)
{
	for (int i = 0; i < s->rk.n; i++)
		for (int k = 0; k < s->n_keys; k++) {
			struct nbpf_loop_tele t;

			if (read_tele(s, i, s->key[k], &t))
				continue;
			s->base_n[i][k] = t.samples_by_ch[ch - 1];
			s->base_sum[i][k] = t.sum_by_ch_ns[ch - 1];
		}
}

/* Worst rank's mean for channel count ch since the snapshot, per key; fewest samples seen. */
static uint64_t measure(struct lstate *s, int ch, double *mean)
{
	uint64_t fewest = UINT64_MAX;

	for (int k = 0; k < s->n_keys; k++)
		mean[k] = 0;
	for (int i = 0; i < s->rk.n; i++)
		for (int k = 0; k < s->n_keys; k++) {
			struct nbpf_loop_tele t;
			uint64_t n;

			if (read_tele(s, i, s->key[k], &t))
				continue;
			n = t.samples_by_ch[ch - 1] - s->base_n[i][k];
			if (n < fewest)
				fewest = n;
			if (n && (double)(t.sum_by_ch_ns[ch - 1] - s->base_sum[i][k]) / n > mean[k])
				mean[k] = (double)(t.sum_by_ch_ns[ch - 1] - s->base_sum[i][k]) / n;
		}
	return s->rk.n && s->n_keys ? fewest : 0;
}

static int key_index(const uint32_t *keys, int n, uint32_t k)
{
	for (int i = 0; i < n; i++)
		if (keys[i] == k)
			return i;
	return -1;
}

int nbpf_loop_run(const struct nbpf_loop_opts *o, struct nbpf_loop_result *res)
{
	struct lstate s = { .o = o };
	int cur[NBPF_LOOP_MAX_KEYS] = { 0 }, err;
	double mean[NBPF_LOOP_MAX_KEYS];
	uint64_t hi, lo;

	memset(res, 0, sizeof(*res));
	if (o->n_cand < 1 || o->n_cand > NBPF_LOOP_MAX_CAND)
		return nbpf_err(-EINVAL, "1 to %d candidate channel counts", NBPF_LOOP_MAX_CAND);
	for (int c = 0; c < o->n_cand; c++)
		if (o->cand[c] < 1 || o->cand[c] > NBPF_LOOP_MAX_CH)
			return nbpf_err(-EINVAL, "channel count %d outside 1..64", o->cand[c]);
	err = nbpf_loop_ranks_find(&s.rk, o, ac_maps, 2);
	if (err)
		goto out;
	s.base_n = calloc((size_t)s.rk.n, sizeof(*s.base_n));
	s.base_sum = calloc((size_t)s.rk.n, sizeof(*s.base_sum));
	if (!s.base_n || !s.base_sum) {
		err = -ENOMEM;
		goto out;
	}
	res->n_procs = s.rk.n;
	err = find_keys(&s);
	if (err)
		goto out;
	/* Two reads some time apart give the first rate. */
	if ((err = nbpf_loop_ranks_calls(&s.rk, &hi, &lo)))
		goto out;
	usleep(100000);
	for (int step = 0; step <= o->n_cand; step++) {
		bool final = step == o->n_cand;
		uint64_t at;
		int want[NBPF_LOOP_MAX_KEYS];
		bool late;

		if ((err = nbpf_loop_ranks_calls(&s.rk, &hi, &lo)))
			goto out;
		for (int k = 0; k < s.n_keys; k++)
			mean[k] = 0;
		if (step > 0)
			measure(&s, o->cand[step - 1], mean);
		if (s.rk.x) {
			struct nbpf_loop_share mine = { .calls = hi, .rate = s.rk.rate, .n_keys = s.n_keys }, all;

			for (int k = 0; k < s.n_keys; k++)
				mine.key[k] = s.key[k], mine.mean_ns[k] = mean[k];
			err = nbpf_loop_share_step(s.rk.x, step, &mine, &all);
			if (err) {
				err = nbpf_err(err, "%s: step %d: %s", nbpf_xchg_where(s.rk.x), step,
					       err == -ETIMEDOUT ? "not every node reported in time"
								 : strerror(-err));
				goto out;
			}
			if (step == 0) { /* the job's keys: the union of every node's */
				s.n_keys = all.n_keys;
				memcpy(s.key, all.key, sizeof(s.key));
			}
			hi = all.calls;
			s.rk.rate = all.rate;
			for (int k = 0; k < s.n_keys; k++) {
				int j = key_index(all.key, all.n_keys, s.key[k]);

				mean[k] = j < 0 ? 0 : all.mean_ns[j];
			}
		}
		if (step == 0) {
			res->n_keys = s.n_keys;
			for (int k = 0; k < s.n_keys; k++)
				res->keys[k].key = s.key[k];
			if (!s.n_keys) {
				err = nbpf_err(-ENODATA, "no telemetry on any node");
				goto out;
			}
			/* What the ranks run now, read back from them: the plan kept when nothing measures better. */
			if ((err = nbpf_loop_ranks_plan(&s.rk, M_PLAN, s.key, s.n_keys, cur)))
				goto out;
		} else {
			for (int k = 0; k < s.n_keys; k++)
				res->keys[k].mean_ns[step - 1] = mean[k];
			logf_(o, "step %d: %d channels: worst-rank mean %.0f ns (key %u), calls %llu, %.0f calls/s\n",
			      step, o->cand[step - 1], mean[0], s.key[0], (unsigned long long)hi, s.rk.rate);
		}
		for (int k = 0; k < s.n_keys; k++) {
			if (!final) {
				want[k] = o->cand[step];
				continue;
			}
			want[k] = cur[k];
			mean[k] = 0;
			for (int c = 0; c < o->n_cand; c++) {
				double m = res->keys[k].mean_ns[c];

				if (m > 0 && (mean[k] == 0 || m < mean[k])) {
					mean[k] = m;
					want[k] = o->cand[c];
				}
			}
			res->keys[k].best = want[k];
		}
		err = nbpf_loop_ranks_activate(&s.rk, M_PLAN, s.key, want, s.n_keys, &at, &late);
		if (err)
			goto out;
		for (int k = 0; k < s.n_keys; k++)
			cur[k] = want[k];
		res->step_call[res->n_steps++] = at;
		if (late) {
			res->late++;
			logf_(o, "step %d: a rank was past the activation call %llu: margin too small\n",
			      step, (unsigned long long)at);
		}
		if (final) {
			res->final_call = at;
			logf_(o, "plan: %d channels from call %llu\n", want[0], (unsigned long long)at);
			break;
		}
		/* Every rank past the activation call, then a window of samples. */
		{
			double t_end = nbpf_loop_now_s() + o->timeout_ms / 1e3;

			while (lo < at && nbpf_loop_now_s() < t_end) {
				usleep(5000);
				if ((err = nbpf_loop_ranks_calls(&s.rk, &hi, &lo)))
					goto out;
			}
			snapshot(&s, o->cand[step]);
			t_end = nbpf_loop_now_s() + o->timeout_ms / 1e3;
			while (measure(&s, o->cand[step], mean) < o->window && nbpf_loop_now_s() < t_end)
				usleep(5000);
		}
	}
out:
	nbpf_loop_ranks_close(&s.rk);
	free(s.base_n);
	free(s.base_sum);
	return err;
}
