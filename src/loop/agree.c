// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * agree.c - a change agreed by every node (agree.h).
 *
 * Votes: "ok=1 max_calls=N calls_at=NS rate=R target=T known=ID,ID,..."
 * (NS: when N was read, CLOCK_REALTIME; T: a rollback's target digest,
 * the same on every node or the change aborts).  The proposal every node
 * writes is a function of all the votes and the time: "commit at=N
 * known=..." when every node staged, with N the highest call any node's
 * ranks may have reached by now (its count carried forward at the fastest
 * rate from when it was read: a node that voted late, or an exchange that
 * was slow, must not leave the call behind the ranks) plus the margin,
 * else "abort" (also from a node whose wait for the votes timed out).
 * The exchange keeps the first proposal written, and every node applies
 * the one it reads back.
 */
#include "agree.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/ctl_coord.h"
#include "control/ctl_proto.h"
#include "error.h"
#include "ncclbpf/runtime.h"
#include "xchg.h"

/* Appends "key=a,b,c" of ids to a growing string. */
static char *ids_text(const char *head, const uint64_t *ids, uint32_t n)
{
	size_t cap = strlen(head) + 24 * (size_t)n + 16;
	char *s = malloc(cap);
	size_t len;

	if (!s)
		return NULL;
	len = (size_t)snprintf(s, cap, "%s", head);
	for (uint32_t i = 0; i < n; i++)
		len += (size_t)snprintf(s + len, cap - len, "%s%" PRIu64, i ? "," : "", ids[i]);
	return s;
}

/* The known= list of a vote or decision into the set. */
static int parse_known(const char *text, uint64_t **set, uint32_t *n)
{
	const char *k = strstr(text, "known=");
	uint64_t buf[256];
	uint32_t m = 0;
	int err = 0;

	if (!k)
		return 0;
	for (k += 6; *k >= '0' && *k <= '9' && !err;) {
		char *end;

		buf[m++] = strtoull(k, &end, 10);
		k = *end == ',' ? end + 1 : end;
		if (m == 256) {
			err = nbpf_coord_merge_known(set, n, buf, m);
			m = 0;
		}
	}
	return err ? err : m ? nbpf_coord_merge_known(set, n, buf, m) : 0;
}

static uint64_t field_u64(const char *text, const char *key)
{
	const char *p = strstr(text, key);

	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

/* The proposal of this node from every vote it read (or an abort with the reason). */
static char *propose(const struct nbpf_agree_opts *o, char **votes, int n, int err,
		     uint64_t *at, char *why, size_t wlen)
{
	uint64_t *known = NULL, hi = 0, now = nbpf_coord_rt_ns();
	uint32_t n_known = 0;
	double rate = 0;
	char head[96], *s;

	if (err) {
		snprintf(why, wlen, "only %d nodes voted in time", n);
		return strdup("abort");
	}
	for (int i = 0; i < n; i++) {
		const char *r = strstr(votes[i], "rate=");

		if (r && strtod(r + 5, NULL) > rate)
			rate = strtod(r + 5, NULL);
	}
	for (int i = 0; i < n; i++) {
		uint64_t c;

		if (!strstr(votes[i], "ok=1")) {
			snprintf(why, wlen, "a node could not stage it: %.400s", votes[i]);
			free(known);
			return strdup("abort");
		}
		if (field_u64(votes[i], "target=") != field_u64(votes[0], "target=")) {
			snprintf(why, wlen, "the nodes' processes would roll back to different images (their histories differ): reload the one you want instead");
			free(known);
			return strdup("abort");
		}
		c = nbpf_coord_calls_now(field_u64(votes[i], "max_calls="),
					 field_u64(votes[i], "calls_at="), rate, now);
		if (c > hi)
			hi = c;
		if (parse_known(votes[i], &known, &n_known)) {
			free(known);
			return NULL;
		}
	}
	*at = o->now ? 0 : o->at_call ? o->at_call
		: hi + (o->margin ? o->margin : (uint64_t)(rate * o->margin_s) + 1000);
	snprintf(head, sizeof(head), "commit at=%" PRIu64 " known=", *at);
	s = ids_text(head, known, n_known);
	free(known);
	return s;
}

static char *my_vote(const struct nbpf_coord *co, int staged)
{
	char head[200];
	int d = nbpf_coord_target_differs(co);

	/* This node's processes going back to different images: a no vote. */
	snprintf(head, sizeof(head), "ok=%d max_calls=%" PRIu64 " calls_at=%" PRIu64 " rate=%.1f target=%" PRIu64
		 " known=", staged == co->n && d < 0, co->max_calls, co->calls_at, co->rate,
		 co->n ? co->p[0].target : 0);
	return ids_text(head, co->known, co->n_known);
}

int nbpf_agree(struct nbpf_coord *co, struct nbpf_xchg *x, const struct nbpf_agree_opts *o,
	       struct nbpf_agree_result *res)
{
	char step[128], **votes = NULL, *vote = NULL, *prop = NULL, *dec = NULL;
	uint64_t at = 0, *known = NULL;
	uint32_t n_known = 0;
	int n = 0, err = 0, gerr = 0;

	memset(res, 0, sizeof(*res));
	res->staged = nbpf_coord_stage(co, o->fields, o->records);
	vote = my_vote(co, res->staged);
	if (!vote)
		return -ENOMEM;
	if (x) {
		snprintf(step, sizeof(step), "%s.vote", o->step);
		err = nbpf_xchg_put(x, step, vote);
		if (!err)
			gerr = nbpf_xchg_gather(x, step, &votes, &n);
		res->nodes_voted = n;
		/* A node that cannot read the votes still proposes (abort): no node waits forever. */
		prop = propose(o, votes, n, err || gerr, &at, res->why, sizeof(res->why));
		nbpf_xchg_texts_free(votes, n);
		snprintf(step, sizeof(step), "%s.decision", o->step);
		if (prop && (err = nbpf_xchg_decide(x, step, prop, &dec)) == 0)
			res->decided = true;
	} else {
		votes = &vote;
		prop = propose(o, votes, 1, 0, &at, res->why, sizeof(res->why));
		dec = prop ? strdup(prop) : NULL;
		res->decided = dec != NULL;
	}
	if (!res->decided) {
		/* Staged here, decision unknown: the processes drop it at the hold time. */
		snprintf(res->why, sizeof(res->why), "the decision could not be read from %s: %s",
			 x ? nbpf_xchg_where(x) : "-", ncclbpf_errmsg());
		nbpf_coord_abort(co);
		err = err ? err : -EIO;
		goto out;
	}
	err = 0;
	/* Test-only: the aggregator killed between the nodes' decision and its own commit. */
	if (o->step && getenv("NCCLBPF_TEST_DIE_AFTER_DECISION") &&
	    !strcmp(getenv("NCCLBPF_TEST_DIE_AFTER_DECISION"), o->step))
		raise(SIGKILL);
	if (!strncmp(dec, "commit", 6)) {
		res->committed = true;
		res->at_call = field_u64(dec, "at=");
		if ((err = parse_known(dec, &known, &n_known)) == 0)
			nbpf_coord_commit(co, res->at_call, known, n_known);
	} else {
		if (!res->why[0])
			snprintf(res->why, sizeof(res->why), "another node decided to abort");
		nbpf_coord_abort(co);
	}
out:
	free(known);
	free(vote);
	free(prop);
	free(dec);
	return err;
}
