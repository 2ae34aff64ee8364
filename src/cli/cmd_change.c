/* SPDX-License-Identifier: MIT */
/*
 * cmd_change.c - `ncclbpf change stage|plan|commit|abort|status|apply`:
 * an agreed change (a reload, a rollback, a decision-map write) across
 * nodes, for launchers that reach every node (srun, pdsh, a Kubernetes
 * Job) or, where none does, through etcd.
 *
 *   change stage ID TARGET WHAT [--timeout S]    on every node; -j prints the node's vote
 *   change plan [--margin-seconds S] [FILE...]     the votes of every node -> the commit's arguments
 *   change commit ID [--at-call N --known LIST]    on every node (without: complete a change
 *                                                  some process of this node committed)
 *   change abort ID                                on every node
 *   change status [PID] [ID]                       what each process did with its changes
 *   change apply ID TARGET WHAT --node NAME --nodes K (--share-dir DIR | --etcd URLS)
 *                                                  every phase, agreed through the exchange
 *
 * WHAT is OBJ[:OBJ...] (a reload), --rollback, or --map NAME key HEX... [value HEX...]
 * (a write, or with no value a delete).  A node that cannot stage in time
 * makes the change abort everywhere; see docs/operations.md for the recipes.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agree.h"
#include "cli.h"
#include "control/ctl_client.h"
#include "control/ctl_coord.h"
#include "ncclbpf/runtime.h"
#include "xchg.h"

struct what {
	struct nbpf_ctl_buf fields, records;
	char summary[512];
	const char *verb;
};

/* Hex tokens up to the next option or keyword, concatenated. */
static int hex_arg(int argc, char **argv, int *i, char *out, size_t n)
{
	size_t len = 0;

	out[0] = 0;
	for (; *i < argc && strncmp(argv[*i], "--", 2) && strcmp(argv[*i], "key") &&
	       strcmp(argv[*i], "value"); (*i)++) {
		const char *s = argv[*i] + (argv[*i][0] == '0' && (argv[*i][1] | 32) == 'x' ? 2 : 0);

		if (len + strlen(s) + (strlen(s) & 1) >= n)
			return -E2BIG;
		len += (size_t)snprintf(out + len, n - len, "%s%s", strlen(s) & 1 ? "0" : "", s);
	}
	return len ? 0 : -EINVAL;
}

/*
 * WHAT from argv[*i]: an object list, --rollback, or --map NAME key .. [value ..].
 * Options after it are left for the caller.  CLI_USAGE on a malformed one.
 */
static int parse_what(int argc, char **argv, int *i, struct what *w)
{
	*w = (struct what){ .fields = { .max = NBPF_CTL_MAX_REQUEST },
			    .records = { .max = NBPF_CTL_MAX_REQUEST } };
	if (*i >= argc)
		return cli_usage_error("change: what? (OBJ[:OBJ...], --rollback, or --map NAME key HEX...)");
	if (!strcmp(argv[*i], "--rollback")) {
		(*i)++;
		nbpf_ctl_buf_u64(&w->fields, "rollback", 1);
		snprintf(w->summary, sizeof(w->summary), "rolled back to the previous image");
		w->verb = "rollback";
	} else if (!strcmp(argv[*i], "--map")) {
		char key[1024], val[8192];
		const char *name;
		bool has_val = false;

		if (*i + 3 >= argc || strcmp(argv[*i + 2], "key"))
			return cli_usage_error("change: --map NAME key HEX... [value HEX...]");
		name = argv[*i + 1];
		*i += 3;
		if (hex_arg(argc, argv, i, key, sizeof(key)))
			return cli_usage_error("change: --map: key needs hex bytes");
		if (*i < argc && !strcmp(argv[*i], "value")) {
			(*i)++;
			if (hex_arg(argc, argv, i, val, sizeof(val)))
				return cli_usage_error("change: --map: value needs hex bytes");
			has_val = true;
		}
		nbpf_ctl_buf_rec(&w->records, "op");
		nbpf_ctl_buf_str(&w->records, "map", name);
		nbpf_ctl_buf_str(&w->records, "key", key);
		if (has_val)
			nbpf_ctl_buf_str(&w->records, "value", val);
		snprintf(w->summary, sizeof(w->summary), "%s %s", has_val ? "wrote" : "deleted a key of",
			 name);
		w->verb = has_val ? "map update" : "map delete";
	} else if (argv[*i][0] != '-') {
		char *abs = realpath(argv[*i], NULL);

		if (!abs)
			return cli_usage_error("change: %s: %s", argv[*i], strerror(errno));
		nbpf_ctl_buf_str(&w->fields, "path", abs);
		snprintf(w->summary, sizeof(w->summary), "loaded %s", abs);
		free(abs);
		w->verb = "reload";
		(*i)++;
	} else {
		return cli_usage_error("change: what? (OBJ[:OBJ...], --rollback, or --map NAME key HEX...)");
	}
	return w->fields.err || w->records.err ? cli_usage_error("change: request too large") : 0;
}

