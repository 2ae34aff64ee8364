/*
 * cmd_reload.c - `ncclbpf reload TARGET OBJ[:OBJ...] [--sync [--margin N] | --at-call N | --now]`
 * and `ncclbpf rollback TARGET [--sync [--margin N] | --at-call N | --now]`; TARGET
 * is a pid, "all", or the processes that --exe, --policy and --comm select.
 *
 * Rank consistency: every rank of a communicator must switch on the same
 * collective.  The change is agreed in two phases (change_run.c): every
 * target process loads and verifies it (staged), then every one publishes
 * it at one call, or, when one refused or did not answer in time, none
 * does.  --at-call N makes each communicator of the target processes
 * switch when its own call number reaches N; --sync, the default, picks N
 * for you: the highest call number the processes reported when staging,
 * plus a margin from how fast they advance.  --now switches each
 * communicator on its next call: ranks in different processes may then
 * decide one collective differently, so it must be asked for by name.  A
 * process whose communicator was already past N when the new image arrived
 * reports it ("late"): that communicator switched on its next call and its
 * ranks may disagree, so the command fails loudly.  --timeout S bounds the
 * stage (default NCCLBPF_CTL_TIMEOUT_MS): a process that has not staged by
 * then refuses the change when it reads it later.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "control/ctl_client.h"
#include "ncclbpf/runtime.h"

static uint64_t get_u64(const struct nbpf_ctl_rec *r, const char *k)
{
	uint64_t v = 0;

	return nbpf_ctl_rec_u64(r, k, &v) ? 0 : v;
}

/* Processes chosen by --exe, --policy or --comm instead of a pid or "all". */
struct selector {
	const char *exe;    /* basename of the executable, or its full path */
	const char *policy; /* one object of the current image's list */
	uint64_t comm;      /* a communicator id the process holds */
	bool by_comm;
};

static bool spec_has(const char *spec, const char *want)
{
	char *abs = realpath(want, NULL);
	const char *w = abs ? abs : want;
	size_t wl = strlen(w);
	bool hit = false;

	for (const char *p = spec; p && *p && !hit; p = strchr(p, ':') ? strchr(p, ':') + 1 : NULL) {
		size_t len = strcspn(p, ":");

		hit = len == wl && !strncmp(p, w, len);
	}
	free(abs);
	return hit;
}

static bool selected(const struct nbpf_ctl_msg *m, const struct selector *sel)
{
	bool exe_ok = !sel->exe, pol_ok = !sel->policy, comm_ok = !sel->by_comm;

	for (uint32_t i = 0; i < m->n_recs; i++) {
		const struct nbpf_ctl_rec *r = &m->recs[i];
		const char *v;

		if (!strcmp(r->kind, "proc") && sel->exe && (v = nbpf_ctl_rec_get(r, "exe"))) {
			const char *base = strrchr(v, '/') ? strrchr(v, '/') + 1 : v;

			exe_ok |= !strcmp(v, sel->exe) || !strcmp(base, sel->exe);
		} else if (!strcmp(r->kind, "image") && sel->policy &&
			   !strcmp(nbpf_ctl_rec_get(r, "state") ?: "", "current")) {
			pol_ok |= spec_has(nbpf_ctl_rec_get(r, "spec") ?: "", sel->policy);
		} else if (!strcmp(r->kind, "comm") && sel->by_comm) {
			comm_ok |= get_u64(r, "comm_id") == sel->comm;
		}
	}
	return exe_ok && pol_ok && comm_ok;
}

/*
 * The target processes: a pid, "all" (every live process of this user), or
 * every live process matching all the selectors given.  0 with a message
 * when none matches.
 */
static int select_pids(const char *target, const struct selector *sel, int **pids)
{
	int n, kept = 0, err;

	if (target && strcmp(target, "all"))
		return cli_target_pids(1, (char **)&target, pids);
	n = nbpf_ctl_list_pids(pids);
	if (n < 0) {
		cli_err(CLI_NO, "%s", ncclbpf_errmsg());
		return n;
	}
	for (int i = 0; i < n; i++) {
		struct nbpf_ctl_msg m;
		const char *em;

		if (!sel->exe && !sel->policy && !sel->by_comm) {
			kept = n;
			break;
		}
		/*
		 * A process that went away meanwhile is not a target, and no failure.
		 * One that does not answer (stopped) may match: it stays a target,
		 * so its stage fails and the change is aborted everywhere, instead
		 * of the others switching without it.
		 */
		err = nbpf_ctl_call_pid((*pids)[i], NBPF_CTL_PS, NULL, &m, &em);
		if (err == -ETIMEDOUT || (!err && selected(&m, sel)))
			(*pids)[kept++] = (*pids)[i];
		nbpf_ctl_msg_free(&m);
	}
	if (!kept)
		cli_err(CLI_NO, "%s", n ? "no process running the plugin matches the selection"
					: "no process is running the plugin");
	return kept;
}

/* Makes every ':'-separated entry absolute, since the target's cwd is not ours. */
static char *absolute_spec(const char *spec)
{
	char *copy = strdup(spec), *save = NULL, *out = calloc(1, 1);
	size_t len = 0;

	if (!copy || !out)
		goto fail;
	for (char *p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
		char *abs = realpath(p, NULL), *o;

		if (!abs) {
			cli_err(0, "%s: %s", p, strerror(errno));
			goto fail;
		}
		o = realloc(out, len + strlen(abs) + 2);
		if (!o) {
			free(abs);
			goto fail;
		}
		out = o;
		len += (size_t)sprintf(out + len, "%s%s", len ? ":" : "", abs);
		free(abs);
	}
	free(copy);
	return out;
fail:
	free(copy);
	free(out);
	return NULL;
}

