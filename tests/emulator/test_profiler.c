/*
 * test_profiler.c - the profiler plugin as NCCL drives it, every ABI
 * version: Group -> Coll -> KernelCh/ProxyOp event trees with GPU
 * timestamps, KernelCh events from another thread, late and duplicate
 * events, NULL and foreign handles, lost channels completed at finalize.
 * What the profiler program saw is read back through a tuner program that
 * shares its map (t_prof + t_probe: same map name and shape = one map).
 */
#include <pthread.h>

#include "check.h"
#include "emu_prof.h"
#include "emu_test.h"

static const struct emu_topo topo8 = { .n_ranks = 8, .n_nodes = 1, .nvls = true };

/* Reads prof_stats[slot] % 64 through the probe tuner (n_channels - 1). */
static int probe(struct emu_tuner *t, int slot)
{
	struct emu_decision d;
	int coll = slot < 5 ? slot : slot - 4;

	if (emu_tuner_call(t, &topo8, coll, slot < 5 ? 1024 : 4, &d))
		return -1;
	return d.n_channels - 1;
}

struct kch_arg {
	struct prof *p;
	void *coll;
	int failures;
};

/* The proxy thread's view: KernelCh events of one Coll, two channels. */
static void *proxy_thread(void *arg)
{
	struct kch_arg *a = arg;
	void *k0 = start_kch(a->p, a->coll, 0, 1000);
	void *k1 = start_kch(a->p, a->coll, 1, 1500);

	a->failures += !k0 || !k1;
	a->failures += record_kch_stop(a->p, k0, 5000) != 0;
	a->failures += record_kch_stop(a->p, k1, 4000) != 0;
	a->failures += stop(a->p, k1) != 0;
	a->failures += stop(a->p, k0) != 0;
	/* Late and duplicate: no-ops. */
	a->failures += record_kch_stop(a->p, k0, 999999) != 0;
	a->failures += stop(a->p, k0) != 0;
	return NULL;
}