static void what_free(struct what *w)
{
	nbpf_ctl_buf_free(&w->fields);
	nbpf_ctl_buf_free(&w->records);
}

/* TARGET: a pid, or "all" (every process of this node running the plugin). */
static int target_pids(const char *t, int **pids)
{
	if (!strcmp(t, "all")) {
		int n = nbpf_ctl_list_pids(pids);

		if (n < 0)
			cli_err(0, "%s", ncclbpf_errmsg());
		return n;
	}
	return cli_target_pids(1, (char **)&t, pids);
}

/* A change id: the exchange's scope, and unique everywhere it is staged. */
static bool id_ok(const char *id)
{
	return strlen(id) < 64 && nbpf_xchg_name_ok(id);
}

struct opts {
	int timeout_ms;
	double margin_s;
	uint64_t margin, at_call;
	bool have_at;
	const char *known, *node, *dir, *etcd;
	int nodes;
};

/* The options after the operands; CLI_USAGE on an unknown one. */
static int parse_opts(int argc, char **argv, int i, struct opts *o)
{
	for (; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end = NULL;

		if (!v)
			return cli_usage_error("change: %s needs a value", a);
		if (!strcmp(a, "--timeout")) {
			double t = strtod(v, &end);

			if (*end || !(t > 0) || t > 40)
				return cli_usage_error("change: --timeout needs seconds in (0, 40] (a staged change holds new communicators back for three times that)");
			o->timeout_ms = (int)(t * 1000);
		} else if (!strcmp(a, "--margin-seconds")) {
			o->margin_s = strtod(v, &end);
			if (*end || o->margin_s < 0)
				return cli_usage_error("change: --margin-seconds needs seconds");
		} else if (!strcmp(a, "--margin")) {
			o->margin = strtoull(v, &end, 10);
			if (*end || !o->margin)
				return cli_usage_error("change: --margin needs a positive number of calls");
		} else if (!strcmp(a, "--at-call")) {
			o->at_call = strtoull(v, &end, 10);
			if (*end || v[0] == '-')
				return cli_usage_error("change: --at-call needs a call number");
			o->have_at = true;
		} else if (!strcmp(a, "--known")) {
			o->known = v;
		} else if (!strcmp(a, "--node")) {
			o->node = v;
		} else if (!strcmp(a, "--nodes")) {
			o->nodes = atoi(v);
		} else if (!strcmp(a, "--share-dir")) {
			o->dir = v;
		} else if (!strcmp(a, "--etcd")) {
			o->etcd = v;
		} else {
			return cli_usage_error("change: unknown option '%s'", a);
		}
		i++;
	}
	return 0;
}

/* ---- stage: this node's processes, and its vote ------------------------------------ */

static void print_vote(struct cli *c, const struct nbpf_coord *co, int staged)
{
	char host[64] = "";

	gethostname(host, sizeof(host) - 1);
	if (!c->json) {
		printf("change %s: %s on %d of %d processes of %s; highest call %" PRIu64 ", %.0f calls/s, %u communicators\n",
		       co->id, staged == co->n ? "staged" : "NOT staged", staged, co->n, host,
		       co->max_calls, co->rate, co->n_known);
		for (int i = 0; i < co->n; i++)
			if (co->p[i].stage != NBPF_COORD_OK)
				printf("  pid %d: %s: %s\n", co->p[i].pid, nbpf_coord_res_name(co->p[i].stage),
				       co->p[i].msg);
		return;
	}
	printf("{\"change\":");
	cli_json_str(stdout, co->id);
	printf(",\"node\":");
	cli_json_str(stdout, host);
	printf(",\"staged\":%s,\"max_calls\":%" PRIu64 ",\"rate\":%.1f,\"target\":\"%016" PRIx64 "\",\"known\":[",
	       staged == co->n ? "true" : "false", co->max_calls, co->rate, co->n ? co->p[0].target : 0);
	for (uint32_t k = 0; k < co->n_known; k++)
		printf("%s%" PRIu64, k ? "," : "", co->known[k]);
	printf("],\"processes\":[");
	for (int i = 0; i < co->n; i++) {
		printf("%s{\"pid\":%d,\"stage\":\"%s\"", i ? "," : "", co->p[i].pid,
		       nbpf_coord_res_name(co->p[i].stage));
		if (co->p[i].stage != NBPF_COORD_OK) {
			printf(",\"error\":");
			cli_json_str(stdout, co->p[i].msg);
		}
		putchar('}');
	}
	printf("]}\n");
}

