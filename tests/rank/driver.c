/* SPDX-License-Identifier: Apache-2.0 */
/*
 * driver.c - the tester's operator and fault injector: rank processes
 * started, stopped, continued, killed and replaced; communicators created
 * and destroyed; every operator action through the real command
 * (`ncclbpf -j reload|rollback|map update|loop|change ...`) on the node's
 * control sockets, and what the command reported kept as the truth the
 * checker holds the ranks to.  An outcome the command reports as unknown
 * is recovered the way docs/operations.md tells an operator to.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "model.h"

static const char *const op_names[OP_N] = {
	"create", "destroy", "rate", "reload", "rollback", "cfg", "loop", "stop", "cont", "kill",
	"killcli", "deadsock", "load", "sleep", "etcdkill", "etcdstart", "unship", "ship", "pause",
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void vlog(const struct rm_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void vlog(const struct rm_run *r, const char *fmt, ...)
{
	va_list ap;

	if (!r->c->verbose)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "  | ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static int failf(struct rm_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int failf(struct rm_run *r, const char *fmt, ...)
{
	va_list ap;

	if (r->fail[0])
		return -1;
	va_start(ap, fmt);
	vsnprintf(r->fail, sizeof(r->fail), fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- text form of an operation ----------------------------------------------- */

static uint32_t parse_members(const char *s)
{
	uint32_t m = 0;

	for (; *s; s++)
		if (*s >= '0' && *s <= '9' && *s - '0' < RM_MAX_PROCS)
			m |= 1u << (*s - '0');
	return m;
}

int rm_op_parse(const char *line, struct rm_op *op)
{
	char name[16] = "", w1[64] = "", w2[64] = "", w3[64] = "";
	int n = sscanf(line, "%15s %63s %63s %63s", name, w1, w2, w3);

	memset(op, 0, sizeof(*op));
	if (n < 1 || name[0] == '#')
		return 1; /* a comment or an empty line */
	for (op->k = 0; op->k < OP_N && strcmp(op_names[op->k], name); op->k++)
		;
	switch (op->k) {
	case OP_CREATE:
		if (n < 4)
			return -1;
		op->a = atoi(w1), op->members = parse_members(w2), op->b = atoi(w3);
		return 0;
	case OP_DESTROY: case OP_STOP: case OP_CONT: case OP_KILL: case OP_CFG:
	case OP_KILLCLI: case OP_SLEEP:
		if (n < 2)
			return -1;
		op->a = atoi(w1);
		if (op->k == OP_KILL && n > 2)
			snprintf(op->s, sizeof(op->s), "%s", w2); /* "env": the launcher's first policy */
		return 0;
	case OP_RATE: case OP_ETCDKILL: case OP_PAUSE:
		if (n < 3)
			return -1;
		op->a = atoi(w1), op->b = atoi(w2);
		return 0;
	case OP_ETCDSTART:
		if (n < 2)
			return -1;
		op->a = atoi(w1);
		return 0;
	case OP_UNSHIP: case OP_SHIP:
		if (n < 3 || w2[0] < 'a' || w2[0] > 'c')
			return -1;
		op->a = atoi(w1), op->b = w2[0];
		return 0;
	case OP_RELOAD:
		if (n < 2 || w1[0] < 'a' || w1[0] > 'c')
			return -1;
		op->a = w1[0];
		snprintf(op->s, sizeof(op->s), "%s", n > 2 ? w2 : "sync");
		return 0;
	case OP_ROLLBACK:
		snprintf(op->s, sizeof(op->s), "%s", n > 1 ? w1 : "sync");
		return 0;
	case OP_LOOP: case OP_DEADSOCK: case OP_LOAD:
		if (n < 2)
			return -1;
		snprintf(op->s, sizeof(op->s), "%s", w1);
		return 0;
	default:
		return -1;
	}
}

void rm_op_format(const struct rm_op *op, char *buf, size_t n)
{
	char m[32] = "";
	size_t k = 0;

	switch (op->k) {
	case OP_CREATE:
		for (int p = 0; p < RM_MAX_PROCS; p++)
			if (op->members & (1u << p))
				k += (size_t)snprintf(m + k, sizeof(m) - k, "%s%d", k ? "," : "", p);
		snprintf(buf, n, "create %d %s %d", op->a, m, op->b);
		break;
	case OP_RATE: case OP_PAUSE: snprintf(buf, n, "%s %d %d", op_names[op->k], op->a, op->b); break;
	case OP_ETCDKILL: snprintf(buf, n, "etcdkill %d %d", op->a, op->b); break;
	case OP_UNSHIP: case OP_SHIP: snprintf(buf, n, "%s %d %c", op_names[op->k], op->a, op->b); break;
	case OP_RELOAD: snprintf(buf, n, "reload %c %s", op->a, op->s); break;
	case OP_ROLLBACK: snprintf(buf, n, "rollback %s", op->s); break;
	case OP_LOOP: case OP_DEADSOCK: case OP_LOAD:
		snprintf(buf, n, "%s %s", op_names[op->k], op->s);
		break;
	case OP_KILL: snprintf(buf, n, "kill %d%s%s", op->a, op->s[0] ? " " : "", op->s); break;
	default:
		snprintf(buf, n, "%s %d", op_names[op->k], op->a);
	}
}

/* ---- processes ------------------------------------------------------------------ */

static void node_dir(const struct rm_run *r, int node, char *out, size_t n)
{
	snprintf(out, n, "%s/node%d", r->c->root, node);
}

