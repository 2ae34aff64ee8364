/*
 * cmd_ps.c - `ncclbpf ps [PID...]` and `ncclbpf prog list|show [PID...]`:
 * what each process running the plugin has loaded, asked over its control
 * socket.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "control/ctl_client.h"

static const char *get(const struct nbpf_ctl_rec *r, const char *k)
{
	const char *v = nbpf_ctl_rec_get(r, k);

	return v ? v : "";
}

static uint64_t get_u64(const struct nbpf_ctl_rec *r, const char *k)
{
	uint64_t v = 0;

	return nbpf_ctl_rec_u64(r, k, &v) ? 0 : v;
}

/* JSON array member "name":[{...},...] of every record of one kind. */
static void json_kind(FILE *f, const struct nbpf_ctl_msg *m, const char *kind, const char *name)
{
	bool first = true;

	fprintf(f, ",\"%s\":[", name);
	for (uint32_t i = 0; i < m->n_recs; i++) {
		if (strcmp(m->recs[i].kind, kind))
			continue;
		if (!first)
			fputc(',', f);
		first = false;
		cli_rec_json(f, &m->recs[i]);
	}
	fputc(']', f);
}

static const struct nbpf_ctl_rec *find_rec(const struct nbpf_ctl_msg *m, const char *kind)
{
	for (uint32_t i = 0; i < m->n_recs; i++)
		if (!strcmp(m->recs[i].kind, kind))
			return &m->recs[i];
	return NULL;
}

