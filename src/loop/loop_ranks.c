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
 * NCCL.  The activation call is the highest call any rank has made plus a
 * margin; the tuner compares it with its own per-communicator counter.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "control/ctl_client.h"
#include "control/ctl_proto.h"
#include "error.h"
#include "loop.h"
#include "ncclbpf/runtime.h"

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

void nbpf_loop_ranks_close(struct nbpf_loop_ranks *s)
{
	for (int i = 0; i < s->n; i++)
		put_maps(&s->r[i]);
	free(s->r);
	s->r = NULL;
	s->n = 0;
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
		if (s->n >= want)
			return 0;
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

int nbpf_loop_ranks_activate(struct nbpf_loop_ranks *s, int m, const uint32_t *keys,
			     const int *want, const int *cur, int n_keys, uint64_t hi,
			     uint64_t *at, bool *late)
{
	const struct nbpf_loop_opts *o = s->o;
	uint64_t margin = o->margin ? o->margin : (uint64_t)(s->rate * o->margin_s) + 1000, lo;
	int err;

	*at = hi + margin;
	*late = false;
	for (int i = 0; i < s->n; i++)
		for (int k = 0; k < n_keys; k++) {
			uint64_t w = nbpf_loop_plan_word((unsigned)want[k], (unsigned)cur[k], *at);

			err = ncclbpf_map__update(s->r[i].map[m], &keys[k], &w, NCCLBPF_ANY);
			if (err)
				return nbpf_err(err, "pid %d: %s write: %s", s->r[i].pid, s->spec[m].name,
						ncclbpf_errmsg());
		}
	if ((err = nbpf_loop_ranks_calls(s, &hi, &lo)))
		return err;
	*late = hi >= *at;
	return 0;
}