static int reload_or_rollback(struct cli *c, int argc, char **argv, bool reload)
{
	static const struct option lo[] = {
		{ "at-call", required_argument, NULL, 'a' },
		{ "margin", required_argument, NULL, 'm' },
		{ "sync", no_argument, NULL, 's' },
		{ "now", no_argument, NULL, 'n' },
		{ "exe", required_argument, NULL, 'e' },
		{ "policy", required_argument, NULL, 'p' },
		{ "comm", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 't' },
		{ "id", required_argument, NULL, 'i' },
		{ 0 },
	};
	const char *verb = reload ? "reload" : "rollback";
	const char *target = NULL, *spec = NULL;
	struct selector sel = { 0 };
	struct cli_change ch = { .verb = verb, .when = CLI_AT_SYNC };
	bool have_at = false, now = false, have_sync = false;
	char *abs = NULL, *end, summary[4200];
	int *pids = NULL, n, rc = CLI_OK, opt, want;
	struct nbpf_ctl_buf fields = { .max = NBPF_CTL_MAX_REQUEST };
	double t;

	/* argv[-1] is the object name: getopt's argv[0]. */
	while ((opt = cli_getopt(argc + 1, argv - 1, "", lo, verb)) != -1) {
		switch (opt) {
		case 'a':
			errno = 0;
			ch.at_call = strtoull(optarg, &end, 0);
			if (errno || *end || !*optarg || optarg[0] == '-')
				return cli_usage_error("%s: --at-call needs a call number, got '%s'", verb, optarg);
			have_at = true;
			break;
		case 'm':
			errno = 0;
			ch.margin = strtoull(optarg, &end, 0);
			if (errno || *end || !ch.margin || optarg[0] == '-')
				return cli_usage_error("%s: --margin needs a positive number of calls, got '%s'",
						       verb, optarg);
			break;
		case 's':
			have_sync = true;
			break;
		case 'n':
			now = true;
			break;
		case 'e':
			sel.exe = optarg;
			break;
		case 'p':
			sel.policy = optarg;
			break;
		case 'c':
			errno = 0;
			sel.comm = strtoull(optarg, &end, 0);
			if (errno || *end || !*optarg)
				return cli_usage_error("%s: --comm needs a communicator id (as ps shows it), got '%s'",
						       verb, optarg);
			sel.by_comm = true;
			break;
		case 'i':
			if (!*optarg || strlen(optarg) >= 64)
				return cli_usage_error("%s: --id is 1 to 63 characters", verb);
			ch.id = optarg;
			break;
		case 't':
			t = strtod(optarg, &end);
			if (*end || !(t > 0) || t > 40)
				return cli_usage_error("%s: --timeout needs seconds in (0, 40] (a staged change holds new communicators back for three times that), got '%s'", verb,
						       optarg);
			ch.timeout_ms = (int)(t * 1000);
			break;
		default:
			return CLI_USAGE;
		}
	}
	/* With a selector there is no TARGET operand. */
	want = (sel.exe || sel.policy || sel.by_comm ? 0 : 1) + (reload ? 1 : 0);
	for (int i = cli_optind - 1, k = 0; i < argc; i++, k++) {
		if (k >= want)
			return cli_usage_error("%s: unexpected argument '%s'", verb, argv[i]);
		if (k == 0 && want == (reload ? 2 : 1))
			target = argv[i];
		else
			spec = argv[i];
	}
	if ((want == 2 && !target) || (reload && !spec) || (!reload && want == 1 && !target))
		return cli_usage_error("%s: %s (ncclbpf help %s)", verb,
				       reload ? "which processes and which objects?" : "which processes?",
				       verb);
	if (have_at + have_sync + now > 1)
		return cli_usage_error("%s: --at-call, --sync and --now exclude each other", verb);
	if (ch.margin && (have_at || now))
		return cli_usage_error("%s: --margin goes with --sync", verb);
	/* The agreed call is the default; --now and --at-call opt out of measuring. */
	ch.when = now ? CLI_AT_NOW : have_at ? CLI_AT_CALL : CLI_AT_SYNC;
	if (reload && !(abs = absolute_spec(spec)))
		return CLI_USAGE;
	n = select_pids(target, &sel, &pids);
	if (n <= 0) {
		rc = n == 0 ? CLI_NO : CLI_USAGE;
		goto out;
	}
	if (reload) {
		nbpf_ctl_buf_str(&fields, "path", abs);
		snprintf(summary, sizeof(summary), "loaded %s", abs);
	} else {
		nbpf_ctl_buf_u64(&fields, "rollback", 1);
		snprintf(summary, sizeof(summary), "rolled back to the previous image");
	}
	if (fields.err) {
		rc = cli_usage_error("request too large");
		goto out;
	}
	ch.fields = fields.data;
	ch.summary = summary;
	ch.skip_gone = !target || !strcmp(target, "all");
	if (c->json)
		c->doc_open = true;
	rc = cli_change_run(c, &ch, pids, n);
out:
	nbpf_ctl_buf_free(&fields);
	free(abs);
	free(pids);
	return rc;
}

int cmd_reload(struct cli *c, int argc, char **argv)
{
	return reload_or_rollback(c, argc, argv, true);
}

int cmd_rollback(struct cli *c, int argc, char **argv)
{
	return reload_or_rollback(c, argc, argv, false);
}
