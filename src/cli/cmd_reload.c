/*
 * cmd_reload.c - `ncclbpf reload PID|all OBJ[:OBJ...] [--sync [--margin N] | --at-call N | --now]`
 * and `ncclbpf rollback PID|all [--sync [--margin N] | --at-call N | --now]`.
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
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "control/ctl_client.h"

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

static int parse_target(const char *s, int **pids)
{
	if (!strcmp(s, "all")) {
		int n = nbpf_ctl_list_pids(pids);

		if (n == 0)
			fprintf(stderr, "ncclbpf: no process is running ncclbpf\n");
		return n;
	}
	return cli_target_pids(1, (char **)&s, pids);
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
			fprintf(stderr, "ncclbpf: %s: %s\n", p, strerror(errno));
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
	const char *target = NULL, *spec = NULL;
	uint64_t at_call = 0, margin = 0;
	bool sync = false, have_at = false, now = false;
	char *abs = NULL, *end;
	int *pids = NULL, n, rc = CLI_OK;
	struct nbpf_ctl_buf req = { .max = NBPF_CTL_MAX_REQUEST };

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--at-call") && i + 1 < argc) {
			at_call = strtoull(argv[++i], &end, 0);
			if (*end || argv[i][0] == '-')
				return cli_usage_error("--at-call needs a call number");
			have_at = true;
		} else if (!strcmp(argv[i], "--margin") && i + 1 < argc) {
			margin = strtoull(argv[++i], &end, 0);
			if (*end || !margin)
				return cli_usage_error("--margin needs a positive number of calls");
		} else if (!strcmp(argv[i], "--sync")) {
			sync = true;
		} else if (!strcmp(argv[i], "--now")) {
			now = true;
		} else if (argv[i][0] == '-') {
			return cli_usage_error("unknown option '%s'", argv[i]);
		} else if (!target) {
			target = argv[i];
		} else if (reload && !spec) {
			spec = argv[i];
		} else {
			return cli_usage_error("unexpected argument '%s'", argv[i]);
		}
	}
	if (!target || (reload && !spec))
		return cli_usage_error(reload ? "usage: reload PID|all OBJ[:OBJ...] [--sync | --at-call N | --now]"
					      : "usage: rollback PID|all [--sync | --at-call N | --now]");
	if (sync + have_at + now > 1)
		return cli_usage_error("--sync, --at-call and --now exclude each other");
	if (margin && (have_at || now))
		return cli_usage_error("--margin goes with --sync (the default)");
	/* The rank-consistent activation is the default; the immediate one is opt-in. */
	sync = !have_at && !now;
	if (reload && !(abs = absolute_spec(spec)))
		return CLI_USAGE;
	n = parse_target(target, &pids);
	if (n <= 0) {
		rc = n == 0 ? CLI_NO : CLI_USAGE;
		goto out;
	}
	if (sync) {
		int err = sync_point(margin, &at_call);

		if (err < 0) {
			fprintf(stderr, "ncclbpf: cannot read call numbers: %s\n", strerror(-err));
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
	if (c->json)
		putchar('[');
	for (int i = 0; i < n; i++) {
		struct nbpf_ctl_msg m;
		const char *em;
		int err = nbpf_ctl_call_pid(pids[i], reload ? NBPF_CTL_RELOAD : NBPF_CTL_ROLLBACK,
					    req.data, &m, &em);
		const struct nbpf_ctl_rec *r = NULL;
		uint64_t late = 0;

		for (uint32_t k = 0; !err && k < m.n_recs && !r; k++)
			if (!strcmp(m.recs[k].kind, "reload") || !strcmp(m.recs[k].kind, "image"))
				r = &m.recs[k];
		if (r && !strcmp(r->kind, "reload"))
			late = get_u64(r, "late");
		if (c->json) {
			printf("%s{\"pid\":%d,\"ok\":%s,\"at_call\":%" PRIu64, i ? "," : "", pids[i],
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
			fprintf(stderr, "ncclbpf: pid %d: cannot reach the process: %s\n", pids[i], em);
		} else if (err) {
			fprintf(stderr, "ncclbpf: pid %d: %s failed, nothing changed:\n%s\n", pids[i],
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
			fprintf(stderr,
				"ncclbpf: pid %d: %" PRIu64 " communicators were already past call %" PRIu64
				": they switched at their next call and their ranks may disagree\n",
				pids[i], late, at_call);
		if (err || late)
			rc = CLI_NO;
		nbpf_ctl_msg_free(&m);
	}
	if (c->json)
		puts("]");
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
