// SPDX-License-Identifier: Apache-2.0
/*
 * bench_chunk.c - per-call cost of getChunkSize (tuner v7) through the
 * plugin loaded as NCCL loads it, with what NCCL passes for the parts of
 * Ring/Simple AllReduce of 8 B to 8 GiB on an 8-GPU node (emu_chunk_calls).
 *
 *     bench_chunk PLUGIN.so [CALLS]       (NCCLBPF_POLICY selects the policy)
 *
 * Prints one line, as bench_tuner does: P50 and P99 in ns of bracketed
 * calls, and the best batch mean of unbracketed runs.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../bench_util.h"
#include "emulator/emu.h"

int main(int argc, char **argv)
{
	struct emu_topo topo = EMU_TOPO_DEFAULT;
	struct emu_chunk_call parts[64];
	struct emu_plugin pl;
	struct emu_tuner tu;
	uint64_t calls = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000, *lat;
	int n = 0;
	double mean = 1e30;
	char err[512];

	if (argc < 2 || calls < 1000) {
		fprintf(stderr, "usage: bench_chunk PLUGIN.so [CALLS>=1000]\n");
		return 2;
	}
	if (emu_open(&pl, EMU_TUNER, argv[1], 7, err, sizeof(err)) || pl.version != 7) {
		fprintf(stderr, "%s\n", pl.version ? "no ncclTunerPlugin_v7" : err);
		return 2;
	}
	if (emu_tuner_init(&tu, &pl, 42, &topo, NULL) || !tu.ctx) {
		fprintf(stderr, "init failed\n");
		return 2;
	}
	for (int i = 0; i < 16 && n + EMU_MAX_CHUNK_CALLS <= 64; i++)
		n += emu_chunk_calls(&topo, 4, 8ull << (2 * i), 1, 2, 0, parts + n);
	lat = malloc(calls * sizeof(*lat));
	if (!lat || !n)
		return 2;
	const nbpf_tuner_v7_t *v7 = pl.table;

	for (uint64_t i = 0; i < calls + calls / 10; i++) {
		const struct emu_chunk_call *c = &parts[i % (uint64_t)n];
		size_t chunk = c->nccl_chunk;
		uint64_t t0 = now_ns();

		v7->getChunkSize(tu.ctx, 4, c->n_bytes, 1, 2, c->n_channels, &chunk);
		if (i >= calls / 10)
			lat[i - calls / 10] = now_ns() - t0;
	}
	/* Best of 20 batches: other load on the machine only ever adds. */
	for (int b = 0; b < 20; b++) {
		uint64_t b0 = now_ns(), m = calls / 20;

		for (uint64_t i = 0; i < m; i++) {
			const struct emu_chunk_call *c = &parts[i % (uint64_t)n];
			size_t chunk = c->nccl_chunk;

			v7->getChunkSize(tu.ctx, 4, c->n_bytes, 1, 2, c->n_channels, &chunk);
			__asm__ volatile("" ::: "memory");
		}
		if ((double)(now_ns() - b0) / (double)m < mean)
			mean = (double)(now_ns() - b0) / (double)m;
	}
	qsort(lat, calls, sizeof(*lat), cmp_u64);
	printf("p50_ns=%llu p99_ns=%llu mean_unbracketed_ns=%.1f calls=%llu\n",
	       (unsigned long long)lat[calls / 2], (unsigned long long)lat[calls * 99 / 100], mean,
	       (unsigned long long)calls);
	emu_tuner_fini(&tu);
	emu_close(&pl);
	free(lat);
	return 0;
}
