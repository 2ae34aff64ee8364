// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * loop_ranks.c - what every closed loop does with the local ranks: find
 * the processes whose policy has the loop's maps (control socket `maps`
 * request, then the map files, shared memory), read how far each rank's
 * tuner has got (`calls` request), and write a plan that every rank
 * applies from one agreed call.
 *
 * Why every write carries a call number: ranks run the same sequence of
 * collectives but not in lock step, so a plan that took effect "now"
 * would land on rank 0 at call 1000 and on rank 1 at call 1003, and the
 * three calls between would run with different channel counts: a hang in
 * NCCL.  A plan write is an agreed change (agree.h): every rank stages the
 * new plan and switches to it at one call, the highest any rank has made
 * plus a margin; the host keeps the plan before it for calls below.  What
 * "before" is comes from the ranks themselves, never from the loop's
 * memory, so a loop run again, or killed and started anew, cannot make
 * ranks that switch at different calls read different plans.
 *
 * One writer: the loop takes a lease on the maps it writes in every rank
 * process, so a second loop is refused with the first one's name.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agree.h"
#include "control/ctl_client.h"
#include "control/ctl_coord.h"
#include "control/ctl_proto.h"
#include "error.h"
#include "loop.h"
#include "ncclbpf/runtime.h"
#include "xchg.h"

double nbpf_loop_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void put_maps(struct nbpf_loop_rank *r)
{
	for (int m = 0; m < NBPF_LOOP_MAX_MAPS; m++) {
		if (r->map[m])
			ncclbpf_map__put(r->map[m]);
		r->map[m] = NULL;
	}
}

/*
 * Opens pid's maps of the spec.  -ENOENT when its policy lacks one (it
 * runs another policy), -EPROTO when one has another value size (another
 * version of the policy, or a map of that name that is something else);
 * why says which, for the error the caller reports if no rank is found.
 */
static int open_rank(struct nbpf_loop_ranks *s, int pid, struct nbpf_loop_rank *r)
{
	const char *path[NBPF_LOOP_MAX_MAPS] = { 0 }, *em;
	struct nbpf_ctl_msg m;
	int err = nbpf_ctl_call_pid(pid, NBPF_CTL_MAPS, NULL, &m, &em);

	memset(r, 0, sizeof(*r));
	r->pid = pid;
	if (err) {
		snprintf(s->why, sizeof(s->why), "pid %d: %s", pid, em ? em : strerror(-err));
		goto out;
	}
	for (uint32_t i = 0; i < m.n_recs; i++) {
		const char *name = nbpf_ctl_rec_get(&m.recs[i], "name");

		if (strcmp(m.recs[i].kind, "map") || !name)
			continue;
		for (int j = 0; j < s->n_maps; j++)
			if (!strcmp(name, s->spec[j].name))
				path[j] = nbpf_ctl_rec_get(&m.recs[i], "path");
	}
	for (int j = 0; j < s->n_maps && !err; j++) {
		const struct nbpf_loop_map_spec *sp = &s->spec[j];

		if (!path[j] || !*path[j]) {
			snprintf(s->why, sizeof(s->why), "pid %d: its policy has no map '%s'", pid, sp->name);
			err = -ENOENT;
		} else if ((err = ncclbpf_map__open_path(path[j], sp->write, &r->map[j]))) {
			snprintf(s->why, sizeof(s->why), "pid %d: map '%s': %s", pid, sp->name,
				 ncclbpf_errmsg());
		} else if (ncclbpf_map__key_size(r->map[j]) != sp->key_size ||
			   ncclbpf_map__value_size(r->map[j]) != sp->value_size) {
			snprintf(s->why, sizeof(s->why),
				 "pid %d: map '%s' has %u-byte keys and %u-byte values, this loop needs %u and %u",
				 pid, sp->name, ncclbpf_map__key_size(r->map[j]),
				 ncclbpf_map__value_size(r->map[j]), sp->key_size, sp->value_size);
			err = -EPROTO;
		}
	}
out:
	nbpf_ctl_msg_free(&m);
	if (err)
		put_maps(r);
	return err;
}

