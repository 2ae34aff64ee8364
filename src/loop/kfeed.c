// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * kfeed.c - closed loop 2 (see loop.h): per-peer TCP signals the kernel
 * counted (`ncclbpf observe`'s net probes) become an ordinary map of the
 * running policy, and the job's tuner switches to a "lossy" plan while a
 * peer is lossy.
 *
 * Two consumers, two rules.  A SEC("net") program reads the peer map when
 * a connection is made and marks that connection's sockets: a choice per
 * connection, which ranks may make differently (NCCL never compares socket
 * priorities), so the map is written as the kernel's numbers arrive.  A
 * tuner must never read it: the kernel's view is node-local, so two ranks
 * would choose differently on the same call and NCCL would hang.  The
 * tuner reads only the plan map, which this loop writes like loop 1 does,
 * from an agreed call (loop_ranks.c), and with several nodes only after
 * every node's view is merged (loop_share.c): every node computes the same
 * plan from the same files.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "error.h"
#include "loop.h"
#include "ncclbpf/runtime.h"
#include "xchg.h"

enum { M_PEER, M_PLAN };

struct nbpf_kfeed {
	struct nbpf_loop_opts lo;
	struct nbpf_kfeed_opts ko;
	struct nbpf_loop_map_spec spec[2];
	struct nbpf_loop_ranks rk;
	struct nbpf_kfeed_peer track[NBPF_KFEED_MAX_TRACK]; /* counters at the last step */
	int n_track;
	struct nbpf_kfeed_peer fed[NBPF_KFEED_MAX_PEERS];   /* in every rank's peer map */
	int n_fed;
	double t_last;
	int step;
	bool degraded;
	uint64_t at;                                         /* the last switch's call */
	int cur[2];                                          /* plan words' counts now */
};

uint64_t nbpf_kfeed_peer_key(uint16_t family, const uint8_t addr[16])
{
	uint32_t w[4];

	/* Must match net_peer_key() in src/nccl/net_hooks.c (the ctx field's contract). */
	memcpy(w, addr, sizeof(w));
	if (family == AF_INET)
		return w[0];
	if (family != AF_INET6)
		return 0;
	return ((uint64_t)(w[0] ^ w[2]) << 32 | (w[1] ^ w[3])) | (1ull << 63);
}

static void logf_(const struct nbpf_kfeed *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void logf_(const struct nbpf_kfeed *f, const char *fmt, ...)
{
	va_list ap;

	if (!f->lo.log)
		return;
	va_start(ap, fmt);
	vfprintf(f->lo.log, fmt, ap);
	va_end(ap);
	fflush(f->lo.log);
}

int nbpf_kfeed_open(const struct nbpf_loop_opts *lo, const struct nbpf_kfeed_opts *ko,
		    struct nbpf_kfeed **out)
{
	struct nbpf_kfeed *f;
	bool tuner = !ko->plan_map || *ko->plan_map;
	int err;

	*out = NULL;
	if (ko->lossy_channels < 0 || ko->lossy_channels > NBPF_LOOP_MAX_CH)
		return nbpf_err(-EINVAL, "lossy channel count %d outside 1..64 (0: keep)", ko->lossy_channels);
	if (ko->lossy_proto < -1 || ko->lossy_proto > 2)
		return nbpf_err(-EINVAL, "lossy protocol %d: 0 (LL), 1 (LL128), 2 (Simple) or -1", ko->lossy_proto);
	if (ko->retrans_per_s < 0 || ko->retrans_per_mib < 0 || ko->hold_s < 0 ||
	    (ko->retrans_per_s == 0 && ko->retrans_per_mib == 0 && !ko->srtt_us))
		return nbpf_err(-EINVAL, "a retransmit bound (per second or per MiB) or an RTT bound is needed");
	if ((lo->share_dir || lo->etcd) && !tuner)
		return nbpf_err(-EINVAL, "a shared directory agrees on the tuner plan: it needs the plan map");
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->lo = *lo;
	f->ko = *ko;
	f->spec[M_PEER] = (struct nbpf_loop_map_spec){
		ko->peer_map ? ko->peer_map : "kernel_peer", sizeof(uint64_t),
		sizeof(struct nbpf_kfeed_peer_val), true,
	};
	f->spec[M_PLAN] = (struct nbpf_loop_map_spec){
		ko->plan_map ? ko->plan_map : "kernel_plan", sizeof(uint32_t), sizeof(uint64_t), true,
	};
	err = nbpf_loop_ranks_find(&f->rk, &f->lo, f->spec, tuner ? 2 : 1);
	if (err) {
		free(f);
		return err;
	}
	/* The plan the ranks run now (a loop run before may have left the lossy one). */
	if (tuner) {
		static const uint32_t keys[2] = { NBPF_KFEED_PLAN_CHANNELS, NBPF_KFEED_PLAN_PROTO };

		err = nbpf_loop_ranks_plan(&f->rk, M_PLAN, keys, 2, f->cur);
		if (err) {
			nbpf_loop_ranks_close(&f->rk);
			free(f);
			return err;
		}
		f->degraded = f->cur[0] || f->cur[1];
	}
	f->t_last = nbpf_loop_now_s();
	*out = f;
	return 0;
}

int nbpf_kfeed_pids(const struct nbpf_kfeed *f, int *pids, int max)
{
	int n = 0;

	for (int i = 0; i < f->rk.n && n < max; i++)
		pids[n++] = f->rk.r[i].pid;
	return n;
}

void nbpf_kfeed_close(struct nbpf_kfeed *f)
{
	if (!f)
		return;
	nbpf_loop_ranks_close(&f->rk);
	free(f);
}

/* Worst first: lossy, then by rate, then by count; key order breaks ties. */
static int cmp_worst(const void *a, const void *b)
{
	const struct nbpf_kfeed_peer *x = a, *y = b;

	if (x->lossy != y->lossy)
		return x->lossy ? -1 : 1;
	if (x->rate != y->rate)
		return x->rate > y->rate ? -1 : 1;
	if (x->retrans != y->retrans)
		return x->retrans > y->retrans ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static const struct nbpf_kfeed_peer *find(const struct nbpf_kfeed_peer *p, int n, uint64_t key)
{
	for (int i = 0; i < n; i++)
		if (p[i].key == key)
			return &p[i];
	return NULL;
}

/* Sums the sockets per peer, then rates and verdicts against the last step. */
static int reduce(struct nbpf_kfeed *f, const struct nbpf_kfeed_sock *socks, int n, double now,
		  struct nbpf_kfeed_peer **out, int *n_out, int *untracked)
{
	struct nbpf_kfeed_peer *p = calloc((size_t)(n ? n : 1), sizeof(*p));
	double dt = now - f->t_last;
	int np = 0;

	if (!p)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		uint64_t key = nbpf_kfeed_peer_key(socks[i].family, socks[i].addr);
		struct nbpf_kfeed_peer *q = (struct nbpf_kfeed_peer *)find(p, np, key);

		if (!key)
			continue;
		if (!q) {
			q = &p[np++];
			q->key = key;
			q->family = socks[i].family;
			memcpy(q->addr, socks[i].addr, sizeof(q->addr));
		}
		q->retrans += socks[i].retrans;
		q->bytes_sent += socks[i].bytes_sent;
		if (socks[i].srtt_us > q->srtt_us)
			q->srtt_us = socks[i].srtt_us;
	}
	*untracked = 0;
	for (int i = 0; i < np; i++) {
		struct nbpf_kfeed_peer *q = &p[i];
		const struct nbpf_kfeed_peer *was = find(f->track, f->n_track, q->key);
		/* A peer first seen counts from the last step (the probes count from their start). */
		uint64_t before = was ? was->retrans : 0, sent = was ? was->bytes_sent : 0;
		uint64_t dr = q->retrans > before ? q->retrans - before : 0;
		bool bad;

		/* A socket that left the kernel's table takes its count along: no negative rate. */
		q->rate = dt > 0 ? (double)dr / dt : 0;
		/* Per MiB only over a MiB or more: a few bytes and one retransmit are no share. */
		q->per_mib = q->bytes_sent >= sent + (1u << 20) ?
			     (double)dr * (1u << 20) / (double)(q->bytes_sent - sent) : 0;
		bad = (f->ko.retrans_per_s > 0 && q->rate >= f->ko.retrans_per_s) ||
		      (f->ko.retrans_per_mib > 0 && q->per_mib >= f->ko.retrans_per_mib) ||
		      (f->ko.srtt_us && q->srtt_us >= f->ko.srtt_us);
		q->last_bad = bad ? now : was ? was->last_bad : 0;
		q->lossy = bad || (was && was->lossy && now - was->last_bad < f->ko.hold_s);
	}
	qsort(p, (size_t)np, sizeof(*p), cmp_worst);
	/* Remember the worst peers' counters; the rest start over if seen again. */
	f->n_track = np < NBPF_KFEED_MAX_TRACK ? np : NBPF_KFEED_MAX_TRACK;
	memcpy(f->track, p, sizeof(*p) * (size_t)f->n_track);
	*untracked = np - f->n_track;
	*out = p;
	*n_out = np;
	return 0;
}

/* Writes the fed peers into every rank's peer map; drops the ones fed before and gone now. */
static int feed_peers(struct nbpf_kfeed *f, const struct nbpf_kfeed_peer *p, int n)
{
	int err;

	for (int i = 0; i < f->rk.n; i++) {
		struct ncclbpf_map *m = f->rk.r[i].map[M_PEER];

		for (int j = 0; j < n; j++) {
			struct nbpf_kfeed_peer_val v = {
				.retrans = p[j].retrans,
				.retrans_per_s = p[j].rate > UINT32_MAX ? UINT32_MAX : (uint32_t)p[j].rate,
				.srtt_us = p[j].srtt_us,
				.lossy = p[j].lossy,
				.retrans_per_gib = p[j].per_mib * 1024 > UINT32_MAX ? UINT32_MAX
						   : (uint32_t)(p[j].per_mib * 1024),
			};

			if ((err = ncclbpf_map__update(m, &p[j].key, &v, NCCLBPF_ANY)))
				return nbpf_err(err, "pid %d: %s write: %s", f->rk.r[i].pid,
						f->spec[M_PEER].name, ncclbpf_errmsg());
		}
		for (int j = 0; j < f->n_fed; j++)
			if (!find(p, n, f->fed[j].key))
				ncclbpf_map__delete(m, &f->fed[j].key); /* absent already: fine */
	}
	memcpy(f->fed, p, sizeof(*p) * (size_t)n);
	f->n_fed = n;
	return 0;
}

/*
 * Whether any peer of the job is lossy, and whether every rank is past the
 * last switch: this node's view, merged with the other nodes' (the merge
 * keeps the worst node's value of each), so every node decides the same.
 */
static int job_view(struct nbpf_kfeed *f, bool mine, bool past, uint64_t *hi, bool *lossy,
		    bool *ready)
{
	struct nbpf_loop_share me = { .calls = *hi, .rate = f->rk.rate, .n_keys = 2 }, all;
	int err;

	*lossy = mine;
	*ready = past;
	if (!f->rk.x)
		return 0;
	me.key[0] = 0, me.mean_ns[0] = mine;
	me.key[1] = 1, me.mean_ns[1] = !past;
	err = nbpf_loop_share_step(f->rk.x, f->step, &me, &all);
	if (err)
		return nbpf_err(err, "%s: step %d: %s", nbpf_xchg_where(f->rk.x), f->step,
				err == -ETIMEDOUT ? "not every node reported in time" : strerror(-err));
	for (int k = 0; k < all.n_keys; k++) {
		if (all.key[k] == 0)
			*lossy = all.mean_ns[k] > 0;
		else if (all.key[k] == 1)
			*ready = !(all.mean_ns[k] > 0);
	}
	*hi = all.calls;
	f->rk.rate = all.rate;
	return 0;
}

int nbpf_kfeed_step(struct nbpf_kfeed *f, const struct nbpf_kfeed_sock *socks, int n, double now,
		    struct nbpf_kfeed_report *rep)
{
	struct nbpf_kfeed_peer *p = NULL;
	int np = 0, untracked, err;
	bool mine = false, job, ready;
	uint64_t hi, lo;

	memset(rep, 0, sizeof(*rep));
	if (n < 0 || (n && !socks))
		return nbpf_err(-EINVAL, "bad socket records");
	if ((err = reduce(f, socks, n, now, &p, &np, &untracked)))
		return err;
	f->t_last = now;
	rep->not_fed = np > NBPF_KFEED_MAX_PEERS ? np - NBPF_KFEED_MAX_PEERS : 0;
	if (rep->not_fed < untracked)
		rep->not_fed = untracked;
	if (np > NBPF_KFEED_MAX_PEERS)
		np = NBPF_KFEED_MAX_PEERS;
	err = feed_peers(f, p, np);
	free(p);
	if (err)
		return err;
	rep->n_peers = f->n_fed;
	rep->peers = f->fed;
	for (int i = 0; i < f->n_fed; i++)
		if (f->fed[i].lossy)
			rep->n_lossy++, mine = true;
	rep->degraded = f->degraded;
	if (f->rk.n_maps < 2)
		goto out; /* net side only */
	if ((err = nbpf_loop_ranks_calls(&f->rk, &hi, &lo)))
		return err;
	if ((err = job_view(f, mine, lo >= f->at, &hi, &job, &ready)))
		return err;
	if (job != f->degraded && !ready) {
		rep->deferred = true;
	} else if (job != f->degraded) {
		static const uint32_t keys[2] = { NBPF_KFEED_PLAN_CHANNELS, NBPF_KFEED_PLAN_PROTO };
		int want[2] = {
			job ? f->ko.lossy_channels : 0,
			job && f->ko.lossy_proto >= 0 ? f->ko.lossy_proto + 1 : 0,
		};

		err = nbpf_loop_ranks_activate(&f->rk, M_PLAN, keys, want, 2, &rep->at, &rep->late);
		if (err)
			return err;
		f->cur[0] = want[0];
		f->cur[1] = want[1];
		f->degraded = job;
		f->at = rep->at;
		rep->switched = true;
		rep->degraded = job;
		logf_(f, "kernel loop: %s plan from call %llu%s\n", job ? "lossy" : "normal",
		      (unsigned long long)rep->at, rep->late ? " (LATE: a rank was past it)" : "");
	}
out:
	f->step++;
	return 0;
}
