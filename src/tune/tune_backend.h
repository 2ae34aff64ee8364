/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tune_backend.h - where tune's collectives run: the emulator in this
 * process (tune_emu.c) or real NCCL in a child nccl_sweep (tune_nccl.c).
 * Either loads the plugin with the sweep policy; pids are the processes
 * whose control sockets serve its maps (one per rank process: every one
 * gets the same forced cell, so the ranks never disagree).
 */
#ifndef NCCLBPF_TUNE_BACKEND_H
#define NCCLBPF_TUNE_BACKEND_H

#include "tune.h"

#define TUNE_MAX_PROCS 16

struct tune_be {
	int pid;                     /* pids[0] */
	int pids[TUNE_MAX_PROCS];
	int n_pids;
	int n_ranks, n_nodes;
	char desc[256];
	/*
	 * One measurement of coll at n_bytes (the tuner's nBytes): time per
	 * operation in us.  -ERANGE: the size is too small for this many ranks.
	 */
	int (*run)(struct tune_be *be, int coll, uint64_t n_bytes, double *us, char *err,
		   size_t errlen);
	void (*close)(struct tune_be *be);
};

int tune_be_emu_open(const struct tune_opts *o, struct tune_be **be, char *err, size_t errlen);
int tune_be_nccl_open(const struct tune_opts *o, struct tune_be **be, char *err, size_t errlen);

/*
 * The emulator's "true" time of a decision (tune_emu.c; exposed for tests):
 * chunk is the chunk size NCCL plans the first channel's part with,
 * nccl_chunk the one it would have used itself (0, 0: no getChunkSize).
 */
double tune_emu_truth(const struct tune_emu_opts *e, int coll, uint64_t n_bytes, int algo,
		      int proto, int n_channels, uint32_t chunk, uint32_t nccl_chunk);
/* The same for what the emulator decided (d of emu_tuner_call). */
double tune_emu_truth_of(const struct tune_emu_opts *e, int coll, uint64_t n_bytes,
			 const struct emu_decision *d);

#endif
