/* SPDX-License-Identifier: Apache-2.0 */
/*
 * emu_job.c - an emulated training job (see emu_job.h).
 */
#include "emu_job.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define JOB_MAX_RANKS 64
#define JOB_DEMO_COMM 0x6a6f62c0ffee0001ull

static const int job_colls[] = { 4, 2, 3 }; /* AllReduce, AllGather, ReduceScatter */

struct job {
	const struct emu_job_opts *o;
	struct emu_plugin tuner, prof;
	pthread_barrier_t meet;
	pthread_mutex_t gate_lock;
	pthread_cond_t gate;
	int gate_state;            /* 0 wait, 1 go, -1 abort: every rank thread exists before any meets */
	atomic_bool done;
	uint64_t deadline_ns;
	struct emu_decision dec[JOB_MAX_RANKS];
	struct emu_job_stats st;
	atomic_ullong prof_errors, tuner_errors;
};

struct rank {
	struct job *j;
	int rank;
	struct emu_tuner t;
	void *pctx;
	int mask;
	uint64_t pclock; /* the rank's GPU timer, ns */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool job_should_stop(struct job *j)
{
	return (j->o->stop && *j->o->stop) || (j->deadline_ns && now_ns() >= j->deadline_ns);
}

/*
 * What the user's call raises before NCCL tunes it (whatever the activation
 * mask: NCCL 2.28 raises the API events for every collective): GroupApi
 * and CollApi.  Handles the plugin returns are stopped by api_end.
 */
static void api_begin(struct rank *r, const nbpf_profiler_v5_t *p5, int coll, uint64_t bytes,
		      void *h[2])
{
	nbpf_prof_descr_v5_t g = { .type = NBPF_PROF_GROUP_API, .rank = r->rank };
	nbpf_prof_descr_v5_t c = { .type = NBPF_PROF_COLL_API, .rank = r->rank };

	g.groupApi.groupDepth = 2;
	c.collApi.func = emu_coll_name(coll);
	c.collApi.count = bytes / 4 / (coll == 2 || coll == 3 ? (uint64_t)r->j->o->topo.n_ranks : 1);
	c.collApi.datatype = "ncclFloat32"; /* the user's type: the job's are float */
	h[0] = h[1] = NULL;
	p5->startEvent(r->pctx, &h[0], &g);
	p5->startEvent(r->pctx, &h[1], &c);
}

static void api_end(const nbpf_profiler_v5_t *p5, void *h[2])
{
	for (int i = 1; i >= 0; i--)
		if (h[i])
			p5->stopEvent(h[i]);
}

/*
 * The collective as NCCL's profiler sees it once tuned (recorded from NCCL
 * 2.28, tests/traces): a Group with the Coll in it, both stopped once
 * enqueued, then, as the kernel runs, a KernelCh span of lat_ns per channel
 * the Coll announced.
 */
static void report(struct rank *r, const nbpf_profiler_v5_t *p5, int coll, uint64_t bytes,
		   const struct emu_decision *d, uint64_t seq, uint64_t lat_ns)
{
	nbpf_prof_descr_v5_t gd = { .type = NBPF_PROF_GROUP, .rank = r->rank };
	nbpf_prof_descr_v5_t cd = { .type = NBPF_PROF_COLL, .rank = r->rank };
	nbpf_prof_descr_v5_t kd = { .type = NBPF_PROF_KERNEL_CH, .rank = r->rank };
	nbpf_prof_state_args_v4_t ka = { 0 };
	void *hg = NULL, *hc = NULL, *hk = NULL;

	cd.coll.seqNumber = seq;
	cd.coll.func = emu_coll_name(coll);
	/*
	 * One rank's part for AllGather and ReduceScatter (the profiler
	 * multiplies back); Broadcast and AllGather only move bytes, and NCCL
	 * reports them as int8.
	 */
	cd.coll.count = bytes / (coll == 0 || coll == 2 ? 1 : 4) /
			(coll == 2 || coll == 3 ? (uint64_t)r->j->o->topo.n_ranks : 1);
	if (!cd.coll.count)
		cd.coll.count = 1;
	cd.coll.datatype = coll == 0 || coll == 2 ? "ncclInt8" : "ncclFloat32";
	cd.coll.nChannels = (uint8_t)(d->n_channels ? d->n_channels : d->nccl_channels);
	cd.coll.algo = emu_algo_name(d->algo);
	cd.coll.proto = emu_proto_name(d->proto);
	if (p5->startEvent(r->pctx, &hg, &gd) || p5->startEvent(r->pctx, &hc, &cd))
		atomic_fetch_add(&r->j->prof_errors, 1);
	if (hc)
		p5->stopEvent(hc);
	if (hg)
		p5->stopEvent(hg);
	for (int c = 0; hc && (r->mask & NBPF_PROF_KERNEL_CH) && c < cd.coll.nChannels; c++) {
		kd.parentObj = hc;
		kd.kernelCh.channelId = (uint8_t)c;
		kd.kernelCh.pTimer = r->pclock;
		hk = NULL;
		if (!p5->startEvent(r->pctx, &hk, &kd) && hk) {
			ka.kernelCh.pTimer = r->pclock + lat_ns;
			p5->recordEventState(hk, NBPF_PROF_STATE_KERNEL_CH_STOP, &ka);
			p5->stopEvent(hk);
		}
	}
	r->pclock += lat_ns + 1000;
}

static void *rank_main(void *arg)
{
	struct rank *r = arg;
	struct job *j = r->j;
	const struct emu_job_opts *o = j->o;
	const nbpf_profiler_v5_t *p5 = j->prof.table;
	uint64_t period = o->rate ? 1000000000ull / o->rate : 0, next;
	int go;

	pthread_mutex_lock(&j->gate_lock);
	while (!j->gate_state)
		pthread_cond_wait(&j->gate, &j->gate_lock);
	go = j->gate_state;
	pthread_mutex_unlock(&j->gate_lock);
	if (go < 0)
		return NULL;
	next = now_ns();
	for (uint64_t seq = 0;; seq++) {
		int coll = job_colls[seq % 3];
		uint64_t bytes = 8ull << (2 * ((seq / 3) % 14)); /* 8 B .. 512 MiB, x4 */
		float table[NBPF_NCCL_NUM_ALGORITHMS][NBPF_NCCL_NUM_PROTOCOLS];
		struct emu_decision *d = &j->dec[r->rank];
		void *api[2];
		float us;
		bool stop;

		if (o->n_steps) {
			coll = o->steps[seq % o->n_steps].coll;
			bytes = o->steps[seq % o->n_steps].n_bytes;
		}
		api_begin(r, p5, coll, bytes, api);
		if (emu_tuner_call(&r->t, &o->topo, coll, bytes, d))
			atomic_fetch_add(&j->tuner_errors, 1);
		emu_cost_table(&o->topo, coll, bytes, table);
		us = d->algo >= 0 && d->proto >= 0 ? table[d->algo][d->proto] : 0.0f;
		if (us <= 0.0f && d->nccl_algo >= 0)
			us = table[d->nccl_algo][d->nccl_proto];
		report(r, p5, coll, bytes, d, seq, (uint64_t)(us > 0.0f ? us * 1000.0f : 1000.0f));
		api_end(p5, api);
		/* Meet as NCCL's ranks meet in the collective; rank 0 judges agreement and the end. */
		if (pthread_barrier_wait(&j->meet) == PTHREAD_BARRIER_SERIAL_THREAD) {
			for (int k = 1; k < o->topo.n_ranks; k++)
				if (j->dec[k].algo != j->dec[0].algo || j->dec[k].proto != j->dec[0].proto ||
				    j->dec[k].n_channels != j->dec[0].n_channels) {
					j->st.diverged++;
					break;
				}
			j->st.collectives = seq + 1;
			atomic_store(&j->done, job_should_stop(j) ||
				     (o->collectives && seq + 1 >= o->collectives));
		}
		pthread_barrier_wait(&j->meet);
		stop = atomic_load(&j->done);
		if (stop)
			break;
		if (period) {
			struct timespec ts;
			uint64_t t = now_ns();

			next += period;
			if (next > t) {
				ts.tv_sec = (time_t)((next - t) / 1000000000ull);
				ts.tv_nsec = (long)((next - t) % 1000000000ull);
				nanosleep(&ts, NULL);
			} else {
				next = t;
			}
		}
	}
	return NULL;
}

int emu_job_run(const struct emu_job_opts *o, struct emu_job_stats *stats, char *err,
		size_t errlen)
{
	struct job *j;
	struct rank *ranks = NULL;
	pthread_t th[JOB_MAX_RANKS];
	int n = o ? o->topo.n_ranks : 0, started = 0, made = 0, rc = 0;
	uint64_t comm;

	if (!o || o->sz < sizeof(*o) || !o->plugin || n < 1 || n > JOB_MAX_RANKS || !stats) {
		snprintf(err, errlen, "invalid job options (1..%d ranks)", JOB_MAX_RANKS);
		return -EINVAL;
	}
	j = calloc(1, sizeof(*j));
	ranks = calloc((size_t)n, sizeof(*ranks));
	if (!j || !ranks) {
		free(j);
		free(ranks);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	j->o = o;
	comm = o->comm_id ? o->comm_id : JOB_DEMO_COMM;
	if (o->policy)
		setenv("NCCLBPF_POLICY", o->policy, 1);
	else
		unsetenv("NCCLBPF_POLICY");
	if ((rc = emu_open(&j->tuner, EMU_TUNER, o->plugin, 5, err, errlen)))
		goto out;
	if ((rc = emu_open(&j->prof, EMU_PROFILER, o->plugin, 5, err, errlen)))
		goto out;
	if (j->tuner.version != 5 || j->prof.version != 5) {
		snprintf(err, errlen, "%s: tuner and profiler v5 tables needed (NCCL 2.28)", o->plugin);
		rc = -ENOENT;
		goto out;
	}
	for (; made < n; made++) {
		struct rank *r = &ranks[made];
		const nbpf_profiler_v5_t *p5 = j->prof.table;

		r->j = j;
		r->rank = made;
		r->pclock = 1000000;
		if (emu_tuner_init(&r->t, &j->tuner, comm, &o->topo, NULL)) {
			snprintf(err, errlen, "tuner init failed for rank %d", made);
			rc = -EIO;
			goto out;
		}
		if (p5->init(&r->pctx, comm, &r->mask, "demo", o->topo.n_nodes, n, made, NULL) ||
		    !r->pctx) {
			emu_tuner_fini(&r->t);
			snprintf(err, errlen, "profiler init failed for rank %d", made);
			rc = -EIO;
			goto out;
		}
	}
	pthread_barrier_init(&j->meet, NULL, (unsigned)n);
	pthread_mutex_init(&j->gate_lock, NULL);
	pthread_cond_init(&j->gate, NULL);
	j->deadline_ns = o->duration_s > 0 ? now_ns() + (uint64_t)(o->duration_s * 1e9) : 0;
	for (; started < n; started++)
		if (pthread_create(&th[started], NULL, rank_main, &ranks[started]))
			break;
	pthread_mutex_lock(&j->gate_lock);
	j->gate_state = started == n ? 1 : -1;
	pthread_cond_broadcast(&j->gate);
	pthread_mutex_unlock(&j->gate_lock);
	if (started < n) {
		snprintf(err, errlen, "cannot start rank threads");
		rc = -EAGAIN;
	}
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&j->meet);
	pthread_cond_destroy(&j->gate);
	pthread_mutex_destroy(&j->gate_lock);
	j->st.tuner_errors = atomic_load(&j->tuner_errors);
	j->st.profiler_errors = atomic_load(&j->prof_errors);
	*stats = j->st;
out:
	for (int i = 0; i < made; i++) {
		((const nbpf_profiler_v5_t *)j->prof.table)->finalize(ranks[i].pctx);
		emu_tuner_fini(&ranks[i].t);
	}
	if (j->prof.table)
		emu_close(&j->prof);
	if (j->tuner.table)
		emu_close(&j->tuner);
	free(ranks);
	free(j);
	return rc;
}