static int do_stage(struct cli *c, int argc, char **argv)
{
	struct opts o = { 0 };
	struct what w;
	struct nbpf_coord co;
	int *pids = NULL, n, i = 3, rc, staged, d;

	if (argc < 4 || !id_ok(argv[1]))
		return cli_usage_error("change stage ID TARGET WHAT [--timeout S] (ID: [A-Za-z0-9._-], at most 63)");
	if ((rc = parse_what(argc, argv, &i, &w)) || (rc = parse_opts(argc, argv, i, &o)))
		goto out_w;
	n = target_pids(argv[2], &pids);
	if (n <= 0) {
		rc = n == 0 ? cli_err(CLI_NO, "no process is running the plugin") : CLI_USAGE;
		goto out_w;
	}
	rc = nbpf_coord_init(&co, argv[1], "ncclbpf change", pids, n,
			     o.timeout_ms ? o.timeout_ms : nbpf_ctl_client_timeout_ms());
	if (rc) {
		rc = cli_err(CLI_NO, "change: %s", strerror(-rc));
		goto out_w;
	}
	co.rate_window_ms = 200;
	staged = nbpf_coord_stage(&co, w.fields.data, w.records.data);
	/* A rollback to different images here (histories differ) is a no as well. */
	d = staged == n ? nbpf_coord_target_differs(&co) : -1;
	/* Not every process: aborted here; `change plan` sees this node's vote as no. */
	if (staged < n || d >= 0)
		nbpf_coord_abort(&co);
	if (d >= 0) {
		co.p[d].stage = NBPF_COORD_REFUSED;
		snprintf(co.p[d].msg, sizeof(co.p[d].msg),
			 "its previous image is not pid %d's: their histories differ; reload the image you want instead",
			 co.p[0].pid);
		staged--;
	}
	print_vote(c, &co, staged);
	rc = staged == n ? CLI_OK : CLI_NO;
	nbpf_coord_free(&co);
out_w:
	what_free(&w);
	free(pids);
	return rc;
}

/* ---- plan: every node's vote -> the commit's arguments ------------------------------ */

static int plan_one(json_t *v, uint64_t *hi, double *rate, uint64_t **known, uint32_t *n_known,
		    int *nodes, char *target)
{
	const char *t = json_string_value(json_object_get(v, "target")) ?: "";
	json_t *k;
	size_t i;

	if (!*nodes)
		snprintf(target, 17, "%s", t);
	(*nodes)++;
	if (!json_is_true(json_object_get(v, "staged")))
		return cli_err(CLI_NO, "change plan: node %s did not stage change %s: abort it everywhere (`ncclbpf change abort %s`)",
			       json_string_value(json_object_get(v, "node")) ?: "?",
			       json_string_value(json_object_get(v, "change")) ?: "?",
			       json_string_value(json_object_get(v, "change")) ?: "ID");
	if (strcmp(t, target))
		return cli_err(CLI_NO, "change plan: node %s's processes would roll back to another image than the first node's (their histories differ): abort it everywhere (`ncclbpf change abort %s`) and reload the image you want instead",
			       json_string_value(json_object_get(v, "node")) ?: "?",
			       json_string_value(json_object_get(v, "change")) ?: "ID");
	if ((uint64_t)json_integer_value(json_object_get(v, "max_calls")) > *hi)
		*hi = (uint64_t)json_integer_value(json_object_get(v, "max_calls"));
	if (json_number_value(json_object_get(v, "rate")) > *rate)
		*rate = json_number_value(json_object_get(v, "rate"));
	json_array_foreach(json_object_get(v, "known"), i, k) {
		uint64_t id = (uint64_t)json_integer_value(k);

		if (nbpf_coord_merge_known(known, n_known, &id, 1))
			return CLI_NO;
	}
	return CLI_OK;
}