/* The lease on every written map of rank i until `until` (0: release); -EBUSY says whose. */
static int lease_rank(struct nbpf_loop_ranks *s, int i, uint64_t until, bool take)
{
	for (int j = 0; j < s->n_maps; j++) {
		struct nbpf_ctl_buf b = { .max = NBPF_CTL_MAX_REQUEST };
		struct nbpf_ctl_msg m;
		const char *em;
		int err;

		if (!s->spec[j].write)
			continue;
		nbpf_ctl_buf_rec(&b, "lease");
		nbpf_ctl_buf_str(&b, "name", s->spec[j].name);
		nbpf_ctl_buf_str(&b, "owner", s->owner);
		nbpf_ctl_buf_u64(&b, "until", until);
		if (take)
			nbpf_ctl_buf_u64(&b, "take", 1);
		err = b.err ? b.err : nbpf_ctl_call_pid(s->r[i].pid, NBPF_CTL_LEASE, b.data, &m, &em);
		nbpf_ctl_buf_free(&b);
		if (err)
			err = nbpf_err(err, "pid %d: %s", s->r[i].pid, em);
		nbpf_ctl_msg_free(&m);
		if (err)
			return err;
	}
	return 0;
}

/* How long a lease lasts unrenewed: a loop killed with -9 frees its maps then. */
static uint64_t lease_ns(const struct nbpf_loop_opts *o)
{
	uint64_t ms = (uint64_t)(o->timeout_ms > 0 ? o->timeout_ms : 10000) * 3;

	return (ms < 30000 ? 30000 : ms) * 1000000ull;
}

static int lease_all(struct nbpf_loop_ranks *s, bool take)
{
	uint64_t until = nbpf_coord_rt_ns() + lease_ns(s->o);
	int err = 0;

	for (int i = 0; i < s->n && !err; i++)
		err = lease_rank(s, i, until, take);
	return err;
}

void nbpf_loop_ranks_close(struct nbpf_loop_ranks *s)
{
	for (int i = 0; i < s->n; i++) {
		if (s->owner[0])
			lease_rank(s, i, 0, false);
		put_maps(&s->r[i]);
	}
	free(s->r);
	s->r = NULL;
	s->n = 0;
	nbpf_xchg_close(s->x);
	s->x = NULL;
	s->owner[0] = 0;
}

/* The exchange with the other nodes of scope (NULL: this run's), when there are any. */
static int open_xchg(struct nbpf_loop_ranks *s, const char *scope, struct nbpf_xchg **x)
{
	const struct nbpf_loop_opts *o = s->o;
	/* A node votes on a plan write as late as its stage deadline (timeout_ms): wait twice that. */
	struct nbpf_xchg_opts xo = { .dir = o->share_dir, .etcd = o->etcd,
				     .scope = scope ? scope : o->job ? o->job : "loop",
				     .node = o->node, .nodes = o->nodes, .timeout_ms = 2 * o->timeout_ms };

	if (!o->share_dir && !o->etcd)
		return 0;
	return nbpf_xchg_open(&xo, x);
}

#define LEFT_KNOWN 1024

/* One plan write a loop left on this node's ranks, and what each rank says of it. */
struct left {
	char id[64], owner[128];
	int pids[64], n;            /* the ranks that hold it staged */
	bool committed;             /* some rank of this node committed it: at, known */
	uint64_t at, known[LEFT_KNOWN];
	int n_known;
};

