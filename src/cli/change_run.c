/* SPDX-License-Identifier: MIT */
/*
 * change_run.c - one agreed change over this node's processes, as
 * `reload`, `rollback` and `map update` of a decision map make it: stage
 * everywhere, then commit at one call everywhere, or abort everywhere
 * (control/ctl_coord.h).  The report is the truth: every process is said
 * to have applied the change, not to have applied it, or, when it did not
 * answer, that it is not known, with what to do about it.
 *
 * Exit status: 0 applied everywhere; 1 applied nowhere (refused, or a
 * process did not answer the stage: the change was aborted and a late
 * process refuses it, its deadline having passed), or applied everywhere
 * but late; 3 (CLI_PARTIAL) applied by some and not others, or unknown.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "control/ctl_client.h"
#include "control/ctl_coord.h"

/*
 * A process that stopped running the plugin meanwhile (no socket, refused
 * connect).  Never one that answered: its refusal (-ENOENT "no previous
 * image" from a replacement rank with no rollback target) is a refusal,
 * and dropping it would change its communicators' other ranks alone.
 */
static bool gone(const struct nbpf_coord_proc *p)
{
	return !p->path[0] || (p->stage == NBPF_COORD_REFUSED && !p->answered &&
			       (p->err == -ECONNREFUSED || p->err == -ENOENT || p->err == -ESRCH));
}

static const char *outcome(const struct nbpf_coord_proc *p)
{
	if (p->commit == NBPF_COORD_OK)
		return "applied";
	if (p->commit == NBPF_COORD_UNKNOWN)
		return "unknown";
	return "not_applied";
}