static int plan_file(FILE *f, const char *name, uint64_t *hi, double *rate, uint64_t **known,
		     uint32_t *n_known, int *nodes, char *target)
{
	json_error_t je;
	json_t *v;
	int rc = CLI_OK;

	/* One vote per document, as many documents as nodes (each node's `-j change stage`). */
	while (rc == CLI_OK && (v = json_loadf(f, JSON_DISABLE_EOF_CHECK, &je))) {
		rc = plan_one(v, hi, rate, known, n_known, nodes, target);
		json_decref(v);
	}
	if (rc == CLI_OK && !feof(f) && strstr(je.text, "end of file") == NULL)
		rc = cli_usage_error("change plan: %s: line %d: %s", name, je.line, je.text);
	return rc;
}

static int do_plan(struct cli *c, int argc, char **argv)
{
	struct opts o = { .margin_s = 5 };
	uint64_t hi = 0, *known = NULL, at;
	uint32_t n_known = 0;
	double rate = 0;
	int i = 1, rc = CLI_OK, nodes = 0;
	char target[17] = "";

	while (i < argc && strncmp(argv[i], "--", 2))
		i++;
	if ((rc = parse_opts(argc, argv, i, &o)))
		return rc;
	if (i == 1)
		rc = plan_file(stdin, "stdin", &hi, &rate, &known, &n_known, &nodes, target);
	for (int k = 1; k < i && rc == CLI_OK; k++) {
		FILE *f = fopen(argv[k], "r");

		if (!f) {
			rc = cli_usage_error("change plan: %s: %s", argv[k], strerror(errno));
			break;
		}
		rc = plan_file(f, argv[k], &hi, &rate, &known, &n_known, &nodes, target);
		fclose(f);
	}
	if (rc == CLI_OK && !nodes)
		rc = cli_usage_error("change plan: no vote read (give each node's `ncclbpf -j change stage` output)");
	if (rc == CLI_OK) {
		/* The margin covers the votes' collection and every node's commit. */
		at = o.have_at ? o.at_call : hi + (o.margin ? o.margin : (uint64_t)(rate * o.margin_s) + 1000);
		if (c->json)
			printf("{\"nodes\":%d,\"at_call\":%" PRIu64 ",\"known\":\"", nodes, at);
		else
			printf("--at-call %" PRIu64 " --known ", at);
		for (uint32_t k = 0; k < n_known; k++)
			printf("%s%" PRIu64, k ? "," : "", known[k]);
		if (!n_known)
			printf("none");
		printf(c->json ? "\"}\n" : "\n");
	}
	free(known);
	return rc;
}

/* ---- commit, abort, status: this node's processes -------------------------------- */

/* Each local process's record of change id (state "" when it has none), through CHANGES. */
struct local {
	int pid;
	char path[108];
	char state[16];
	uint64_t at_call;
	uint64_t *known;
	int n_known;
};

static int locals(const char *id, struct local **out, int *n)
{
	struct nbpf_ctl_proc *procs = NULL;
	struct nbpf_ctl_call *k;
	int m = nbpf_ctl_list(&procs);

	*out = NULL;
	*n = 0;
	if (m < 0)
		return cli_err(CLI_NO, "%s", ncclbpf_errmsg());
	k = calloc((size_t)(m ? m : 1), sizeof(*k));
	*out = calloc((size_t)(m ? m : 1), sizeof(**out));
	if (!k || !*out) {
		free(k);
		free(procs);
		return CLI_NO;
	}
	for (int i = 0; i < m; i++)
		k[i] = (struct nbpf_ctl_call){ .path = procs[i].path, .type = NBPF_CTL_CHANGES };
	nbpf_ctl_call_all(k, m, nbpf_ctl_client_timeout_ms());
	for (int i = 0; i < m; i++) {
		struct local *l = &(*out)[(*n)++];

		l->pid = procs[i].pid;
		snprintf(l->path, sizeof(l->path), "%s", procs[i].path);
		snprintf(l->state, sizeof(l->state), "%s", k[i].answered && !k[i].err ? "" : "unknown");
		for (uint32_t r = 0; k[i].answered && r < k[i].resp.n_recs; r++) {
			const struct nbpf_ctl_rec *rec = &k[i].resp.recs[r];
			const char *kn;

			if (strcmp(rec->kind, "change") || strcmp(nbpf_ctl_rec_get(rec, "id") ?: "", id))
				continue;
			snprintf(l->state, sizeof(l->state), "%s", nbpf_ctl_rec_get(rec, "state") ?: "?");
			nbpf_ctl_rec_u64(rec, "at_call", &l->at_call);
			if ((kn = nbpf_ctl_rec_get(rec, "known")) && (l->known = calloc(8192, sizeof(uint64_t))))
				l->n_known = nbpf_ctl_parse_u64s(kn, l->known, 8192);
			break;
		}
		nbpf_ctl_msg_free(&k[i].resp);
	}
	free(k);
	free(procs);
	return CLI_OK;
}