static void test_version(int v)
{
	struct prof p = { .v = v };
	struct emu_plugin tpl;
	struct emu_tuner t;
	char err[512];
	char spec[2048];
	bool gpu = v >= 4;
	int expect = 0;

	snprintf(spec, sizeof(spec), "%s:%s", emu_policy("t_prof"), emu_policy("t_probe"));
	emu_set_policy(spec);
	emu_log_reset();
	CHECK(emu_open(&p.pl, EMU_PROFILER, EMU_PLUGIN, v, err, sizeof(err)) == 0);
	CHECK_EQ_U64(p.pl.version, v);
	CHECK(emu_open(&tpl, EMU_TUNER, "ncclbpf", 5, err, sizeof(err)) == 0);
	CHECK(prof_init(&p, 0xfeed) == 0);
	CHECK(p.ctx != NULL);
	CHECK_EQ_U64(p.mask, NBPF_PROF_COLL | NBPF_PROF_KERNEL_CH);
	CHECK(emu_tuner_init(&t, &tpl, 0xfeed, &topo8, emu_logger) == 0);
	if (v >= 4) /* v1..v3 get no logger from NCCL: stderr */
		CHECK_STR_CONTAINS(emu_log_buf, "on_coll -> profiler");
	CHECK_EQ_U64(probe(&t, 0), 0);

	/* 1: Coll stops (enqueued) before its channels report, from another thread. */
	void *g = start_group(&p);
	void *c = start_coll(&p, g, 1, 1 << 20, 2);
	void *op = start_proxy_op(&p, c);

	CHECK(g != NULL && c != NULL && op != NULL);
	CHECK(stop(&p, c) == 0);
	CHECK(stop(&p, op) == 0);
	if (gpu)
		CHECK_EQ_U64(probe(&t, 0), 0); /* waiting for its two channels */
	struct kch_arg ka = { .p = &p, .coll = c };
	pthread_t th;

	pthread_create(&th, NULL, proxy_thread, &ka);
	pthread_join(th, NULL);
	CHECK_EQ_U64(ka.failures, 0);
	CHECK(stop(&p, g) == 0);
	expect++;
	CHECK_EQ_U64(probe(&t, 0), expect);
	if (gpu) {
		CHECK_EQ_U64(probe(&t, 1), (5000 - 1000) % 64); /* max(stop) - min(start) */
		CHECK_EQ_U64(probe(&t, 2), 1);                  /* gpu_timed */
	} else {
		CHECK_EQ_U64(probe(&t, 2), 0);
	}
	CHECK_EQ_U64(probe(&t, 3), ((1u << 20) * 4u) % 64);
	CHECK_EQ_U64(probe(&t, 4), 1);                          /* RING */
	CHECK_EQ_U64(probe(&t, 5), 3);                          /* rank */

	/* Duplicate stop of a completed Coll, late record, NULL and foreign handles. */
	CHECK(stop(&p, c) == 0);
	CHECK(record_kch_stop(&p, c, 1) == 0);
	CHECK(stop(&p, NULL) == 0);
	CHECK(record_kch_stop(&p, NULL, 1) == 0);
	CHECK(stop(&p, (void *)(uintptr_t)0xdeadbeefcafe1234ull) == 0);
	CHECK(stop(&p, (void *)(uintptr_t)0x0001000000000005ull) == 0);
	CHECK_EQ_U64(probe(&t, 0), expect);

	/* 2: many collectives, channels stopping after the Coll and before it. */
	int n = (int)(500 * emu_scale());

	for (int i = 0; i < n; i++) {
		void *cc = start_coll(&p, NULL, 2 + (uint64_t)i, 256, 2);
		void *k0 = start_kch(&p, cc, 0, 100);
		void *k1 = start_kch(&p, cc, 1, 100);

		record_kch_stop(&p, k0, 100 + 64 * 3 + 7);
		if (i & 1)
			stop(&p, cc);
		stop(&p, k0);
		record_kch_stop(&p, k1, 150);
		stop(&p, k1);
		if (!(i & 1))
			stop(&p, cc);
	}
	expect += n;
	CHECK_EQ_U64(probe(&t, 0), expect % 64);
	if (gpu)
		CHECK_EQ_U64(probe(&t, 1), 7);

	/* 3: a Coll whose second channel never reports completes at finalize. */
	void *lost = start_coll(&p, NULL, 9999, 64, 2);
	void *k = start_kch(&p, lost, 0, 10);

	record_kch_stop(&p, k, 20);
	stop(&p, k);
	stop(&p, lost);
	/* An event of a finalized context is a no-op. */
	CHECK(prof_fini(&p) == 0);
	expect++;
	CHECK_EQ_U64(probe(&t, 0), expect % 64);
	CHECK(stop(&p, lost) == 0);
	CHECK(emu_tuner_fini(&t) == 0);
	/* The probe's decision reads a profiler-written map: the verifier says so, once. */
	if (v >= 4) {
		CHECK_EQ_U64(emu_log_warns, 1);
		CHECK_STR_CONTAINS(emu_log_buf, "rank-local");
	}
	emu_close(&tpl);
	emu_close(&p.pl);
}

/* No policy: init succeeds, the mask asks for Coll only (telemetry). */
static void test_no_policy_and_bad(void)
{
	struct prof p = { .v = 5 };
	char err[512];

	emu_set_policy(NULL);
	CHECK(emu_open(&p.pl, EMU_PROFILER, "ncclbpf", 5, err, sizeof(err)) == 0);
	CHECK(prof_init(&p, 1) == 0);
	CHECK_EQ_U64(p.mask, NBPF_PROF_COLL);
	void *c = start_coll(&p, NULL, 1, 8, 1);
	CHECK(c != NULL);
	CHECK(stop(&p, c) == 0);
	CHECK(prof_fini(&p) == 0);
	CHECK(((const nbpf_profiler_v5_t *)p.pl.table)->finalize(NULL) == 0);
	emu_close(&p.pl);

	/* A rejected policy: success, WARN, still works without programs. */
	emu_log_reset();
	emu_set_policy(emu_policy("t_reject"));
	CHECK(emu_open(&p.pl, EMU_PROFILER, EMU_PLUGIN, 6, err, sizeof(err)) == 0);
	p.v = 6;
	CHECK(prof_init(&p, 2) == 0);
	CHECK(p.ctx != NULL);
	CHECK_EQ_U64(emu_log_warns, 1);
	CHECK_STR_CONTAINS(emu_log_buf, "rejected");
	CHECK(prof_fini(&p) == 0);
	emu_close(&p.pl);
}

int main(void)
{
	for (int v = 1; v <= 7; v++)
		test_version(v);
	test_no_policy_and_bad();
	return check_summary("emulator_profiler");
}
