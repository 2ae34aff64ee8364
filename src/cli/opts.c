// SPDX-License-Identifier: MIT
/*
 * opts.c - argument helpers shared by the verbs: getopt_long reporting
 * through cli_err (a bad option reads like every other usage error: one
 * line, exit 2), and the check of an OBJ[:OBJ...] list.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

int cli_optind;

int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
	       const char *verb)
{
	static char **parsing;
	char so[64];
	int opt;

	if (parsing != argv) {
		parsing = argv;
		optind = 0; /* GNU: a full reset for a new vector */
	}
	/* ':' first: a missing value returns ':' instead of printing. */
	snprintf(so, sizeof(so), ":%s", shortopts);
	opterr = 0;
	opt = getopt_long(argc, argv, so, longopts, NULL);
	cli_optind = optind;
	if (opt == ':')
		return cli_usage_error("%s: option '%s' needs a value", verb, argv[optind - 1]), '?';
	if (opt == '?') {
		if (optopt && !(optind > 0 && argv[optind - 1][0] == '-' && argv[optind - 1][1] == '-'))
			cli_usage_error("%s: unknown option '-%c' (ncclbpf help %s)", verb, optopt, verb);
		else
			cli_usage_error("%s: unknown option '%s' (ncclbpf help %s)", verb,
					argv[optind - 1], verb);
		return '?';
	}
	return opt;
}

int cli_check_spec(const char *spec, const char *verb)
{
	const char *p = spec, *colon;

	if (!*spec)
		return cli_usage_error("%s: empty object list", verb);
	for (; p; p = colon ? colon + 1 : NULL) {
		char path[4096];
		struct stat st;
		size_t len;

		colon = strchr(p, ':');
		len = colon ? (size_t)(colon - p) : strlen(p);
		if (!len || len >= sizeof(path))
			return cli_usage_error("%s: '%s': an empty or overlong entry in the object list",
					       verb, spec);
		memcpy(path, p, len);
		path[len] = 0;
		if (stat(path, &st))
			return cli_usage_error("%s: %s: %s", verb, path, strerror(errno));
		if (!S_ISREG(st.st_mode))
			return cli_usage_error("%s: %s: not a regular file", verb, path);
	}
	return 0;
}
