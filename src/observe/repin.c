// SPDX-License-Identifier: Apache-2.0
/*
 * repin.c - moving job threads back to their home NUMA node (repin.h).
 */
#include "repin.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "runtime/error.h"

struct repin_thread {
	int tid;
	int home;
	bool pinned;
};

struct nbpf_repin {
	int *node;
	int n_cpus;
	struct nbpf_repin_opts o;
	struct nbpf_repin_ops ops;
	struct repin_thread *th;
	size_t n_th, cap_th;
	double tokens, t_last;
	struct nbpf_repin_stats st;
};

static int sys_get(void *ctx, int tid, cpu_set_t *set)
{
	(void)ctx;
	return sched_getaffinity(tid, sizeof(*set), set) ? -errno : 0;
}

static int sys_set(void *ctx, int tid, const cpu_set_t *set)
{
	(void)ctx;
	return sched_setaffinity(tid, sizeof(*set), set) ? -errno : 0;
}

static const struct nbpf_repin_ops sys_ops = { sys_get, sys_set, NULL };

int nbpf_repin_new(const int *node, int n_cpus, const struct nbpf_repin_opts *o,
		   struct nbpf_repin **out)
{
	struct nbpf_repin *r;

	*out = NULL;
	if (n_cpus <= 0 || n_cpus > CPU_SETSIZE)
		return nbpf_err(-EINVAL, "re-pinning: %d CPUs in the NUMA table", n_cpus);
	r = calloc(1, sizeof(*r));
	if (!r || !(r->node = malloc(n_cpus * sizeof(*node)))) {
		free(r);
		return nbpf_err(-ENOMEM, "out of memory");
	}
	for (int i = 0; i < n_cpus; i++)
		r->node[i] = node[i];
	r->n_cpus = n_cpus;
	r->o = *o;
	r->ops = o->ops ? *o->ops : sys_ops;
	if (!(r->o.max_per_s > 0))
		r->o.max_per_s = 10;
	if (r->o.n_online <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		r->o.n_online = n > 0 ? (int)n : 1;
	}
	r->tokens = r->o.max_per_s < 1 ? 1 : r->o.max_per_s;
	r->t_last = -1;
	*out = r;
	return 0;
}

void nbpf_repin_free(struct nbpf_repin *r)
{
	if (!r)
		return;
	free(r->node);
	free(r->th);
	free(r);
}

static struct repin_thread *find(const struct nbpf_repin *r, int tid)
{
	for (size_t i = 0; i < r->n_th; i++)
		if (r->th[i].tid == tid)
			return &r->th[i];
	return NULL;
}

static int node_of(const struct nbpf_repin *r, int cpu)
{
	return cpu >= 0 && cpu < r->n_cpus ? r->node[cpu] : -1;
}

/*
 * First sight: the home, and whether someone else restricted the thread.
 * A mask already narrowed when we first meet the thread is the operator's
 * (or the framework's) decision, which we must not undo.
 */
static struct repin_thread *track(struct nbpf_repin *r, int tid, int cpu)
{
	struct repin_thread *t;
	cpu_set_t set;

	if (r->n_th == r->cap_th) {
		size_t cap = r->cap_th ? 2 * r->cap_th : 64;
		void *p = realloc(r->th, cap * sizeof(*r->th));

		if (!p)
			return NULL;
		r->th = p;
		r->cap_th = cap;
	}
	CPU_ZERO(&set);
	if (r->ops.get_affinity(r->ops.ctx, tid, &set))
		return NULL; /* gone already */
	t = &r->th[r->n_th++];
	t->tid = tid;
	t->home = r->o.home_node >= 0 ? r->o.home_node : node_of(r, cpu);
	t->pinned = CPU_COUNT(&set) < r->o.n_online;
	r->st.tracked++;
	return t;
}

/* Token bucket: max_per_s moves per second, as many at once. */
static bool take_token(struct nbpf_repin *r, double now)
{
	double cap = r->o.max_per_s < 1 ? 1 : r->o.max_per_s;

	if (r->t_last >= 0 && now > r->t_last)
		r->tokens += (now - r->t_last) * r->o.max_per_s;
	if (r->tokens > cap)
		r->tokens = cap;
	r->t_last = now;
	if (r->tokens < 1)
		return false;
	r->tokens -= 1;
	return true;
}

int nbpf_repin_seen(struct nbpf_repin *r, int tid, int cpu, int prev_cpu, double now_s)
{
	struct repin_thread *t = find(r, tid);
	cpu_set_t home, cur, in_home;
	int err, n = 0;

	if (!t && !(t = track(r, tid, prev_cpu)))
		return 0;
	if (t->home < 0 || node_of(r, cpu) == t->home)
		return 0;
	if (t->pinned) {
		r->st.pinned++;
		return 0;
	}
	CPU_ZERO(&home);
	for (int c = 0; c < r->n_cpus; c++)
		if (r->node[c] == t->home)
			CPU_SET(c, &home), n++;
	if (!n)
		return 0;
	/*
	 * A sleeping thread's last CPU stays where it was until it runs again:
	 * if its mask already keeps it home, it goes home at its next wakeup.
	 */
	if (r->ops.get_affinity(r->ops.ctx, tid, &cur))
		return 0;
	CPU_AND(&in_home, &cur, &home);
	if (CPU_EQUAL(&in_home, &cur))
		return 0;
	if (!take_token(r, now_s)) {
		r->st.limited++;
		return 0;
	}
	err = r->ops.set_affinity(r->ops.ctx, tid, &home);
	if (err) {
		r->st.failed++;
		if (err == -ESRCH)
			*t = r->th[--r->n_th]; /* exited: forget it (tids are reused) */
		return err;
	}
	r->st.moved++;
	return 1;
}

int nbpf_repin_node(const struct nbpf_repin *r, int cpu)
{
	return node_of(r, cpu);
}

int nbpf_repin_home(const struct nbpf_repin *r, int tid)
{
	const struct repin_thread *t = find(r, tid);

	return t ? t->home : -1;
}

const struct nbpf_repin_stats *nbpf_repin_stats(const struct nbpf_repin *r)
{
	return &r->st;
}
