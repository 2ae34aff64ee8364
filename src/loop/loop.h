/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * loop.h - closed loop 1: profiler telemetry of every rank -> one plan ->
 * every rank's tuner, applied from an agreed call.
 *
 * Works with policies/adaptive_channels.bpf.c: each rank's profiler fills
 * `latency_ewma` (per channel count: samples and their sum), the tuner
 * reads `channel_plan` only.  The aggregator tries candidate channel
 * counts one after the other on every rank at once, measures each for a
 * window of samples, takes the worst rank's mean per count (a collective
 * is as slow as its slowest rank), and settles on the best count per key.
 * Every plan write carries the call from which it applies, chosen ahead
 * of every rank, so all ranks switch on the same collective.
 */
#ifndef NCCLBPF_LOOP_H
#define NCCLBPF_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define NBPF_LOOP_MAX_CAND 16
#define NBPF_LOOP_MAX_CH   64
#define NBPF_LOOP_MAX_KEYS 8   /* keys (collective x size bucket) handled at once */
#define NBPF_LOOP_N_KEYS   (5 * 32)

/* The plan word of adaptive_channels: count from call `from` on, prev before. */
static inline uint64_t nbpf_loop_plan_word(unsigned ch, unsigned prev, uint64_t from)
{
	return (uint64_t)(ch & 0xff) | (uint64_t)(prev & 0xff) << 8 | from << 16;
}

/* What the policy's profiler keeps per key (must match the policy). */
struct nbpf_loop_tele {
	uint64_t samples, ewma_ns;
	uint64_t samples_by_ch[NBPF_LOOP_MAX_CH];
	uint64_t sum_by_ch_ns[NBPF_LOOP_MAX_CH];
};

struct nbpf_loop_opts {
	int cand[NBPF_LOOP_MAX_CAND]; /* channel counts to try, in order */
	int n_cand;
	uint64_t window;     /* samples per rank and key for each candidate */
	uint64_t margin;     /* calls ahead of the highest rank; 0: from the rate */
	double margin_s;     /* with margin 0: this many seconds of calls (+1000) */
	int ranks;           /* wait for this many local processes (0: those present) */
	const int *pids;     /* only these local processes (NULL: every one with the maps) */
	int n_pids;
	int timeout_ms;      /* per step: waiting for processes, samples or other nodes */
	/* Shared-file mode (several nodes): NULL for one node. */
	const char *share_dir;
	const char *node;    /* this node's name, unique in the job */
	int nodes;           /* aggregators taking part, this one included */
	FILE *log;           /* progress lines, or NULL */
};

struct nbpf_loop_key {
	uint32_t key;                         /* coll * 32 + size bucket */
	double mean_ns[NBPF_LOOP_MAX_CAND];   /* worst rank's mean per candidate; 0: no data */
	int best;                             /* chosen channel count */
};

struct nbpf_loop_result {
	int n_procs;                          /* local processes driven */
	int n_keys;
	struct nbpf_loop_key keys[NBPF_LOOP_MAX_KEYS];
	uint64_t step_call[NBPF_LOOP_MAX_CAND + 1]; /* activation call of each write */
	int n_steps;
	uint64_t final_call;                  /* the call from which the final plan applies */
	uint64_t late;                        /* writes that found a rank already past their call */
};

/*
 * Runs one exploration: every candidate in turn, then the best per key,
 * on every local process that has both maps (and, with share_dir, on
 * every node's through their aggregators).  0, or a negative errno with
 * a message through ncclbpf_errmsg().  res->late > 0 means some rank may
 * have switched on a different call: margin too small.
 */
int nbpf_loop_run(const struct nbpf_loop_opts *o, struct nbpf_loop_result *res);

/* ---- shared-file exchange (loop_share.c) ---------------------------------- */

/* One aggregator's contribution to a step. */
struct nbpf_loop_share {
	uint64_t calls;   /* highest call of its ranks */
	double rate;      /* calls per second, fastest rank */
	int n_keys;
	uint32_t key[NBPF_LOOP_MAX_KEYS];
	double mean_ns[NBPF_LOOP_MAX_KEYS]; /* worst rank's mean for the step's measured candidate */
};

/*
 * Writes this node's record for step (atomically: temporary + rename),
 * waits until `nodes` records of the step exist, and merges them into
 * out: calls and rate are the maxima, keys the union, means the worst.
 * Every node reads the same files, so every node computes the same plan.
 * 0, -ETIMEDOUT, or a negative errno.
 */
int nbpf_loop_share_step(const char *dir, const char *node, int nodes, int step,
			 const struct nbpf_loop_share *mine, struct nbpf_loop_share *out,
			 int timeout_ms);

#endif
