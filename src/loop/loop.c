// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * loop.c - the aggregator of closed loop 1 (see loop.h): finds the local
 * ranks through their control sockets, reads their telemetry maps and
 * writes their plan maps directly (shared memory: no job thread is
 * involved), and steps through the candidates.
 *
 * Why every write carries a call number: ranks run the same sequence of
 * collectives but not in lock step, so a plan that took effect "now"
 * would land on rank 0 at call 1000 and on rank 1 at call 1003, and the
 * three calls between would run with different channel counts: a hang in
 * NCCL.  The activation call is the highest call any rank has made plus a
 * margin; the tuner compares it with its own per-communicator counter.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "control/ctl_client.h"
#include "control/ctl_proto.h"
#include "error.h"
#include "loop.h"
#include "ncclbpf/runtime.h"

struct lrank {
	int pid;
	struct ncclbpf_map *tele, *plan;
	uint64_t base_n[NBPF_LOOP_MAX_KEYS], base_sum[NBPF_LOOP_MAX_KEYS];
};

struct lstate {
	const struct nbpf_loop_opts *o;
	struct lrank *r;
	int n;
	uint32_t key[NBPF_LOOP_MAX_KEYS];
	int n_keys;
	uint64_t last_calls;
	double last_t, rate;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

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

/* Opens pid's two maps; -ENOENT when it does not run the policy. */
static int open_rank(int pid, struct lrank *r)
{
	struct nbpf_ctl_msg m;
	const char *em, *tp = NULL, *pp = NULL;
	int err = nbpf_ctl_call_pid(pid, NBPF_CTL_MAPS, NULL, &m, &em);

	memset(r, 0, sizeof(*r));
	r->pid = pid;
	if (err)
		goto out;
	for (uint32_t i = 0; i < m.n_recs; i++) {
		const char *name = nbpf_ctl_rec_get(&m.recs[i], "name");

		if (strcmp(m.recs[i].kind, "map") || !name)
			continue;
		if (!strcmp(name, "latency_ewma"))
			tp = nbpf_ctl_rec_get(&m.recs[i], "path");
		else if (!strcmp(name, "channel_plan"))
			pp = nbpf_ctl_rec_get(&m.recs[i], "path");
	}
	err = -ENOENT;
	if (!tp || !pp || !*tp || !*pp)
		goto out;
	err = ncclbpf_map__open_path(tp, false, &r->tele);
	if (!err)
		err = ncclbpf_map__open_path(pp, true, &r->plan);
	if (!err && (ncclbpf_map__value_size(r->tele) != sizeof(struct nbpf_loop_tele) ||
		     ncclbpf_map__value_size(r->plan) != sizeof(uint64_t)))
		err = -EPROTO; /* another version of the policy */
out:
	nbpf_ctl_msg_free(&m);
	if (err) {
		if (r->tele)
			ncclbpf_map__put(r->tele);
		if (r->plan)
			ncclbpf_map__put(r->plan);
		r->tele = r->plan = NULL;
	}
	return err;
}

static void close_ranks(struct lstate *s)
{
	for (int i = 0; i < s->n; i++) {
		ncclbpf_map__put(s->r[i].tele);
		ncclbpf_map__put(s->r[i].plan);
	}
	free(s->r);
	s->r = NULL;
	s->n = 0;
}

static int discover(struct lstate *s)
{
	const struct nbpf_loop_opts *o = s->o;
	double t_end = now_s() + o->timeout_ms / 1e3;

	for (;;) {
		int *pids = NULL, n;

		close_ranks(s);
		if (o->pids) {
			n = o->n_pids;
			pids = malloc(sizeof(int) * (size_t)(n ? n : 1));
			if (!pids)
				return -ENOMEM;
			memcpy(pids, o->pids, sizeof(int) * (size_t)n);
		} else {
			n = nbpf_ctl_list_pids(&pids);
			if (n < 0)
				return n;
		}
		s->r = calloc((size_t)(n ? n : 1), sizeof(*s->r));
		if (!s->r) {
			free(pids);
			return -ENOMEM;
		}
		for (int i = 0; i < n; i++)
			if (!open_rank(pids[i], &s->r[s->n]))
				s->n++;
		free(pids);
		if (s->n >= (o->ranks > 0 ? o->ranks : 1))
			return 0;
		if (now_s() > t_end)
			return nbpf_err(-ETIMEDOUT, "found %d processes running adaptive_channels, wanted %d",
					s->n, o->ranks > 0 ? o->ranks : 1);
		usleep(20000);
	}
}

/* Highest and lowest tuner call count over the ranks; updates the rate. */
static int read_calls(struct lstate *s, uint64_t *max, uint64_t *min)
{
	double t;

	*max = 0;
	*min = UINT64_MAX;
	for (int i = 0; i < s->n; i++) {
		struct nbpf_ctl_msg m;
		const char *em;
		uint64_t hi = 0;
		int err = nbpf_ctl_call_pid(s->r[i].pid, NBPF_CTL_CALLS, NULL, &m, &em);

		if (err) {
			nbpf_ctl_msg_free(&m);
			return nbpf_err(err, "pid %d: %s", s->r[i].pid, em);
		}
		for (uint32_t j = 0; j < m.n_recs; j++) {
			const char *k = nbpf_ctl_rec_get(&m.recs[j], "kind");
			uint64_t v = 0;

			if (!strcmp(m.recs[j].kind, "comm") && k && !strcmp(k, "tuner") &&
			    !nbpf_ctl_rec_u64(&m.recs[j], "calls", &v) && v > hi)
				hi = v;
		}
		nbpf_ctl_msg_free(&m);
		if (hi > *max)
			*max = hi;
		if (hi < *min)
			*min = hi;
	}
	t = now_s();
	if (s->last_t > 0 && t > s->last_t && *max >= s->last_calls) {
		double r = (double)(*max - s->last_calls) / (t - s->last_t);

		s->rate = s->rate > r ? s->rate * 0.5 + r * 0.5 : r; /* rises at once, decays slowly */
	}
	s->last_t = t;
	s->last_calls = *max;
	return 0;
}

static int read_tele(struct lrank *r, uint32_t key, struct nbpf_loop_tele *t)
{
	return ncclbpf_map__lookup(r->tele, &key, t);
}

/* Keys with samples on any rank, in key order (the same order on every node). */
static int find_keys(struct lstate *s)
{
	double t_end = now_s() + s->o->timeout_ms / 1e3;

	for (;;) {
		s->n_keys = 0;
		for (uint32_t k = 0; k < NBPF_LOOP_N_KEYS && s->n_keys < NBPF_LOOP_MAX_KEYS; k++) {
			for (int i = 0; i < s->n; i++) {
				struct nbpf_loop_tele t;

				if (!read_tele(&s->r[i], k, &t) && t.samples) {
					s->key[s->n_keys++] = k;
					break;
				}
			}
		}
		if (s->n_keys || s->o->share_dir)
			return 0; /* with other nodes, their keys count too */
		if (now_s() > t_end)
			return nbpf_err(-ETIMEDOUT, "no telemetry yet: is the profiler plugin loaded?");
		usleep(20000);
	}
}

static void snapshot(struct lstate *s, int ch)
{
	for (int i = 0; i < s->n; i++)
		for (int k = 0; k < s->n_keys; k++) {
			struct nbpf_loop_tele t;

			if (read_tele(&s->r[i], s->key[k], &t))
				continue;
			s->r[i].base_n[k] = t.samples_by_ch[ch - 1];
			s->r[i].base_sum[k] = t.sum_by_ch_ns[ch - 1];
		}
}

/* Worst rank's mean for channel count ch since the snapshot, per key; fewest samples seen. */
static uint64_t measure(struct lstate *s, int ch, double *mean)
{
	uint64_t fewest = UINT64_MAX;

	for (int k = 0; k < s->n_keys; k++)
		mean[k] = 0;
	for (int i = 0; i < s->n; i++)
		for (int k = 0; k < s->n_keys; k++) {
			struct nbpf_loop_tele t;
			uint64_t n;

			if (read_tele(&s->r[i], s->key[k], &t))
				continue;
			n = t.samples_by_ch[ch - 1] - s->r[i].base_n[k];
			if (n < fewest)
				fewest = n;
			if (n && (double)(t.sum_by_ch_ns[ch - 1] - s->r[i].base_sum[k]) / n > mean[k])
				mean[k] = (double)(t.sum_by_ch_ns[ch - 1] - s->r[i].base_sum[k]) / n;
		}
	return s->n && s->n_keys ? fewest : 0;
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
	err = discover(&s);
	if (err)
		goto out;
	res->n_procs = s.n;
	err = find_keys(&s);
	if (err)
		goto out;
	/* Two reads some time apart give the first rate. */
	if ((err = read_calls(&s, &hi, &lo)))
		goto out;
	usleep(100000);
	for (int step = 0; step <= o->n_cand; step++) {
		bool final = step == o->n_cand;
		uint64_t at, margin;
		int want[NBPF_LOOP_MAX_KEYS];

		if ((err = read_calls(&s, &hi, &lo)))
			goto out;
		for (int k = 0; k < s.n_keys; k++)
			mean[k] = 0;
		if (step > 0)
			measure(&s, o->cand[step - 1], mean);
		if (o->share_dir) {
			struct nbpf_loop_share mine = { .calls = hi, .rate = s.rate, .n_keys = s.n_keys }, all;

			for (int k = 0; k < s.n_keys; k++)
				mine.key[k] = s.key[k], mine.mean_ns[k] = mean[k];
			err = nbpf_loop_share_step(o->share_dir, o->node, o->nodes, step, &mine, &all,
						   o->timeout_ms);
			if (err) {
				err = nbpf_err(err, "%s: step %d: %s", o->share_dir, step,
					       err == -ETIMEDOUT ? "not every node reported in time"
								 : strerror(-err));
				goto out;
			}
			if (step == 0) { /* the job's keys: the union of every node's */
				s.n_keys = all.n_keys;
				memcpy(s.key, all.key, sizeof(s.key));
			}
			hi = all.calls;
			s.rate = all.rate;
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
		} else {
			for (int k = 0; k < s.n_keys; k++)
				res->keys[k].mean_ns[step - 1] = mean[k];
			logf_(o, "step %d: %d channels: worst-rank mean %.0f ns (key %u), calls %llu, %.0f calls/s\n",
			      step, o->cand[step - 1], mean[0], s.key[0], (unsigned long long)hi, s.rate);
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
		margin = o->margin ? o->margin : (uint64_t)(s.rate * o->margin_s) + 1000;
		at = hi + margin;
		for (int i = 0; i < s.n; i++)
			for (int k = 0; k < s.n_keys; k++) {
				uint64_t w = nbpf_loop_plan_word((unsigned)want[k], (unsigned)cur[k], at);

				if ((err = ncclbpf_map__update(s.r[i].plan, &s.key[k], &w, NCCLBPF_ANY))) {
					err = nbpf_err(err, "pid %d: plan write: %s", s.r[i].pid, ncclbpf_errmsg());
					goto out;
				}
			}
		for (int k = 0; k < s.n_keys; k++)
			cur[k] = want[k];
		res->step_call[res->n_steps++] = at;
		if ((err = read_calls(&s, &hi, &lo)))
			goto out;
		if (hi >= at) {
			res->late++;
			logf_(o, "step %d: a rank was at call %llu, past the activation call %llu: margin too small\n",
			      step, (unsigned long long)hi, (unsigned long long)at);
		}
		if (final) {
			res->final_call = at;
			logf_(o, "plan: %d channels from call %llu\n", want[0], (unsigned long long)at);
			break;
		}
		/* Every rank past the activation call, then a window of samples. */
		{
			double t_end = now_s() + o->timeout_ms / 1e3;

			while (lo < at && now_s() < t_end) {
				usleep(5000);
				if ((err = read_calls(&s, &hi, &lo)))
					goto out;
			}
			snapshot(&s, o->cand[step]);
			t_end = now_s() + o->timeout_ms / 1e3;
			while (measure(&s, o->cand[step], mean) < o->window && now_s() < t_end)
				usleep(5000);
		}
	}
out:
	close_ranks(&s);
	return err;
}
