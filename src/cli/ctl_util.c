/*
 * ctl_util.c - helpers shared by the verbs that talk to live processes:
 * record-to-JSON conversion and pid arguments.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "control/ctl_client.h"
#include "ncclbpf/runtime.h"


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

void cli_rec_json_fields(FILE *f, const struct nbpf_ctl_rec *rec)
{
	for (uint32_t i = 0; i < rec->n_kv; i++) {
		const char *v = rec->kv[i].val;

		if (i)
			fputc(',', f);
		cli_json_str(f, rec->kv[i].key);
		fputc(':', f);
		if (is_int(v) && strlen(v) <= 20)
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
			fprintf(stderr, "ncclbpf: %s\n", ncclbpf_errmsg());
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
