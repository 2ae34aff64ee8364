// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench_profiler.c - what the profiler plugin costs NCCL's threads, through
 * the library as NCCL loads it (profiler v5, NCCLBPF_POLICY from the
 * environment):
 *   - events: a Coll with two KernelCh children, as NCCL raises them
 *     (8 calls), COLLS times on one thread: mean ns per call;
 *   - sweep: 1600 Colls whose channels never report fill the 2048-slot
 *     pool, wait until they are stale (1.1 s), then 2000 Coll starts are
 *     timed one by one: P50, P99 and the slowest startEvent.
 *
 *   bench_profiler PLUGIN [COLLS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench_util.h"
#include "emulator/emu.h"

#define STALE 1600
#define TIMED 2000

static const nbpf_profiler_v5_t *tab;
static void *pctx;
static int mask;

static void *start(nbpf_prof_descr_v5_t *d)
{
	void *h = NULL;

	tab->startEvent(pctx, &h, d);
	return h;
}

static void *coll(uint64_t seq, int nch)
{
	nbpf_prof_descr_v5_t d;

	memset(&d, 0, sizeof(d));
	d.type = NBPF_PROF_COLL;
	d.rank = 0;
	d.coll.seqNumber = seq;
	d.coll.func = "AllReduce";
	d.coll.count = 1 << 20;
	d.coll.datatype = "ncclFloat32";
	d.coll.nChannels = (uint8_t)nch;
	d.coll.algo = "RING";
	d.coll.proto = "SIMPLE";
	return start(&d);
}

static void *kch(void *parent, int ch, uint64_t t)
{
	nbpf_prof_descr_v5_t d;

	memset(&d, 0, sizeof(d));
	d.type = NBPF_PROF_KERNEL_CH;
	d.parentObj = parent;
	d.kernelCh.channelId = (uint8_t)ch;
	d.kernelCh.pTimer = t;
	return start(&d);
}

static void kch_stop(void *h, uint64_t t)
{
	nbpf_prof_state_args_v4_t a = { .kernelCh = { .pTimer = t } };

	tab->recordEventState(h, NBPF_PROF_STATE_KERNEL_CH_STOP, &a);
	tab->stopEvent(h);
}

int main(int argc, char **argv)
{
	struct emu_plugin pl;
	struct timespec ts = { 1, 100000000 };
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 0) : 1000000, t0, dt[TIMED];
	char err[512];

	if (argc < 2 || emu_open(&pl, EMU_PROFILER, argv[1], 5, err, sizeof(err))) {
		fprintf(stderr, "usage: bench_profiler PLUGIN [COLLS]%s%s\n", argc < 2 ? "" : ": ",
			argc < 2 ? "" : err);
		return 2;
	}
	tab = pl.table;
	if (tab->init(&pctx, 0x1234, &mask, "bench", 1, 8, 0, NULL) || !pctx) {
		fprintf(stderr, "bench_profiler: no profiler context\n");
		return 1;
	}
	t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		void *c = coll(i, 2), *k0 = kch(c, 0, 1000), *k1 = kch(c, 1, 1100);

		kch_stop(k0, 5000);
		tab->stopEvent(c);
		kch_stop(k1, 5200);
	}
	printf("events_ns=%.1f colls=%llu mask=0x%x\n", (double)(now_ns() - t0) / (double)(n * 8),
	       (unsigned long long)n, mask);

	for (int i = 0; i < STALE; i++)
		tab->stopEvent(coll(i, 2));
	nanosleep(&ts, NULL);
	for (int i = 0; i < TIMED; i++) {
		void *c;

		t0 = now_ns();
		c = coll(STALE + (uint64_t)i, 0);
		dt[i] = now_ns() - t0;
		tab->stopEvent(c);
	}
	qsort(dt, TIMED, sizeof(dt[0]), cmp_u64);
	printf("sweep_start_p50_ns=%llu p99_ns=%llu max_ns=%llu\n", (unsigned long long)dt[TIMED / 2],
	       (unsigned long long)dt[TIMED * 99 / 100], (unsigned long long)dt[TIMED - 1]);
	tab->finalize(pctx);
	emu_close(&pl);
	return 0;
}