/* Collects, from rank i's changes, the loop writes staged there (and what committed them). */
static void left_scan(struct nbpf_loop_ranks *s, int i, struct left *l, int *n, int max)
{
	struct nbpf_ctl_msg m;
	const char *em;

	if (nbpf_ctl_call_pid(s->r[i].pid, NBPF_CTL_CHANGES, NULL, &m, &em)) {
		nbpf_ctl_msg_free(&m);
		return;
	}
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t k = 0; k < m.n_recs; k++) {
			const struct nbpf_ctl_rec *r = &m.recs[k];
			const char *id = nbpf_ctl_rec_get(r, "id") ?: "", *own = nbpf_ctl_rec_get(r, "owner") ?: "";
			const char *st = nbpf_ctl_rec_get(r, "state") ?: "";
			int j;

			if (strcmp(r->kind, "change") || strncmp(id, "loop-", 5))
				continue;
			for (j = 0; j < *n && strcmp(l[j].id, id); j++)
				;
			/* First the staged ones (a staged write is what needs finishing), then their commits. */
			if (!pass && !strcmp(st, "staged") && strcmp(own, s->owner)) {
				if (j == *n && *n < max) {
					memset(&l[j], 0, sizeof(l[j]));
					snprintf(l[j].id, sizeof(l[j].id), "%s", id);
					snprintf(l[j].owner, sizeof(l[j].owner), "%s", own);
					(*n)++;
				}
				if (j < *n && l[j].n < 64)
					l[j].pids[l[j].n++] = s->r[i].pid;
			} else if (pass && j < *n && !strcmp(st, "committed") && !l[j].committed) {
				int c = nbpf_ctl_parse_u64s(nbpf_ctl_rec_get(r, "known") ?: "", l[j].known,
							    LEFT_KNOWN);

				l[j].committed = true;
				l[j].n_known = c > 0 ? c : 0;
				nbpf_ctl_rec_u64(r, "at_call", &l[j].at);
			}
		}
	nbpf_ctl_msg_free(&m);
}

/*
 * The decision of a write left staged: a rank of this node committed it
 * (its loop died mid-commit), or the exchange holds it (its loop died
 * between the nodes' decision and its own commit).  When the exchange has
 * none yet, "abort" is written as the decision, so a node of that step
 * still running reads the same.  A loop of one node (no job= in its
 * owner) that committed nowhere decided nothing that a rank runs: abort.
 */
static int left_decide(struct nbpf_loop_ranks *s, struct left *l)
{
	const char *job = strstr(l->owner, " job="), *n = strrchr(l->id, '-');
	const char *kind = s->o->etcd ? "etcd:" : "dir:";
	struct nbpf_xchg *x = NULL;
	char step[40], *dec = NULL;
	int err;

	if (l->committed)
		return 0;
	if (!job || !n)
		return 0; /* abort */
	/* Its decision is in an exchange of that kind (the same directory or cluster is the operator's). */
	if (!s->x || strncmp(job + 5, kind, strlen(kind)))
		return nbpf_err(-ENOENT, "it was agreed through %.*s: run this loop with the --share-dir or --etcd that one used",
				(int)strcspn(job + 5, ":"), job + 5);
	snprintf(step, sizeof(step), "p%d.decision", atoi(n + 1));
	if ((err = open_xchg(s, job + 5 + strlen(kind), &x)) ||
	    (err = nbpf_xchg_decide(x, step, "abort", &dec))) {
		nbpf_xchg_close(x);
		return err;
	}
	if (!strncmp(dec, "commit", 6)) {
		const char *k = strstr(dec, "known=");
		int c = k ? nbpf_ctl_parse_u64s(k + 6, l->known, LEFT_KNOWN) : 0;

		l->committed = true;
		l->at = strtoull(strstr(dec, "at=") ? strstr(dec, "at=") + 3 : "0", NULL, 10);
		l->n_known = c > 0 ? c : 0;
		if (c < 0)
			err = nbpf_err(-E2BIG, "its decision names more than %d communicators", LEFT_KNOWN);
	}
	free(dec);
	nbpf_xchg_close(x);
	return err;
}

/*
 * A loop killed with -9 mid-step may leave a plan write staged on this
 * node's ranks that other ranks (of this node or another) committed:
 * dropped at its hold time, it would split them.  The next loop finishes
 * it as it was decided, before it writes anything itself.
 */