/* Each node has its own copy of the objects (as a job's nodes do), so one can lack it. */
static void policy_path(const struct rm_run *r, int node, char v, char *out, size_t n)
{
	snprintf(out, n, "%s/node%d/pol/rank_%c.bpf.o", r->c->root, node, v);
}

static int ship(const struct rm_run *r, int node, char v, bool there)
{
	char src[512], dst[512], cmd[1400];

	snprintf(src, sizeof(src), "%s/rank_%c.bpf.o", r->c->policies, v);
	policy_path(r, node, v, dst, sizeof(dst));
	if (!there)
		return unlink(dst);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/node%d/pol' && cp '%s' '%s'", r->c->root, node, src, dst);
	return system(cmd);
}

static void spawn_proc(struct rm_run *r, int p, char variant)
{
	char dir[300], pol[512];
	pid_t pid;

	node_dir(r, rm_node_of(r->c, p), dir, sizeof(dir));
	policy_path(r, rm_node_of(r->c, p), variant, pol, sizeof(pol));
	atomic_store(&r->sh->proc[p].ready, 0);
	pid = fork();
	if (pid == 0) {
		setenv("NCCLBPF_CTL_DIR", dir, 1);
		setenv("NCCLBPF_MAP_DIR", dir, 1);
		setenv("NCCLBPF_POLICY", pol, 1);
		setenv("NCCLBPF_LOG", r->c->verbose ? "warn" : "none", 1);
		setenv("NCCL_SOCKET_IFNAME", "=lo", 1);
		rm_rank_main(r->c, r->sh, p);
	}
	atomic_store(&r->sh->proc[p].pid, pid);
	atomic_store(&r->sh->proc[p].alive, 1);
	atomic_fetch_add(&r->sh->proc[p].incarnation, 1);
	r->stopped[p] = false;
	for (int i = 0; i < 3000 && !atomic_load(&r->sh->proc[p].ready); i++)
		msleep(5);
}

static bool running(const struct rm_run *r, int p)
{
	return atomic_load(&r->sh->proc[p].alive) && !r->stopped[p];
}

/* ---- the command ------------------------------------------------------------------ */

/*
 * Runs `ncclbpf ARGS` against node's sockets; its output (stdout and
 * stderr) into out.  Returns its exit status (-1: killed, -2: no start).
 * bg: returns at once with the child's pid in *bgpid (output to out_file).
 */
