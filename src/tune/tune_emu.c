// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tune_emu.c - tune's emulator back-end.  The plugin is loaded in this
 * process through the NCCL emulator with the sweep policy; each run is one
 * getCollInfo as NCCL makes it, and its "measured" time is the emulator's
 * true latency of the cell NCCL then runs, with noise.
 *
 * The true latency is NCCL's own model (emu_cost_table) except where the
 * options skew it: that is how tests plant places where NCCL's model is
 * wrong, and check that tune finds exactly those.  Channels: fewer than
 * the 16 the modelled node builds slow the bandwidth-bound part of a call
 * in proportion (an assumption; more than 16 change nothing, as in NCCL,
 * which treats the count as a maximum).  Chunk sizes: NCCL's own is taken
 * for the best, and every factor of two away from it costs 2% (an
 * assumption; a skew with a chunk size plants the exceptions).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emulator/emu_cli.h"
#include "tune_backend.h"

struct be_emu {
	struct tune_be be;
	struct tune_emu_opts e;
	struct emu_plugin pl;
	struct emu_tuner t;
	uint64_t rng;
};

double tune_emu_truth(const struct tune_emu_opts *e, int coll, uint64_t n_bytes, int algo,
		      int proto, int n_channels, uint32_t chunk, uint32_t nccl_chunk)
{
	float table[NBPF_NCCL_NUM_ALGORITHMS][NBPF_NCCL_NUM_PROTOCOLS];
	bool skewed_chunk = false;
	int na, np;
	double t;

	emu_cost_table(&e->topo, coll, n_bytes, table);
	if (algo < 0 || algo >= NBPF_NCCL_NUM_ALGORITHMS || proto < 0 ||
	    proto >= NBPF_NCCL_NUM_PROTOCOLS || table[algo][proto] < 0)
		return -1;
	emu_pick(table, &na, &np);
	t = table[algo][proto];
	for (int i = 0; i < e->n_skews; i++) {
		const struct tune_skew *s = &e->skews[i];

		if (s->coll != coll || s->algo != algo || s->proto != proto || n_bytes < s->lo ||
		    n_bytes > s->hi || (s->chunk && s->chunk != chunk))
			continue;
		t = s->rel_nccl && na >= 0 ? s->factor * table[na][np] : s->factor * t;
		skewed_chunk |= s->chunk != 0;
	}
	if (chunk && nccl_chunk && chunk != nccl_chunk && !skewed_chunk)
		t *= 1.0 + 0.02 * fabs(log2((double)chunk / nccl_chunk));
	if (n_channels > 0 && n_channels < 16) {
		/* Weight of the bandwidth-bound part: ~0 for small, ~1 for large calls. */
		double w = (double)n_bytes / ((double)n_bytes + (1 << 20));

		t *= 1.0 + w * (16.0 / n_channels - 1.0);
	}
	return t;
}

double tune_emu_truth_of(const struct tune_emu_opts *e, int coll, uint64_t n_bytes,
			 const struct emu_decision *d)
{
	uint32_t nccl_chunk = d->n_chunks ? emu_chunk_final(d->proto, d->chunks[0].max_chunk,
							    d->chunks[0].nccl_chunk) : 0;

	return tune_emu_truth(e, coll, n_bytes, d->algo, d->proto, d->n_channels,
			      d->n_chunks ? d->chunk[0] : 0, nccl_chunk);
}

/* xorshift64* and Box-Muller: reproducible noise from the seed. */
static double uniform(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return ((*s * 0x2545F4914F6CDD1Dull) >> 11) * (1.0 / 9007199254740992.0);
}

static double gauss(uint64_t *s)
{
	double u = uniform(s), v = uniform(s);

	return sqrt(-2.0 * log(u > 0 ? u : 1e-300)) * cos(2 * M_PI * v);
}

static int emu_run(struct tune_be *be, int coll, uint64_t n_bytes, double *us, char *err,
		   size_t errlen)
{
	struct be_emu *b = (struct be_emu *)be;
	struct emu_decision d;
	double t;

	if (emu_tuner_call(&b->t, &b->e.topo, coll, n_bytes, &d)) {
		snprintf(err, errlen, "getCollInfo failed at %llu bytes", (unsigned long long)n_bytes);
		return -EIO;
	}
	t = tune_emu_truth_of(&b->e, coll, n_bytes, &d);
	if (t < 0) {
		snprintf(err, errlen, "%s %llu B: NCCL would run %s/%s, which has no cost",
			 emu_coll_name(coll), (unsigned long long)n_bytes, emu_algo_name(d.algo),
			 emu_proto_name(d.proto));
		return -EPROTO;
	}
	t *= 1.0 + b->e.noise * gauss(&b->rng);
	*us = t > 0 ? t : 1e-3;
	return 0;
}

static void emu_close_be(struct tune_be *be)
{
	struct be_emu *b = (struct be_emu *)be;

	emu_cli_tuner_close(&b->pl, &b->t);
	free(b);
}

int tune_be_emu_open(const struct tune_opts *o, struct tune_be **out, char *err, size_t errlen)
{
	struct be_emu *b = calloc(1, sizeof(*b));
	int ret;

	if (!b) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	b->e = o->emu;
	b->rng = o->emu.seed ? o->emu.seed : 0x9e3779b97f4a7c15ull;
	/* The newest tuner ABI: NCCL 2.30's getChunkSize lets chunk sizes be swept. */
	ret = emu_cli_tuner_open(&b->pl, &b->t, o->sweep_obj, 7, &b->e.topo, err, errlen);
	if (ret) {
		err[strcspn(err, "\n")] = 0;
		free(b);
		return ret;
	}
	b->be.pid = b->be.pids[0] = getpid();
	b->be.n_pids = 1;
	b->be.n_ranks = b->e.topo.n_ranks;
	b->be.n_nodes = b->e.topo.n_nodes;
	snprintf(b->be.desc, sizeof(b->be.desc),
		 "emulator: %d ranks on %d node(s)%s, noise %.1f%%, %d skew(s) of NCCL's model",
		 b->e.topo.n_ranks, b->e.topo.n_nodes, b->e.topo.nvls ? ", NVLS" : "",
		 100 * b->e.noise, b->e.n_skews);
	b->be.run = emu_run;
	b->be.close = emu_close_be;
	*out = &b->be;
	return 0;
}
