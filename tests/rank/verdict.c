/* SPDX-License-Identifier: Apache-2.0 */
/*
 * verdict.c - the tester's invariants.
 *
 * Agreement: every rank of a communicator made the same decision at every
 * call that all of them made (the calls a killed rank made before it died
 * count too).  Truth: once every running communicator is past the call a
 * change was agreed for, each rank runs what the command reported for its
 * process: the policy version (the protocol it picks) and, when the
 * operator set one, the channel count of `rank_cfg`.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model.h"

static const char *proto_name(int p)
{
	return p == 0 ? "LL" : p == 1 ? "LL128" : p == 2 ? "SIMPLE" : "?";
}

/* Calls every member of slot k made (the members that ever joined). */
static uint64_t common_calls(const struct rm_run *r, int k, uint32_t *who)
{
	const struct rm_slot *s = &r->sh->slot[k];
	uint32_t members = atomic_load(&s->members) & atomic_load(&s->joined);
	uint64_t n = UINT64_MAX;

	*who = members;
	for (int p = 0; p < RM_MAX_PROCS; p++)
		if (members & (1u << p)) {
			uint64_t v = atomic_load(&s->progress[p]);

			n = v < n ? v : n;
		}
	return members && __builtin_popcount(members) > 1 ? n : 0;
}

int rm_check_agreement(struct rm_run *r)
{
	for (int k = 0; k < r->c->slots; k++) {
		const struct rm_slot *s = &r->sh->slot[k];
		uint32_t who;
		uint64_t n;

		if (atomic_load(&s->state) == SLOT_FREE || atomic_load(&s->gen) != r->checked_gen[k])
			continue;
		n = common_calls(r, k, &who);
		for (uint64_t i = r->checked[k]; i < n && i < RM_MAX_CALLS; i++) {
			int first = -1;

			for (int p = 0; p < RM_MAX_PROCS; p++) {
				if (!(who & (1u << p)))
					continue;
				if (first < 0) {
					first = p;
					continue;
				}
				if (s->dec[p][i] == s->dec[first][i])
					continue;
				r->disagreements++;
				if (!r->fail[0])
					snprintf(r->fail, sizeof(r->fail),
						 "communicator 0x%llx (slot %d): call %llu: rank of process %d decided %s/%d channels, rank of process %d %s/%d channels",
						 (unsigned long long)atomic_load(&s->comm_id), k,
						 (unsigned long long)i, first,
						 proto_name(rm_code_proto(s->dec[first][i])),
						 rm_code_ch(s->dec[first][i]), p,
						 proto_name(rm_code_proto(s->dec[p][i])),
						 rm_code_ch(s->dec[p][i]));
				break;
			}
		}
		if (n > r->checked[k]) {
			r->calls_checked += n - r->checked[k];
			r->checked[k] = n;
		}
	}
	return r->fail[0] ? -1 : 0;
}

/* Members of slot k that are alive and not stopped (their calls can advance). */
static bool slot_running(const struct rm_run *r, int k)
{
	const struct rm_slot *s = &r->sh->slot[k];
	uint32_t members = atomic_load(&s->members);

	if (atomic_load(&s->state) != SLOT_LIVE || !atomic_load(&s->rate))
		return false;
	for (int p = 0; p < r->c->procs; p++)
		if ((members & (1u << p)) && (!atomic_load(&r->sh->proc[p].alive) || r->stopped[p] ||
					      !(atomic_load(&s->joined) & (1u << p)) ||
					      atomic_load(&s->progress[p]) >= RM_MAX_CALLS))
			return false; /* stopped, dead, or done recording: its calls do not advance */
	return true;
}

void rm_settle(struct rm_run *r, uint64_t at, uint64_t more)
{
	uint64_t want[RM_MAX_SLOTS] = { 0 };
	struct timespec t0, t;

	for (int k = 0; k < r->c->slots; k++) {
		uint32_t who;
		uint64_t n = common_calls(r, k, &who);

		want[k] = (at > n ? at : n) + more;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		bool done = true;

		for (int k = 0; k < r->c->slots; k++) {
			uint32_t who;

			if (slot_running(r, k) && common_calls(r, k, &who) < want[k] &&
			    want[k] < RM_MAX_CALLS)
				done = false;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		/* A slow machine or a long activation: give up after 5 s; later steps judge it. */
		if (done || (t.tv_sec - t0.tv_sec) >= 5)
			return;
		usleep(5000);
	}
}

int rm_check_truth(struct rm_run *r)
{
	for (int k = 0; k < r->c->slots; k++) {
		const struct rm_slot *s = &r->sh->slot[k];
		uint32_t members = atomic_load(&s->members), who;
		uint64_t n = common_calls(r, k, &who);

		/* Below the latest agreed call a rank may rightly run the image before it. */
		if (!slot_running(r, k) || !n || n <= r->last_at)
			continue;
		for (int p = 0; p < r->c->procs; p++) {
			const struct rm_truth *t = &r->truth[p];
			uint16_t d;
			int want;

			if (!(members & (1u << p)) || t->unsure)
				continue;
			d = s->dec[p][n - 1];
			want = t->cur == 'a' ? 0 : t->cur == 'b' ? 1 : 2;
			r->truth_checks++;
			if (rm_code_proto(d) != want ||
			    (t->cfg && (uint32_t)rm_code_ch(d) != t->cfg))
				return snprintf(r->fail, sizeof(r->fail),
						"communicator 0x%llx (slot %d): process %d was reported to run version %c%s%.0u at call %llu, but it decided %s/%d channels",
						(unsigned long long)atomic_load(&s->comm_id), k, p, t->cur,
						t->cfg ? " with rank_cfg channels " : "", t->cfg,
						(unsigned long long)(n - 1), proto_name(rm_code_proto(d)),
						rm_code_ch(d)) ? -1 : -1;
		}
	}
	return 0;
}
