/*
 * cmd_reload.c - `ncclbpf reload TARGET OBJ[:OBJ...] [--sync [--margin N] | --at-call N | --now]`
 * and `ncclbpf rollback TARGET [--sync [--margin N] | --at-call N | --now]`; TARGET
 * is a pid, "all", or the processes that --exe, --policy and --comm select.
 *
 * Rank consistency: every rank of a communicator must switch on the same
 * collective.  --at-call N makes each communicator of the target processes
 * switch when its own call number reaches N; --sync, the default, picks N
 * for you: it asks every local process for each communicator's current
 * call number, measures how fast they advance, and takes the highest + a
 * margin that covers the time the reload itself needs.  --now switches
 * each communicator on its next call: ranks in different processes may then
 * decide one collective differently, so it must be asked for by name.  A
 * process whose communicator was already past N when the new image arrived
 * reports it ("late"): that communicator switched on its next call and its
 * ranks may disagree, so the command fails loudly.
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

/* Highest tuner call number over every communicator of every live process. */
static int max_calls(uint64_t *max)
{
	int *pids = NULL, n = nbpf_ctl_list_pids(&pids);

	*max = 0;
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		struct nbpf_ctl_msg m;
		const char *em;

		if (!nbpf_ctl_call_pid(pids[i], NBPF_CTL_CALLS, NULL, &m, &em)) {
			for (uint32_t k = 0; k < m.n_recs; k++)
				if (!strcmp(m.recs[k].kind, "comm")) {
					uint64_t v = get_u64(&m.recs[k], "calls");

					if (v > *max)
						*max = v;
				}
		}
		nbpf_ctl_msg_free(&m);
	}
	free(pids);
	return n;
}

/*
 * Two samples 200 ms apart give the fastest rate; the margin covers one
 * second of calls at that rate (reloading every process takes far less)
 * plus a floor for jobs that are momentarily idle.
 */
static int sync_point(uint64_t margin, uint64_t *at_call)
{
	uint64_t a, b;
	int err = max_calls(&a);

	if (err < 0)
		return err;
	if (!margin) {
		usleep(200 * 1000);
		if ((err = max_calls(&b)) < 0)
			return err;
		margin = (b - a) * 5 + 1000;
		a = b;
	}
	*at_call = a + margin;
	return 0;
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
	int n, kept = 0;

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
		/* A process that went away meanwhile is not a target, and no failure. */
		if (!nbpf_ctl_call_pid((*pids)[i], NBPF_CTL_PS, NULL, &m, &em) && selected(&m, sel))
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
		{ 0 },
	};
	const char *verb = reload ? "reload" : "rollback";
	const char *target = NULL, *spec = NULL;
	struct selector sel = { 0 };
	uint64_t at_call = 0, margin = 0;
	bool sync = true, have_at = false, now = false, have_sync = false;
	char *abs = NULL, *end;
	int *pids = NULL, n, rc = CLI_OK, opt, want, skipped = 0, shown = 0;
	struct nbpf_ctl_buf req = { .max = NBPF_CTL_MAX_REQUEST };

	/* argv[-1] is the object name: getopt's argv[0]. */
	while ((opt = cli_getopt(argc + 1, argv - 1, "", lo, verb)) != -1) {
		switch (opt) {
		case 'a':
			errno = 0;
			at_call = strtoull(optarg, &end, 0);
			if (errno || *end || !*optarg || optarg[0] == '-')
				return cli_usage_error("%s: --at-call needs a call number, got '%s'", verb, optarg);
			have_at = true;
			break;
		case 'm':
			errno = 0;
			margin = strtoull(optarg, &end, 0);
			if (errno || *end || !margin || optarg[0] == '-')
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
	if (margin && (have_at || now))
		return cli_usage_error("%s: --margin goes with --sync", verb);
	/* The agreed call is the default; --now and --at-call opt out of measuring. */
	sync = !have_at && !now;
	if (reload && !(abs = absolute_spec(spec)))
		return CLI_USAGE;
	n = select_pids(target, &sel, &pids);
	if (n <= 0) {
		rc = n == 0 ? CLI_NO : CLI_USAGE;
		goto out;
	}
	if (sync) {
		int err = sync_point(margin, &at_call);

		if (err < 0) {
			cli_err(CLI_NO, "%s: cannot read call numbers: %s", verb, strerror(-err));
			rc = CLI_NO;
			goto out;
		}
	}
	nbpf_ctl_buf_rec(&req, reload ? "reload" : "rollback");
	if (reload)
		nbpf_ctl_buf_str(&req, "path", abs);
	nbpf_ctl_buf_u64(&req, "at_call", at_call);
	if (req.err) {
		rc = cli_usage_error("request too large");
		goto out;
	}
	if (c->json) {
		putchar('[');
		c->doc_open = true;
	}
	for (int i = 0; i < n; i++) {
		struct nbpf_ctl_msg m;
		const char *em;
		int err = nbpf_ctl_call_pid(pids[i], reload ? NBPF_CTL_RELOAD : NBPF_CTL_ROLLBACK,
					    req.data, &m, &em);
		const struct nbpf_ctl_rec *r = NULL;
		uint64_t late = 0;

		/*
		 * Choosing processes (all, a selector): a socket nobody serves is a
		 * process that stopped running the plugin, not a refusal.
		 */
		if ((err == -ECONNREFUSED || err == -ENOENT || err == -ESRCH) && !m.n_recs &&
		    (!target || !strcmp(target, "all"))) {
			nbpf_ctl_msg_free(&m);
			skipped++;
			continue;
		}
		for (uint32_t k = 0; !err && k < m.n_recs && !r; k++)
			if (!strcmp(m.recs[k].kind, "reload") || !strcmp(m.recs[k].kind, "image"))
				r = &m.recs[k];
		if (r && !strcmp(r->kind, "reload"))
			late = get_u64(r, "late");
		if (c->json) {
			printf("%s{\"pid\":%d,\"ok\":%s,\"at_call\":%" PRIu64, shown ? "," : "", pids[i],
			       err ? "false" : "true", at_call);
			if (err) {
				printf(",\"error\":");
				cli_json_str(stdout, em);
			} else if (r) {
				putchar(',');
				cli_rec_json_fields(stdout, r);
			}
			putchar('}');
		} else if (err && !m.n_recs) {
			cli_pid_err(CLI_NO, pids[i], err, em);
		} else if (err) {
			cli_err(0, "pid %d: %s failed, nothing changed:\n%s", pids[i],
				reload ? "reload" : "rollback", em);
		} else {
			char when[48];

			if (at_call)
				snprintf(when, sizeof(when), "from call %" PRIu64, at_call);
			else
				snprintf(when, sizeof(when), "now");
			if (reload)
				printf("pid %d: loaded %s in %.3f ms, active %s\n", pids[i], abs,
				       (double)(r ? get_u64(r, "load_ns") : 0) / 1e6, when);
			else
				printf("pid %d: rolled back to image %s, active %s\n", pids[i],
				       r ? nbpf_ctl_rec_get(r, "gen") : "?", when);
		}
		if (late)
			cli_err(0,
				"pid %d: %" PRIu64 " communicators were already past call %" PRIu64
				": they switched at their next call and their ranks may disagree",
				pids[i], late, at_call);
		shown++;
		if (err || late)
			rc = CLI_NO;
		nbpf_ctl_msg_free(&m);
	}
	if (c->json)
		puts("]");
	if (!shown && skipped)
		rc = cli_err(CLI_NO, "no process is running the plugin (%d stale sockets skipped)", skipped);
out:
	nbpf_ctl_buf_free(&req);
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
