/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rank_model.c - the model-based rank-consistency tester: random (or
 * replayed) sequences of operator actions and faults against rank
 * processes running the plugin, the agreement and truth invariants
 * checked after every step, and a failing sequence shrunk to a short
 * reproducer (docs/operations.md, "Rank consistency: what is tested").
 *
 *   rank_model [--seed S] [--steps N | --time SECONDS] [--procs P] [--nodes N]
 *              [--slots S] [--exchange dir|etcd --etcd URLS] [--no-shrink] [-v]
 *   rank_model --replay FILE      a sequence, one operation a line (model.h, driver.c)
 *   rank_model --case FILE        the same, as a fixed regression case
 *
 * Exit 0: every invariant held; 1: a violation (the reproducer is printed
 * and written to rank-repro-SEED.ops); 2: the run could not be set up.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "model.h"

#define MAX_OPS 4096

struct seq {
	struct rm_op op[MAX_OPS];
	int n;
};

static struct rm_conf g_conf;
static bool g_verbose;

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int rnd(uint64_t *s, int n)
{
	return n > 0 ? (int)(rng_next(s) % (uint64_t)n) : 0;
}

/* ---- random sequences that respect what the job looks like ------------------------ */

struct gen {
	uint64_t rng;
	bool live[RM_MAX_SLOTS];
	int stopped;        /* -1: none */
	int stop_ops;       /* operations left before the stopped process continues */
	bool dead, load;
	int dead_ops, load_ops;
	bool restart0;      /* node 0's loop was started to die: its successor comes next */
};

static uint32_t some_members(struct gen *g, const struct rm_conf *c)
{
	uint32_t m = 0;

	while (__builtin_popcount(m) < 2)
		for (int p = 0; p < c->procs; p++)
			if (rnd(&g->rng, 3))
				m |= 1u << p;
	return m;
}

static void gen_one(struct gen *g, const struct rm_conf *c, struct rm_op *op)
{
	int w = rnd(&g->rng, 100);

	memset(op, 0, sizeof(*op));
	if (g->stopped >= 0 && --g->stop_ops <= 0) {
		op->k = OP_CONT;
		op->a = g->stopped;
		g->stopped = -1;
		return;
	}
	if (g->dead && --g->dead_ops <= 0) {
		op->k = OP_DEADSOCK;
		snprintf(op->s, sizeof(op->s), "off");
		g->dead = false;
		return;
	}
	if (g->load && --g->load_ops <= 0) {
		op->k = OP_LOAD;
		snprintf(op->s, sizeof(op->s), "off");
		g->load = false;
		return;
	}
	if (g->restart0) {
		/* A supervisor's successor: what closes the window a dead aggregator leaves. */
		op->k = OP_LOOP;
		snprintf(op->s, sizeof(op->s), "restart0");
		g->restart0 = false;
		return;
	}

	if (w < 16) {
		int k = rnd(&g->rng, c->slots);

		if (g->live[k]) {
			op->k = OP_DESTROY;
			op->a = k;
			g->live[k] = false;
		} else {
			op->k = OP_CREATE;
			op->a = k;
			op->members = some_members(g, c);
			op->b = rnd(&g->rng, 10) ? 300 + 100 * rnd(&g->rng, 12) : 0;
			g->live[k] = true;
		}
	} else if (w < 20) {
		op->k = OP_RATE;
		op->a = rnd(&g->rng, c->slots);
		op->b = rnd(&g->rng, 5) ? 300 + 100 * rnd(&g->rng, 12) : 0;
	} else if (w < 36) {
		op->k = OP_RELOAD;
		op->a = 'a' + rnd(&g->rng, 3);
		snprintf(op->s, sizeof(op->s), "sync");
	} else if (w < 42) {
		op->k = OP_ROLLBACK;
		snprintf(op->s, sizeof(op->s), "sync");
	} else if (w < 52) {
		op->k = OP_CFG;
		op->a = rnd(&g->rng, 9);
	} else if (w < 58) {
		static const char *const lv[] = { "start", "second", "rerun", "stop", "die" };
		/* die: node 0's aggregator killed between the nodes' decision and its commit. */
		int v = rnd(&g->rng, c->nodes > 1 ? 5 : 4);

		op->k = OP_LOOP;
		snprintf(op->s, sizeof(op->s), "%s", lv[v]);
		g->restart0 = v == 4;
	} else if (w < 64 && g->stopped < 0) {
		op->k = OP_STOP;
		op->a = rnd(&g->rng, c->procs);
		g->stopped = op->a;
		g->stop_ops = 1 + rnd(&g->rng, 3);
	} else if (w < 67) {
		op->k = OP_KILL;
		op->a = rnd(&g->rng, c->procs);
		if (rnd(&g->rng, 2))
			snprintf(op->s, sizeof(op->s), "env");
		if (op->a == g->stopped)
			g->stopped = -1;
		for (int k = 0; k < c->slots; k++)
			g->live[k] = false; /* its communicators end; others may too: created again later */
	} else if (w < 70 && c->nodes == 1) {
		op->k = OP_KILLCLI;
		op->a = rnd(&g->rng, 400);
	} else if (w < 73 && !g->dead) {
		op->k = OP_DEADSOCK;
		snprintf(op->s, sizeof(op->s), "on");
		g->dead = true;
		g->dead_ops = 1 + rnd(&g->rng, 3);
	} else if (w < 76 && !g->load) {
		op->k = OP_LOAD;
		snprintf(op->s, sizeof(op->s), "on");
		g->load = true;
		g->load_ops = 2 + rnd(&g->rng, 4);
	} else if (w < 80 && g->stopped < 0) {
		/* Stopped 1-6 s while the next operations run (a rank late to vote, to commit). */
		op->k = OP_PAUSE;
		op->a = rnd(&g->rng, c->procs);
		op->b = 1000 + 500 * rnd(&g->rng, 11);
	} else {
		op->k = OP_SLEEP;
		op->a = 100 + rnd(&g->rng, 700);
	}
}

