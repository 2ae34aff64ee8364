/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_prof_events.c - every profiler event type of v5, v6 and v7 (the
 * API events, Group, Coll, P2p, the proxy events, KernelCh, NetPlugin,
 * KernelLaunch; v6's CeColl, CeSync, CeBatch; v7's KernelPhase, userTag
 * and symmetric Coll) raised as NCCL raises them, with the states NCCL
 * records on them (the CE states too, which NCCL 2.30 declares but never
 * records), reaches a SEC("profiler/event") program with its descriptor
 * (t_events keeps the last record of each type in a map, read back through
 * the control socket as `ncclbpf map` reads it), and the control socket's
 * communicator record counts every event by type, with or without event
 * programs.  The activation mask asks for every type the version knows but
 * the per-step ones.  Then the same under NCCL's threads (test_race).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "control/ctl_client.h"
#include "control/ctl_tele.h"
#include "emu_prof.h"
#include "emu_test.h"
#include "ncclbpf/policy.h"
#include "ncclbpf/runtime.h"

static char tmpdir[] = "/tmp/ncclbpf-emu-events-XXXXXX";

static int record(struct prof *p, void *h, int state, nbpf_prof_state_args_v4_t *a)
{
	return ((const nbpf_profiler_v5_t *)p->pl.table)->recordEventState(h, state, a);
}

/* One event as NCCL raises it: start, states, stop; the handle (NULL: untracked). */
static void *raise_ev(struct prof *p, union descr *d, const int *states, int n_states,
		      nbpf_prof_state_args_v4_t *args)
{
	void *h = start(p, d);

	for (int i = 0; i < n_states; i++)
		CHECK(record(p, h, states[i], args) == 0);
	return h;
}

/*
 * One request to this process's control socket.  Found afresh each time:
 * every dlopen of the plugin serves a new socket, and the client's
 * pid-to-socket cache (nbpf_ctl_call_pid) would still name the last one.
 */
static int call_self(int type, struct nbpf_ctl_msg *m, const char **em)
{
	struct nbpf_ctl_proc *procs = NULL;
	int n = nbpf_ctl_list(&procs), ret = -ESRCH;

	memset(m, 0, sizeof(*m));
	*em = "no socket of this process";
	for (int i = 0; i < n; i++)
		if (procs[i].pid == getpid()) {
			ret = nbpf_ctl_call_path(procs[i].path, type, NULL, m, em);
			break;
		}
	free(procs);
	return ret;
}

static struct ncclbpf_map *map_by_name(const char *name)
{
	struct nbpf_ctl_msg m;
	struct ncclbpf_map *map = NULL;
	const char *em = NULL;

	if (call_self(NBPF_CTL_MAPS, &m, &em) == 0)
		for (uint32_t i = 0; i < m.n_recs && !map; i++) {
			const char *n = nbpf_ctl_rec_get(&m.recs[i], "name");
			const char *path = nbpf_ctl_rec_get(&m.recs[i], "path");

			if (!strcmp(m.recs[i].kind, "map") && n && path && !strcmp(n, name))
				CHECK(ncclbpf_map__open_path(path, false, &map) == 0);
		}
	CHECK_MSG(map != NULL, "no map %s (%s)", name, em ? em : "");
	nbpf_ctl_msg_free(&m);
	return map;
}

/* The profiler context's event counts from the control socket's comm record. */
static void comm_events(uint64_t comm_id, uint64_t ev[NCCLBPF_EV_TYPES])
{
	struct nbpf_ctl_msg m;
	const char *em = NULL;
	char want[32];
	int found = 0;

	memset(ev, 0, sizeof(uint64_t) * NCCLBPF_EV_TYPES);
	snprintf(want, sizeof(want), "%llx", (unsigned long long)comm_id);
	CHECK_MSG(call_self(NBPF_CTL_PS, &m, &em) == 0, "ps: %s", em ? em : "");
	for (uint32_t i = 0; i < m.n_recs; i++) {
		const struct nbpf_ctl_rec *r = &m.recs[i];
		const char *kind = nbpf_ctl_rec_get(r, "kind"), *id = nbpf_ctl_rec_get(r, "comm_id");

		if (strcmp(r->kind, "comm") || !kind || strcmp(kind, "profiler") || !id ||
		    !strstr(id, want))
			continue;
		found++;
		CHECK(nbpf_ctl_parse_u64s(nbpf_ctl_rec_get(r, "events"), ev, NCCLBPF_EV_TYPES) ==
		      NCCLBPF_EV_TYPES);
	}
	CHECK_EQ_U64(found, 1);
	nbpf_ctl_msg_free(&m);
}

