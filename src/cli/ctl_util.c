/*
 * ctl_util.c - helpers shared by the verbs that talk to live processes:
 * record-to-JSON conversion, pid arguments and durations for tables.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "control/ctl_client.h"
#include "ncclbpf/runtime.h"


void cli_fmt_ns(char *out, size_t n, double ns)
{
	if (ns <= 0)
		snprintf(out, n, "-");
	else if (ns < 1e3)
		snprintf(out, n, "%.0fns", ns);
	else if (ns < 1e6)
		snprintf(out, n, "%.1fus", ns / 1e3);
	else if (ns < 1e9)
		snprintf(out, n, "%.2fms", ns / 1e6);
	else
		snprintf(out, n, "%.2fs", ns / 1e9);
}

static bool is_int(const char *s)
{
	if (*s == '-')
		s++;
	if (!*s || (s[0] == '0' && s[1]))
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static bool is_int_list(const char *s)
{
	if (!strchr(s, ','))
		return false;
	for (; *s; s++)
		if ((*s < '0' || *s > '9') && *s != ',')
			return false;
	return true;
}

/*
 * Fields that are text even when their value is all digits: a tag such as
 * "1234567890123456" is a name, and as a JSON number it would also lose
 * digits in every reader that parses numbers as doubles.
 */
static bool text_key(const char *k)
{
	static const char *const keys[] = { "tag", "obj_tag", "name", "obj", "spec", "path", "exe",
					     "message", "msg", "hook", "kind", "state", "engine",
					     "result", "warnings", "comm_id", "prog" };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(k, keys[i]))
			return true;
	return false;
}

/* Integers stay exact: written as the digits received, never through a double. */
void cli_rec_json_fields(FILE *f, const struct nbpf_ctl_rec *rec)
{
	for (uint32_t i = 0; i < rec->n_kv; i++) {
		const char *v = rec->kv[i].val;

		if (i)
			fputc(',', f);
		cli_json_str(f, rec->kv[i].key);
		fputc(':', f);
		if (text_key(rec->kv[i].key))
			cli_json_str(f, v);
		else if (is_int(v) && strlen(v) <= 20)
			fputs(v, f);
		else if (is_int_list(v))
			fprintf(f, "[%s]", v);
		else
			cli_json_str(f, v);
	}
}

void cli_rec_json(FILE *f, const struct nbpf_ctl_rec *rec)
{
	fputc('{', f);
	cli_rec_json_fields(f, rec);
	fputc('}', f);
}

int cli_pid_err(int rc, int pid, int err, const char *em)
{
	/* No socket answers for it, or one nobody listens on: it runs no plugin now. */
	if (err == -ESRCH || err == -ENOENT || err == -ECONNREFUSED)
		return cli_err(rc, "pid %d is not running the plugin (no control socket answers: is it %s?)",
			       pid, kill(pid, 0) && errno == ESRCH ? "alive"
				    : "your user's job, with the same NCCLBPF_CTL_DIR");
	return cli_err(rc, "pid %d: %s", pid, em);
}

void cli_nap(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };

	nanosleep(&ts, NULL); /* a signal ends it early: the caller checks its stop flag */
}

int cli_check_pids(const int *pids, int n)
{
	int rc = CLI_OK;

	for (int i = 0; i < n; i++) {
		struct nbpf_ctl_msg m;
		const char *em;
		int err = nbpf_ctl_call_pid(pids[i], NBPF_CTL_PS, NULL, &m, &em);

		if (err)
			rc = cli_pid_err(CLI_NO, pids[i], err, em);
		nbpf_ctl_msg_free(&m);
	}
	return rc;
}

int cli_parse_pid(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return (*s && !*end && v > 0 && v < (1L << 30)) ? (int)v : -1;
}

int cli_target_pids(int argc, char **argv, int **pids)
{
	*pids = NULL;
	if (!argc) {
		int n = nbpf_ctl_list_pids(pids);

		if (n < 0)
			cli_err(0, "%s", ncclbpf_errmsg());
		return n;
	}
	*pids = calloc((size_t)argc, sizeof(int));
	if (!*pids)
		return -ENOMEM;
	for (int i = 0; i < argc; i++) {
		(*pids)[i] = cli_parse_pid(argv[i]);
		if ((*pids)[i] < 0) {
			free(*pids);
			*pids = NULL;
			cli_usage_error("'%s' is not a process id", argv[i]);
			return -EINVAL;
		}
	}
	return argc;
}