static void locals_free(struct local *l, int n)
{
	for (int i = 0; l && i < n; i++)
		free(l[i].known);
	free(l);
}

static int parse_known_list(const char *s, uint64_t **ids, uint32_t *n)
{
	*ids = NULL;
	*n = 0;
	if (!s || !strcmp(s, "none"))
		return 0;
	*ids = calloc(8192, sizeof(uint64_t));
	if (!*ids)
		return -ENOMEM;
	{
		int k = nbpf_ctl_parse_u64s(s, *ids, 8192);

		if (k < 0)
			return -EINVAL;
		*n = (uint32_t)k;
	}
	return 0;
}

static int do_commit(struct cli *c, int argc, char **argv)
{
	struct cli_change ch = { .verb = "change commit", .summary = "committed" };
	struct opts o = { 0 };
	struct local *l = NULL;
	struct nbpf_coord co;
	uint64_t *known = NULL, at = 0;
	uint32_t n_known = 0;
	int n = 0, *pids = NULL, np = 0, rc, done;
	const struct local *from = NULL;

	if (argc < 2 || !id_ok(argv[1]))
		return cli_usage_error("change commit ID [--at-call N --known LIST]");
	if ((rc = parse_opts(argc, argv, 2, &o)) || (rc = locals(argv[1], &l, &n)))
		return rc;
	for (int i = 0; i < n && !from; i++)
		if (!strcmp(l[i].state, "committed"))
			from = &l[i];
	if (o.have_at) {
		at = o.at_call;
		if (parse_known_list(o.known, &known, &n_known)) {
			rc = cli_usage_error("change commit: --known is a list of decimal comm ids (or none)");
			goto out;
		}
	} else if (from) {
		/* Complete what a coordinator that died started: same call, same communicators. */
		at = from->at_call;
		known = from->known;
		n_known = (uint32_t)(from->n_known > 0 ? from->n_known : 0);
	} else {
		rc = cli_err(CLI_NO, "change commit: no process of this node committed change %s: give the agreed --at-call N and --known LIST (`ncclbpf change plan`), or abort it (`ncclbpf change abort %s`)",
			     argv[1], argv[1]);
		goto out;
	}
	pids = calloc((size_t)(n ? n : 1), sizeof(int));
	for (int i = 0; pids && i < n; i++)
		if (!strcmp(l[i].state, "staged") || !strcmp(l[i].state, "committed") ||
		    !strcmp(l[i].state, "expired") || !strcmp(l[i].state, "unknown"))
			pids[np++] = l[i].pid;
	if (!np) {
		rc = cli_err(CLI_NO, "change commit: no process of this node has change %s", argv[1]);
		goto out;
	}
	if ((rc = nbpf_coord_init(&co, argv[1], "ncclbpf change", pids, np,
				  o.timeout_ms ? o.timeout_ms : nbpf_ctl_client_timeout_ms()))) {
		rc = cli_err(CLI_NO, "change commit: %s", strerror(-rc));
		goto out;
	}
	for (int i = 0; i < co.n; i++)
		co.p[i].stage = NBPF_COORD_OK; /* staged before: commit is all that is left */
	done = nbpf_coord_commit(&co, at, known, n_known);
	if (c->json)
		cli_change_json(&co, at, true);
	else
		cli_change_text(&co, &ch, at);
	rc = done == co.n ? CLI_OK : CLI_PARTIAL;
	if (rc != CLI_OK && !c->json)
		cli_change_partial(&co, &ch, at);
	nbpf_coord_free(&co);
out:
	if (!from || known != from->known)
		free(known);
	free(pids);
	locals_free(l, n);
	return rc;
}