/* The exporter's text for this process (TELEMETRY merged as `ncclbpf export` merges it). */
static void check_prom(uint64_t comm, const char *type, uint64_t n)
{
	struct nbpf_tele_set set = { 0 };
	struct nbpf_ctl_msg m;
	const char *em = NULL;
	char want[160], *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(f && call_self(NBPF_CTL_TELEMETRY, &m, &em) == 0);
	cli_tele_merge(&set, &m);
	nbpf_ctl_msg_free(&m);
	if (f) {
		nbpf_prom_write(f, &set);
		fclose(f);
	}
	snprintf(want, sizeof(want),
		 "ncclbpf_profiler_events_total{communicator=\"0x%016llx\",type=\"%s\"} %llu\n",
		 (unsigned long long)comm, type, (unsigned long long)n);
	CHECK_STR_CONTAINS(text ? text : "", want);
	CHECK_STR_CONTAINS(text ? text : "", "# TYPE ncclbpf_profiler_events_total counter");
	free(text);
	nbpf_tele_free(&set);
}

static struct ncclbpf_prof_event last_of(struct ncclbpf_map *m, uint32_t type)
{
	struct ncclbpf_prof_event e;
	uint32_t k = (uint32_t)__builtin_ctz(type);

	memset(&e, 0, sizeof(e));
	CHECK(m && ncclbpf_map__lookup(m, &k, &e) == 0);
	return e;
}

/*
 * Raises one of every type version v has (events: the program sees them),
 * checks what the program saw (events) and what the comm record counted.
 */
