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
#include "emu_test.h"

static const struct emu_topo topo8 = { .n_ranks = 8, .n_nodes = 1, .nvls = true };

struct prof {
	struct emu_plugin pl;
	void *ctx;
	int mask;
	int v;
};

/* ---- descriptors for any version --------------------------------------------- */

union descr {
	nbpf_prof_descr_v1_t v1;
	nbpf_prof_descr_v2_t v2;
	nbpf_prof_descr_v3_t v3;
	nbpf_prof_descr_v4_t v4;
	nbpf_prof_descr_v5_t v5;
	nbpf_prof_descr_v6_t v6;
};

static void set_hdr(union descr *d, int v, uint32_t type, void *parent, int rank)
{
	memset(d, 0, sizeof(*d));
	if (v >= 5)
		d->v5.type = type;
	else
		d->v1.type = (uint8_t)type;
	d->v4.parentObj = parent; /* same offsets in every version */
	d->v4.rank = rank;
}

static void *start(struct prof *p, union descr *d)
{
	void *h = (void *)0x1; /* NCCL does not clear it; the plugin must write it */

	switch (p->v) {
	case 1: ((const nbpf_profiler_v1_t *)p->pl.table)->startEvent(p->ctx, &h, &d->v1); break;
	case 2: ((const nbpf_profiler_v2_t *)p->pl.table)->startEvent(p->ctx, &h, &d->v2); break;
	case 3: ((const nbpf_profiler_v3_t *)p->pl.table)->startEvent(p->ctx, &h, &d->v3); break;
	case 4: ((const nbpf_profiler_v4_t *)p->pl.table)->startEvent(p->ctx, &h, &d->v4); break;
	case 5: ((const nbpf_profiler_v5_t *)p->pl.table)->startEvent(p->ctx, &h, &d->v5); break;
	case 6: ((const nbpf_profiler_v6_t *)p->pl.table)->startEvent(p->ctx, &h, &d->v6); break;
	}
	return h;
}

static int stop(struct prof *p, void *h)
{
	return ((const nbpf_profiler_v5_t *)p->pl.table)->stopEvent(h);
}

static int record_kch_stop(struct prof *p, void *h, uint64_t t)
{
	if (p->v >= 4) {
		nbpf_prof_state_args_v4_t a = { .kernelCh = { .pTimer = t } };

		return ((const nbpf_profiler_v5_t *)p->pl.table)->recordEventState(h, NBPF_PROF_STATE_KERNEL_CH_STOP, &a);
	}
	nbpf_prof_state_args_v1_t a = { .proxyOp = { .transSize = 1 } };

	return ((const nbpf_profiler_v3_t *)p->pl.table)->recordEventState(h, 22, &a);
}

static void *start_group(struct prof *p)
{
	union descr d;

	set_hdr(&d, p->v, NBPF_PROF_GROUP, NULL, 3);
	return start(p, &d);
}

/* AllReduce of count floats (4 bytes each) on nch channels with Ring/LL128. */
static void *start_coll(struct prof *p, void *parent, uint64_t seq, size_t count, int nch)
{
	union descr d;

	set_hdr(&d, p->v, NBPF_PROF_COLL, parent, 3);
	switch (p->v) {
	case 1:
		d.v1.coll.seqNumber = seq; d.v1.coll.func = 4; d.v1.coll.count = count;
		d.v1.coll.datatype = 7; d.v1.coll.nMaxChannels = (uint8_t)nch;
		d.v1.coll.algo = 1; d.v1.coll.proto = 1;
		break;
	case 2:
		d.v2.coll.seqNumber = seq; d.v2.coll.func = "AllReduce"; d.v2.coll.count = count;
		d.v2.coll.datatype = "ncclFloat32"; d.v2.coll.nMaxChannels = (uint8_t)nch;
		d.v2.coll.algo = "RING"; d.v2.coll.proto = "LL128";
		break;
	case 3:
		d.v3.coll.seqNumber = seq; d.v3.coll.func = "AllReduce"; d.v3.coll.count = count;
		d.v3.coll.datatype = "ncclFloat32"; d.v3.coll.nMaxChannels = (uint8_t)nch;
		d.v3.coll.algo = "RING"; d.v3.coll.proto = "LL128";
		break;
	case 4:
		d.v4.coll.seqNumber = seq; d.v4.coll.func = "AllReduce"; d.v4.coll.count = count;
		d.v4.coll.datatype = "ncclFloat32"; d.v4.coll.nChannels = (uint8_t)nch;
		d.v4.coll.algo = "RING"; d.v4.coll.proto = "LL128";
		break;
	default:
		d.v5.coll.seqNumber = seq; d.v5.coll.func = "AllReduce"; d.v5.coll.count = count;
		d.v5.coll.datatype = "ncclFloat32"; d.v5.coll.nChannels = (uint8_t)nch;
		d.v5.coll.algo = "RING"; d.v5.coll.proto = "LL128"; d.v5.coll.parentGroup = NULL;
		break;
	}
	return start(p, &d);
}

static void *start_kch(struct prof *p, void *coll, int ch, uint64_t t0)
{
	union descr d;

	set_hdr(&d, p->v, NBPF_PROF_KERNEL_CH, coll, 3);
	if (p->v == 3)
		d.v3.kernelCh.channelId = (uint8_t)ch;
	else if (p->v == 4)
		d.v4.kernelCh.channelId = (uint8_t)ch, d.v4.kernelCh.pTimer = t0;
	else if (p->v >= 5)
		d.v5.kernelCh.channelId = (uint8_t)ch, d.v5.kernelCh.pTimer = t0;
	return start(p, &d);
}

static void *start_proxy_op(struct prof *p, void *coll)
{
	union descr d;

	set_hdr(&d, p->v, NBPF_PROF_PROXY_OP, coll, 3);
	d.v4.proxyOp.pid = 1;
	d.v4.proxyOp.peer = 1;
	return start(p, &d);
}

static int prof_init(struct prof *p, uint64_t comm_id)
{
	p->mask = 0;
	switch (p->v) {
	case 1: return ((const nbpf_profiler_v1_t *)p->pl.table)->init(&p->ctx, &p->mask);
	case 2: return ((const nbpf_profiler_v2_t *)p->pl.table)->init(&p->ctx, &p->mask);
	case 3: return ((const nbpf_profiler_v3_t *)p->pl.table)->init(&p->ctx, &p->mask);
	case 4: return ((const nbpf_profiler_v4_t *)p->pl.table)->init(&p->ctx, &p->mask, "c", comm_id, 1, 8, 3, emu_logger);
	case 5: return ((const nbpf_profiler_v5_t *)p->pl.table)->init(&p->ctx, comm_id, &p->mask, NULL, 1, 8, 3, emu_logger);
	case 6: return ((const nbpf_profiler_v6_t *)p->pl.table)->init(&p->ctx, comm_id, &p->mask, "c", 1, 8, 3, emu_logger);
	}
	return -1;
}

static int prof_fini(struct prof *p)
{
	return ((const nbpf_profiler_v5_t *)p->pl.table)->finalize(p->ctx);
}

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
	for (int v = 1; v <= 6; v++)
		test_version(v);
	test_no_policy_and_bad();
	return check_summary("emulator_profiler");
}