static int do_abort(struct cli *c, int argc, char **argv)
{
	struct nbpf_coord co;
	int *pids = NULL, n, rc = CLI_OK;

	if (argc != 2 || !id_ok(argv[1]))
		return cli_usage_error("change abort ID");
	n = nbpf_ctl_list_pids(&pids);
	if (n < 0)
		return cli_err(CLI_NO, "%s", ncclbpf_errmsg());
	if (nbpf_coord_init(&co, argv[1], "ncclbpf change", pids, n, nbpf_ctl_client_timeout_ms())) {
		free(pids);
		return CLI_NO;
	}
	/* Every process: one that never heard of it spends the id, so a late stage is refused. */
	for (int i = 0; i < co.n; i++)
		co.p[i].stage = NBPF_COORD_UNKNOWN;
	nbpf_coord_abort(&co);
	if (c->json)
		putchar('[');
	for (int i = 0; i < co.n; i++) {
		const struct nbpf_coord_proc *p = &co.p[i];

		if (c->json) {
			printf("%s{\"pid\":%d,\"abort\":\"%s\"", i ? "," : "", p->pid,
			       nbpf_coord_res_name(p->abort));
			if (p->abort != NBPF_COORD_OK) {
				printf(",\"error\":");
				cli_json_str(stdout, p->msg);
			}
			putchar('}');
		} else if (p->abort == NBPF_COORD_OK) {
			printf("pid %d: change %s aborted (or never staged: its id is spent)\n", p->pid, co.id);
		} else {
			cli_err(0, "pid %d: %s", p->pid, p->msg);
		}
		if (p->abort != NBPF_COORD_OK)
			rc = CLI_NO;
	}
	if (c->json)
		puts("]");
	nbpf_coord_free(&co);
	free(pids);
	return rc;
}

static int do_status(struct cli *c, int argc, char **argv)
{
	int *pids = NULL, n, i = 1, rc = CLI_OK;
	const char *id = NULL;
	bool first = true;

	if (i < argc && cli_parse_pid(argv[i]) > 0)
		n = cli_target_pids(1, &argv[i++], &pids);
	else
		n = nbpf_ctl_list_pids(&pids);
	if (i < argc)
		id = argv[i++];
	if (i < argc || n < 0)
		return n < 0 ? CLI_USAGE : cli_usage_error("change status [PID] [ID]");
	if (c->json)
		putchar('[');
	for (int k = 0; k < n; k++) {
		struct nbpf_ctl_msg m;
		const char *em;
		int err = nbpf_ctl_call_pid(pids[k], NBPF_CTL_CHANGES, NULL, &m, &em);
		bool any = false;

		for (uint32_t r = 0; !err && r < m.n_recs; r++) {
			const struct nbpf_ctl_rec *rec = &m.recs[r];

			if (strcmp(rec->kind, "change") || (id && strcmp(nbpf_ctl_rec_get(rec, "id") ?: "", id)))
				continue;
			any = true;
			if (c->json) {
				printf("%s{\"pid\":%d,", first ? "" : ",", pids[k]);
				cli_rec_json_fields(stdout, rec);
				putchar('}');
			} else {
				printf("pid %d: change %s: %s (%s), at call %s\n", pids[k],
				       nbpf_ctl_rec_get(rec, "id"), nbpf_ctl_rec_get(rec, "state"),
				       nbpf_ctl_rec_get(rec, "what"), nbpf_ctl_rec_get(rec, "at_call"));
			}
			first = false;
		}
		if (!err && !any && id) {
			if (c->json)
				printf("%s{\"pid\":%d,\"id\":\"%s\",\"state\":\"none\"}", first ? "" : ",",
				       pids[k], id);
			else
				printf("pid %d: change %s: none (never staged here)\n", pids[k], id);
			first = false;
		}
		if (err) {
			if (c->json) {
				printf("%s{\"pid\":%d,\"state\":\"unknown\",\"error\":", first ? "" : ",", pids[k]);
				cli_json_str(stdout, em);
				putchar('}');
				first = false;
			} else {
				cli_pid_err(0, pids[k], err, em);
			}
			rc = CLI_NO;
		}
		nbpf_ctl_msg_free(&m);
	}
	if (c->json)
		puts("]");
	free(pids);
	return rc;
}