static void run(int v, bool events)
{
	struct prof p = { .v = v };
	uint64_t comm = 0xe7e0 + (uint64_t)v + (events ? 0x100 : 0), cnt[NCCLBPF_EV_TYPES];
	nbpf_prof_state_args_v4_t a = { .proxyStep = { .transSize = 0 } };
	union descr d;
	char err[512];
	void *gapi, *capi, *grp, *coll, *kch, *op, *step, *ce = NULL;
	uint32_t types = 0;

	emu_set_policy(events ? emu_policy("t_events") : NULL);
	CHECK(emu_open(&p.pl, EMU_PROFILER, EMU_PLUGIN, v, err, sizeof(err)) == 0);
	CHECK_EQ_U64(p.pl.version, v);
	CHECK(prof_init(&p, comm) == 0 && p.ctx);
	if (events) {
		uint32_t all = v >= 7 ? 0xffff : v == 6 ? 0x7fff : 0xfff;

		CHECK_MSG((uint32_t)p.mask == (all & ~(uint32_t)(NBPF_PROF_PROXY_STEP | NBPF_PROF_PROXY_CTRL |
								  NBPF_PROF_NET_PLUGIN)),
			  "v%d mask %#x", v, p.mask);
	}

	/* GroupApi with its two states (NCCL passes no args), CollApi, KernelLaunch. */
	set_hdr(&d, v, NBPF_PROF_GROUP_API, NULL, 0);
	d.v5.groupApi.graphCaptured = true;
	d.v5.groupApi.groupDepth = 2;
	gapi = raise_ev(&p, &d, (const int[]){ 23, 24 }, 2, NULL);
	set_hdr(&d, v, NBPF_PROF_COLL_API, gapi, 0);
	d.v5.collApi.func = "AllReduce";
	d.v5.collApi.count = 1000;
	d.v5.collApi.datatype = "ncclFloat32";
	d.v5.collApi.root = 0;
	if (v >= 7)
		d.v7.collApi.userTag = 0x7a9;
	capi = start(&p, &d);
	set_hdr(&d, v, NBPF_PROF_KERNEL_LAUNCH, gapi, 3);
	CHECK(stop(&p, start(&p, &d)) == 0);
	types |= NBPF_PROF_GROUP_API | NBPF_PROF_COLL_API | NBPF_PROF_KERNEL_LAUNCH;

	/* Group, Coll (child of the CollApi), KernelCh and KernelPhase, ProxyOp/Step, NetPlugin. */
	grp = start_group(&p);
	coll = start_coll(&p, capi, 41, 1000, 1);
	kch = start_kch(&p, coll, 3, 1000);
	if (v >= 7) {
		set_hdr(&d, v, NBPF_PROF_KERNEL_PHASE, kch, 3);
		d.v7.kernelPhase.channelId = 3;
		d.v7.kernelPhase.phaseId = 1;
		d.v7.kernelPhase.phaseName = "compute";
		d.v7.kernelPhase.pTimer = 1100;
		a = (nbpf_prof_state_args_v4_t){ .kernelCh = { .pTimer = 1900 } };
		CHECK(stop(&p, raise_ev(&p, &d, (const int[]){ NBPF_PROF_STATE_KERNEL_PHASE_STOP }, 1, &a)) == 0);
		types |= NBPF_PROF_KERNEL_PHASE;
	}
	CHECK(record_kch_stop(&p, kch, 2000) == 0);
	CHECK(stop(&p, kch) == 0);
	op = start_proxy_op(&p, coll);
	CHECK(record(&p, op, 19, &a) == 0);
	set_hdr(&d, v, NBPF_PROF_PROXY_STEP, op, 3);
	d.v5.proxyStep.step = 7;
	a = (nbpf_prof_state_args_v4_t){ .proxyStep = { .transSize = 65536 } };
	step = raise_ev(&p, &d, (const int[]){ 8, 9 }, 2, &a);
	set_hdr(&d, v, NBPF_PROF_NET_PLUGIN, step, 3);
	d.v5.netPlugin.id = 2 << 16 | 1;
	CHECK(stop(&p, raise_ev(&p, &d, (const int[]){ 21 }, 1, &a)) == 0);
	CHECK(stop(&p, step) == 0);
	CHECK(stop(&p, op) == 0);
	CHECK(stop(&p, coll) == 0);
	if (v >= 7) {
		/* v7: a symmetric kernel's Coll, with the tag and the kernel variant. */
		set_hdr(&d, v, NBPF_PROF_COLL, capi, 3);
		d.v7.coll.seqNumber = 42;
		d.v7.coll.func = "AllGather";
		d.v7.coll.count = 10;
		d.v7.coll.datatype = "ncclBfloat16";
		d.v7.coll.nChannels = 2;
		d.v7.coll.algo = "AGxLL";
		d.v7.coll.proto = "";
		d.v7.coll.kernelVariant = "AGxLL_R";
		d.v7.coll.isSymColl = true;
		d.v7.coll.userTag = 0x5ca1ab1e;
		CHECK(stop(&p, start(&p, &d)) == 0);
	}
	CHECK(stop(&p, grp) == 0);
	types |= NBPF_PROF_GROUP | NBPF_PROF_COLL | NBPF_PROF_KERNEL_CH | NBPF_PROF_PROXY_OP |
		 NBPF_PROF_PROXY_STEP | NBPF_PROF_NET_PLUGIN;

	/* v6: a copy-engine collective with its sync and batch, every CE state recorded. */
	if (v >= 6) {
		set_hdr(&d, v, NBPF_PROF_CE_COLL, capi, 3);
		d.v6.ceColl.seqNumber = 9;
		d.v6.ceColl.func = "AllGather";
		d.v6.ceColl.count = 64;
		d.v6.ceColl.root = -1;
		d.v6.ceColl.datatype = "ncclInt8";
		d.v6.ceColl.syncStrategy = "MC";
		d.v6.ceColl.intraBatchSync = true;
		d.v6.ceColl.batchSize = 4;
		d.v6.ceColl.numBatches = 2;
		d.v6.ceColl.ceSeqNum = 77;
		if (v >= 7)
			d.v7.ceColl.userTag = 0xce;
		ce = raise_ev(&p, &d, (const int[]){ 25, 26 }, 2, NULL);
		set_hdr(&d, v, NBPF_PROF_CE_SYNC, ce, 3);
		d.v6.ceCollSync.isComplete = true;
		d.v6.ceCollSync.nRanks = 8;
		CHECK(stop(&p, raise_ev(&p, &d, (const int[]){ 27, 28 }, 2, NULL)) == 0);
		set_hdr(&d, v, NBPF_PROF_CE_BATCH, ce, 3);
		d.v6.ceCollBatch.numOps = 3;
		d.v6.ceCollBatch.totalBytes = 12345;
		d.v6.ceCollBatch.useIntraSync = false;
		CHECK(stop(&p, raise_ev(&p, &d, (const int[]){ 29, 30 }, 2, NULL)) == 0);
		CHECK(stop(&p, ce) == 0);
		types |= NBPF_PROF_CE_COLL | NBPF_PROF_CE_SYNC | NBPF_PROF_CE_BATCH;
	}
	CHECK(stop(&p, capi) == 0);
	CHECK(stop(&p, gapi) == 0);

	/* P2pApi, P2p (a Send), and the proxy thread's ProxyCtrl. */
	set_hdr(&d, v, NBPF_PROF_P2P_API, NULL, 0);
	d.v5.p2pApi.func = "Send";
	d.v5.p2pApi.count = 256;
	d.v5.p2pApi.datatype = "ncclInt64";
	if (v >= 7)
		d.v7.p2pApi.userTag = 0xa91;
	capi = start(&p, &d);
	set_hdr(&d, v, NBPF_PROF_P2P, capi, 3);
	d.v5.p2p.func = "Send";
	d.v5.p2p.count = 256;
	d.v5.p2p.datatype = "ncclInt64";
	d.v5.p2p.peer = 5;
	d.v5.p2p.nChannels = 2;
	if (v >= 7)
		d.v7.p2p.userTag = 0x929;
	CHECK(stop(&p, start(&p, &d)) == 0);
	CHECK(stop(&p, capi) == 0);
	set_hdr(&d, v, NBPF_PROF_PROXY_CTRL, NULL, 0);
	a = (nbpf_prof_state_args_v4_t){ .proxyCtrl = { .appendedProxyOps = 6 } };
	CHECK(stop(&p, raise_ev(&p, &d, (const int[]){ 14, 17 }, 2, &a)) == 0);
	types |= NBPF_PROF_P2P_API | NBPF_PROF_P2P | NBPF_PROF_PROXY_CTRL;

	/* Telemetry counts every event NCCL started, tracked or not. */
	comm_events(comm, cnt);
	for (int b = 0; b < NCCLBPF_EV_TYPES; b++) {
		uint64_t want = types & (1u << b) ? 1 : 0;

		if (b == 1 && v >= 7)
			want = 2; /* the symmetric Coll too */
		CHECK_MSG(cnt[b] == want, "v%d events=%d: type bit %d counted %llu, want %llu", v,
			  events, b, (unsigned long long)cnt[b], (unsigned long long)want);
	}

	check_prom(comm, v >= 6 ? "CeBatch" : "KernelLaunch", 1);
	check_prom(comm, "Coll", v >= 7 ? 2 : 1);
	if (events) {
		struct ncclbpf_map *mc = map_by_name("ev_count"), *ml = map_by_name("ev_last");
		struct ncclbpf_prof_event e;

		for (uint32_t b = 0; mc && b < NCCLBPF_EV_TYPES; b++) {
			uint64_t n = 0;

			CHECK(ncclbpf_map__lookup(mc, &b, &n) == 0);
			CHECK_MSG(n == cnt[b], "v%d: type bit %u reached the program %llu times, counted %llu",
				  v, b, (unsigned long long)n, (unsigned long long)cnt[b]);
		}
		e = last_of(ml, NBPF_PROF_GROUP_API);
		CHECK(e.flags & NCCLBPF_EVF_GRAPH_CAPTURED && e.group_depth == 2);
		CHECK(e.states == (1u << 23 | 1u << 24) && e.last_state == 24 && e.comm_id == comm);
		e = last_of(ml, NBPF_PROF_COLL_API);
		CHECK(e.coll_type == NCCLBPF_COLL_ALLREDUCE && e.count == 1000 && e.n_bytes == 4000 &&
		      e.root == 0 && e.user_tag == (v >= 7 ? 0x7a9u : 0) && e.parent_type == NBPF_PROF_GROUP_API);
		e = last_of(ml, NBPF_PROF_COLL);
		if (v >= 7) /* the symmetric one, stopped last */
			CHECK(e.seq == 42 && e.coll_type == NCCLBPF_COLL_ALLGATHER && e.n_bytes == 10 * 2 * 8 &&
			      e.algo == -1 && e.proto == -1 && (e.flags & NCCLBPF_EVF_SYMMETRIC) &&
			      e.user_tag == 0x5ca1ab1e && e.n_channels == 2);
		else
			CHECK(e.seq == 41 && e.coll_type == NCCLBPF_COLL_ALLREDUCE && e.n_bytes == 4000 &&
			      e.algo == NCCLBPF_ALGO_RING && e.proto == NCCLBPF_PROTO_LL128 && e.rank == 3 &&
			      e.parent_type == NBPF_PROF_COLL_API && !(e.flags & NCCLBPF_EVF_SYMMETRIC));
		e = last_of(ml, NBPF_PROF_KERNEL_CH);
		CHECK(e.channel == 3 && e.gpu_start_ns == 1000 && e.gpu_stop_ns == 2000 &&
		      (e.flags & NCCLBPF_EVF_GPU_TIMED) && e.parent_type == NBPF_PROF_COLL &&
		      e.states == 1u << NBPF_PROF_STATE_KERNEL_CH_STOP);
		e = last_of(ml, NBPF_PROF_PROXY_OP);
		CHECK(e.peer == 1 && e.states == 1u << 19 && e.parent_type == NBPF_PROF_COLL);
		e = last_of(ml, NBPF_PROF_PROXY_STEP);
		CHECK(e.step == 7 && e.n_bytes == 65536 && e.states == (1u << 8 | 1u << 9) &&
		      e.last_state == 9 && e.parent_type == NBPF_PROF_PROXY_OP);
		e = last_of(ml, NBPF_PROF_NET_PLUGIN);
		CHECK(e.states == 1u << 21 && e.parent_type == NBPF_PROF_PROXY_STEP);
		e = last_of(ml, NBPF_PROF_KERNEL_LAUNCH);
		CHECK(e.rank == 3 && e.parent_type == NBPF_PROF_GROUP_API && e.last_state == UINT32_MAX);
		e = last_of(ml, NBPF_PROF_P2P_API);
		CHECK(e.coll_type == 6 && e.count == 256 && e.n_bytes == 2048 && e.user_tag == (v >= 7 ? 0xa91u : 0));
		e = last_of(ml, NBPF_PROF_P2P);
		CHECK(e.coll_type == 6 && e.peer == 5 && e.n_channels == 2 && e.n_bytes == 2048 &&
		      e.user_tag == (v >= 7 ? 0x929u : 0) && e.parent_type == NBPF_PROF_P2P_API);
		e = last_of(ml, NBPF_PROF_PROXY_CTRL);
		CHECK(e.appended == 6 && e.states == (1u << 14 | 1u << 17));
		if (v >= 6) {
			e = last_of(ml, NBPF_PROF_CE_COLL);
			CHECK(e.seq == 9 && e.coll_type == NCCLBPF_COLL_ALLGATHER && e.count == 64 &&
			      e.n_bytes == 64 * 8 && e.root == -1 && e.ce_batch_size == 4 &&
			      e.ce_num_batches == 2 && e.ce_seq == 77 &&
			      (e.flags & NCCLBPF_EVF_MULTICAST) && (e.flags & NCCLBPF_EVF_INTRA_SYNC) &&
			      e.states == (1u << 25 | 1u << 26) && e.user_tag == (v >= 7 ? 0xceu : 0) &&
			      e.parent_type == NBPF_PROF_COLL_API);
			e = last_of(ml, NBPF_PROF_CE_SYNC);
			CHECK((e.flags & NCCLBPF_EVF_COMPLETE) && e.n_ranks == 8 &&
			      e.states == (1u << 27 | 1u << 28) && e.parent_type == NBPF_PROF_CE_COLL);
			e = last_of(ml, NBPF_PROF_CE_BATCH);
			CHECK(e.count == 3 && e.n_bytes == 12345 && !(e.flags & NCCLBPF_EVF_INTRA_SYNC) &&
			      e.states == (1u << 29 | 1u << 30) && e.parent_type == NBPF_PROF_CE_COLL);
		}
		if (v >= 7) {
			e = last_of(ml, NBPF_PROF_KERNEL_PHASE);
			CHECK(e.channel == 3 && e.phase == 1 && e.gpu_start_ns == 1100 &&
			      e.gpu_stop_ns == 1900 && e.parent_type == NBPF_PROF_KERNEL_CH &&
			      e.states == 1u << NBPF_PROF_STATE_KERNEL_PHASE_STOP);
		}
		e = last_of(ml, NBPF_PROF_GROUP);
		CHECK(e.abi_version == (uint32_t)v && e.start_ns > 0 && e.n_ranks == 8);
		if (mc)
			ncclbpf_map__put(mc);
		if (ml)
			ncclbpf_map__put(ml);
	}
	CHECK(prof_fini(&p) == 0);
	emu_close(&p.pl);
}

