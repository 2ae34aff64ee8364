/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe.h - kernel-side probes for training jobs: load the CO-RE
 * programs of the chosen probe sets into the running kernel, attach what
 * the kernel offers, read the in-kernel aggregates and outliers, detach.
 *
 * Attachment is all or nothing per probe set: a set whose required
 * tracepoints are missing is unloaded and reported; when the caller named
 * the sets explicitly, any such set fails the whole session and nothing
 * stays attached.  Optional signals of a set (e.g. io_uring inside io)
 * are reported as missing without failing the set.
 */
#ifndef NCCLBPF_OBSERVE_H
#define NCCLBPF_OBSERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "observe_abi.h"

enum nbpf_obs_set {
	NBPF_OBS_IO = 0,
	NBPF_OBS_NET = 1,
	NBPF_OBS_SCHED = 2,
	NBPF_OBS_GPU = 3,
	NBPF_OBS_NSETS = 4,
};
#define NBPF_OBS_ALL ((1u << NBPF_OBS_NSETS) - 1)

struct nbpf_obs_opts {
	unsigned int probes;      /* bit per enum nbpf_obs_set; 0: all */
	bool strict;              /* probes were named: each must attach fully */
	enum obs_mode mode;
	const int *pids;          /* OBS_MODE_PIDS: initial targets (more via nbpf_obs_add_pid) */
	int n_pids;
	const char *cgroup;       /* OBS_MODE_CGROUP: a cgroup v2 directory */
	const char *comm;         /* OBS_MODE_COMM */
	uint64_t outlier_ns;      /* 0: 10 ms */
	bool numa_events;         /* every NUMA-crossing migration also as an OBS_EV_NUMA event */
	bool deep;                /* the deep tier may be switched on (nbpf_obs_deep); else it costs nothing */
	/*
	 * Overrides, NULL for the defaults (each also read from the environment
	 * by nbpf_obs_opts_env): BTF for CO-RE (NCCLBPF_OBSERVE_BTF), the CUDA
	 * driver library (NCCLBPF_OBSERVE_LIBCUDA), the CPU -> NUMA node table
	 * "n0,n1,..." (NCCLBPF_OBSERVE_NUMA), the device majors whose ioctls count
	 * as GPU submissions "195,511" (NCCLBPF_OBSERVE_GPU_MAJORS), and tracepoint
	 * renames "old=new,..." (NCCLBPF_OBSERVE_TP_RENAME), which lets tests ask
	 * for a tracepoint this kernel does not have.
	 */
	const char *btf_path;
	const char *libcuda;
	const char *numa;
	const char *gpu_majors;
	const char *tp_rename;
	/* Tests only: "SLOTS,STALE_JIFFIES,DROP" for the block in-flight table (NCCLBPF_OBSERVE_BLK_TEST; obs_cfg). */
	const char *blk_test;
};

/* Fills the overrides that are NULL from the environment. */
void nbpf_obs_opts_env(struct nbpf_obs_opts *o);

/* Set names: "io", "net", "sched", "gpu"; parse "io,net" into bits (-EINVAL on unknown). */
const char *nbpf_obs_set_name(int set);
int nbpf_obs_parse_sets(const char *s, unsigned int *bits);

/* What one set could and could not attach, for the user. */
struct nbpf_obs_status {
	bool wanted, attached;
	int n_links;
	char missing[512];  /* "io_uring latency (no tracepoint io_uring/...)"; "" if none */
	char via[768];      /* signals served by a fallback attach point, and why */
	char error[512];    /* why the set is not attached; "" if it is */
};

struct nbpf_obs;

/*
 * Checks privileges and BTF, loads and attaches the sets.  On failure
 * returns a negative errno with the reason in ncclbpf_errmsg(), and
 * nothing is left loaded or attached.
 */
int nbpf_obs_open(const struct nbpf_obs_opts *o, struct nbpf_obs **out);
void nbpf_obs_close(struct nbpf_obs *obs);
const struct nbpf_obs_status *nbpf_obs_status(const struct nbpf_obs *obs, int set);
/* OBS_MODE_PIDS: start or stop counting a process. */
int nbpf_obs_add_pid(struct nbpf_obs *obs, int pid);
int nbpf_obs_del_pid(struct nbpf_obs *obs, int pid);

/* Everything the kernel has aggregated so far (cumulative). */
struct nbpf_obs_blk { struct obs_blk_key k; struct obs_blk_val v; };
struct nbpf_obs_uring { struct obs_uring_key k; struct obs_hist v; };
struct nbpf_obs_pcache { uint32_t tgid; struct obs_pcache_val v; };
struct nbpf_obs_conn { uint64_t sk; struct obs_conn v; };
struct nbpf_obs_sched { uint32_t tgid; struct obs_sched_val v; };
struct nbpf_obs_gpu { uint32_t tgid; struct obs_gpu_val v; };

