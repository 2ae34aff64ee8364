// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_profiler_race.c - the profiler plugin under the threads and
 * lifetimes NCCL really produces:
 *   - finalize on one thread while another (NCCL's proxy thread during
 *     teardown) keeps starting, recording and stopping events: nothing is
 *     touched after it is freed (ASan), and a callback that starts after
 *     finalize returned is a no-op;
 *   - a handle kept across 1000 init/finalize cycles never stops a live
 *     event of a later context;
 *   - a pool full of stale Colls and a slow program: each startEvent hands
 *     at most a few records to the programs, and every record is handed
 *     over in the end;
 *   - a storm: 8 contexts x 2 threads each, Colls with KernelCh children,
 *     interleaved with hostile calls (stale, foreign, NULL handles): every
 *     collective is counted exactly once, none dropped;
 *   - launching and proxy threads: one thread starts and stops each Coll
 *     while another reports its channels, so stops race with the
 *     channels' spans: every Coll completes exactly once.
 * Programs count their runs in prof_stats[0]; a tuner program sharing the
 * map (t_probe_wide) reads the counter back 6 bits per call.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "emu_prof.h"
#include "emu_test.h"

static const struct emu_topo topo8 = { .n_ranks = 8, .n_nodes = 1, .nvls = true };

/* prof_stats[slot], bits 0..29, through the probe. */
static uint64_t count(struct emu_tuner *t, unsigned slot)
{
	uint64_t v = 0;

	for (unsigned sh = 0; sh < 30; sh += 6) {
		struct emu_decision d;

		if (emu_tuner_call(t, &topo8, 4, (uint64_t)slot << 8 | sh, &d) || d.n_channels < 1)
			return UINT64_MAX;
		v |= (uint64_t)(d.n_channels - 1) << sh;
	}
	return v;
}

static void open_both(struct prof *p, struct emu_plugin *tpl, struct emu_tuner *t,
		      const char *prof_obj)
{
	char err[512], spec[2048];

	snprintf(spec, sizeof(spec), "%s:%s", emu_policy(prof_obj), emu_policy("t_probe_wide"));
	emu_set_policy(spec);
	CHECK(emu_open(&p->pl, EMU_PROFILER, EMU_PLUGIN, p->v, err, sizeof(err)) == 0);
	CHECK(emu_open(tpl, EMU_TUNER, EMU_PLUGIN, 5, err, sizeof(err)) == 0);
	CHECK(emu_tuner_init(t, tpl, 0xabc, &topo8, emu_logger) == 0);
}

static void close_both(struct prof *p, struct emu_plugin *tpl, struct emu_tuner *t)
{
	CHECK(emu_tuner_fini(t) == 0);
	emu_close(tpl);
	emu_close(&p->pl);
}

/* ---- finalize racing with callbacks -------------------------------------- */

struct race {
	struct prof *p;
	pthread_barrier_t bar;
	_Atomic(void *) ctx;
	_Atomic int finalized;     /* finalize of this round has returned */
	_Atomic int stop_round;
	_Atomic uint64_t calls;
	int rounds;
	int late_events;           /* events handed out after finalize returned */
};

static void *race_worker(void *arg)
{
	struct race *r = arg;

	for (int round = 0; round < r->rounds; round++) {
		struct prof q;
		uint64_t seq = 0;

		pthread_barrier_wait(&r->bar);
		q = *r->p; /* main writes it (init) only before the barrier */
		q.ctx = atomic_load(&r->ctx);
		while (!atomic_load(&r->stop_round)) {
			int fin = atomic_load(&r->finalized);
			void *c = start_coll(&q, NULL, seq++, 64, 2);
			void *k = start_kch(&q, c, 0, 10);
			void *g = start_group(&q);

			record_kch_stop(&q, k, 20);
			stop(&q, k);
			stop(&q, c);         /* its second channel never reports: the pool fills */
			stop(&q, g);
			if (fin && (c || k || g))
				r->late_events++;
			atomic_fetch_add(&r->calls, 1);
		}
		pthread_barrier_wait(&r->bar);
	}
	return NULL;
}