static int cli_v(struct rm_run *r, int node, char *out, size_t n, pid_t *bgpid, const char *out_file,
		 const char *fmt, va_list ap)
{
	char line[4096], dir[300], tmo[32], *argv[64], *save = NULL;
	int pfd[2] = { -1, -1 }, argc = 0, st = 0;
	size_t got = 0;
	pid_t pid;

	vsnprintf(line, sizeof(line), fmt, ap);
	vlog(r, "node %d: ncclbpf %s", node, line);
	argv[argc++] = (char *)r->c->cli;
	for (char *t = strtok_r(line, " ", &save); t && argc < 63; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	argv[argc] = NULL;
	node_dir(r, node, dir, sizeof(dir));
	snprintf(tmo, sizeof(tmo), "%d", r->c->timeout_ms);
	if (!bgpid && pipe(pfd))
		return -2;
	pid = fork();
	if (pid < 0)
		return -2;
	if (pid == 0) {
		int fd = bgpid ? open(out_file, O_WRONLY | O_CREAT | O_TRUNC, 0600) : pfd[1];

		setenv("NCCLBPF_CTL_DIR", dir, 1);
		setenv("NCCLBPF_CTL_TIMEOUT_MS", tmo, 1);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(r->c->cli, argv);
		_exit(127);
	}
	if (bgpid) {
		*bgpid = pid;
		return 0;
	}
	close(pfd[1]);
	for (;;) {
		char tmp[4096];
		ssize_t k = read(pfd[0], tmp, sizeof(tmp));

		if (k <= 0)
			break;
		if (out && got + 1 < n) {
			size_t c = (size_t)k < n - 1 - got ? (size_t)k : n - 1 - got;

			memcpy(out + got, tmp, c);
			got += c;
		}
	}
	if (out && n)
		out[got] = 0;
	close(pfd[0]);
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int cli(struct rm_run *r, int node, char *out, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int cli(struct rm_run *r, int node, char *out, size_t n, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = cli_v(r, node, out, n, NULL, NULL, fmt, ap);
	va_end(ap);
	vlog(r, "-> %d", rc);
	if (r->c->verbose && out && *out)
		fprintf(stderr, "%s%s", out, out[strlen(out) - 1] == '\n' ? "" : "\n");
	return rc;
}

static pid_t cli_bg(struct rm_run *r, int node, const char *out_file, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static pid_t cli_bg(struct rm_run *r, int node, const char *out_file, const char *fmt, ...)
{
	va_list ap;
	pid_t pid = -1;

	va_start(ap, fmt);
	cli_v(r, node, NULL, 0, &pid, out_file, fmt, ap);
	va_end(ap);
	return pid;
}

/* What a background command has written to file so far, NUL-terminated ("" if none). */
static void read_out(const char *file, char *buf, size_t n)
{
	int fd = open(file, O_RDONLY);
	ssize_t k = fd >= 0 ? read(fd, buf, n - 1) : 0;

	buf[k > 0 ? k : 0] = 0;
	if (fd >= 0)
		close(fd);
}

/* What the command's -j report says of proc p: "applied", "not_applied", "unknown" or "". */
static void outcome_of(const struct rm_run *r, const char *json, int p, char *out, size_t n,
		       unsigned long long *at_call)
{
	char key[32];
	const char *e, *o;

	out[0] = 0;
	snprintf(key, sizeof(key), "{\"pid\":%d,", atomic_load(&r->sh->proc[p].pid));
	e = strstr(json, key);
	if (!e)
		return;
	o = strstr(e, "\"outcome\":\"");
	if (o && (!strchr(e, '}') || o < strchr(e, '}')))
		sscanf(o + 11, "%31[a-z_]", out);
	else /* a command from before outcomes were reported */
		snprintf(out, n, "%s", !strncmp(strstr(e, "\"ok\":") ?: "", "\"ok\":true", 9) ? "applied"
										      : "not_applied");
	o = strstr(e, "\"at_call\":");
	if (o && at_call)
		sscanf(o + 10, "%llu", at_call);
}

/* ---- changes and their truth --------------------------------------------------- */

/*
 * The host's semantics: a reload keeps the maps of the image it replaces
 * (rank_cfg stays) and makes that image the rollback target; a map write
 * leaves the rollback target alone; a rollback returns to the target as
 * it was, its map copy included, and the image it replaces is the next
 * target.
 */
static void apply(struct rm_truth *t, const struct rm_change *q)
{
	char c = t->cur;
	uint32_t cfg = t->cfg;

	switch (q->kind) {
	case OP_RELOAD:
		t->rb = t->cur;
		t->rb_cfg = t->cfg;
		t->cur = q->variant;
		break;
	case OP_ROLLBACK:
		t->cur = t->rb;
		t->cfg = t->rb_cfg;
		t->rb = c;
		t->rb_cfg = cfg;
		break;
	case OP_CFG:
		t->cfg = q->cfg;
		break;
	}
	t->unsure = false;
}

/*
 * The outcome of each process as the command reported it: applied (the
 * truth moves on), not applied (it stays), or unknown (not checked until
 * the process itself says, recover()).
 */
static void record_outcomes(struct rm_run *r, const char *json, struct rm_change *q)
{
	for (int p = 0; p < r->c->procs; p++) {
		unsigned long long at = 0;
		char oc[32];

		if (!atomic_load(&r->sh->proc[p].alive))
			continue;
		outcome_of(r, json, p, oc, sizeof(oc), &at);
		if (at > q->at_call)
			q->at_call = at;
		if (!strcmp(oc, "applied")) {
			apply(&r->truth[p], q);
		} else if (!strcmp(oc, "unknown")) {
			r->truth[p].unsure = true;
			r->pending[p] = *q;
		}
		if (at > r->settle_at)
			r->settle_at = at;
		if (at > r->last_at)
			r->last_at = at;
	}
	for (int p = 0; p < r->c->procs; p++)
		if (r->pending[p].id[0] && !strcmp(r->pending[p].id, q->id))
			r->pending[p].at_call = q->at_call;
}

static int node_procs(const struct rm_run *r, int node)
{
	int n = 0;

	for (int p = 0; p < r->c->procs; p++)
		n += rm_node_of(r->c, p) == node && atomic_load(&r->sh->proc[p].alive);
	return n;
}

/* The activation flag of mode: sync (the command's own), now, or atK (K calls past the highest). */
static void mode_flag(const struct rm_run *r, const char *mode, char *out, size_t n)
{
	uint64_t hi = 0;

	out[0] = 0;
	if (!strcmp(mode, "now")) {
		snprintf(out, n, " --now");
	} else if (!strncmp(mode, "at", 2)) {
		for (int k = 0; k < r->c->slots; k++)
			for (int p = 0; p < RM_MAX_PROCS; p++)
				if (atomic_load(&r->sh->slot[k].state) == SLOT_LIVE &&
				    atomic_load(&r->sh->slot[k].progress[p]) > hi)
					hi = atomic_load(&r->sh->slot[k].progress[p]);
		snprintf(out, n, " --at-call %llu", (unsigned long long)(hi + strtoull(mode + 2, NULL, 10)));
	}
}

/* The change's arguments on node nd: its own copy of an object; apply: `change apply`'s form. */
static void node_args(const struct rm_run *r, const struct rm_change *q, int nd, bool apply,
		      char *out, size_t n)
{
	char pol[512];

	policy_path(r, nd, q->variant, pol, sizeof(pol));
	if (q->kind == OP_RELOAD)
		snprintf(out, n, apply ? "all %s" : "reload all %s", pol);
	else if (apply && q->kind == OP_ROLLBACK)
		snprintf(out, n, "all --rollback");
	else if (apply)
		snprintf(out, n, "all --map rank_cfg key 00000000 value %02x%02x%02x%02x", q->cfg & 0xff,
			 (q->cfg >> 8) & 0xff, (q->cfg >> 16) & 0xff, q->cfg >> 24);
	else
		snprintf(out, n, "%s", q->args);
}

/* One change on every node: one command where there is one node, else a command per node. */
static int do_change(struct rm_run *r, struct rm_change *q, const char *mode)
{
	char out[65536] = "", tmp[256], flag[64];
	int rc;

	mode_flag(r, mode, flag, sizeof(flag));
	snprintf(q->id, sizeof(q->id), "rm%d-%ld", (int)getpid(), (long)(now_s() * 1000));
	if (r->c->legacy && q->kind == OP_CFG) {
		/* The old tree: the map is written process by process, as its docs said. */
		char one[600], *all = strstr(q->args, " all");

		for (int p = 0; p < r->c->procs; p++) {
			if (!atomic_load(&r->sh->proc[p].alive))
				continue;
			snprintf(one, sizeof(one), "%.*s %d%s", (int)(all - q->args), q->args,
				 atomic_load(&r->sh->proc[p].pid), all + 4);
			if (cli(r, 0, out, sizeof(out), "%s", one) == 0)
				apply(&r->truth[p], q);
		}
		return 0;
	}
	if (r->c->legacy && r->c->nodes > 1) {
		/*
		 * The old recipe across nodes (pdsh/srun): the highest call of the
		 * job, then `reload all OBJ --at-call N` on every node.
		 */
		if (!flag[0])
			mode_flag(r, "at3000", flag, sizeof(flag));
		rc = 0;
		for (int nd = 0; nd < r->c->nodes; nd++) {
			char one[700];

			node_args(r, q, nd, false, one, sizeof(one));
			rc |= cli(r, nd, out, sizeof(out), "-j %s%s", one, flag);
			record_outcomes(r, out, q);
		}
		return rc;
	}
	if (r->c->legacy) {
		rc = cli(r, 0, out, sizeof(out), "-j %s%s", q->args, flag);
		record_outcomes(r, out, q);
		return rc;
	}
	if (r->c->nodes == 1) {
		rc = cli(r, 0, out, sizeof(out), "-j %s --id %s --timeout %.1f%s", q->args, q->id,
			 r->c->timeout_ms / 1e3, flag);
		record_outcomes(r, out, q);
		return rc;
	}
	/* Several nodes: every node's command at once, agreeing through the exchange. */
	{
		pid_t pid[RM_MAX_NODES];
		char file[RM_MAX_NODES][300], xarg[512];

		if (!strcmp(r->c->exchange, "etcd"))
			snprintf(xarg, sizeof(xarg), "--etcd %s", r->c->etcd);
		else
			snprintf(xarg, sizeof(xarg), "--share-dir %s/share", r->c->root);
		for (int nd = 0; nd < r->c->nodes; nd++) {
			char one[700];

			snprintf(file[nd], sizeof(file[nd]), "%s/change.%d.out", r->c->root, nd);
			snprintf(tmp, sizeof(tmp), "node%d", nd);
			node_args(r, q, nd, true, one, sizeof(one));
			pid[nd] = cli_bg(r, nd, file[nd], "-j change apply %s %s --node %s --nodes %d %s --timeout %.1f%s",
					 q->id, one, tmp, r->c->nodes, xarg, r->c->timeout_ms / 1e3,
					 !strncmp(flag, " --at-call", 10) ? flag : "");
		}
		rc = 0;
		for (int nd = 0; nd < r->c->nodes; nd++) {
			int st = 0;

			waitpid(pid[nd], &st, 0);
			rc = WIFEXITED(st) && WEXITSTATUS(st) > rc ? WEXITSTATUS(st) : rc;
			read_out(file[nd], out, sizeof(out));
			vlog(r, "node %d: change apply -> %d\n%s", nd, WEXITSTATUS(st), out);
			record_outcomes(r, out, q);
		}
		return rc;
	}
}

/* ---- operations ---------------------------------------------------------------- */

static void slot_free_closed(struct rm_run *r)
{
	for (int k = 0; k < r->c->slots; k++) {
		struct rm_slot *s = &r->sh->slot[k];
		uint32_t live = 0;

		if (atomic_load(&s->state) != SLOT_CLOSING)
			continue;
		for (int p = 0; p < r->c->procs; p++)
			if ((atomic_load(&s->members) & (1u << p)) && atomic_load(&r->sh->proc[p].alive) &&
			    (atomic_load(&s->joined) & (1u << p)))
				live |= 1u << p;
		if ((atomic_load(&s->left) & live) == live) {
			rm_check_agreement(r);
			atomic_store(&s->state, SLOT_FREE);
		}
	}
}

static int op_create(struct rm_run *r, const struct rm_op *op)
{
	struct rm_slot *s = &r->sh->slot[op->a];
	uint32_t gen;

	for (int i = 0; i < 2000 && atomic_load(&s->state) == SLOT_CLOSING; i++) {
		slot_free_closed(r);
		msleep(5);
	}
	if (atomic_load(&s->state) != SLOT_FREE)
		return 0; /* a replayed sequence may name a slot still in use: nothing to do */
	gen = atomic_load(&s->gen) + 1;
	memset(s->dec, 0, sizeof(s->dec));
	for (int p = 0; p < RM_MAX_PROCS; p++)
		atomic_store(&s->progress[p], 0);
	atomic_store(&s->joined, 0);
	atomic_store(&s->left, 0);
	atomic_store(&s->members, op->members);
	atomic_store(&s->rate, (uint32_t)op->b);
	/* Ids as NCCL's commHash: distinct per communicator and run. */
	atomic_store(&s->comm_id, 0x1000000000ull * (uint64_t)(op->a + 1) + gen * 7919u +
				  (uint64_t)getpid());
	atomic_store(&s->gen, gen);
	atomic_store(&s->state, SLOT_LIVE);
	r->checked[op->a] = 0;
	r->checked_gen[op->a] = gen;
	/* Ranks that can run come up (a creation may wait while a change is staged). */
	for (int i = 0; i < 2000; i++) {
		uint32_t want = 0;

		for (int p = 0; p < r->c->procs; p++)
			if ((op->members & (1u << p)) && running(r, p))
				want |= 1u << p;
		if ((atomic_load(&s->joined) & want) == want)
			break;
		msleep(5);
	}
	return 0;
}

static int op_destroy(struct rm_run *r, int slot)
{
	struct rm_slot *s = &r->sh->slot[slot];

	if (atomic_load(&s->state) != SLOT_LIVE)
		return 0;
	rm_check_agreement(r);
	atomic_store(&s->state, SLOT_CLOSING);
	for (int i = 0; i < 400; i++) {
		slot_free_closed(r);
		if (atomic_load(&s->state) == SLOT_FREE)
			break;
		msleep(5);
	}
	return 0;
}

/*
 * A process whose outcome the command could not know (stopped through
 * the commit), running again: it says whether it applied the change
 * (`change status`); if it did not while others did, the operator gives it
 * the same change at the same call, while it is below that call
 * (docs/operations.md, "Recovery").
 */
static void recover(struct rm_run *r, int p)
{
	struct rm_change *q = &r->pending[p];
	int pid = atomic_load(&r->sh->proc[p].pid), node = rm_node_of(r->c, p);
	char out[8192] = "", *st;

	if (!r->truth[p].unsure || !q->id[0] || !running(r, p))
		return;
	if (cli(r, node, out, sizeof(out), "-j change status %d %s", pid, q->id) != 0)
		return; /* a command without `change`: stays unsure */
	st = strstr(out, "\"state\":\"");
	if (st && !strncmp(st + 9, "committed", 9)) {
		apply(&r->truth[p], q);
	} else if (st && q->at_call) {
		char args[700], *all = strstr(q->args, " all");

		/* The same change for this pid alone, at the agreed call. */
		snprintf(args, sizeof(args), "%.*s %d%s", (int)(all - q->args), q->args, pid, all + 4);
		out[0] = 0;
		cli(r, node, out, sizeof(out), "-j %s --at-call %llu --timeout %.1f", args, q->at_call,
		    r->c->timeout_ms / 1e3);
		if (strstr(out, "\"outcome\":\"applied\""))
			apply(&r->truth[p], q);
	}
	if (!r->truth[p].unsure)
		memset(q, 0, sizeof(*q));
}

static int op_reload(struct rm_run *r, const struct rm_op *op)
{
	struct rm_change q = { .kind = OP_RELOAD, .variant = (char)op->a };
	char pol[512];

	policy_path(r, 0, (char)op->a, pol, sizeof(pol));
	snprintf(q.args, sizeof(q.args), "reload all %s", pol);
	do_change(r, &q, op->s);
	return 0;
}

static int op_rollback(struct rm_run *r, const struct rm_op *op)
{
	struct rm_change q = { .kind = OP_ROLLBACK };

	snprintf(q.args, sizeof(q.args), "rollback all");
	do_change(r, &q, op->s);
	return 0;
}

static int op_cfg(struct rm_run *r, const struct rm_op *op)
{
	struct rm_change q = { .kind = OP_CFG, .cfg = (uint32_t)op->a };
	uint32_t v = (uint32_t)op->a;

	snprintf(q.args, sizeof(q.args), "map update all rank_cfg key 00000000 value %02x%02x%02x%02x",
		 v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24);
	do_change(r, &q, "sync");
	return 0;
}

static void loops_kill(struct rm_run *r)
{
	for (int nd = 0; nd < RM_MAX_NODES; nd++)
		if (r->loop_node_pid[nd] > 0) {
			kill(r->loop_node_pid[nd], SIGKILL); /* the aggregator dies mid-step */
			waitpid(r->loop_node_pid[nd], NULL, 0);
			r->loop_node_pid[nd] = 0;
		}
	r->loop_pid = 0;
}

static bool loops_running(struct rm_run *r)
{
	bool any = false;

	for (int nd = 0; nd < RM_MAX_NODES; nd++)
		if (r->loop_node_pid[nd] > 0) {
			if (waitpid(r->loop_node_pid[nd], NULL, WNOHANG) == 0)
				any = true;
			else
				r->loop_node_pid[nd] = 0;
		}
	return any;
}

/*
 * One aggregator per node; with several nodes they agree through the
 * exchange, a fresh scope per start.  only0: node 0's alone (a successor
 * beside the others' running ones, in a scope of its own); die: node 0's dies right after the nodes decide its
 * second plan write, before committing it (the test-only hook of agree.c).
 */
static void loops_start(struct rm_run *r, bool only0, bool die)
{
	char xarg[600] = "";

	if (r->c->nodes > 1) {
		/* A fresh scope per start: a run's steps are never read as another's. */
		snprintf(r->loop_job, sizeof(r->loop_job), "loop%d-%ld", (int)getpid(), (long)(now_s() * 1000));
		if (!strcmp(r->c->exchange, "etcd"))
			snprintf(xarg, sizeof(xarg), " --etcd %s", r->c->etcd);
		else
			snprintf(xarg, sizeof(xarg), " --share-dir %s/share", r->c->root);
	}
	for (int nd = 0; nd < (only0 ? 1 : r->c->nodes); nd++) {
		char file[300], nodearg[160] = "";

		snprintf(file, sizeof(file), "%s/loop.%d.out", r->c->root, nd);
		if (r->c->nodes > 1)
			snprintf(nodearg, sizeof(nodearg), " --node node%d --nodes %d --job %s%s", nd,
				 r->c->nodes, r->loop_job, xarg);
		if (die && nd == 0)
			setenv("NCCLBPF_TEST_DIE_AFTER_DECISION", "p1", 1);
		/* The one that ran before is gone (finished or killed -9): take its lease over. */
		r->loop_node_pid[nd] = cli_bg(r, nd, file,
					      "-j loop --channels 2,4,6,8 --window 100 --ranks %d --timeout 10 --margin-seconds 1%s%s",
					      node_procs(r, nd), r->c->legacy ? "" : " --take-over", nodearg);
		unsetenv("NCCLBPF_TEST_DIE_AFTER_DECISION");
	}
	r->loop_pid = r->loop_node_pid[0];
}

static int op_loop(struct rm_run *r, const struct rm_op *op)
{
	if (!strcmp(op->s, "stop")) {
		loops_kill(r);
		return 0;
	}
	if (!strcmp(op->s, "rerun") && loops_running(r)) {
		for (int i = 0; i < 3000 && loops_running(r); i++)
			msleep(10);
		loops_kill(r);
	}
	if (!strcmp(op->s, "second") && loops_running(r)) {
		char out[8192] = "", file[300], log[4096];
		int rc;

		/*
		 * Another aggregator while one runs: it must be refused, saying by
		 * whom.  Running means holding the lease, which node 0's has once it
		 * reports its first step (a slow start, under a sanitizer, can take
		 * longer than the sequence waited); one that ended meanwhile leaves
		 * nothing to be refused by.
		 */
		snprintf(file, sizeof(file), "%s/loop.0.out", r->c->root);
		for (int i = 0; i < 3000 && loops_running(r); i++) {
			read_out(file, log, sizeof(log));
			if (strstr(log, "step 1:"))
				break;
			msleep(10);
		}
		if (!loops_running(r))
			return 0;
		rc = cli(r, 0, out, sizeof(out), "-j loop --channels 2,4 --window 50 --ranks %d --timeout 5 --margin-seconds 1",
			 node_procs(r, 0));
		if (rc == 0)
			return failf(r, "a second `ncclbpf loop` ran to the end (exit 0) beside a running one:\n%s", out);
		return 0;
	}
	if (!strcmp(op->s, "restart0")) {
		/* Once node 0's has ended (up to 30 s), at once: a successor started by a supervisor. */
		for (int i = 0; i < 30000 && r->loop_node_pid[0] > 0; i++)
			if (waitpid(r->loop_node_pid[0], NULL, WNOHANG) != 0)
				r->loop_node_pid[0] = 0;
			else
				msleep(1);
		if (r->loop_node_pid[0] <= 0)
			loops_start(r, true, false);
		return 0;
	}
	if (loops_running(r))
		return 0; /* one is running: start is a no-op */
	loops_start(r, false, !strcmp(op->s, "die"));
	return 0;
}

/* Every non-zero entry of the decision maps of process from, written into to's (--now). */
static int copy_maps(struct rm_run *r, int from, int to)
{
	static const char *const maps[] = { "rank_cfg", "channel_plan" };
	int err = 0;

	for (size_t m = 0; m < 2 && !err; m++) {
		char out[65536] = "", *e;
		unsigned key;
		unsigned long long val;

		if (cli(r, rm_node_of(r->c, from), out, sizeof(out), "-j map dump %d %s",
			atomic_load(&r->sh->proc[from].pid), maps[m]))
			return -1;
		for (e = strstr(out, "{\"key\":"); e && !err; e = strstr(e + 1, "{\"key\":")) {
			if (sscanf(e, "{\"key\":%u,\"value\":%llu}", &key, &val) != 2 || !val)
				continue;
			/* Bytes in memory order: the little-endian value, 4 bytes for rank_cfg, 8 for a plan word. */
			char hex[17];

			if (m)
				snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)__builtin_bswap64(val));
			else
				snprintf(hex, sizeof(hex), "%08x", __builtin_bswap32((uint32_t)val));
			err = cli(r, rm_node_of(r->c, to), NULL, 0,
				  "map update %d %s key %02x%02x%02x%02x value %s --now",
				  atomic_load(&r->sh->proc[to].pid), maps[m], key & 0xff, (key >> 8) & 0xff,
				  (key >> 16) & 0xff, key >> 24, hex);
		}
	}
	return err;
}

static int op_kill(struct rm_run *r, int p, bool env)
{
	pid_t pid = atomic_load(&r->sh->proc[p].pid);
	char ref = 'a';
	uint32_t cfg = 0;
	int src = -1;

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	atomic_store(&r->sh->proc[p].alive, 0);
	r->stopped[p] = false;
	/* Its communicators end on every rank (NCCL's peers abort them). */
	for (int k = 0; k < r->c->slots; k++)
		if (atomic_load(&r->sh->slot[k].state) == SLOT_LIVE &&
		    (atomic_load(&r->sh->slot[k].members) & (1u << p))) {
			rm_check_agreement(r);
			atomic_store(&r->sh->slot[k].state, SLOT_CLOSING);
		}
	/*
	 * Its replacement starts on what the job runs now (the launcher's
	 * NCCLBPF_POLICY follows reloads), copied from a process that answers:
	 * the operator's procedure copies from a surviving rank before the
	 * replacement creates communicators, so one paused (pause P MS) is
	 * waited for when no other can serve, as an operator retries.
	 */
	for (int q = 0; q < r->c->procs; q++)
		if (q != p && atomic_load(&r->sh->proc[q].alive) && !r->truth[q].unsure && !r->stopped[q] &&
		    (src < 0 || r->pause_end[src] > r->pause_end[q])) {
			src = q;
			if (r->pause_end[q] <= now_s())
				break;
		}
	if (src >= 0) {
		if (r->pause_end[src] > now_s())
			msleep((int)((r->pause_end[src] - now_s()) * 1000) + 100);
		ref = r->truth[src].cur;
		cfg = r->truth[src].cfg;
	}
	/*
	 * env: a launcher that starts it with the job's first NCCLBPF_POLICY;
	 * the operator reloads the job's current one into it (--now: it holds
	 * no communicator), so its rollback target is not the others'.
	 */
	spawn_proc(r, p, env ? 'a' : ref);
	r->truth[p] = (struct rm_truth){ .cur = env ? 'a' : ref, .cfg = 0 };
	memset(&r->pending[p], 0, sizeof(r->pending[p]));
	if (env && ref != 'a') {
		char pol[512];

		policy_path(r, rm_node_of(r->c, p), ref, pol, sizeof(pol));
		if (cli(r, rm_node_of(r->c, p), NULL, 0, "reload %d %s --now",
			atomic_load(&r->sh->proc[p].pid), pol))
			r->truth[p].unsure = true;
		else
			r->truth[p] = (struct rm_truth){ .cur = ref, .rb = 'a' };
	}
	/*
	 * And with the job's decision-map contents (docs/operations.md: a
	 * replacement rank holds no communicator yet, so direct writes cannot
	 * split one): the operator's rank_cfg, the loop's plan.
	 */
	if (src >= 0 && copy_maps(r, src, p))
		r->truth[p].unsure = true;
	else
		r->truth[p].cfg = cfg;
	return 0;
}

/* A reload whose command dies (kill -9) after ms: then what each process did is settled. */
static int op_killcli(struct rm_run *r, int ms)
{
	char pol[512], file[300], id[64];
	struct rm_truth *t0 = &r->truth[0];
	char next = t0->cur == 'c' ? 'a' : t0->cur + 1;
	pid_t pid;

	if (r->c->nodes > 1)
		return 0;
	policy_path(r, 0, next, pol, sizeof(pol));
	snprintf(file, sizeof(file), "%s/killcli.out", r->c->root);
	snprintf(id, sizeof(id), "rmk%d-%ld", (int)getpid(), (long)(now_s() * 1000));
	pid = cli_bg(r, 0, file, "-j reload all %s --id %s --timeout %.1f", pol, id, r->c->timeout_ms / 1e3);
	msleep(ms);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/*
	 * The recovery docs/operations.md gives: `change commit ID` completes
	 * a change some process committed (same call, same communicators);
	 * else `change abort ID` drops it everywhere.
	 */
	{
		char out[65536] = "";
		struct rm_change q = { .kind = OP_RELOAD, .variant = next };
		int rc = cli(r, 0, out, sizeof(out), "-j change commit %s", id);

		if (rc != 0 && rc != 1 && rc != 3)
			return 0; /* no `change` verb: the base tree; unknown outcomes stay unsure */
		snprintf(q.id, sizeof(q.id), "%s", id);
		snprintf(q.args, sizeof(q.args), "reload all %s", pol);
		if (strstr(out, "\"outcome\""))
			record_outcomes(r, out, &q);
		if (rc == 1) /* nobody had committed it: it is aborted everywhere */
			cli(r, 0, out, sizeof(out), "-j change abort %s", id);
	}
	return 0;
}

/*
 * A process that stops for ms while the next operations run (a rank that
 * answers a stage late): a grandchild sends SIGCONT, so nothing waits.
 */
static void op_pause(struct rm_run *r, int p, int ms)
{
	pid_t pid = atomic_load(&r->sh->proc[p].pid), c;

	kill(pid, SIGSTOP);
	c = fork();
	if (c == 0) {
		if (fork() == 0) {
			msleep(ms);
			kill(pid, SIGCONT);
		}
		_exit(0);
	}
	if (c > 0)
		waitpid(c, NULL, 0);
	else
		kill(pid, SIGCONT);
}

/* A control socket that accepts connections and never answers (a hung process's). */
static int op_deadsock(struct rm_run *r, bool on)
{
	if (!on || r->dead_fd) {
		if (!on && r->dead_fd > 0) {
			kill(r->dead_fd, SIGKILL);
			waitpid(r->dead_fd, NULL, 0);
			r->dead_fd = 0;
		}
		return 0;
	}
	r->dead_fd = fork();
	if (r->dead_fd == 0) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		char dir[300];
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);

		node_dir(r, 0, dir, sizeof(dir));
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%.80s/%d.%016llx.sock", dir, (int)getpid(),
			 0xdeadull);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64))
			_exit(1);
		for (;;)
			pause();
	}
	msleep(50);
	return 0;
}