/*
 * Event programs under NCCL's threads: a launching thread starts and stops
 * Colls (half before their channels report, half after) and stops each one
 * twice; a proxy thread raises each Coll's two KernelCh and a ProxyOp with a
 * ProxyStep and their states, and records late on stopped handles.  Every
 * event stopped reaches the program exactly once, whatever the interleaving
 * (and TSan sees no race on the records).
 */
#define RACE_MAX 4096

struct race {
	struct prof *p;
	void *colls[RACE_MAX];
	_Atomic int ready, n;
	int failures;
};

static void *race_proxy(void *arg)
{
	struct race *r = arg;
	nbpf_prof_state_args_v4_t a = { .proxyStep = { .transSize = 4096 } };

	for (int i = 0; i < r->n; i++) {
		union descr d;
		void *k0, *k1, *op, *st;

		while (atomic_load(&r->ready) <= i)
			sched_yield();
		k0 = start_kch(r->p, r->colls[i], 0, 100);
		k1 = start_kch(r->p, r->colls[i], 1, 150);
		op = start_proxy_op(r->p, r->colls[i]);
		set_hdr(&d, r->p->v, NBPF_PROF_PROXY_STEP, op, 3);
		st = start(r->p, &d);
		r->failures += !k0 || !k1 || !op || !st;
		r->failures += record(r->p, st, 9, &a) != 0;
		r->failures += record_kch_stop(r->p, k0, 200) + record_kch_stop(r->p, k1, 300);
		r->failures += stop(r->p, st) + stop(r->p, op) + stop(r->p, k1) + stop(r->p, k0);
		/* Late: a state and a stop on handles already stopped. */
		r->failures += record(r->p, st, 10, &a) != 0 || stop(r->p, k0) != 0;
	}
	return NULL;
}