static void test_finalize_race(void)
{
	struct prof p = { .v = 5 };
	struct emu_plugin tpl;
	struct emu_tuner t;
	struct race r = { .p = &p };
	pthread_t th;
	int rounds = (int)(200 * emu_scale());

	if (rounds < 20)
		rounds = 20;
	r.rounds = rounds;
	open_both(&p, &tpl, &t, "t_prof_slow");
	pthread_barrier_init(&r.bar, NULL, 2);
	pthread_create(&th, NULL, race_worker, &r);
	for (int round = 0; round < rounds; round++) {
		uint64_t c0, want = 64 + (uint64_t)(round * 37 % 2000);

		CHECK(prof_init(&p, 0x100 + (uint64_t)round) == 0);
		CHECK(p.ctx != NULL);
		atomic_store(&r.ctx, p.ctx);
		atomic_store(&r.finalized, 0);
		atomic_store(&r.stop_round, 0);
		c0 = atomic_load(&r.calls);
		pthread_barrier_wait(&r.bar);
		/* Finalize somewhere in the middle of the worker's stream. */
		while (atomic_load(&r.calls) - c0 < want)
			sched_yield();
		CHECK(prof_fini(&p) == 0);
		atomic_store(&r.finalized, 1);
		c0 = atomic_load(&r.calls);
		while (atomic_load(&r.calls) - c0 < 16)
			sched_yield();
		atomic_store(&r.stop_round, 1);
		pthread_barrier_wait(&r.bar);
		/* A second finalize of the same context is a no-op too. */
		CHECK(prof_fini(&p) == 0);
	}
	pthread_join(th, NULL);
	CHECK_EQ_U64(r.late_events, 0);
	pthread_barrier_destroy(&r.bar);
	close_both(&p, &tpl, &t);
}

/* ---- stale handles across many contexts ---------------------------------- */

static void test_stale_handle_cycles(void)
{
	struct prof p = { .v = 5 };
	struct emu_plugin tpl;
	struct emu_tuner t;
	int cycles = (int)(1000 * emu_scale());
	uint64_t n;
	void *stale;

	if (cycles < 200)
		cycles = 200;
	open_both(&p, &tpl, &t, "t_prof");
	CHECK(prof_init(&p, 1) == 0);
	stale = start_coll(&p, NULL, 1, 8, 0);
	CHECK(stale != NULL);
	CHECK(prof_fini(&p) == 0); /* still live: dropped with its context */
	n = count(&t, 0);
	CHECK_EQ_U64(n, 0);
	for (int i = 0; i < cycles; i++) {
		void *c;

		CHECK(prof_init(&p, 2 + (uint64_t)i) == 0);
		c = start_coll(&p, NULL, 1, 8, 0);
		CHECK(c != NULL);
		/* The old handle must not stop the new context's live Coll. */
		CHECK(stop(&p, stale) == 0);
		CHECK(record_kch_stop(&p, stale, 5) == 0);
		if (count(&t, 0) != n) {
			CHECK_MSG(0, "cycle %d: a stale handle completed a live event", i);
			n = count(&t, 0);
		}
		CHECK(stop(&p, c) == 0);
		n++;
		CHECK_EQ_U64(count(&t, 0), n);
		CHECK(prof_fini(&p) == 0);
	}
	close_both(&p, &tpl, &t);
}

/* ---- bounded sweep ---------------------------------------------------------- */

#define STALE_COLLS 1600 /* of a 2048-slot pool: below a quarter free, the sweep runs */
#define RUNS_PER_CALL 2  /* docs/nccl-adapters.md: at most 2 stale records per startEvent */