struct nbpf_obs_snap {
	struct nbpf_obs_blk *blk;       size_t n_blk;
	struct nbpf_obs_uring *uring;   size_t n_uring;
	struct nbpf_obs_pcache *pcache; size_t n_pcache;
	struct nbpf_obs_conn *conn;     size_t n_conn;
	struct nbpf_obs_sched *sched;   size_t n_sched;
	struct nbpf_obs_gpu *gpu;       size_t n_gpu;
	uint64_t events_lost;
	/* I/O events not counted: a request's in-flight slots, or its process's figure slots, were full. */
	uint64_t untracked;
};

int nbpf_obs_snapshot(struct nbpf_obs *obs, struct nbpf_obs_snap *s);
void nbpf_obs_snap_free(struct nbpf_obs_snap *s);
/*
 * Block requests of process tgid on device dev (major << 20 | minor) that
 * were claimed and whose completion has not been seen: those in flight,
 * and those the kernel completed without running the completion program
 * whose request has not been started again nor its slot taken over as
 * stale (counted as unseen then).  Once the device is idle, only the
 * second kind remain.  bytes: what they have left to complete (the bytes
 * of parts already completed are counted in the figures).
 */
int nbpf_obs_blk_pending(struct nbpf_obs *obs, uint32_t tgid, uint32_t dev, uint64_t *n, uint64_t *bytes);
/* out = now - before, entry by entry (entries absent before count from zero). */
int nbpf_obs_snap_delta(struct nbpf_obs_snap *out, const struct nbpf_obs_snap *now,
			const struct nbpf_obs_snap *before);

/* Outliers: calls fn for each queued event, waiting up to timeout_ms for the first. */
typedef void (*nbpf_obs_event_fn)(void *ctx, const struct obs_event *e);
int nbpf_obs_poll(struct nbpf_obs *obs, int timeout_ms, nbpf_obs_event_fn fn, void *ctx);

/*
 * The CPU -> NUMA node table the sched set was loaded with: node[cpu] for
 * cpu < n; returns how many CPUs it filled (the configured CPUs, at most n),
 * or -ENOENT when the sched set is not loaded.
 */
int nbpf_obs_numa_table(struct nbpf_obs *obs, int *node, int n);

/*
 * Tiered tracing: the deep tier sends every block, io_uring and run-queue
 * latency record of the targets to the ring buffer (as nbpf_obs_poll
 * events) until until_ns (CLOCK_MONOTONIC; 0 switches it off), at most per_s
 * records a second over all CPUs, enforced in the kernel (a token bucket per
 * CPU, per_s split evenly).  Records beyond the budget are dropped and
 * counted: nbpf_obs_deep_stats, cumulative.  -EOPNOTSUPP unless the sets
 * were opened with nbpf_obs_opts.deep.
 */
int nbpf_obs_deep(struct nbpf_obs *obs, uint64_t until_ns, uint64_t per_s);
int nbpf_obs_deep_stats(struct nbpf_obs *obs, uint64_t *sent, uint64_t *dropped);

/*
 * Resident memory of process pid per NUMA node, in bytes, into bytes[0..max_nodes)
 * (higher nodes count in the last): the number of nodes seen, or a negative errno.
 */
int nbpf_obs_numa_mem(int pid, uint64_t *bytes, int max_nodes);
/* The same, read again at most every 5 s per process (a cache for scrapes; thread-safe). */
int nbpf_obs_numa_mem_cached(int pid, uint64_t *bytes, int max_nodes);

/* The kernel's name of io_uring opcode op ("READ"), or NULL when it has none. */
const char *nbpf_obs_uring_op_name(uint32_t op);

/*
 * OBS_MODE_PIDS and OBS_MODE_COMM: the processes in the target table (the
 * ones added, and every process they forked since), up to max of them into
 * pids; returns how many there are.
 */
int nbpf_obs_targets(struct nbpf_obs *obs, int *pids, int max);

/* Quantile q of a log2 histogram (value units), interpolated inside the slot; 0 if empty. */
double nbpf_obs_hist_quantile(const struct obs_hist *h, double q);

/* A connection's peer, "10.0.0.2" or with port "10.0.0.2:5000" / "[fe80::1]:5000". */
void nbpf_obs_peer_str(const struct obs_conn *c, char *out, size_t n, bool port);

/* Prometheus families for a snapshot; labels resolves a tgid to its labels (may be NULL). */
typedef const char *(*nbpf_obs_label_fn)(void *ctx, uint32_t tgid);
int nbpf_obs_prom_write(FILE *f, const struct nbpf_obs_snap *s, nbpf_obs_label_fn labels, void *ctx);

#endif
