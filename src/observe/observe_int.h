/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe_int.h - what observe.c (loading, attaching), detect.c (what the
 * kernel and this process offer) and snapshot.c share; not part of the
 * layer's interface (observe.h).
 */
#ifndef NCCLBPF_OBSERVE_INT_H
#define NCCLBPF_OBSERVE_INT_H

#include <bpf/libbpf.h>
#include <stdbool.h>

#include "observe.h"

/*
 * TP_BTF: typed raw tracepoint (BTF args, the call cost of fentry, a stable
 * name); TP: classic tracepoint; FENTRY: fentry/fexit on a kernel function
 * (tp names the function), for kernels whose tracepoint is missing;
 * UPROBE: attached by hand to libcuda's symbols; ITER: a BPF iterator user
 * space runs at each snapshot (nbpf_obs_net_scan).
 */
enum attach_kind { TP_BTF, TP, FENTRY, UPROBE, ITER };

struct prog_spec {
	const char *prog;
	enum attach_kind kind;
	const char *cat, *tp;  /* tracepoint category (tracefs) and name */
	const char *signal;    /* what the user loses without it */
	const char *slot;      /* specs of one signal and slot are alternatives */
	bool required;         /* the set is useless without this signal */
};

/* Links that grow as they are attached. */
struct obs_links {
	struct bpf_link **v;
	int n, cap;
};

/* The CUDA uprobes of one target process (pid targets: a uprobe traps only where it is attached). */
struct obs_cuda_proc {
	int pid;
	struct obs_links lk;
};

struct obs_set {
	void *skel;
	struct bpf_object *obj;
	volatile obs_u64 *lost;
	void (*destroy)(void *skel);
	const struct prog_spec *specs;
	struct obs_links lk;
};

struct nbpf_obs {
	struct nbpf_obs_opts o;
	struct obs_cfg cfg;
	struct obs_set sets[NBPF_OBS_NSETS];
	struct nbpf_obs_status st[NBPF_OBS_NSETS];
	struct btf *btf;
	int targets_fd, events_fd, tier_ctl_fd, tier_bucket_fd;
	obs_u64 *target_bits; /* the targets map, mmapped: OBS_PID_WORDS words */
	struct ring_buffer *rb;
	bool fentry_probed, fentry_ok;
	bool fork_loaded; /* obs_fork is in one set already */
	nbpf_obs_event_fn ev_fn;
	void *ev_ctx;
	char libcuda[4096];
	/*
	 * Pid targets: each process's CUDA uprobes, attached as the process is
	 * first seen (named at start, added, or forked by a target), detached
	 * when it exits or stops being a target.
	 */
	struct obs_cuda_proc *cuda;
	int n_cuda, cap_cuda;
	/*
	 * The net set's socket scan: one iterator over every process's files
	 * (cgroup and comm targets, or a kernel that cannot filter by pid), else
	 * one per target process at each scan.
	 */
	struct bpf_link *iter_all;
	bool iter_no_pid;
	/* Closed connections already retired from the kernel's table, summed per process and peer. */
	struct nbpf_obs_conn *retired;
	size_t n_retired;
};

/* observe.c: the pid targets' CUDA uprobes brought up to date with the targets (at each snapshot). */
void obs_cuda_follow(struct nbpf_obs *obs);

/* detect.c */
/* Root, or CAP_BPF with CAP_PERFMON (CAP_SYS_ADMIN alone also does). */
bool obs_has_caps(void);
/* tracefs's directory, mounting it at /sys/kernel/tracing if needed; NULL if neither. */
const char *obs_tracefs_dir(void);
/* The name sp's tracepoint (or kernel function) has after NCCLBPF_OBSERVE_TP_RENAME. */
const char *obs_tp_name(const struct nbpf_obs *obs, const struct prog_spec *sp, char *buf,
			size_t n);
/* A typed raw tracepoint in the kernel's BTF, or a classic one in tracefs. */
bool obs_tp_present(const struct nbpf_obs *obs, const struct prog_spec *sp, const char *name);
/* Whether argument arg (from 0, the context excluded) of a typed tracepoint is a void *. */
bool obs_tp_arg_is_void_ptr(const struct nbpf_obs *obs, const char *name, int arg);
/* Arguments a typed raw tracepoint passes (its context excluded), or -1. */
int obs_tp_nargs(const struct nbpf_obs *obs, const char *name);
/* Whether sched_switch can read run-queue waits from the scheduler's sched_info. */
bool obs_sched_info(const struct nbpf_obs *obs);
bool obs_blk_unstamped(void);
/* Whether fentry/fexit attaches on this kernel (tried once, on func). */
bool obs_fentry_works(struct nbpf_obs *obs, const char *func);
/* The CUDA driver library into obs->libcuda; false when there is none. */
bool obs_find_libcuda(struct nbpf_obs *obs);
/* NVIDIA character-device majors into obs->cfg.gpu_majors: their count, or -EINVAL. */
int obs_gpu_majors(struct nbpf_obs *obs);
/* The CPU -> NUMA node table of the sched set's cpu_node map. */
int obs_fill_numa(struct nbpf_obs *obs, struct obs_set *s);
/* io_uring opcode names from the kernel's BTF (nbpf_obs_uring_op_name). */
void obs_uring_ops(const struct nbpf_obs *obs);
/* obs->cfg's cgroup id and level from obs->o.cgroup. */
int obs_cgroup_target(struct nbpf_obs *obs);

/* observe.c, for snapshot.c */
struct bpf_object *nbpf_obs__obj(struct nbpf_obs *obs, int set);
uint64_t nbpf_obs__lost(struct nbpf_obs *obs);
uint64_t nbpf_obs__untracked(struct nbpf_obs *obs);
/* Runs the net set's iterator over the target processes' sockets (a no-op without the set). */
int nbpf_obs_net_scan(struct nbpf_obs *obs);

#endif
