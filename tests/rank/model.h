/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model.h - the model-based rank-consistency tester (tests/rank): what the
 * driver, the rank processes and the checker share.
 *
 * Rank processes (rank_proc.c) load the plugin as NCCL does (dlopen; the
 * tuner, profiler and net tables) and host one rank of every communicator
 * they are a member of, each on its own thread, recording the decision of
 * every call in shared memory.  The driver (driver.c) applies operator
 * actions and faults through the real command and control sockets; the
 * checker (verdict.c) compares, for every communicator, what its ranks
 * decided at every call, and what the command reported with what the
 * ranks run.
 */
#ifndef NCCLBPF_RANK_MODEL_H
#define NCCLBPF_RANK_MODEL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define RM_MAX_PROCS 8
#define RM_MAX_NODES 4
#define RM_MAX_SLOTS 8
#define RM_MAX_CALLS (1u << 17) /* calls one communicator records (then it stops calling) */
#define RM_PACE      64         /* a rank runs at most this many calls ahead of its slowest peer */
#define RM_BYTES     (64u << 10) /* every call: AllReduce of 64 KiB */

enum { SLOT_FREE, SLOT_LIVE, SLOT_CLOSING };

/* One communicator: members are processes, each hosts one rank. */
struct rm_slot {
	_Atomic int state;
	_Atomic uint32_t gen;             /* incarnation: bumped at create */
	_Atomic uint64_t comm_id;
	_Atomic uint32_t members;         /* bit p: process p holds a rank */
	_Atomic uint32_t joined, left;    /* members whose rank is up, and finished */
	_Atomic uint32_t rate;            /* calls per second per rank (0: idle) */
	_Atomic uint64_t progress[RM_MAX_PROCS]; /* calls made */
	uint16_t dec[RM_MAX_PROCS][RM_MAX_CALLS]; /* decision code of each call (0: none) */
};

struct rm_proc {
	_Atomic int pid;
	_Atomic int alive;
	_Atomic int ready;                /* plugin loaded */
	_Atomic uint32_t incarnation;
	int node;
};

struct rm_shared {
	struct rm_slot slot[RM_MAX_SLOTS];
	struct rm_proc proc[RM_MAX_PROCS];
	_Atomic int stop;
};

/* Decision code: 1 + algo + 8 * proto + 32 * channels (0 = not made). */
static inline uint16_t rm_code(int algo, int proto, int ch)
{
	return (uint16_t)(1 + (algo & 7) + 8 * (proto & 3) + 32 * (ch & 127));
}
static inline int rm_code_proto(uint16_t c) { return ((c - 1) >> 3) & 3; }
static inline int rm_code_ch(uint16_t c) { return ((c - 1) >> 5) & 127; }

/* The configuration of a run. */
struct rm_conf {
	int procs, nodes, slots;
	const char *plugin, *cli, *policies;  /* libnccl-ncclbpf.so, ncclbpf, the tester's objects */
	const char *exchange;                 /* "dir" or "etcd": how nodes agree */
	const char *etcd;                     /* endpoints when exchange is etcd */
	char root[256];                       /* the run's private directory */
	int timeout_ms;                       /* the command's stage deadline */
	bool legacy;                          /* a command without agreed changes (--id): the old tree */
	bool verbose;
};

/* Node of process p: processes are spread over the nodes in order. */
static inline int rm_node_of(const struct rm_conf *c, int p)
{
	return p * c->nodes / c->procs;
}

/* rank_proc.c: the body of a rank process (never returns). */
void rm_rank_main(const struct rm_conf *c, struct rm_shared *sh, int p) __attribute__((noreturn));

/* ---- operations (driver.c) ------------------------------------------------ */

