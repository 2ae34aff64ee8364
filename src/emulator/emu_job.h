/* SPDX-License-Identifier: Apache-2.0 */
/*
 * emu_job.h - a running job without GPUs: ranks of one communicator, each
 * on its own thread, making the tuner and profiler calls NCCL makes for a
 * stream of collectives, until stopped.  It is what `ncclbpf sim --serve`
 * runs, so every operator verb (ps, top, reload, map, export) has a live
 * process to work on.
 */
#ifndef NCCLBPF_EMU_JOB_H
#define NCCLBPF_EMU_JOB_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "emu.h"

/* One collective of a job: what NCCL's getCollInfo sees (the tuner's nBytes). */
struct emu_job_step {
	int coll;
	uint64_t n_bytes;
};

struct emu_job_opts {
	size_t sz;                 /* sizeof(struct emu_job_opts) */
	const char *plugin;        /* path of libnccl-ncclbpf.so */
	const char *policy;        /* NCCLBPF_POLICY for the job, NULL: none */
	struct emu_topo topo;      /* n_ranks ranks, all in this process */
	uint64_t comm_id;          /* 0: a fixed demo id */
	unsigned rate;             /* collectives per second per rank, 0: as fast as possible */
	double duration_s;         /* 0: until *stop */
	volatile sig_atomic_t *stop; /* set (from a signal handler) to end the job; may be NULL */
	/* The collectives, in order, cycled; NULL: AllReduce, AllGather, ReduceScatter, 8 B..512 MiB. */
	const struct emu_job_step *steps;
	size_t n_steps;
	uint64_t collectives;      /* stop after this many per rank; 0: no limit */
};

struct emu_job_stats {
	uint64_t collectives;      /* per rank */
	uint64_t diverged;         /* calls on which ranks decided differently (must be 0) */
	uint64_t tuner_errors, profiler_errors;
};

/*
 * Runs the job: loads the plugin's tuner and profiler (v5, as NCCL 2.28
 * does), makes one tuner and one profiler context per rank, then every
 * rank cycles through the steps (default AllReduce, AllGather and
 * ReduceScatter of 8 B to 512 MiB; the same sequence on every rank, as
 * NCCL's ranks do), asks the tuner, and reports the collective to the
 * profiler as NCCL 2.28 does: the Coll with the count of one rank's part
 * (the tuner's bytes / nRanks for AllGather and ReduceScatter), then one
 * KernelCh span per channel, each as long as the emulator's model says
 * the chosen cell takes.  Ranks meet at a
 * barrier after every collective, as NCCL's ranks meet in it.  Returns 0
 * (stats filled) or a negative errno with a message in err.
 */
int emu_job_run(const struct emu_job_opts *opts, struct emu_job_stats *stats, char *err,
		size_t errlen);

#endif