static int op_load(struct rm_run *r, bool on)
{
	if (on && !r->n_hog) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		for (long i = 0; i < n && r->n_hog < 16; i++) {
			pid_t pid = fork();

			if (pid == 0) {
				volatile unsigned long x = 0;

				for (;;)
					x++;
			}
			r->hog[r->n_hog++] = pid;
		}
	} else if (!on) {
		for (int i = 0; i < r->n_hog; i++) {
			kill(r->hog[i], SIGKILL);
			waitpid(r->hog[i], NULL, 0);
		}
		r->n_hog = 0;
	}
	return 0;
}

static bool is_change(enum rm_op_kind k)
{
	return k == OP_RELOAD || k == OP_ROLLBACK || k == OP_CFG || k == OP_KILLCLI || k == OP_KILL;
}

int rm_run_op(struct rm_run *r, const struct rm_op *op)
{
	int p = op->a;

	if (r->fail[0])
		return -1;
	slot_free_closed(r);
	r->settle_at = 0;
	switch (op->k) {
	case OP_CREATE:
		if (op->a < 0 || op->a >= r->c->slots)
			return 0;
		op_create(r, op);
		break;
	case OP_DESTROY:
		if (op->a >= 0 && op->a < r->c->slots)
			op_destroy(r, op->a);
		break;
	case OP_RATE:
		if (op->a >= 0 && op->a < r->c->slots)
			atomic_store(&r->sh->slot[op->a].rate, (uint32_t)op->b);
		break;
	case OP_RELOAD: op_reload(r, op); break;
	case OP_ROLLBACK: op_rollback(r, op); break;
	case OP_CFG: op_cfg(r, op); break;
	case OP_LOOP: op_loop(r, op); break;
	case OP_STOP:
		/* A pause still running would continue it behind the operator's back: after it, then. */
		if (p >= 0 && p < r->c->procs && r->pause_end[p] > now_s())
			msleep((int)((r->pause_end[p] - now_s()) * 1000) + 100);
		if (p >= 0 && p < r->c->procs && running(r, p)) {
			kill(atomic_load(&r->sh->proc[p].pid), SIGSTOP);
			r->stopped[p] = true;
		}
		break;
	case OP_CONT:
		if (p >= 0 && p < r->c->procs && r->stopped[p]) {
			kill(atomic_load(&r->sh->proc[p].pid), SIGCONT);
			r->stopped[p] = false;
			recover(r, p);
		}
		break;
	case OP_KILL:
		if (p >= 0 && p < r->c->procs)
			op_kill(r, p, !strcmp(op->s, "env"));
		break;
	case OP_PAUSE:
		if (p >= 0 && p < r->c->procs && running(r, p) && op->b > 0 && op->b < 60000) {
			op_pause(r, p, op->b);
			r->pause_end[p] = now_s() + op->b / 1e3;
		}
		break;
	case OP_KILLCLI: op_killcli(r, op->a); break;
	case OP_DEADSOCK: op_deadsock(r, !strcmp(op->s, "on")); break;
	case OP_LOAD: op_load(r, !strcmp(op->s, "on")); break;
	case OP_SLEEP: msleep(op->a > 0 && op->a < 60000 ? op->a : 0); break;
	case OP_ETCDKILL:
		/* In MS, while the next operation (a change) goes through the cluster. */
		if (!r->c->etcd)
			break;
		if (fork() == 0) {
			msleep(op->b);
			rm_etcd_member(r->c, op->a, false);
			_exit(0);
		}
		break;
	case OP_ETCDSTART:
		if (r->c->etcd)
			rm_etcd_member(r->c, op->a, true);
		break;
	case OP_UNSHIP: case OP_SHIP:
		if (op->a >= 0 && op->a < r->c->nodes)
			ship(r, op->a, (char)op->b, op->k == OP_SHIP);
		break;
	default: break;
	}
	if (rm_check_agreement(r))
		return -1;
	if (is_change(op->k))
		rm_settle(r, r->settle_at, 40);
	if (rm_check_agreement(r) || rm_check_truth(r))
		return -1;
	return 0;
}

