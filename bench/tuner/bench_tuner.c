/*
 * bench_tuner.c - per-call cost of getCollInfo through a tuner plugin
 * loaded as NCCL loads it (dlopen RTLD_NOW|RTLD_LOCAL, ncclTunerPlugin_v5),
 * with a fresh emulator cost table per call (8-GPU NVLink node, AllReduce,
 * 16 sizes from 8 B to 8 GiB in steps of 4x).
 *
 *     bench_tuner PLUGIN.so [CALLS]       (NCCLBPF_POLICY selects the policy)
 *
 * Prints one line: P50 and P99 in ns (each sample brackets one call with
 * two clock_gettime reads; the same bracket cost is in every row), and the
 * best batch mean of unbracketed runs of the same calls (table copy included), which
 * shows small differences the ~20 ns bracket hides.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bench_util.h"
#include "emulator/emu.h"

static int cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct emu_topo topo = EMU_TOPO_DEFAULT;
	float tables[16][7][3], t[7][3];
	struct emu_plugin pl;
	struct emu_tuner tu;
	uint64_t calls = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;
	uint32_t *lat;
	char err[512];

	if (argc < 2 || calls < 1000) {
		fprintf(stderr, "usage: bench_tuner PLUGIN.so [CALLS>=1000]\n");
		return 2;
	}
	if (emu_open(&pl, EMU_TUNER, argv[1], 5, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	if (emu_tuner_init(&tu, &pl, 42, &topo, NULL) || !tu.ctx) {
		fprintf(stderr, "init failed\n");
		return 2;
	}
	lat = malloc(calls * sizeof(*lat));
	if (!lat)
		return 2;
	for (int i = 0; i < 16; i++)
		emu_cost_table(&topo, 4, 8ull << (2 * i), tables[i]);
	const nbpf_tuner_v5_t *v5 = pl.table;

	for (uint64_t i = 0; i < calls + calls / 10; i++) {
		int k = (int)(i & 15), nch = 0;
		uint64_t t0, t1;

		memcpy(t, tables[k], sizeof(t));
		t0 = now_ns();
		v5->getCollInfo(tu.ctx, 4, 8ull << (2 * k), 1, (float **)t, 7, 3, 0, &nch);
		t1 = now_ns();
		if (i >= calls / 10)
			lat[i - calls / 10] = (uint32_t)(t1 - t0);
	}
	/* Best of 20 batches: other load on the machine only ever adds. */
	double mean = 1e30;

	for (int b = 0; b < 20; b++) {
		uint64_t b0 = now_ns(), n = calls / 20;

		for (uint64_t i = 0; i < n; i++) {
			int k = (int)(i & 15), nch = 0;

			memcpy(t, tables[k], sizeof(t));
			v5->getCollInfo(tu.ctx, 4, 8ull << (2 * k), 1, (float **)t, 7, 3, 0, &nch);
			__asm__ volatile("" ::: "memory");
		}
		double m = (double)(now_ns() - b0) / (double)n;

		if (m < mean)
			mean = m;
	}

	qsort(lat, calls, sizeof(*lat), cmp);
	printf("p50_ns=%u p99_ns=%u mean_unbracketed_ns=%.1f calls=%llu\n", lat[calls / 2],
	       lat[calls * 99 / 100], mean, (unsigned long long)calls);
	emu_tuner_fini(&tu);
	emu_close(&pl);
	free(lat);
	return 0;
}