static void finish_left(struct nbpf_loop_ranks *s)
{
	struct left *l = calloc(8, sizeof(*l));
	int n = 0;

	if (!l)
		return;
	for (int i = 0; i < s->n; i++)
		left_scan(s, i, l, &n, 8);
	for (int j = 0; j < n; j++) {
		struct nbpf_coord co;
		int err = left_decide(s, &l[j]), done = 0;
		uint64_t late = 0;

		if (err) {
			if (s->o->log)
				fprintf(s->o->log, "change %s, left staged by %s: its decision cannot be read (%s): "
						   "its ranks drop it at its hold time\n", l[j].id, l[j].owner, ncclbpf_errmsg());
			continue;
		}
		if (nbpf_coord_init(&co, l[j].id, s->owner, l[j].pids, l[j].n, s->o->timeout_ms > 0 ? s->o->timeout_ms : 5000))
			continue;
		for (int i = 0; i < co.n; i++)
			co.p[i].stage = NBPF_COORD_OK; /* staged before: the decision is all that is left */
		if (l[j].committed)
			done = nbpf_coord_commit(&co, l[j].at, l[j].known, (uint32_t)l[j].n_known);
		else
			done = nbpf_coord_abort(&co);
		for (int i = 0; i < co.n; i++)
			late += co.p[i].late;
		if (s->o->log && l[j].committed)
			fprintf(s->o->log, "change %s, left staged by %s: committed on %d of %d processes at call %llu%s\n",
				l[j].id, l[j].owner, done, co.n, (unsigned long long)l[j].at,
				late ? " (LATE: a communicator was past it)" : "");
		else if (s->o->log)
			fprintf(s->o->log, "change %s, left staged by %s: aborted on %d of %d processes\n", l[j].id,
				l[j].owner, done, co.n);
		nbpf_coord_free(&co);
	}
	free(l);
}

int nbpf_loop_ranks_find(struct nbpf_loop_ranks *s, const struct nbpf_loop_opts *o,
			 const struct nbpf_loop_map_spec *spec, int n_maps)
{
	double t_end = nbpf_loop_now_s() + o->timeout_ms / 1e3;
	int want = o->ranks > 0 ? o->ranks : 1;

	if (n_maps < 1 || n_maps > NBPF_LOOP_MAX_MAPS)
		return nbpf_err(-EINVAL, "1 to %d maps per loop", NBPF_LOOP_MAX_MAPS);
	memset(s, 0, sizeof(*s));
	s->o = o;
	s->spec = spec;
	s->n_maps = n_maps;
	for (;;) {
		int *pids = NULL, n;

		nbpf_loop_ranks_close(s);
		if (o->pids) {
			n = o->n_pids;
			pids = malloc(sizeof(int) * (size_t)(n ? n : 1));
			if (!pids)
				return -ENOMEM;
			memcpy(pids, o->pids, sizeof(int) * (size_t)n);
		} else {
			n = nbpf_ctl_list_pids(&pids);
			if (n < 0)
				return n;
		}
		s->r = calloc((size_t)(n ? n : 1), sizeof(*s->r));
		if (!s->r) {
			free(pids);
			return -ENOMEM;
		}
		for (int i = 0; i < n; i++)
			if (!open_rank(s, pids[i], &s->r[s->n]))
				s->n++;
		free(pids);
		if (s->n >= want) {
			char host[64] = "";
			int err;

			gethostname(host, sizeof(host) - 1);
			/* The job names the exchange a successor reads this loop's decisions from. */
			snprintf(s->owner, sizeof(s->owner), "loop@%.40s:%d%s%.64s", host, (int)getpid(),
				 o->etcd ? " job=etcd:" : o->share_dir ? " job=dir:" : "",
				 o->share_dir || o->etcd ? o->job ? o->job : "loop" : "");
			s->started = nbpf_coord_rt_ns();
			err = lease_all(s, o->take_over);
			if (err == -EBUSY) {
				char who[512];

				snprintf(who, sizeof(who), "%s", ncclbpf_errmsg());
				err = nbpf_err(err, "%s: another `ncclbpf loop` writes this job's plan: stop it first "
						    "(one killed with -9 frees it when its lease ends, or take it over with --take-over)",
					       who);
			}
			if (!err)
				err = open_xchg(s, NULL, &s->x);
			if (!err)
				finish_left(s);
			if (err) {
				char why[512];

				snprintf(why, sizeof(why), "%s", ncclbpf_errmsg());
				nbpf_loop_ranks_close(s);
				return nbpf_err(err, "%s", why);
			}
			return 0;
		}
		if (nbpf_loop_now_s() > t_end) {
			char names[160] = "";
			int found = s->n;

			nbpf_loop_ranks_close(s); /* a failed find leaves nothing to close */
			for (int j = 0; j < n_maps; j++)
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
					 j ? ", " : "", spec[j].name);
			return nbpf_err(-ETIMEDOUT, "found %d processes whose policy has the maps %s, wanted %d%s%s%s",
					found, names, want, *s->why ? " (" : "", s->why, *s->why ? ")" : "");
		}
		usleep(20000);
	}
}