enum rm_op_kind {
	OP_CREATE,   /* create SLOT MEMBERS RATE */
	OP_DESTROY,  /* destroy SLOT */
	OP_RATE,     /* rate SLOT RATE */
	OP_RELOAD,   /* reload a|b|c [sync|now|pair] */
	OP_ROLLBACK, /* rollback */
	OP_CFG,      /* cfg N: rank_cfg[0] = N on every process (a decision map) */
	OP_LOOP,     /* loop start|second|rerun|stop|die|restart0 (die, restart0: see driver.c loops_start) */
	OP_STOP,     /* stop PROC: SIGSTOP */
	OP_CONT,     /* cont PROC */
	OP_KILL,     /* kill PROC: kill -9, then a fresh process in its place */
	OP_KILLCLI,  /* killcli MS: a reload whose command is killed -9 after MS, then recovered */
	OP_DEADSOCK, /* deadsock on|off: a socket on node 0 that accepts and never answers */
	OP_LOAD,     /* load on|off: busy processes on every core */
	OP_SLEEP,    /* sleep MS */
	OP_ETCDKILL, /* etcdkill MEMBER MS: kill -9 that etcd member MS from now (mid-change) */
	OP_ETCDSTART, /* etcdstart MEMBER: start it again (it rejoins the cluster) */
	OP_UNSHIP,   /* unship NODE VERSION: the object is missing on that node (a copy that failed) */
	OP_SHIP,     /* ship NODE VERSION: it is there again */
	OP_PAUSE,    /* pause PROC MS: SIGSTOP now, SIGCONT MS later (the next operations run meanwhile) */
	OP_N,
};

struct rm_op {
	enum rm_op_kind k;
	int a, b;           /* slot, proc, value, ms */
	uint32_t members;   /* create */
	char s[16];         /* variant, mode, on/off */
};

/* What the operator was told each process runs (the truth the checker holds it to). */
struct rm_truth {
	char cur, rb;       /* policy version 'a'..'c'; rb 0: no rollback target */
	uint32_t cfg;
	uint32_t rb_cfg;    /* rank_cfg as the rollback target held it (a rollback returns to it) */
	bool unsure;        /* an outcome the command could not know: not checked until settled */
};

/* A change as the driver asked for it, kept for recovering a process that did not say. */
struct rm_change {
	char args[600];     /* the verb and its arguments, for target "all" */
	char id[64];
	int kind;           /* OP_RELOAD, OP_ROLLBACK or OP_CFG */
	char variant;
	uint32_t cfg;
	unsigned long long at_call;
};

struct rm_run {
	const struct rm_conf *c;
	struct rm_change pending[RM_MAX_PROCS]; /* the change a process's outcome is unknown of */
	struct rm_shared *sh;
	struct rm_truth truth[RM_MAX_PROCS];
	uint64_t settle_at;           /* this step's agreed call: checks wait past it */
	uint64_t last_at;             /* the latest agreed call: a communicator below it is not judged */
	pid_t loop_pid, loop_node_pid[RM_MAX_NODES], hog[16];
	char loop_job[64];
	int n_hog, dead_fd;
	bool stopped[RM_MAX_PROCS];
	double pause_end[RM_MAX_PROCS]; /* when a pause's SIGCONT comes (s, now_s's clock) */
	char fail[4096];              /* the first violation found, "" while none */
	unsigned long long disagreements, calls_checked, truth_checks;
	uint64_t checked[RM_MAX_SLOTS]; /* calls of each slot already compared */
	uint32_t checked_gen[RM_MAX_SLOTS];
};

int rm_op_parse(const char *line, struct rm_op *op);
void rm_op_format(const struct rm_op *op, char *buf, size_t n);
int rm_run_start(struct rm_run *r, const struct rm_conf *c);
void rm_run_stop(struct rm_run *r);
/* Applies op; returns 0, or -1 once r->fail says what went wrong. */
int rm_run_op(struct rm_run *r, const struct rm_op *op);

/* ---- the exchange's etcd cluster (etcd_cluster.c) --------------------------------- */

/* Starts 3 members on loopback under root (sets c->etcd): 0, 77 (no etcd installed), or -1. */
int rm_etcd_start(struct rm_conf *c);
/* Member m down (kill -9) or up again. */
void rm_etcd_member(const struct rm_conf *c, int m, bool up);
void rm_etcd_stop(const struct rm_conf *c);

/* ---- checks (verdict.c) ---------------------------------------------------- */

/* Every communicator's ranks decided alike at every call both made: 0, else r->fail. */
int rm_check_agreement(struct rm_run *r);
/* Every running communicator runs what the operator was told (after settling): 0, else r->fail. */
int rm_check_truth(struct rm_run *r);
/* Waits (bounded) until every running communicator passed call `at` (or made `more` calls). */
void rm_settle(struct rm_run *r, uint64_t at, uint64_t more);

#endif