/* ---- apply: every phase on this node, agreed with the others through the exchange -- */

static int do_apply(struct cli *c, int argc, char **argv)
{
	struct opts o = { .margin_s = 2 };
	struct nbpf_agree_opts ao = { .step = "c" };
	struct nbpf_agree_result res;
	struct nbpf_xchg *x = NULL;
	struct nbpf_coord co;
	struct what w;
	struct cli_change ch = { .verb = "change apply" };
	int *pids = NULL, n, i = 3, rc, err;

	if (argc < 4 || !id_ok(argv[1]))
		return cli_usage_error("change apply ID TARGET WHAT --node NAME --nodes K (--share-dir DIR | --etcd URLS)");
	if ((rc = parse_what(argc, argv, &i, &w)) || (rc = parse_opts(argc, argv, i, &o)))
		goto out_w;
	if (!o.node || o.nodes < 1 || !o.dir == !o.etcd) {
		rc = cli_usage_error("change apply: --node NAME, --nodes K and one of --share-dir DIR, --etcd URLS");
		goto out_w;
	}
	n = target_pids(argv[2], &pids);
	if (n < 0) {
		rc = CLI_USAGE;
		goto out_w;
	}
	{
		/* A node may vote as late as its stage deadline: wait for it that long, and as long again. */
		struct nbpf_xchg_opts xo = { .dir = o.dir, .etcd = o.etcd, .scope = argv[1], .node = o.node,
					     .nodes = o.nodes,
					     .timeout_ms = 2 * (o.timeout_ms ? o.timeout_ms : nbpf_ctl_client_timeout_ms()) };

		if ((err = nbpf_xchg_open(&xo, &x))) {
			rc = cli_err(CLI_NO, "change apply: %s", ncclbpf_errmsg());
			goto out_w;
		}
	}
	if ((err = nbpf_coord_init(&co, argv[1], "ncclbpf change", pids, n,
				   o.timeout_ms ? o.timeout_ms : nbpf_ctl_client_timeout_ms()))) {
		rc = cli_err(CLI_NO, "change apply: %s", strerror(-err));
		goto out_x;
	}
	co.rate_window_ms = 200;
	ao.fields = w.fields.data;
	ao.records = w.records.data;
	ao.margin = o.margin;
	ao.margin_s = o.margin_s;
	ao.at_call = o.at_call;
	ch.verb = w.verb;
	ch.summary = w.summary;
	err = nbpf_agree(&co, x, &ao, &res);
	if (c->json) {
		cli_change_json(&co, res.at_call, res.committed);
	} else if (res.committed) {
		cli_change_text(&co, &ch, res.at_call);
	}
	if (!res.decided) {
		rc = cli_err(CLI_PARTIAL, "change %s: %s; this node's processes drop it at the hold time: other nodes may have applied it (`ncclbpf change status` on each)",
			     co.id, res.why);
	} else if (!res.committed) {
		rc = cli_err(CLI_NO, "change %s aborted on every node, nothing changed: %s", co.id, res.why);
	} else {
		rc = CLI_OK;
		for (int k = 0; k < co.n; k++)
			if (co.p[k].commit != NBPF_COORD_OK)
				rc = CLI_PARTIAL;
			else if (co.p[k].late && rc == CLI_OK)
				rc = CLI_NO;
		if (rc == CLI_PARTIAL && !c->json)
			cli_change_partial(&co, &ch, res.at_call);
	}
	(void)err;
	nbpf_coord_free(&co);
out_x:
	nbpf_xchg_close(x);
out_w:
	what_free(&w);
	free(pids);
	return rc;
}

int cmd_change(struct cli *c, int argc, char **argv)
{
	static const struct {
		const char *verb;
		int (*fn)(struct cli *, int, char **);
	} verbs[] = {
		{ "stage", do_stage }, { "plan", do_plan }, { "commit", do_commit },
		{ "abort", do_abort }, { "status", do_status }, { "apply", do_apply },
	};

	if (argc < 1)
		return cli_usage_error("change: which verb? (ncclbpf help change)");
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(argv[0], verbs[i].verb)) {
			if (c->json && strcmp(argv[0], "plan"))
				c->doc_open = true;
			return verbs[i].fn(c, argc, argv);
		}
	return cli_usage_error("change: unknown verb '%s'", argv[0]);
}
