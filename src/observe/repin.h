/* SPDX-License-Identifier: Apache-2.0 */
/*
 * repin.h - closed loop 3: a job thread found on another NUMA node than
 * its home is moved back, from user space (sched_setaffinity: the kernel
 * has no BPF helper that sets a task's CPU mask), at most a budget of moves
 * per second.  Fed by observe's sched set (OBS_EV_NUMA events, one per
 * NUMA-crossing migration) and by scans of the targets' threads.
 *
 * A thread's home is the node given by the operator, or else the node of
 * the CPU it was first seen on.  A thread whose CPU mask did not cover
 * every online CPU when it was first seen was pinned by someone else and is
 * never touched.
 */
#ifndef NCCLBPF_OBSERVE_REPIN_H
#define NCCLBPF_OBSERVE_REPIN_H

#include <sched.h>
#include <stdint.h>

/* How affinity is read and set: sched_{get,set}affinity by default, fakes in tests. */
struct nbpf_repin_ops {
	int (*get_affinity)(void *ctx, int tid, cpu_set_t *set); /* 0 or -errno */
	int (*set_affinity)(void *ctx, int tid, const cpu_set_t *set);
	void *ctx;
};

struct nbpf_repin_opts {
	int home_node;        /* -1: the node a thread was first seen on */
	double max_per_s;     /* moves per second (and burst); 0: 10 */
	int n_online;         /* CPUs a free thread's mask covers; 0: online CPUs */
	const struct nbpf_repin_ops *ops; /* NULL: the real system calls */
};

struct nbpf_repin_stats {
	uint64_t tracked;  /* threads seen */
	uint64_t moved;    /* moves back home */
	uint64_t pinned;   /* off home but pinned by someone else: left alone */
	uint64_t limited;  /* off home, refused by the budget (retried when seen again) */
	uint64_t failed;   /* sched_setaffinity failed (e.g. the thread exited) */
};

struct nbpf_repin;

/* node[cpu] for cpu < n_cpus: the NUMA table (nbpf_obs_numa_table). */
int nbpf_repin_new(const int *node, int n_cpus, const struct nbpf_repin_opts *o,
		   struct nbpf_repin **out);
void nbpf_repin_free(struct nbpf_repin *r);

/*
 * Thread tid of a target runs on cpu (a migration event's destination, or
 * a scan); prev_cpu is where it ran before (the source; cpu for a scan),
 * its home when it is new and no node was given.  now_s: a monotonic clock.
 * Returns 1 when it was moved home, 0 when nothing was to be done or
 * allowed, a negative errno when the move failed.
 */
int nbpf_repin_seen(struct nbpf_repin *r, int tid, int cpu, int prev_cpu, double now_s);
/* A CPU's node in the table, -1 outside it. */
int nbpf_repin_node(const struct nbpf_repin *r, int cpu);
/* A thread's home node, -1 if unknown. */
int nbpf_repin_home(const struct nbpf_repin *r, int tid);
const struct nbpf_repin_stats *nbpf_repin_stats(const struct nbpf_repin *r);

#endif