int nbpf_loop_ranks_calls(struct nbpf_loop_ranks *s, uint64_t *max, uint64_t *min)
{
	double t;

	*max = 0;
	*min = UINT64_MAX;
	for (int i = 0; i < s->n; i++) {
		struct nbpf_ctl_msg m;
		const char *em;
		uint64_t hi = 0;
		bool tuner = false;
		int err = nbpf_ctl_call_pid(s->r[i].pid, NBPF_CTL_CALLS, NULL, &m, &em);

		if (err) {
			nbpf_ctl_msg_free(&m);
			return nbpf_err(err, "pid %d: %s", s->r[i].pid, em);
		}
		for (uint32_t j = 0; j < m.n_recs; j++) {
			const char *k = nbpf_ctl_rec_get(&m.recs[j], "kind");
			uint64_t v = 0;

			if (!strcmp(m.recs[j].kind, "comm") && k && !strcmp(k, "tuner") &&
			    !nbpf_ctl_rec_u64(&m.recs[j], "calls", &v)) {
				tuner = true;
				hi = v > hi ? v : hi;
			}
		}
		nbpf_ctl_msg_free(&m);
		if (!tuner)
			continue; /* a process of the job without a tuner (its net role only) */
		if (hi > *max)
			*max = hi;
		if (hi < *min)
			*min = hi;
	}
	if (*min == UINT64_MAX)
		*min = 0;
	t = nbpf_loop_now_s();
	if (s->last_t > 0 && t > s->last_t && *max >= s->last_calls) {
		double r = (double)(*max - s->last_calls) / (t - s->last_t);

		s->rate = s->rate > r ? s->rate * 0.5 + r * 0.5 : r; /* rises at once, decays slowly */
	}
	s->last_t = t;
	s->last_calls = *max;
	return 0;
}

static void put_hex(struct nbpf_ctl_buf *b, const char *k, const void *p, size_t n)
{
	char h[64];

	for (size_t i = 0; i < n && i < 31; i++)
		snprintf(h + 2 * i, 3, "%02x", ((const uint8_t *)p)[i]);
	nbpf_ctl_buf_str(b, k, h);
}

