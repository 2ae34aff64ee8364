/*
 * bench_cold.c - what one plugin call costs when it is cold, as inside a
 * real job (4 ranks time-slicing one GPU call the tuner about every 27 ms,
 * and NCCL, CUDA and the other ranks evict everything in between), next to
 * the same call warm.
 *
 *     bench_cold PLUGIN.so [CALLS] [EVICT_MIB]      (NCCLBPF_POLICY selects the policy)
 *
 * Before each cold call the benchmark writes one byte per cache line of an
 * EVICT_MIB buffer (default 128: far more than the last-level cache) and
 * so also walks 4 KiB pages enough to empty the TLBs; then it times one
 * call with the time stamp counter (lfence; rdtsc on both sides, so the
 * bracket itself costs ~25 cycles, the same in every row).  Rows:
 *
 *   getCollInfo     the tuner's whole call (NCCL's AllReduce table, 8 GPUs)
 *   prof.Coll       profiler startEvent(Coll) + its KernelCh start, the
 *                   KernelCh stop state and stop, then the Coll's stop,
 *                   each callback timed alone (v5, KernelCh timing on)
 *   clock_gettime   one CLOCK_MONOTONIC read (what NCCLBPF_STATS=1 pays
 *                   twice per program run, and the profiler per event)
 *   rdtsc           one lfence; rdtsc (the alternative)
 *
 * Each row is printed cold and warm (the same call repeated, caches hot),
 * as p50 / p90 / mean in ns (TSC converted against CLOCK_MONOTONIC over
 * the whole run).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include "../bench_util.h"
#include "emulator/emu.h"

static inline uint64_t tsc(void)
{
	_mm_lfence();
	uint64_t t = __rdtsc();
	_mm_lfence();
	return t;
}

static volatile unsigned char *evict_buf;
static size_t evict_len;

static void evict(void)
{
	for (size_t i = 0; i < evict_len; i += 64)
		evict_buf[i]++;
}

struct row {
	const char *name;
	uint64_t *cold, *warm;
	size_t n;
};

static void print_row(const struct row *r, double tsc_per_ns)
{
	for (int w = 0; w < 2; w++) {
		uint64_t *v = w ? r->warm : r->cold;
		double sum = 0;

		qsort(v, r->n, sizeof(*v), cmp_u64);
		for (size_t i = 0; i < r->n; i++)
			sum += (double)v[i];
		printf("%-22s %-5s p50 %7.1f  p90 %7.1f  mean %7.1f ns\n", r->name, w ? "warm" : "cold",
		       (double)v[r->n / 2] / tsc_per_ns, (double)v[r->n * 9 / 10] / tsc_per_ns,
		       sum / (double)r->n / tsc_per_ns);
	}
}

enum { R_TUNER, R_CSTART, R_KSTART, R_KSTATE, R_KSTOP, R_CSTOP, R_CLOCK, R_TSC, R_N };

int main(int argc, char **argv)
{
	static const char *const names[R_N] = {
		"getCollInfo", "prof.startEvent Coll", "prof.startEvent KCh", "prof.recordEventState",
		"prof.stopEvent KCh", "prof.stopEvent Coll", "clock_gettime", "rdtsc",
	};
	struct emu_topo topo = EMU_TOPO_DEFAULT;
	size_t calls = argc > 2 ? strtoull(argv[2], NULL, 10) : 300;
	size_t mib = argc > 3 ? strtoull(argv[3], NULL, 10) : 128;
	struct emu_plugin pl, pp;
	struct emu_tuner tu;
	struct row rows[R_N];
	float table[7][3], t[7][3];
	void *pctx = NULL;
	int mask = 0;
	char err[512];
	uint64_t t0_ns, t0_tsc, gpu = 1000000;
	const nbpf_profiler_v5_t *p5;
	const nbpf_tuner_v5_t *v5;

	if (argc < 2 || calls < 10) {
		fprintf(stderr, "usage: bench_cold PLUGIN.so [CALLS>=10] [EVICT_MIB]\n");
		return 2;
	}
	evict_len = mib << 20;
	evict_buf = malloc(evict_len);
	if (!evict_buf || emu_open(&pl, EMU_TUNER, argv[1], 5, err, sizeof(err)) ||
	    emu_tuner_init(&tu, &pl, 42, &topo, NULL) || !tu.ctx) {
		fprintf(stderr, "bench_cold: cannot load %s as a tuner: %s\n", argv[1], err);
		return 2;
	}
	memset((void *)evict_buf, 1, evict_len);
	v5 = pl.table;
	p5 = NULL;
	if (!emu_open(&pp, EMU_PROFILER, argv[1], 5, err, sizeof(err)) && pp.version == 5) {
		p5 = pp.table;
		if (p5->init(&pctx, 42, &mask, "bench", 1, 8, 0, NULL) || !pctx)
			p5 = NULL;
	}
	for (int r = 0; r < R_N; r++) {
		rows[r].name = names[r];
		rows[r].cold = calloc(calls, sizeof(uint64_t));
		rows[r].warm = calloc(calls, sizeof(uint64_t));
		rows[r].n = calls;
		if (!rows[r].cold || !rows[r].warm)
			return 2;
	}
	emu_cost_table(&topo, 4, 1 << 20, table);
	t0_ns = now_ns();
	t0_tsc = tsc();
	for (int w = 0; w < 2; w++)
		for (size_t i = 0; i < calls; i++) {
			nbpf_prof_descr_v5_t cd = { .type = NBPF_PROF_COLL, .rank = 0 };
			nbpf_prof_descr_v5_t kd = { .type = NBPF_PROF_KERNEL_CH, .rank = 0 };
			nbpf_prof_state_args_v4_t ka = { 0 };
			void *hc = NULL, *hk = NULL;
			uint64_t a, b, *out[R_N];
			struct timespec ts;
			int nch = 0;

			for (int r = 0; r < R_N; r++)
				out[r] = w ? &rows[r].warm[i] : &rows[r].cold[i];
			memcpy(t, table, sizeof(t));
			if (!w)
				evict();
			a = tsc();
			v5->getCollInfo(tu.ctx, 4, 1 << 20, 1, (float **)t, 7, 3, 0, &nch);
			*out[R_TUNER] = tsc() - a;
			if (!w)
				evict();
			a = tsc();
			clock_gettime(CLOCK_MONOTONIC, &ts);
			*out[R_CLOCK] = tsc() - a;
			if (!w)
				evict();
			a = tsc();
			b = __rdtsc();
			__asm__ volatile("" ::"r"(b));
			*out[R_TSC] = tsc() - a;
			if (!p5)
				continue;
			cd.coll.seqNumber = i;
			cd.coll.func = "AllReduce";
			cd.coll.count = 1 << 18;
			cd.coll.datatype = "ncclFloat32";
			cd.coll.nChannels = 1;
			cd.coll.algo = "RING";
			cd.coll.proto = "SIMPLE";
			/* NCCL's order: the Coll starts and stops on the launching thread, its
			 * channel's KernelCh runs later on the proxy thread. */
			if (!w)
				evict();
			a = tsc();
			p5->startEvent(pctx, &hc, &cd);
			*out[R_CSTART] = tsc() - a;
			if (!w)
				evict();
			a = tsc();
			p5->stopEvent(hc);
			*out[R_CSTOP] = tsc() - a;
			kd.parentObj = hc;
			kd.kernelCh.pTimer = gpu;
			if (!w)
				evict();
			a = tsc();
			p5->startEvent(pctx, &hk, &kd);
			*out[R_KSTART] = tsc() - a;
			ka.kernelCh.pTimer = gpu + 20000;
			gpu += 30000;
			if (!w)
				evict();
			a = tsc();
			p5->recordEventState(hk, NBPF_PROF_STATE_KERNEL_CH_STOP, &ka);
			*out[R_KSTATE] = tsc() - a;
			if (!w)
				evict();
			a = tsc();
			p5->stopEvent(hk); /* the last reference: completes the Coll, runs the programs */
			*out[R_KSTOP] = tsc() - a;
		}
	double tsc_per_ns = (double)(tsc() - t0_tsc) / (double)(now_ns() - t0_ns);

	printf("# %s, policy %s, %zu calls cold (after writing %zu MiB) and warm, TSC %.3f GHz\n",
	       argv[1], getenv("NCCLBPF_POLICY") ? getenv("NCCLBPF_POLICY") : "(none)", calls, mib,
	       tsc_per_ns);
	for (int r = 0; r < R_N; r++)
		if (p5 || (r != R_CSTART && r != R_KSTART && r != R_KSTATE && r != R_KSTOP && r != R_CSTOP))
			print_row(&rows[r], tsc_per_ns);
	if (p5)
		p5->finalize(pctx);
	emu_tuner_fini(&tu);
	if (pp.table)
		emu_close(&pp);
	emu_close(&pl);
	return 0;
}
