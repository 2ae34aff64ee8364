// SPDX-License-Identifier: Apache-2.0
/*
 * observe_procs.c - the processes `ncclbpf observe` watches: found through
 * the plugin's control sockets (as root in every user's runtime directory,
 * each spoken to under its owner's uid, since the plugin serves only its
 * own user), labelled with their ranks and communicators, and their
 * collective P99 over each interval.
 */
#ifdef NCCLBPF_HAVE_OBSERVE
#include <errno.h>
#include <glob.h>
#include <stdbool.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control/ctl_client.h"
#include "observe_cli.h"

static void read_comm(int pid, char *out, size_t n)
{
	char p[64];
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/comm", pid);
	out[0] = 0;
	f = fopen(p, "r");
	if (f) {
		if (fgets(out, (int)n, f))
			out[strcspn(out, "\n")] = 0;
		fclose(f);
	}
	if (!out[0])
		snprintf(out, n, "?");
}

struct proc *obs_proc_find(struct obs_state *s, int pid)
{
	for (size_t i = 0; i < s->n_procs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

struct proc *obs_proc_add(struct obs_state *s, int pid)
{
	struct proc *p = obs_proc_find(s, pid), *np;

	if (p)
		return p;
	np = realloc(s->procs, (s->n_procs + 1) * sizeof(*np));
	if (!np)
		return NULL;
	s->procs = np;
	p = &s->procs[s->n_procs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	read_comm(pid, p->comm, sizeof(p->comm));
	return p;
}

/*
 * One exchange with a plugin process.  Root talks to another user's job
 * under that user's uid: the plugin checks SO_PEERCRED, taken at connect.
 */
int obs_proc_call(struct proc *p, int type, struct nbpf_ctl_msg *m)
{
	uid_t me = geteuid();
	const char *em;
	int err;

	memset(m, 0, sizeof(*m)); /* freed by the caller whatever happens */
	if (me == 0 && p->uid != 0 && seteuid(p->uid))
		return -errno;
	err = nbpf_ctl_call_path(p->sock, type, NULL, m, &em);
	if (me == 0 && p->uid != 0 && seteuid(0))
		err = -errno;
	return err;
}

/* rank/ranks@id of a "comm" record, "?" for a rank the plugin does not know (tuner-only). */
static bool comm_label(const struct nbpf_ctl_rec *r, char *out, size_t n, const char **id)
{
	const char *rank = nbpf_ctl_rec_get(r, "rank"), *ranks = nbpf_ctl_rec_get(r, "ranks");

	*id = nbpf_ctl_rec_get(r, "comm_id");
	if (strcmp(r->kind, "comm") || !rank || !ranks || !*id)
		return false;
	snprintf(out, n, "%s/%s@%s", rank[0] == '-' ? "?" : rank, ranks, *id);
	return true;
}

/*
 * Ranks and communicators, from the process's PS answer.  A communicator
 * the tuner and the profiler both registered is listed once, with the
 * rank the profiler knows (the tuner is not told its rank).
 */
static void proc_labels(struct proc *p)
{
	struct nbpf_ctl_msg m;
	size_t k = 0;

	p->ranks[0] = 0;
	if (!p->sock[0] || obs_proc_call(p, NBPF_CTL_PS, &m)) {
		nbpf_ctl_msg_free(&m);
		return;
	}
	for (uint32_t i = 0; i < m.n_recs && k < sizeof(p->ranks) - 96; i++) {
		char one[96], other[96];
		const char *id, *oid;
		bool skip = false;

		if (!comm_label(&m.recs[i], one, sizeof(one), &id))
			continue;
		for (uint32_t j = 0; j < m.n_recs && !skip; j++) {
			if (j == i || !comm_label(&m.recs[j], other, sizeof(other), &oid) || strcmp(id, oid))
				continue;
			/* Same communicator: keep the first record with a known rank. */
			skip = (one[0] == '?' && other[0] != '?') ||
			       (j < i && (one[0] == '?') == (other[0] == '?'));
		}
		if (!skip)
			k += (size_t)snprintf(p->ranks + k, sizeof(p->ranks) - k, "%s%s", k ? "," : "", one);
	}
	nbpf_ctl_msg_free(&m);
}

static void add_socket(struct obs_state *s, const char *path, int pid, uid_t uid)
{
	struct proc *p;

	if (kill(pid, 0) && errno == ESRCH)
		return;
	if (obs_proc_find(s, pid) || !(p = obs_proc_add(s, pid)))
		return;
	snprintf(p->sock, sizeof(p->sock), "%s", path);
	p->uid = uid;
	proc_labels(p);
}

/* The processes nbpf_ctl_list finds for the current effective uid. */
static void add_listed(struct obs_state *s)
{
	struct nbpf_ctl_proc *v = NULL;
	int n = nbpf_ctl_list(&v);

	for (int i = 0; i < n; i++)
		if (v[i].pid > 0) /* 0: in a pid namespace we cannot see, nothing to probe */
			add_socket(s, v[i].path, v[i].pid, geteuid());
	free(v);
}

/* Owners of the runtime directories other users' jobs may use, root excluded. */
static int other_uids(uid_t *uids, int max)
{
	static const char *const pats[] = { "/run/user/*", "/tmp/ncclbpf-*" };
	int n = 0;

	for (size_t k = 0; k < 2; k++) {
		glob_t g;

		if (glob(pats[k], GLOB_ONLYDIR, NULL, &g))
			continue;
		for (size_t i = 0; i < g.gl_pathc && n < max; i++) {
			struct stat sb;
			bool seen = false;

			if (lstat(g.gl_pathv[i], &sb) || !S_ISDIR(sb.st_mode) || !sb.st_uid)
				continue;
			for (int j = 0; j < n && !seen; j++)
				seen = uids[j] == sb.st_uid;
			if (!seen)
				uids[n++] = sb.st_uid;
		}
		globfree(&g);
	}
	return n;
}

/*
 * Every plugin process: ours, and as root every other user's.  The plugin
 * serves only its own uid and its directories and sockets are private, so
 * each user's are listed and probed under that user's effective uid, with
 * XDG_RUNTIME_DIR as that user's session would have it.
 */
void obs_discover(struct obs_state *s)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char *saved = xdg ? strdup(xdg) : NULL;
	uid_t uids[64];
	int n;

	add_listed(s);
	if (geteuid() != 0 || getenv("NCCLBPF_CTL_DIR")) {
		free(saved);
		return;
	}
	n = other_uids(uids, 64);
	for (int i = 0; i < n; i++) {
		char run[64];
		struct stat sb;

		snprintf(run, sizeof(run), "/run/user/%u", (unsigned)uids[i]);
		if (!stat(run, &sb) && S_ISDIR(sb.st_mode) && sb.st_uid == uids[i])
			setenv("XDG_RUNTIME_DIR", run, 1);
		else
			unsetenv("XDG_RUNTIME_DIR");
		if (seteuid(uids[i]))
			continue;
		add_listed(s);
		if (seteuid(0))
			break; /* cannot happen for root; never go on as someone else */
	}
	if (saved)
		setenv("XDG_RUNTIME_DIR", saved, 1);
	else
		unsetenv("XDG_RUNTIME_DIR");
	free(saved);
}

/* Collective P99 and calls of one process over the last interval. */
void obs_proc_nccl(struct proc *p)
{
	struct nbpf_tele_set now = { 0 }, d = { 0 };
	uint64_t hist[NBPF_LAT_BUCKETS] = { 0 };
	struct nbpf_ctl_msg m;

	p->nccl_p99_ns = 0;
	p->nccl_calls = 0;
	if (!p->sock[0])
		return;
	if (obs_proc_call(p, NBPF_CTL_TELEMETRY, &m)) {
		nbpf_ctl_msg_free(&m);
		return;
	}
	cli_tele_merge(&now, &m);
	nbpf_ctl_msg_free(&m);
	if (!cli_tele_delta(&d, &now, p->tele_seen ? &p->tele_prev : NULL)) {
		for (size_t i = 0; i < d.n_cells; i++) {
			p->nccl_calls += d.cells[i].count;
			for (int b = 0; b < NBPF_LAT_BUCKETS; b++)
				hist[b] += d.cells[i].hist[b];
		}
		p->nccl_p99_ns = nbpf_tele_quantile_ns(hist, NBPF_LAT_BUCKETS, 0.99);
	}
	nbpf_tele_free(&d);
	nbpf_tele_free(&p->tele_prev);
	p->tele_prev = now;
	p->tele_seen = true;
}

/* Processes seen in the kernel's tables (cgroup and comm modes find them there). */
void obs_procs_from_snap(struct obs_state *s, const struct nbpf_obs_snap *d)
{
	for (size_t i = 0; i < d->n_blk; i++)
		obs_proc_add(s, (int)d->blk[i].k.tgid);
	for (size_t i = 0; i < d->n_uring; i++)
		obs_proc_add(s, (int)d->uring[i].k.tgid);
	for (size_t i = 0; i < d->n_conn; i++)
		obs_proc_add(s, (int)d->conn[i].v.tgid);
	for (size_t i = 0; i < d->n_sched; i++)
		obs_proc_add(s, (int)d->sched[i].tgid);
	for (size_t i = 0; i < d->n_gpu; i++)
		obs_proc_add(s, (int)d->gpu[i].tgid);
}

#endif