int rm_run_start(struct rm_run *r, const struct rm_conf *c)
{
	char dir[300];

	memset(r, 0, sizeof(*r));
	r->c = c;
	r->sh = mmap(NULL, sizeof(*r->sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r->sh == MAP_FAILED)
		return -errno;
	if (mkdir(c->root, 0700) && errno != EEXIST)
		return -errno;
	snprintf(dir, sizeof(dir), "%s/share", c->root);
	mkdir(dir, 0700);
	for (int nd = 0; nd < c->nodes; nd++) {
		node_dir(r, nd, dir, sizeof(dir));
		if (mkdir(dir, 0700) && errno != EEXIST)
			return -errno;
		for (char v = 'a'; v <= 'c'; v++)
			if (ship(r, nd, v, true))
				return -EIO;
	}
	for (int p = 0; p < c->procs; p++) {
		r->sh->proc[p].node = rm_node_of(c, p);
		spawn_proc(r, p, 'a');
		r->truth[p] = (struct rm_truth){ .cur = 'a' };
		if (!atomic_load(&r->sh->proc[p].ready))
			return -ETIMEDOUT;
	}
	return 0;
}

void rm_run_stop(struct rm_run *r)
{
	if (!r->sh || r->sh == MAP_FAILED)
		return;
	op_load(r, false);
	op_deadsock(r, false);
	loops_kill(r);
	for (int p = 0; p < r->c->procs; p++)
		if (r->stopped[p])
			kill(atomic_load(&r->sh->proc[p].pid), SIGCONT);
	for (int k = 0; k < r->c->slots; k++)
		if (atomic_load(&r->sh->slot[k].state) == SLOT_LIVE)
			atomic_store(&r->sh->slot[k].state, SLOT_CLOSING);
	rm_check_agreement(r);
	atomic_store(&r->sh->stop, 1);
	for (int p = 0; p < r->c->procs; p++) {
		pid_t pid = atomic_load(&r->sh->proc[p].pid);
		int st = 0;

		for (int i = 0; i < 1000 && waitpid(pid, &st, WNOHANG) == 0; i++)
			msleep(10);
		if (waitpid(pid, &st, WNOHANG) == 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
	}
	munmap(r->sh, sizeof(*r->sh));
	r->sh = NULL;
}
