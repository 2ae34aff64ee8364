/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tune.h - `ncclbpf tune`: measure every (algorithm, protocol, channels,
 * chunk size) cell per collective and size band through the plugin itself, keep
 * NCCL's pick wherever the gain is inside the noise, and write the result
 * as a policy with a read-only table.
 *
 * The measuring process loads policies/sweep.bpf.o; between runs the
 * tool writes the cell to force into its `sweep_cell` map (found over the
 * process's control socket, written through the map's shared-memory file)
 * and reads `sweep_seen` back: NCCL's own pick, the cells offered, and
 * whether the forced cell was applied.  Two back-ends run collectives:
 * the emulator, in this process, whose "measured" time is a latency model
 * that may deliberately differ from NCCL's (tests, demos), and real NCCL
 * through bench/gpu/nccl_sweep --serve, a child process.
 */
#ifndef NCCLBPF_TUNE_H
#define NCCLBPF_TUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "emulator/emu.h"

#define TUNE_NUM_COLLS   5
#define TUNE_NUM_BUCKETS 32
#define TUNE_MAX_SKEWS   16
#define TUNE_MAX_CHANS   8
#define TUNE_MAX_CHUNKS  8
#define TUNE_MAX_REPS    200

/* The maps of policies/sweep.bpf.c (same layout). */
struct tune_sweep_cell {
	uint32_t enabled;
	int32_t algo, proto, n_channels;
	uint32_t chunk;
};

struct tune_sweep_seen {
	int32_t nccl_algo, nccl_proto;
	uint32_t avail_mask, reserved;
	uint64_t calls, applied;
};

/* Per (collective, size bucket of a channel part): NCCL's getChunkSize calls. */
struct tune_sweep_chunk_seen {
	uint32_t nccl_chunk, reserved;
	uint64_t calls, applied;
};

/*
 * A deliberate error of the emulator's "true" latency against NCCL's
 * model: within [lo, hi] bytes of coll, cell (algo, proto) takes factor x
 * its modelled time (rel_nccl false) or factor x the time of NCCL's own
 * pick (rel_nccl true: a near-tie when factor is close to 1); with chunk
 * set, only when NCCL plans the first channel's part with that chunk size.
 */
struct tune_skew {
	int coll, algo, proto;
	uint64_t lo, hi;
	uint32_t chunk;    /* 0: any chunk */
	double factor;
	bool rel_nccl;
};

struct tune_emu_opts {
	struct emu_topo topo;
	struct tune_skew skews[TUNE_MAX_SKEWS];
	int n_skews;
	double noise;      /* relative standard deviation of one measurement */
	uint64_t seed;
};

enum tune_backend { TUNE_BACKEND_EMU, TUNE_BACKEND_NCCL };

struct tune_opts {
	enum tune_backend backend;
	bool colls[TUNE_NUM_COLLS];
	uint64_t min_bytes, max_bytes;
	int channels[TUNE_MAX_CHANS]; /* 0: NCCL's count */
	int n_channels;
	uint32_t chunks[TUNE_MAX_CHUNKS]; /* chunk sizes to force, 0: NCCL's (tuner v6+) */
	int n_chunks;
	int reps;                     /* repetitions per cell (>= 2) */
	double min_gain;              /* a win must also beat NCCL by this fraction */
	const char *sweep_obj;        /* policies/sweep.bpf.o */
	const char *out_dir;          /* where the policy and the report go */
	const char *name;             /* policy name (C identifier) */
	bool compile;                 /* run clang and verify; false: emit the source only */
	const char *clang;            /* NULL: $CLANG, else "clang" */
	const char *include_dir;      /* -I for policy.h */
	struct tune_emu_opts emu;
	/*
	 * NCCL back-end: nccl_sweep binary, plugin library, GPUs, iterations per
	 * run; ranks >= 2: that many nccl_sweep processes on one GPU, each its
	 * own NCCL host (bench/gpu/ranks.sh's method), instead of one process
	 * over ngpus GPUs.
	 */
	const char *sweep_bin, *plugin;
	int ngpus, iters, warmup, ranks;
	int run_timeout_s;            /* longest wait for one answer; then the child is killed */
	FILE *log;                    /* progress lines; NULL: quiet */
};

/* One measured cell of one (coll, size). */
struct tune_meas {
	int algo, proto, n_channels; /* algo -1: NCCL's default (nothing forced) */
	uint32_t chunk;               /* 0: NCCL's chunk size */
	uint32_t parts;               /* bit b: NCCL asked for a chunk for a part of bucket b */
	int n;
	double mean_us, lo_us, hi_us; /* mean and its 95% confidence interval */
	double busbw;                 /* GB/s at the mean */
};

struct tune_point {
	int coll;
	uint64_t n_bytes;
	int nccl_algo, nccl_proto;
	uint32_t avail_mask;
	struct tune_meas def;        /* NCCL's default, pooled with its own cell forced */
	struct tune_meas *cells;
	int n_cells;
	int best;                    /* index into cells of the fastest mean, -1 none */
	int choice;                  /* index into cells chosen, -1: keep NCCL's pick */
	double gain;                 /* def.mean / best.mean - 1 */
};

struct tune_result {
	struct tune_point *pts;
	int n_pts;
	int n_ranks, n_nodes;
	char backend_desc[256];
};

/* Statistics (tune_stats.c). */
/* Mean and the half-width of its 95% Student t interval over n samples. */
void tune_mean_ci(const double *x, int n, double *mean, double *half);
/*
 * The decision rule: index of the cell to deploy, or -1 to keep NCCL's
 * pick.  A cell wins only when even the upper end of its interval beats
 * the lower end of the default's by more than min_gain (so the gain is
 * outside the noise); among the winners the lowest mean, and a forced
 * chunk size or channel count only when it also wins that way against the
 * same cell with NCCL's chunk or count.
 */
int tune_choose(const struct tune_meas *def, const struct tune_meas *cells, int n,
		double min_gain);
double tune_bus_factor(int coll, int n_ranks);
/* ncclbpf_size_bucket of policy.h: floor(log2(n)), the last bucket from 2 GiB. */
int tune_size_bucket(uint64_t n_bytes);

/* Sweep (tune.c): runs the measurements; 0 or a negative errno, message in err. */
int tune_run(const struct tune_opts *o, struct tune_result *res, char *err, size_t errlen);
void tune_result_free(struct tune_result *res);

/* Output (tune_emit.c). */
/* Writes NAME.bpf.c; compiles it to NAME.bpf.o and verifies it strictly when o->compile. */
int tune_emit_policy(const struct tune_opts *o, const struct tune_result *res, char *err,
		     size_t errlen);
/* Writes NAME.report.txt, NAME.csv and NAME.svg (busbw per cell against NCCL's default). */
int tune_emit_report(const struct tune_opts *o, const struct tune_result *res, char *err,
		     size_t errlen);
/* The report table to f. */
void tune_print_table(FILE *f, const struct tune_result *res);

/* Names */
int tune_algo_from_name(const char *s);
int tune_proto_from_name(const char *s);
/* "COLL:LO:HI:ALGO/PROTO[@CHUNK]*F" or "...~F"; 0 or -EINVAL. */
int tune_parse_skew(const char *s, struct tune_skew *sk);

#endif