static void test_race(void)
{
	struct prof p = { .v = 7 };
	struct race *r = calloc(1, sizeof(*r));
	uint64_t comm = 0x9ace, cnt[NCCLBPF_EV_TYPES], n = 0;
	struct ncclbpf_map *mc;
	char err[512];
	pthread_t th;

	r->p = &p;
	r->n = (int)(RACE_MAX / 4 * emu_scale());
	if (r->n > RACE_MAX)
		r->n = RACE_MAX;
	emu_set_policy(emu_policy("t_events"));
	CHECK(emu_open(&p.pl, EMU_PROFILER, EMU_PLUGIN, 7, err, sizeof(err)) == 0);
	CHECK(prof_init(&p, comm) == 0 && p.ctx);
	pthread_create(&th, NULL, race_proxy, r);
	for (int i = 0; i < r->n; i++) {
		r->colls[i] = start_coll(&p, NULL, (uint64_t)i, 256, 2);
		if (i & 1)
			CHECK(stop(&p, r->colls[i]) == 0);
		atomic_store(&r->ready, i + 1);
		if (!(i & 1))
			CHECK(stop(&p, r->colls[i]) == 0);
		CHECK(stop(&p, r->colls[i]) == 0); /* a duplicate: a no-op */
	}
	pthread_join(th, NULL);
	CHECK_EQ_U64(r->failures, 0);
	comm_events(comm, cnt);
	mc = map_by_name("ev_count");
	for (uint32_t b = 0; mc && b < NCCLBPF_EV_TYPES; b++) {
		uint64_t v = 0;

		CHECK(ncclbpf_map__lookup(mc, &b, &v) == 0);
		CHECK_MSG(v == cnt[b], "type bit %u: %llu program runs, %llu events", b,
			  (unsigned long long)v, (unsigned long long)cnt[b]);
		n += v;
	}
	CHECK_EQ_U64(n, (uint64_t)r->n * 5); /* Coll, 2 KernelCh, ProxyOp, ProxyStep */
	if (mc)
		ncclbpf_map__put(mc);
	CHECK(prof_fini(&p) == 0);
	emu_close(&p.pl);
	free(r);
}

int main(void)
{
	char dir[600];

	CHECK(mkdtemp(tmpdir) != NULL);
	snprintf(dir, sizeof(dir), "%s/ctl", tmpdir);
	setenv("NCCLBPF_CTL_DIR", dir, 1);
	snprintf(dir, sizeof(dir), "%s/maps", tmpdir);
	setenv("NCCLBPF_MAP_DIR", dir, 1);
	for (int v = 5; v <= 7; v++) {
		run(v, true);
		run(v, false);
	}
	test_race();
	/* The plugin removed its socket and map files at its last release. */
	snprintf(dir, sizeof(dir), "%s/ctl", tmpdir);
	rmdir(dir);
	snprintf(dir, sizeof(dir), "%s/maps", tmpdir);
	rmdir(dir);
	CHECK(rmdir(tmpdir) == 0);
	return check_summary("emulator_prof_events");
}