static void test_bounded_sweep(void)
{
	struct prof p = { .v = 5 };
	struct emu_plugin tpl;
	struct emu_tuner t;
	struct timespec ts = { 1, 150000000 };
	uint64_t n, worst = 0, calls = 0, fresh = 0;

	open_both(&p, &tpl, &t, "t_prof_slow");
	CHECK(prof_init(&p, 7) == 0);
	for (int i = 0; i < STALE_COLLS; i++) {
		void *c = start_coll(&p, NULL, (uint64_t)i, 64, 2);

		CHECK(c != NULL);
		stop(&p, c); /* waits for two channels that never report */
	}
	CHECK_EQ_U64(count(&t, 0), 0);
	nanosleep(&ts, NULL); /* they are stale now */
	n = 0;
	while (n < STALE_COLLS + fresh && calls < 200000) {
		void *c = start_coll(&p, NULL, 100000 + calls, 64, 0);
		uint64_t after = count(&t, 0), ran = after - n;

		calls++;
		if (ran > worst)
			worst = ran;
		CHECK(c != NULL);
		stop(&p, c); /* no channels announced: completes now */
		fresh++;
		n = count(&t, 0);
	}
	/* Every stale record reached the programs, a few per call. */
	CHECK_EQ_U64(n, STALE_COLLS + fresh);
	CHECK_MSG(worst <= RUNS_PER_CALL, "one startEvent ran %llu programs",
		  (unsigned long long)worst);
	CHECK(worst > 0);
	CHECK(prof_fini(&p) == 0);
	close_both(&p, &tpl, &t);
}

/* ---- storm ------------------------------------------------------------------ */

#define STORM_CTX 8
#define STORM_THREADS 16

struct storm {
	struct prof q;
	uint64_t colls, hostile;
	unsigned seed;
};

static void *storm_thread(void *arg)
{
	struct storm *s = arg;
	void *old = NULL;

	for (uint64_t i = 0; i < s->colls; i++) {
		void *c = start_coll(&s->q, NULL, i, 1024, 2);
		void *k0 = start_kch(&s->q, c, 0, 100);
		void *k1 = start_kch(&s->q, c, 1, 120);
		uintptr_t junk;

		record_kch_stop(&s->q, k0, 300);
		if (i & 1)
			stop(&s->q, c);
		stop(&s->q, k0);
		/* Hostile: the previous Coll's handle, its neighbours, garbage. */
		s->seed = s->seed * 1103515245u + 12345u;
		junk = (uintptr_t)old ^ ((uintptr_t)(s->seed >> 8) << (s->seed % 40));
		stop(&s->q, old);
		record_kch_stop(&s->q, old, 1);
		stop(&s->q, (void *)junk);
		record_kch_stop(&s->q, (void *)junk, 2);
		stop(&s->q, (void *)((uintptr_t)c ^ (1u << 11))); /* same slot, other generation */
		s->hostile += 5;
		record_kch_stop(&s->q, k1, 250);
		stop(&s->q, k1);
		if (!(i & 1))
			stop(&s->q, c);
		old = c;
	}
	return NULL;
}

static void test_storm(void)
{
	struct prof p[STORM_CTX];
	struct storm st[STORM_THREADS];
	pthread_t th[STORM_THREADS];
	struct emu_plugin tpl;
	struct emu_tuner t;
	/* 2^20 events per thread at scale 1 (8 calls per collective). */
	uint64_t per = (uint64_t)((1u << 20) / 8 * emu_scale()), hostile = 0;

	for (int c = 0; c < STORM_CTX; c++)
		p[c] = (struct prof){ .v = 5 };
	open_both(&p[0], &tpl, &t, "t_prof");
	for (int c = 1; c < STORM_CTX; c++)
		p[c].pl = p[0].pl;
	for (int c = 0; c < STORM_CTX; c++) {
		CHECK(prof_init(&p[c], 0x5000 + (uint64_t)c) == 0);
		CHECK(p[c].ctx != NULL);
	}
	for (int i = 0; i < STORM_THREADS; i++) {
		st[i] = (struct storm){ .q = p[i % STORM_CTX], .colls = per, .seed = (unsigned)i + 1 };
		pthread_create(&th[i], NULL, storm_thread, &st[i]);
	}
	for (int i = 0; i < STORM_THREADS; i++) {
		pthread_join(th[i], NULL);
		hostile += st[i].hostile;
	}
	CHECK_EQ_U64(count(&t, 0), per * STORM_THREADS);
	for (int c = 0; c < STORM_CTX; c++)
		CHECK(prof_fini(&p[c]) == 0);
	CHECK_EQ_U64(count(&t, 0), per * STORM_THREADS); /* nothing left over */
	printf("storm: %d threads, %llu collectives, %llu events, %llu hostile calls\n",
	       STORM_THREADS, (unsigned long long)(per * STORM_THREADS),
	       (unsigned long long)(per * STORM_THREADS * 8),
	       (unsigned long long)hostile);
	close_both(&p[0], &tpl, &t);
}