static void fmt_time(char *out, size_t n, uint64_t realtime_ns)
{
	time_t t = (time_t)(realtime_ns / 1000000000ull);
	struct tm tm;

	if (!realtime_ns || !localtime_r(&t, &tm) || !strftime(out, n, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(out, n, "-");
}

/*
 * The proc record as JSON, with "pid" the pid this command sees (the
 * record's own pid is the one inside the process's pid namespace: ns_pid).
 */
static void json_proc(FILE *f, int pid, const struct nbpf_ctl_rec *p)
{
	struct nbpf_ctl_kv kv[NBPF_CTL_MAX_TOKENS];
	struct nbpf_ctl_rec r = { .kind = p->kind, .kv = kv, .n_kv = 0 };

	for (uint32_t i = 0; i < p->n_kv && i < NBPF_CTL_MAX_TOKENS; i++) {
		kv[r.n_kv] = p->kv[i];
		if (!strcmp(kv[r.n_kv].key, "pid"))
			kv[r.n_kv].key = "ns_pid";
		r.n_kv++;
	}
	fprintf(f, "\"pid\":%d%s", pid, r.n_kv ? "," : "");
	cli_rec_json_fields(f, &r);
}

/*
 * The latest load attempt when it was refused (the image above is then
 * what still runs, or nothing): which object and program, and why.
 */
static void print_last_load(const struct nbpf_ctl_msg *m)
{
	const struct nbpf_ctl_rec *l = find_rec(m, "load");
	char when[64];

	if (!l || strcmp(get(l, "result"), "refused"))
		return;
	fmt_time(when, sizeof(when), get_u64(l, "at"));
	printf("  last load refused (%s): %s\n", when, get(l, "message"));
}

/*
 * Lowest call number over the process's tuner communicators: an activation
 * at a call every one of them has reached is history, not pending.
 */
static uint64_t min_tuner_calls(const struct nbpf_ctl_msg *m)
{
	uint64_t min = UINT64_MAX;

	for (uint32_t i = 0; i < m->n_recs; i++)
		if (!strcmp(m->recs[i].kind, "comm") && !strcmp(get(&m->recs[i], "kind"), "tuner") &&
		    get_u64(&m->recs[i], "calls") < min)
			min = get_u64(&m->recs[i], "calls");
	return min;
}

static void print_ps(int pid, const struct nbpf_ctl_msg *m)
{
	const struct nbpf_ctl_rec *p = find_rec(m, "proc"), *cur = NULL;
	uint64_t at = 0, reached = min_tuner_calls(m);

	for (uint32_t i = 0; i < m->n_recs; i++)
		if (!strcmp(m->recs[i].kind, "image") && !strcmp(get(&m->recs[i], "state"), "current"))
			cur = &m->recs[i];
	if (p) {
		printf("pid %d  %s", pid, get(p, "exe"));
		if (get_u64(p, "pid") != (uint64_t)pid)
			printf("  (pid %s in its pid namespace)", get(p, "pid"));
		putchar('\n');
	}
	if (cur) {
		at = get_u64(cur, "at_call");
		printf("  image %s  %s", get(cur, "gen"), get(cur, "spec"));
		if (at && at > reached)
			printf("  (pending: active from call %" PRIu64 ")", at);
		else if (at)
			printf("  (active since call %" PRIu64 ")", at);
		putchar('\n');
	} else {
		printf("  no policy loaded\n");
	}
	print_last_load(m);
	for (uint32_t i = 0; i < m->n_recs; i++) {
		const struct nbpf_ctl_rec *r = &m->recs[i];

		/* The net ABI gives no rank count; a net comm's calls are its messages done. */
		bool net = !strcmp(get(r, "kind"), "net");

		if (!strcmp(r->kind, "comm"))
			printf("  comm %s  %-8s rank %-4s ranks %-4s nodes %-3s calls %s\n",
			       get(r, "comm_id"), get(r, "kind"),
			       strcmp(get(r, "rank"), "-1") ? get(r, "rank") : "-",
			       net ? "-" : get(r, "ranks"), net ? "-" : get(r, "nodes"),
			       net || !strcmp(get(r, "kind"), "tuner") ? get(r, "calls")
								       : get(r, "colls_seen"));
		else if (!strcmp(r->kind, "prog"))
			printf("  prog %-20s hook %-9s tag %s  obj %s\n", get(r, "name"), get(r, "hook"),
			       get(r, "tag"), get(r, "obj"));
		else if (!strcmp(r->kind, "image") && r != cur && at && at > reached)
			printf("  before call %" PRIu64 ": image %s  %s\n", at, get(r, "gen"),
			       *get(r, "spec") ? get(r, "spec") : "(none)");
		if (!strcmp(r->kind, "image") && r != cur)
			at = get_u64(r, "at_call");
	}
}

int cmd_ps(struct cli *c, int argc, char **argv)
{
	int *pids, n = cli_target_pids(argc, argv, &pids), rc = CLI_OK, shown = 0;

	if (n < 0)
		return CLI_USAGE;
	if (c->json)
		putchar('[');
	for (int i = 0; i < n; i++) {
		struct nbpf_ctl_msg m;
		const char *em;
		int err = nbpf_ctl_call_pid(pids[i], NBPF_CTL_PS, NULL, &m, &em);

		if (err) {
			/* Listing everything: skip processes that went away meanwhile. */
			if (argc)
				rc = cli_pid_err(CLI_NO, pids[i], err, em);
		} else if (c->json) {
			const struct nbpf_ctl_rec *p = find_rec(&m, "proc");

			printf("%s{", shown++ ? "," : "");
			if (p)
				json_proc(stdout, pids[i], p);
			else
				printf("\"pid\":%d", pids[i]);
			json_kind(stdout, &m, "comm", "comms");
			json_kind(stdout, &m, "image", "images");
			json_kind(stdout, &m, "prog", "progs");
			json_kind(stdout, &m, "load", "loads");
			putchar('}');
		} else {
			print_ps(pids[i], &m);
			shown++;
		}
		nbpf_ctl_msg_free(&m);
	}
	if (c->json)
		puts("]");
	else if (!shown && !argc)
		printf("no process is running ncclbpf\n");
	free(pids);
	return rc;
}

/*
 * Refused outputs belong to the tuner adapter, not to one program: they
 * are reported with the process's tuner program, summed over its
 * communicators.
 */
static void refused_totals(const struct nbpf_ctl_msg *m, uint64_t *tot, size_t n)
{
	memset(tot, 0, n * sizeof(*tot));
	for (uint32_t i = 0; i < m->n_recs; i++) {
		uint64_t v[16];
		int k;

		if (strcmp(m->recs[i].kind, "comm") || strcmp(get(&m->recs[i], "kind"), "tuner"))
			continue;
		k = nbpf_ctl_parse_u64s(nbpf_ctl_rec_get(&m->recs[i], "refused"), v, 16);
		for (int j = 0; j < k && (size_t)j < n; j++)
			tot[j] += v[j];
	}
}

static const struct nbpf_ctl_rec *progstat(const struct nbpf_ctl_msg *m,
					   const struct nbpf_ctl_rec *prog)
{
	for (uint32_t i = 0; i < m->n_recs; i++)
		if (!strcmp(m->recs[i].kind, "progstat") &&
		    get_u64(&m->recs[i], "slot") == get_u64(prog, "slot") &&
		    get_u64(&m->recs[i], "gen") == get_u64(prog, "gen"))
			return &m->recs[i];
	return NULL;
}

static const char *const refuse_names[] = { "cell", "range", "channels", "collnet_channels",
					    "return", "error" };
#define N_REFUSE (sizeof(refuse_names) / sizeof(refuse_names[0]))

static void print_progs(int pid, const struct nbpf_ctl_msg *m, bool show)
{
	const struct nbpf_ctl_rec *img = find_rec(m, "image");
	uint64_t refused[N_REFUSE], refused_sum = 0;
	char when[64];

	refused_totals(m, refused, N_REFUSE);
	for (size_t i = 0; i < N_REFUSE; i++)
		refused_sum += refused[i];
	if (!img) {
		printf("pid %d: no policy loaded\n", pid);
		return;
	}
	fmt_time(when, sizeof(when), get_u64(img, "loaded_at"));
	printf("pid %d  image %s  %s\n  loaded %s  load+verify+jit %.3f ms\n", pid, get(img, "gen"),
	       get(img, "spec"), when, (double)get_u64(img, "load_ns") / 1e6);
	if (show && *get(img, "warnings"))
		printf("  warnings: %s\n", get(img, "warnings"));
	for (uint32_t i = 0; i < m->n_recs; i++) {
		const struct nbpf_ctl_rec *r = &m->recs[i], *st;
		uint64_t runs, ns;
		bool tuner;

		if (strcmp(r->kind, "prog"))
			continue;
		st = progstat(m, r);
		runs = st ? get_u64(st, "runs") : 0;
		ns = st ? get_u64(st, "ns") : 0;
		tuner = !strcmp(get(r, "hook"), "tuner");
		printf("  %s: %s  tag %s  hook %s  runs %" PRIu64, get(r, "slot"), get(r, "name"),
		       get(r, "tag"), get(r, "hook"), runs);
		if (ns && runs)
			printf("  mean %.1f ns/run", (double)ns / (double)runs);
		else
			printf("  mean - (NCCLBPF_STATS=1 to time runs)");
		if (tuner)
			printf("  refused %" PRIu64, refused_sum);
		putchar('\n');
		if (!show)
			continue;
		printf("     obj %s  %s insns  engine %s%s\n", get(r, "obj"), get(r, "insns"),
		       get(r, "engine"),
		       get_u64(r, "consistency") ? "  WARNING: decision depends on rank-local data" : "");
		if (tuner && refused_sum) {
			printf("     refused by reason:");
			for (size_t k = 0; k < N_REFUSE; k++)
				if (refused[k])
					printf(" %s %" PRIu64, refuse_names[k], refused[k]);
			putchar('\n');
		}
	}
}

static void json_progs(int pid, const struct nbpf_ctl_msg *m)
{
	uint64_t refused[N_REFUSE];
	bool first = true;

	refused_totals(m, refused, N_REFUSE);
	printf("{\"pid\":%d,\"images\":[", pid);
	for (uint32_t i = 0; i < m->n_recs; i++) {
		if (strcmp(m->recs[i].kind, "image"))
			continue;
		printf("%s", first ? "" : ",");
		first = false;
		cli_rec_json(stdout, &m->recs[i]);
	}
	printf("],\"progs\":[");
	first = true;
	for (uint32_t i = 0; i < m->n_recs; i++) {
		const struct nbpf_ctl_rec *r = &m->recs[i], *st;
		uint64_t runs, ns;

		if (strcmp(r->kind, "prog"))
			continue;
		st = progstat(m, r);
		runs = st ? get_u64(st, "runs") : 0;
		ns = st ? get_u64(st, "ns") : 0;
		printf("%s{", first ? "" : ",");
		first = false;
		cli_rec_json_fields(stdout, r);
		printf(",\"runs\":%" PRIu64 ",\"run_ns\":%" PRIu64, runs, ns);
		if (runs && ns)
			printf(",\"mean_ns\":%.2f", (double)ns / (double)runs);
		if (!strcmp(get(r, "hook"), "tuner")) {
			printf(",\"refused\":{");
			for (size_t k = 0; k < N_REFUSE; k++)
				printf("%s\"%s\":%" PRIu64, k ? "," : "", refuse_names[k], refused[k]);
			putchar('}');
		}
		putchar('}');
	}
	printf("]}");
}

/* `prog list|show [PID...]`; other prog verbs belong to cmd_prog. */
int cmd_prog_live(struct cli *c, int argc, char **argv)
{
	bool show;
	int *pids, n, rc = CLI_OK, shown = 0;

	if (argc < 1 || (strcmp(argv[0], "list") && strcmp(argv[0], "show")))
		return cmd_prog(c, argc, argv);
	show = !strcmp(argv[0], "show");
	n = cli_target_pids(argc - 1, argv + 1, &pids);
	if (n < 0)
		return CLI_USAGE;
	if (c->json)
		putchar('[');
	for (int i = 0; i < n; i++) {
		struct nbpf_ctl_msg m;
		const char *em;
		int err = nbpf_ctl_call_pid(pids[i], NBPF_CTL_PROGS, NULL, &m, &em);

		if (err) {
			if (argc > 1)
				rc = cli_pid_err(CLI_NO, pids[i], err, em);
		} else if (c->json) {
			printf("%s", shown++ ? "," : "");
			json_progs(pids[i], &m);
		} else {
			print_progs(pids[i], &m, show);
			shown++;
		}
		nbpf_ctl_msg_free(&m);
	}
	if (c->json)
		puts("]");
	else if (!shown && argc == 1)
		printf("no process is running ncclbpf\n");
	free(pids);
	return rc;
}
