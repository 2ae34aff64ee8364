/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_coord.h - the coordinator's side of an agreed change over the
 * local processes' control sockets: stage everywhere, then commit at one
 * call everywhere or abort everywhere (ctl_proto.h, docs/operations.md).
 * Used by `ncclbpf reload`, `rollback`, `map update` of a decision map,
 * `change`, and the closed loops.
 *
 * What each process did is known, or said to be unknown: a request that
 * got no answer may still be read by the process later (it was stopped or
 * slow).  A stage read after its deadline is refused by the process, so a
 * change the coordinator aborted can never be staged later; a commit is
 * retried until the hold time, after which the process has either applied
 * it or dropped its staged copy (nbpf_coord_status tells which).
 */
#ifndef NCCLBPF_CTL_COORD_H
#define NCCLBPF_CTL_COORD_H

#include <stdbool.h>
#include <stdint.h>

#include "ctl_proto.h"

enum nbpf_coord_res {
	NBPF_COORD_NONE = 0,  /* not asked */
	NBPF_COORD_OK,        /* the process answered: done */
	NBPF_COORD_REFUSED,   /* the process answered: not done (msg says why), or was never reached */
	NBPF_COORD_UNKNOWN,   /* sent, no answer: it may act on it when it reads it */
};

const char *nbpf_coord_res_name(enum nbpf_coord_res r);

struct nbpf_coord_proc {
	int pid;
	char path[108];
	enum nbpf_coord_res stage, commit, abort;
	int err;                 /* the last answer's error (0: none) */
	bool answered;           /* the last request had an answer (err is the process's own) */
	char msg[512];           /* the last answer's message, or why there was none */
	uint64_t max_calls;      /* staged: the highest call of its tuner comms */
	uint64_t target;         /* staged rollback: its target's digest (0: not a rollback) */
	uint64_t gen, late;      /* committed: image and comms past the call */
};

struct nbpf_coord {
	char id[64];
	char owner[128];
	uint64_t deadline, hold;  /* CLOCK_REALTIME ns: stage by, decide by */
	uint64_t t_init;          /* when they were set (the stage moves them with it) */
	int rate_window_ms;       /* the stage samples call numbers this long first (0: no rate) */
	int n;
	struct nbpf_coord_proc *p;
	/* merged from the stage answers */
	uint64_t max_calls;       /* read again once every answer is in (a slow one makes the others' old) */
	uint64_t calls_at;        /* CLOCK_REALTIME ns when max_calls was read */
	double rate;              /* calls per second, the fastest process, measured over the stage */
	uint64_t *known;          /* tuner comm ids, sorted, unique */
	uint32_t n_known;
};

/*
 * Sets up a change id over pids: deadline = now + timeout_ms, hold =
 * now + 3 x timeout_ms.  id NULL: a fresh one (host, pid, time, random).
 * 0 or a negative errno (a pid without a control socket is kept: its stage
 * is then refused as never reached).
 */
int nbpf_coord_init(struct nbpf_coord *c, const char *id, const char *owner, const int *pids,
		    int n, int timeout_ms);
void nbpf_coord_free(struct nbpf_coord *c);

/*
 * Stages on every process: fields are the stage record's own fields after
 * id/deadline/hold/owner (e.g. " path=/x.o", already encoded), records any
 * further lines ("op map=... key=..."), both may be NULL.  Samples the call
 * numbers first (a rate over the time the stage took).  Returns how many
 * staged (c->n: all).
 */
int nbpf_coord_stage(struct nbpf_coord *c, const char *fields, const char *records);
/*
 * Commits where staged, at at_call, with the known comm ids (NULL: the
 * merged c->known), retrying unanswered commits until the hold.  Returns
 * how many committed.
 */
int nbpf_coord_commit(struct nbpf_coord *c, uint64_t at_call, const uint64_t *known,
		      uint32_t n_known);
/*
 * A staged rollback goes back to the same image in every process that
 * staged it: -1 if so, else the index of one whose target differs from
 * the first's (its history differs: a rank replaced since the last reload
 * with another policy).
 */
int nbpf_coord_target_differs(const struct nbpf_coord *c);
/* Aborts where staged or unknown; returns how many answered. */
int nbpf_coord_abort(struct nbpf_coord *c);
/* The agreed call for this node alone: c->max_calls + margin (or rate x margin_s + 1000). */
uint64_t nbpf_coord_at_call(const struct nbpf_coord *c, uint64_t margin, double margin_s);
/*
 * calls, read at calls_at (CLOCK_REALTIME ns), carried forward at rate to
 * now: how far the ranks may have got while the agreement waited (a
 * stopped process, a slow exchange).  The time is capped at 120 s, the
 * furthest a hold may be (clocks of different nodes may disagree);
 * calls_at 0 carries nothing forward.
 */
uint64_t nbpf_coord_calls_now(uint64_t calls, uint64_t calls_at, double rate, uint64_t now);
/* CLOCK_REALTIME in ns: the clock of deadlines, holds and calls_at, the same on every node. */
uint64_t nbpf_coord_rt_ns(void);

/*
 * What pid says of change id (its CHANGES answer): state name into state
 * ("unknown" when it does not answer, "none" when it never heard of it).
 */
void nbpf_coord_status(const char *path, const char *id, char *state, size_t n, uint64_t *at_call,
		       int timeout_ms);

/* Appends the decimal comm ids of ids to b as one record field (key=a,b,c). */
void nbpf_coord_put_known(struct nbpf_ctl_buf *b, const char *key, const uint64_t *ids,
			  uint32_t n);
/* Merges n ids into the sorted unique set (*set, *n_set); -ENOMEM. */
int nbpf_coord_merge_known(uint64_t **set, uint32_t *n_set, const uint64_t *ids, uint32_t n);

#endif