static void clock_str(uint64_t ns, char *buf, size_t n)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;

	localtime_r(&t, &tm);
	snprintf(buf, n, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

void cli_change_json(const struct nbpf_coord *co, uint64_t at_call, bool committed)
{
	bool first = true;

	putchar('[');
	for (int i = 0; i < co->n; i++) {
		const struct nbpf_coord_proc *p = &co->p[i];
		bool ok = committed && p->commit == NBPF_COORD_OK;

		if (p->stage == NBPF_COORD_NONE)
			continue;
		printf("%s{\"pid\":%d,\"ok\":%s,\"at_call\":%" PRIu64 ",\"change\":", first ? "" : ",",
		       p->pid, ok ? "true" : "false", at_call);
		cli_json_str(stdout, co->id);
		printf(",\"outcome\":\"%s\",\"stage\":\"%s\",\"commit\":\"%s\"", outcome(p),
		       nbpf_coord_res_name(p->stage), nbpf_coord_res_name(p->commit));
		if (ok)
			printf(",\"gen\":%" PRIu64 ",\"late\":%" PRIu64, p->gen, p->late);
		if (!ok && p->msg[0]) {
			printf(",\"error\":");
			cli_json_str(stdout, p->msg);
		}
		putchar('}');
		first = false;
	}
	puts("]");
}

/* The stage did not reach every process: abort everywhere; nothing changed anywhere. */
static int report_aborted(struct cli *c, struct nbpf_coord *co, const struct cli_change *ch)
{
	char t[32];

	nbpf_coord_abort(co);
	if (c->json) {
		cli_change_json(co, 0, false);
		return CLI_NO;
	}
	clock_str(co->deadline, t, sizeof(t));
	for (int i = 0; i < co->n; i++) {
		const struct nbpf_coord_proc *p = &co->p[i];

		if (p->stage == NBPF_COORD_REFUSED && gone(p))
			cli_pid_err(0, p->pid, p->err, p->msg);
		else if (p->stage == NBPF_COORD_REFUSED)
			cli_err(0, "pid %d: %s refused: %s", p->pid, ch->verb, p->msg);
		else if (p->stage == NBPF_COORD_UNKNOWN)
			cli_err(0, "pid %d: no answer to the stage by its deadline %s (stopped or slow?); it refuses the change if it reads it later",
				p->pid, t);
	}
	cli_err(0, "%s: change %s aborted: nothing changed in any process", ch->verb, co->id);
	return CLI_NO;
}

/*
 * The processes staged a rollback to different images (a rank replaced
 * since the last reload, on another policy): rolling back would split
 * their communicators.  Aborted everywhere; the operator names the image.
 */
static int report_targets(struct cli *c, struct nbpf_coord *co, const struct cli_change *ch,
			  int d)
{
	int first = 0;

	nbpf_coord_abort(co);
	while (co->p[first].stage != NBPF_COORD_OK)
		first++;
	for (int i = 0; i < co->n; i++)
		if (co->p[i].stage == NBPF_COORD_OK)
			snprintf(co->p[i].msg, sizeof(co->p[i].msg),
				 "%s: its previous image (%016" PRIx64 ") is not pid %d's (%016" PRIx64
				 "): their histories differ",
				 ch->verb, co->p[i].target,
				 co->p[i].target == co->p[first].target ? co->p[d].pid : co->p[first].pid,
				 co->p[i].target == co->p[first].target ? co->p[d].target : co->p[first].target);
	if (c->json) {
		cli_change_json(co, 0, false);
		return CLI_NO;
	}
	for (int i = 0; i < co->n; i++)
		if (co->p[i].stage == NBPF_COORD_OK)
			cli_err(0, "pid %d: %s", co->p[i].pid, co->p[i].msg);
	cli_err(0, "%s: change %s aborted: nothing changed in any process.  Reload the image you want "
		   "them all to run instead (`ncclbpf reload all OBJ`)", ch->verb, co->id);
	return CLI_NO;
}

void cli_change_text(const struct nbpf_coord *co, const struct cli_change *ch, uint64_t at_call)
{
	char when[48];

	if (at_call)
		snprintf(when, sizeof(when), "from call %" PRIu64, at_call);
	else
		snprintf(when, sizeof(when), "now");
	for (int i = 0; i < co->n; i++) {
		const struct nbpf_coord_proc *p = &co->p[i];

		if (p->commit == NBPF_COORD_OK)
			printf("pid %d: %s, active %s (image %" PRIu64 ", change %s)\n", p->pid, ch->summary,
			       when, p->gen, co->id);
		if (p->commit == NBPF_COORD_OK && p->late)
			cli_err(0, "pid %d: %" PRIu64 " communicators were already past call %" PRIu64
				   ": they switched at their next call and their ranks may disagree",
				p->pid, p->late, at_call);
	}
}

/* Some processes applied it and others did not, or did not say: who, and what to do. */
void cli_change_partial(const struct nbpf_coord *co, const struct cli_change *ch, uint64_t at_call)
{
	char t[32], applied[512] = "";
	size_t len = 0;

	clock_str(co->hold, t, sizeof(t));
	for (int i = 0; i < co->n && len < sizeof(applied) - 16; i++)
		if (co->p[i].commit == NBPF_COORD_OK)
			len += (size_t)snprintf(applied + len, sizeof(applied) - len, "%s%d", len ? " " : "",
						co->p[i].pid);
	for (int i = 0; i < co->n; i++) {
		const struct nbpf_coord_proc *p = &co->p[i];

		if (p->commit == NBPF_COORD_REFUSED)
			cli_err(0, "pid %d did NOT apply change %s: %s", p->pid, co->id, p->msg);
		else if (p->commit == NBPF_COORD_UNKNOWN)
			cli_err(0, "pid %d did not answer the commit of change %s by %s: it switches at call %" PRIu64
				   " if it read the commit before then, else it dropped the change; `ncclbpf change status %d %s` says which",
				p->pid, co->id, t, at_call, p->pid, co->id);
	}
	cli_err(0, "%s: change %s is applied by pids %s and not (or not known) by the others: their ranks "
		   "disagree from call %" PRIu64 ".  Recovery: give the others the same change at the same call "
		   "while they are below it (`ncclbpf %s PID ... --at-call %" PRIu64 "`), or roll back the pids that "
		   "applied it (`ncclbpf rollback PID... --at-call N`, N past every rank's call)",
		ch->verb, co->id, applied[0] ? applied : "(none)", at_call, ch->verb, at_call);
}

int cli_change_run(struct cli *c, const struct cli_change *ch, const int *pids, int n)
{
	struct nbpf_coord co;
	uint64_t at_call = 0;
	int err, rc = CLI_OK, staged, committed, reached = 0, d;

	err = nbpf_coord_init(&co, ch->id, ch->owner, pids, n,
			      ch->timeout_ms > 0 ? ch->timeout_ms : nbpf_ctl_client_timeout_ms());
	if (err)
		return cli_err(CLI_NO, "%s: %s", ch->verb, strerror(-err));
	co.rate_window_ms = ch->when == CLI_AT_SYNC && !ch->margin ? 200 : 0;
	staged = nbpf_coord_stage(&co, ch->fields, ch->records);
	/* Choosing processes (all, a selector): one that stopped running the plugin is no target. */
	for (int i = 0; i < co.n; i++) {
		if (ch->skip_gone && gone(&co.p[i]))
			co.p[i].stage = NBPF_COORD_NONE;
		reached += co.p[i].stage != NBPF_COORD_NONE;
	}
	if (!reached) {
		rc = cli_err(CLI_NO, "no process is running the plugin (%d stale sockets skipped)", n);
		goto out;
	}
	if (staged < reached) {
		rc = report_aborted(c, &co, ch);
		goto out;
	}
	if ((d = nbpf_coord_target_differs(&co)) >= 0) {
		rc = report_targets(c, &co, ch, d);
		goto out;
	}
	at_call = ch->when == CLI_AT_NOW ? 0 : ch->when == CLI_AT_CALL ? ch->at_call
		  : nbpf_coord_at_call(&co, ch->margin, 1.0);
	committed = nbpf_coord_commit(&co, at_call, NULL, 0);
	if (c->json)
		cli_change_json(&co, at_call, true);
	else
		cli_change_text(&co, ch, at_call);
	if (committed < staged) {
		if (!c->json)
			cli_change_partial(&co, ch, at_call);
		rc = CLI_PARTIAL;
	} else {
		for (int i = 0; i < co.n; i++)
			if (co.p[i].commit == NBPF_COORD_OK && co.p[i].late)
				rc = CLI_NO;
	}
out:
	nbpf_coord_free(&co);
	return rc;
}