int nbpf_loop_ranks_activate(struct nbpf_loop_ranks *s, int m, const uint32_t *keys,
			     const int *want, int n_keys, uint64_t *at, bool *late)
{
	const struct nbpf_loop_opts *o = s->o;
	struct nbpf_ctl_buf rec = { .max = NBPF_CTL_MAX_REQUEST };
	struct nbpf_agree_opts ao = { .margin = o->margin,
				      .margin_s = o->margin_s };
	struct nbpf_agree_result res;
	struct nbpf_coord co;
	char step[32], id[64];
	int *pids = calloc((size_t)(s->n ? s->n : 1), sizeof(int)), err;

	*at = 0;
	*late = false;
	if (!pids)
		return -ENOMEM;
	for (int i = 0; i < s->n; i++)
		pids[i] = s->r[i].pid;
	/* The word applies from call 0 of the image that holds it: the image switches at the agreed call. */
	for (int k = 0; k < n_keys; k++) {
		uint64_t w = nbpf_loop_plan_word((unsigned)want[k], (unsigned)want[k], 0);

		nbpf_ctl_buf_rec(&rec, "op");
		nbpf_ctl_buf_str(&rec, "map", s->spec[m].name);
		put_hex(&rec, "key", &keys[k], sizeof(keys[k]));
		put_hex(&rec, "value", &w, sizeof(w));
	}
	if (!o->margin)
		ao.margin = (uint64_t)(s->rate * o->margin_s) + 1000;
	snprintf(step, sizeof(step), "p%d", s->changes);
	/*
	 * Unique per loop instance, and short whatever the host and node names:
	 * a process refuses an id it saw before, so a truncated counter, or a
	 * rerun in the same process (or a reused pid), would abort every write.
	 */
	snprintf(id, sizeof(id), "loop-%d-%llx-%d", (int)getpid(), (unsigned long long)s->started,
		 s->changes++);
	ao.step = step;
	ao.records = rec.data;
	err = rec.err ? rec.err : lease_all(s, false);
	if (!err)
		err = nbpf_coord_init(&co, id, s->owner, pids, s->n, o->timeout_ms > 0 ? o->timeout_ms : 5000);
	free(pids);
	if (!err) {
		co.rate = s->rate; /* what the vote carries the calls forward with */
		err = nbpf_agree(&co, s->x, &ao, &res);
		for (int i = 0; !err && i < co.n; i++) {
			if (co.p[i].commit == NBPF_COORD_OK)
				*late |= co.p[i].late > 0;
			else if (res.committed)
				err = nbpf_err(-EIO, "pid %d: %s write not applied (%s): %s", co.p[i].pid,
					       s->spec[m].name, nbpf_coord_res_name(co.p[i].commit), co.p[i].msg);
		}
		if (!err && !res.committed) {
			char why[600] = "";

			for (int i = 0; i < co.n && !why[0]; i++)
				if (co.p[i].stage != NBPF_COORD_OK)
					snprintf(why, sizeof(why), "pid %d: %s", co.p[i].pid, co.p[i].msg);
			err = nbpf_err(-EAGAIN, "%s write aborted everywhere, nothing changed: %s", s->spec[m].name,
				       why[0] ? why : res.why);
		}
		*at = res.at_call;
		nbpf_coord_free(&co);
	}
	nbpf_ctl_buf_free(&rec);
	return err;
}

int nbpf_loop_ranks_plan(struct nbpf_loop_ranks *s, int m, const uint32_t *keys, int n_keys,
			 int *cur)
{
	for (int i = 0; i < s->n; i++) {
		struct ncclbpf_map *map = NULL;
		struct nbpf_ctl_msg msg;
		const char *em, *path = NULL;
		int err = nbpf_ctl_call_pid(s->r[i].pid, NBPF_CTL_MAPS, NULL, &msg, &em);

		/* The map the rank's current image holds (a plan write makes a new copy). */
		for (uint32_t r = 0; !err && r < msg.n_recs && !path; r++)
			if (!strcmp(msg.recs[r].kind, "map") &&
			    !strcmp(nbpf_ctl_rec_get(&msg.recs[r], "name") ?: "", s->spec[m].name))
				path = nbpf_ctl_rec_get(&msg.recs[r], "path");
		if (!err && (!path || ncclbpf_map__open_path(path, false, &map)))
			err = -ENOENT;
		for (int k = 0; !err && k < n_keys; k++) {
			uint64_t w = 0;
			int v;

			ncclbpf_map__lookup(map, &keys[k], &w);
			/* What a rank past the word's call runs (a word an old loop wrote may still switch). */
			v = (int)(w & 0xff);
			if (i && v != cur[k])
				err = nbpf_err(-EPROTO, "ranks run different plans for key %u (%d on pid %d, %d on pid %d): "
							"an aggregator of another version wrote them; reload the policy to start afresh",
					       keys[k], cur[k], s->r[0].pid, v, s->r[i].pid);
			cur[k] = v;
		}
		if (map)
			ncclbpf_map__put(map);
		nbpf_ctl_msg_free(&msg);
		if (err)
			return err == -ENOENT ? nbpf_err(err, "pid %d: %s: cannot read it", s->r[i].pid,
							 s->spec[m].name) : err;
	}
	return 0;
}
