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

/* One communicator a process belongs to, and the ranks of it the process holds. */
struct comm_ranks {
	char id[24];
	long ranks;
	unsigned char have[1024]; /* rank r is held when have[r] (ranks beyond 1023 are not listed) */
	bool unknown;             /* registered without its rank (tuner only) */
};

/* "0-3,6/8@0x..." for the ranks held, or "?/8@0x..." when no rank is known. */
static size_t comm_label(const struct comm_ranks *c, char *out, size_t n)
{
	size_t k = 0;
	bool any = false;

	for (long r = 0; r < (long)sizeof(c->have) && k < n; r++) {
		long e = r;

		if (!c->have[r])
			continue;
		while (e + 1 < (long)sizeof(c->have) && c->have[e + 1])
			e++;
		k += (size_t)snprintf(out + k, n - k, e > r ? "%s%ld-%ld" : "%s%ld", any ? "," : "", r, e);
		any = true;
		r = e;
	}
	if (!any)
		k = (size_t)snprintf(out, n, "?");
	if (k < n)
		k += (size_t)snprintf(out + k, n - k, "/%ld@%s", c->ranks, c->id);
	return k < n ? k : n;
}

/*
 * Ranks and communicators, from the process's PS answer: every rank of a
 * communicator the process holds (one process may drive several GPUs, so
 * several ranks of one communicator), listed once however many plugins
 * (tuner, profiler) registered it; the tuner is not told its rank.
 */
static void proc_labels(struct proc *p)
{
	struct comm_ranks *cs = NULL;
	struct nbpf_ctl_msg m;
	size_t n = 0, k = 0;

	p->ranks[0] = 0;
	if (!p->sock[0] || obs_proc_call(p, NBPF_CTL_PS, &m)) {
		nbpf_ctl_msg_free(&m);
		return;
	}
	for (uint32_t i = 0; i < m.n_recs; i++) {
		const struct nbpf_ctl_rec *r = &m.recs[i];
		const char *rank = nbpf_ctl_rec_get(r, "rank"), *ranks = nbpf_ctl_rec_get(r, "ranks");
		const char *id = nbpf_ctl_rec_get(r, "comm_id");
		struct comm_ranks *c = NULL;
		long rk;

		if (strcmp(r->kind, "comm") || !rank || !ranks || !id)
			continue;
		for (size_t j = 0; j < n && !c; j++)
			if (!strcmp(cs[j].id, id))
				c = &cs[j];
		if (!c) {
			struct comm_ranks *v = realloc(cs, (n + 1) * sizeof(*v));

			if (!v)
				break;
			cs = v;
			c = &cs[n++];
			memset(c, 0, sizeof(*c));
			snprintf(c->id, sizeof(c->id), "%s", id);
			c->ranks = strtol(ranks, NULL, 10);
		}
		rk = strtol(rank, NULL, 10);
		if (rk >= 0 && rk < (long)sizeof(c->have))
			c->have[rk] = 1;
		else
			c->unknown = true;
	}
	for (size_t j = 0; j < n && k + 1 < sizeof(p->ranks); j++) {
		if (k)
			p->ranks[k++] = ',';
		k += comm_label(&cs[j], p->ranks + k, sizeof(p->ranks) - k);
	}
	p->ranks[k < sizeof(p->ranks) ? k : sizeof(p->ranks) - 1] = 0;
	free(cs);
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
	if (!s->no_labels)
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

void obs_proc_labels(struct proc *p)
{
	proc_labels(p);
}

/* The process's name now: an exec gives it a new one. */
void obs_proc_refresh(struct proc *p)
{
	read_comm(p->pid, p->comm, sizeof(p->comm));
}

bool obs_proc_gone(int pid)
{
	char path[64], st[256];
	FILE *f;
	char *rp;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return true;
	rp = fgets(st, sizeof(st), f) ? strrchr(st, ')') : NULL;
	fclose(f);
	/* A zombie has exited: only its parent's wait is missing. */
	return !rp || rp[1] != ' ' || rp[2] == 'Z' || rp[2] == 'X';
}

/*
 * Watched processes that run the plugin get its control socket, ranks and
 * collective telemetry, whichever way they were chosen (--pid, --cgroup,
 * --comm, export's pids): found like `ncclbpf ps`, every user's as root.
 * Run each interval: a job loads the plugin when NCCL starts, after the
 * process did.
 */
void obs_join_plugins(struct obs_state *s)
{
	struct obs_state found = { 0 };
	bool need = false;

	for (size_t i = 0; i < s->n_procs && !need; i++)
		need = !s->procs[i].sock[0];
	if (!need)
		return;
	found.no_labels = true;
	obs_discover(&found);
	for (size_t i = 0; i < s->n_procs; i++) {
		struct proc *p = &s->procs[i], *f;

		if (p->sock[0] || !(f = obs_proc_find(&found, p->pid)))
			continue;
		snprintf(p->sock, sizeof(p->sock), "%s", f->sock);
		p->uid = f->uid;
		proc_labels(p);
	}
	free(found.procs);
}

/* A process the kernel's tables name: watched from now on, unless it has exited (reported already). */
static void proc_seen(struct obs_state *s, uint32_t tgid)
{
	if (!obs_proc_find(s, (int)tgid) && !obs_proc_gone((int)tgid))
		obs_proc_add(s, (int)tgid);
}

/* Processes seen in the kernel's tables (cgroup and comm modes find them there). */
void obs_procs_from_snap(struct obs_state *s, const struct nbpf_obs_snap *d)
{
	for (size_t i = 0; i < d->n_blk; i++)
		proc_seen(s, d->blk[i].k.tgid);
	for (size_t i = 0; i < d->n_uring; i++)
		proc_seen(s, d->uring[i].k.tgid);
	for (size_t i = 0; i < d->n_conn; i++)
		proc_seen(s, d->conn[i].v.tgid);
	for (size_t i = 0; i < d->n_sched; i++)
		proc_seen(s, d->sched[i].tgid);
	for (size_t i = 0; i < d->n_gpu; i++)
		proc_seen(s, d->gpu[i].tgid);
}

#endif