/* ---- launching thread and proxy thread on one Coll ------------------------- */

#define PAIRS 4
#define RING 512

/*
 * As in NCCL: the launching thread starts and stops each Coll while the
 * proxy thread, handed the Coll's handle, reports its two channels, so a
 * Coll's stop races with its channels folding in their spans.
 */
struct pair {
	struct prof q;
	uint64_t colls;
	void *ring[RING];
	_Atomic uint64_t head, tail;
	int no_handle;
};

static void *pair_launcher(void *arg)
{
	struct pair *s = arg;

	for (uint64_t i = 0; i < s->colls; i++) {
		void *c = start_coll(&s->q, NULL, i, 4096, 2);
		uint64_t h = atomic_load_explicit(&s->head, memory_order_relaxed);

		s->no_handle += !c;
		while (h - atomic_load_explicit(&s->tail, memory_order_acquire) >= RING)
			sched_yield();
		s->ring[h % RING] = c;
		atomic_store_explicit(&s->head, h + 1, memory_order_release);
		stop(&s->q, c);
	}
	return NULL;
}

static void *pair_proxy(void *arg)
{
	struct pair *s = arg;

	for (uint64_t i = 0; i < s->colls; i++) {
		void *c, *k0, *k1;

		while (atomic_load_explicit(&s->head, memory_order_acquire) == i)
			sched_yield();
		c = s->ring[i % RING];
		atomic_store_explicit(&s->tail, i + 1, memory_order_release);
		k0 = start_kch(&s->q, c, 0, 100);
		k1 = start_kch(&s->q, c, 1, 110);
		record_kch_stop(&s->q, k0, 400);
		record_kch_stop(&s->q, k1, 420);
		stop(&s->q, k0);
		stop(&s->q, k1);
	}
	return NULL;
}

static void test_launcher_proxy(void)
{
	static struct pair pr[PAIRS];
	struct prof p = { .v = 5 };
	struct emu_plugin tpl;
	struct emu_tuner t;
	pthread_t th[2 * PAIRS];
	uint64_t per = (uint64_t)(200000 * emu_scale());

	open_both(&p, &tpl, &t, "t_prof");
	for (int i = 0; i < PAIRS; i++) {
		memset(&pr[i], 0, sizeof(pr[i]));
		pr[i].q = p;
		CHECK(prof_init(&pr[i].q, 0x7000 + (uint64_t)i) == 0);
		pr[i].colls = per;
		pthread_create(&th[2 * i], NULL, pair_launcher, &pr[i]);
		pthread_create(&th[2 * i + 1], NULL, pair_proxy, &pr[i]);
	}
	for (int i = 0; i < 2 * PAIRS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < PAIRS; i++)
		CHECK_EQ_U64(pr[i].no_handle, 0);
	/* Every Coll completed exactly once, by whichever thread dropped its last reference. */
	CHECK_EQ_U64(count(&t, 0), per * PAIRS);
	CHECK_EQ_U64(count(&t, 2), 1); /* the last one was GPU-timed */
	for (int i = 0; i < PAIRS; i++)
		CHECK(prof_fini(&pr[i].q) == 0);
	CHECK_EQ_U64(count(&t, 0), per * PAIRS);
	close_both(&p, &tpl, &t);
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : "";

	if (!*only || !strcmp(only, "finalize"))
		test_finalize_race();
	if (!*only || !strcmp(only, "stale"))
		test_stale_handle_cycles();
	if (!*only || !strcmp(only, "sweep"))
		test_bounded_sweep();
	if (!*only || !strcmp(only, "storm"))
		test_storm();
	if (!*only || !strcmp(only, "proxy"))
		test_launcher_proxy();
	return check_summary("emulator_profiler_race");
}
