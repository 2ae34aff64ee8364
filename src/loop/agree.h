/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * agree.h - one change agreed by every node: each node stages it on its
 * own processes (control/ctl_coord.h), the nodes vote through the exchange
 * (xchg.h), one decision is written (commit at one call, for the
 * communicators any node held, or abort), and every node applies that
 * decision to its processes.  A node that cannot vote in time makes the
 * decision abort; a node that staged and then cannot learn the decision
 * keeps nothing (its processes drop the staged change at the hold time).
 * What `ncclbpf change apply` and the closed loops' plan writes run.
 */
#ifndef NCCLBPF_LOOP_AGREE_H
#define NCCLBPF_LOOP_AGREE_H

#include <stdbool.h>
#include <stdint.h>

struct nbpf_coord;
struct nbpf_xchg;

struct nbpf_agree_opts {
	const char *step;       /* the exchange's step name for this change ([A-Za-z0-9._-]) */
	const char *fields;     /* the stage record's fields (" path=...") */
	const char *records;    /* further records (map writes) */
	uint64_t at_call;       /* the call to agree on; 0: the highest any node saw + margin */
	uint64_t margin;        /* calls past the highest; 0: margin_s of calls at the fastest rate + 1000 */
	double margin_s;
	bool now;               /* switch at once (no agreed call) */
};

struct nbpf_agree_result {
	bool committed;         /* the decision (read back from the exchange) */
	bool decided;           /* a decision was learned (false: this node could not) */
	uint64_t at_call;
	int staged, nodes_voted;
	char why[512];          /* an abort's reason */
};

/*
 * Stages on co's processes, votes through x (NULL: this node alone),
 * applies the decision.  0 once a decision was applied as far as the
 * processes answered (co says how each did), or a negative errno.
 */
int nbpf_agree(struct nbpf_coord *co, struct nbpf_xchg *x, const struct nbpf_agree_opts *o,
	       struct nbpf_agree_result *res);

#endif