/* ---- running a sequence ----------------------------------------------------------- */

static void print_seq(FILE *f, const struct seq *s, int upto)
{
	char line[128];

	for (int i = 0; i < s->n && i <= upto; i++) {
		rm_op_format(&s->op[i], line, sizeof(line));
		fprintf(f, "%s\n", line);
	}
}

/*
 * Runs s on a fresh job; 0 when every invariant held, else -1 with the
 * violation in why and the failing step in *at.
 */
static int run_seq(const struct seq *s, char *why, size_t n, int *at, struct rm_run *stats)
{
	static int runs;
	struct rm_conf c = g_conf;
	struct rm_run r;
	int err = 0;

	snprintf(c.root, sizeof(c.root), "%.200s/run%d", g_conf.root, runs++);
	*at = -1;
	why[0] = 0;
	if (rm_run_start(&r, &c)) {
		snprintf(why, n, "the job could not be started (%s)", strerror(errno));
		rm_run_stop(&r);
		return -2;
	}
	for (int i = 0; i < s->n && !err; i++) {
		char line[128];

		struct timespec a, b;

		rm_op_format(&s->op[i], line, sizeof(line));
		if (g_verbose)
			fprintf(stderr, "[%d] %s\n", i, line);
		clock_gettime(CLOCK_MONOTONIC, &a);
		if (rm_run_op(&r, &s->op[i])) {
			err = -1;
			*at = i;
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (g_verbose)
			fprintf(stderr, "    (%.2f s)\n", (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
	}
	rm_run_stop(&r);
	if (!err && r.fail[0]) {
		err = -1;
		*at = s->n - 1;
	}
	if (err)
		snprintf(why, n, "%s", r.fail);
	if (stats) {
		stats->calls_checked = r.calls_checked;
		stats->truth_checks = r.truth_checks;
	}
	if (!getenv("RANK_MODEL_KEEP")) {
		char cmd[400];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", c.root);
		if (system(cmd)) {
			/* best effort */
		}
	}
	return err;
}

/* ddmin over the operations before the failing one: the shortest sequence that still fails. */
/* The sequence as a file --replay reads, written at once and after every cut of the shrink. */
static void save_repro(const struct seq *s, const char *out)
{
	FILE *f = fopen(out, "w");

	if (!f)
		return;
	fprintf(f, "# procs %d\n# nodes %d\n# slots %d\n", g_conf.procs, g_conf.nodes, g_conf.slots);
	if (!strcmp(g_conf.exchange, "etcd"))
		fprintf(f, "# exchange etcd\n");
	print_seq(f, s, s->n);
	fclose(f);
}

static void shrink(struct seq *s, int budget, const char *out)
{
	int chunk = s->n / 2;

	while (chunk >= 1 && budget > 0) {
		bool cut = false;

		for (int start = 0; start + chunk <= s->n && budget > 0;) {
			struct seq *t = malloc(sizeof(*t));
			char why[4096];
			int at;

			if (!t)
				return;
			t->n = 0;
			for (int i = 0; i < s->n; i++)
				if (i < start || i >= start + chunk)
					t->op[t->n++] = s->op[i];
			budget--;
			if (t->n && run_seq(t, why, sizeof(why), &at, NULL) == -1) {
				t->n = at + 1;
				*s = *t;
				cut = true;
				fprintf(stderr, "rank_model: shrunk to %d operations\n", s->n);
				save_repro(s, out);
			} else {
				start += chunk;
			}
			free(t);
		}
		if (!cut)
			chunk /= 2;
	}
}

static int load_file(const char *path, struct seq *s)
{
	char line[512];
	FILE *f = fopen(path, "r");
	int ln = 0;

	if (!f) {
		fprintf(stderr, "rank_model: %s: %s\n", path, strerror(errno));
		return -1;
	}
	s->n = 0;
	while (fgets(line, sizeof(line), f) && s->n < MAX_OPS) {
		int rc = rm_op_parse(line, &s->op[s->n]);

		ln++;
		if (rc < 0) {
			fprintf(stderr, "rank_model: %s:%d: cannot parse '%s'\n", path, ln, line);
			fclose(f);
			return -1;
		}
		if (rc == 0)
			s->n++;
	}
	fclose(f);
	return 0;
}

/* "# procs N nodes N slots N timeout S" lines at the top of a case file set the job's shape. */
static void file_conf(const char *path)
{
	char line[256];
	FILE *f = fopen(path, "r");

	while (f && fgets(line, sizeof(line), f) && line[0] == '#') {
		int v;
		char ex[16];

		if (sscanf(line, "# procs %d", &v) == 1)
			g_conf.procs = v;
		else if (sscanf(line, "# nodes %d", &v) == 1)
			g_conf.nodes = v;
		else if (sscanf(line, "# slots %d", &v) == 1)
			g_conf.slots = v;
		else if (sscanf(line, "# timeout %d", &v) == 1)
			g_conf.timeout_ms = v * 1000; /* the commands' stage deadline, seconds */
		else if (sscanf(line, "# exchange %15s", ex) == 1)
			g_conf.exchange = !strcmp(ex, "etcd") ? "etcd" : "dir";
	}
	if (f)
		fclose(f);
}

static void usage(void)
{
	fprintf(stderr, "usage: rank_model [--seed S] [--steps N | --time SECONDS] [--procs P] [--nodes N] [--slots S]\n"
			"                  [--exchange dir|etcd --etcd URLS] [--no-shrink] [-v]\n"
			"       rank_model --replay FILE | --case FILE\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seed", required_argument, NULL, 's' }, { "steps", required_argument, NULL, 'n' },
		{ "time", required_argument, NULL, 't' }, { "procs", required_argument, NULL, 'p' },
		{ "nodes", required_argument, NULL, 'N' }, { "slots", required_argument, NULL, 'S' },
		{ "replay", required_argument, NULL, 'r' }, { "case", required_argument, NULL, 'c' },
		{ "no-shrink", no_argument, NULL, 'x' }, { "exchange", required_argument, NULL, 'e' },
		{ "etcd", required_argument, NULL, 'E' }, { "plugin", required_argument, NULL, 'P' },
		{ "cli", required_argument, NULL, 'C' }, { "policies", required_argument, NULL, 'D' },
		{ "timeout", required_argument, NULL, 'T' }, { "verbose", no_argument, NULL, 'v' },
		{ 0 },
	};
	struct seq *s = calloc(1, sizeof(*s));
	uint64_t seed = 0;
	int steps = 0, ch, at = -1, rc;
	double seconds = 0;
	const char *file = NULL;
	bool shrink_it = true, is_case = false;
	char why[4096];
	struct rm_run stats = { 0 };
	struct timespec ts;

	g_conf = (struct rm_conf){ .procs = 4, .nodes = 1, .slots = 4, .plugin = RM_PLUGIN, .cli = RM_CLI,
				   .policies = RM_POLICIES, .exchange = "dir", .timeout_ms = 2000 };
	while ((ch = getopt_long(argc, argv, "v", lo, NULL)) != -1) {
		switch (ch) {
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'n': steps = atoi(optarg); break;
		case 't': seconds = atof(optarg); break;
		case 'p': g_conf.procs = atoi(optarg); break;
		case 'N': g_conf.nodes = atoi(optarg); break;
		case 'S': g_conf.slots = atoi(optarg); break;
		case 'r': file = optarg; break;
		case 'c': file = optarg; is_case = true; break;
		case 'x': shrink_it = false; break;
		case 'e': g_conf.exchange = optarg; break;
		case 'E': g_conf.etcd = optarg; break;
		case 'P': g_conf.plugin = optarg; break;
		case 'C': g_conf.cli = optarg; break;
		case 'D': g_conf.policies = optarg; break;
		case 'T': g_conf.timeout_ms = (int)(atof(optarg) * 1000); break;
		case 'v': g_verbose = g_conf.verbose = true; break;
		default: usage();
		}
	}
	if (!s)
		return 2;
	if (seconds > 0 && getenv("NCCLBPF_TEST_SCALE"))
		seconds *= atof(getenv("NCCLBPF_TEST_SCALE")) > 0 ? atof(getenv("NCCLBPF_TEST_SCALE")) : 1;
	if (file) {
		file_conf(file);
		if (load_file(file, s)) {
			free(s);
			return 2;
		}
	}
	if (g_conf.procs < 2 || g_conf.procs > RM_MAX_PROCS || g_conf.nodes < 1 ||
	    g_conf.nodes > RM_MAX_NODES || g_conf.nodes > g_conf.procs || g_conf.slots < 1 ||
	    g_conf.slots > RM_MAX_SLOTS)
		usage();
	signal(SIGPIPE, SIG_IGN);
	{
		/* A command without agreed changes (the tree before them): drive it the old way. */
		char cmd[600], buf[4096] = "";
		FILE *f;

		snprintf(cmd, sizeof(cmd), "%s help reload 2>&1", g_conf.cli);
		f = popen(cmd, "r");
		if (f) {
			size_t k = fread(buf, 1, sizeof(buf) - 1, f);

			buf[k] = 0;
			pclose(f);
		}
		g_conf.legacy = !strstr(buf, "--id");
		if (g_conf.legacy)
			fprintf(stderr, "rank_model: %s has no agreed changes: driving it as its docs said\n",
				g_conf.cli);
	}
	snprintf(g_conf.root, sizeof(g_conf.root), "/tmp/ncclbpf-rank.%d", (int)getpid());
	if (mkdir(g_conf.root, 0700)) {
		perror(g_conf.root);
		free(s);
		return 2;
	}
	if (!strcmp(g_conf.exchange, "etcd") && !g_conf.etcd) {
		int e = rm_etcd_start(&g_conf);

		if (e) {
			rmdir(g_conf.root);
			free(s);
			return e == 77 ? 77 : 2;
		}
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	if (!file) {
		struct gen g = { .stopped = -1 };
		struct timespec t0, t;

		if (!seed)
			seed = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid();
		g.rng = seed | 1;
		if (!steps && seconds <= 0)
			steps = 40;
		fprintf(stderr, "rank_model: seed %llu (replay: rank_model --seed %llu%s%s)\n",
			(unsigned long long)seed, (unsigned long long)seed, steps ? " --steps " : "",
			steps ? "N" : "");
		/* A timed run: sequences of 40 steps, each a fresh job, until the time is up. */
		unsigned long long seqs = 0, ops = 0, calls = 0, truths = 0;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			s->n = 0;
			for (int i = 0; i < (steps ? steps : 40) && s->n < MAX_OPS; i++)
				gen_one(&g, &g_conf, &s->op[s->n++]);
			rc = run_seq(s, why, sizeof(why), &at, &stats);
			if (rc)
				break;
			seqs++;
			ops += (unsigned long long)s->n;
			calls += stats.calls_checked;
			truths += stats.truth_checks;
			fprintf(stderr, "rank_model: %d operations held (%llu calls compared, %llu truth checks)\n",
				s->n, stats.calls_checked, stats.truth_checks);
			clock_gettime(CLOCK_MONOTONIC, &t);
		} while (seconds > 0 && (double)(t.tv_sec - t0.tv_sec) < seconds);
		clock_gettime(CLOCK_MONOTONIC, &t);
		fprintf(stderr, "rank_model: summary: seed %llu, %llu sequences, %llu operations, %llu calls compared, %llu truth checks, %s in %.0f s\n",
			(unsigned long long)seed, seqs, ops, calls, truths, rc ? "a violation" : "no violation",
			(double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9);
	} else {
		rc = run_seq(s, why, sizeof(why), &at, &stats);
		if (!rc)
			fprintf(stderr, "rank_model: %s: %d operations held (%llu calls compared, %llu truth checks)\n",
				file, s->n, stats.calls_checked, stats.truth_checks);
	}
	if (rc == -2) {
		fprintf(stderr, "rank_model: %s\n", why);
	} else if (rc) {
		char out[64];

		fprintf(stderr, "rank_model: VIOLATION at operation %d: %s\n", at, why);
		s->n = at + 1;
		snprintf(out, sizeof(out), "rank-repro-%llu.ops", (unsigned long long)seed);
		save_repro(s, out); /* a shrink stopped midway leaves a reproducer too */
		if (shrink_it && !is_case)
			shrink(s, 40, out);
		fprintf(stderr, "rank_model: reproducer (%d operations; replay with --replay %s):\n", s->n, out);
		print_seq(stderr, s, s->n);
	}
	rm_etcd_stop(&g_conf);
	if (!getenv("RANK_MODEL_KEEP")) {
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_conf.root);
		if (system(cmd)) {
			/* best effort */
		}
	}
	free(s);
	return rc == -2 ? 2 : rc ? 1 : 0;
}
