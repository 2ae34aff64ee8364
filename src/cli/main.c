/*
 * main.c - argument dispatch for the ncclbpf command.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

struct cmd {
	const char *name;
	int (*fn)(struct cli *c, int argc, char **argv);
	const char *help;
};

static const struct cmd cmds[] = {
	/* Live processes (control socket); prog list|show first, other prog verbs fall through. */
	{ "ps",       cmd_ps,        "ps [PID...]" },
	{ "prog",     cmd_prog_live, "prog list|show [PID...]" },
	{ "map",      cmd_map,       "map list|dump|lookup|update|delete PID [MAP] [key HEX] [value HEX] [flags any|noexist|exist]" },
	{ "reload",   cmd_reload,    "reload PID|all OBJ[:OBJ...] [--sync [--margin N] | --at-call N | --now]" },
	{ "rollback", cmd_rollback,  "rollback PID|all [--sync [--margin N] | --at-call N | --now]" },
	{ "top",      cmd_top,       "top [PID] [INTERVAL] [COUNT]" },
	{ "export",   cmd_export,    "export [--listen ADDR:PORT | --textfile PATH] [--interval S] [--count N] [PID...]" },
	{ "prog",   cmd_prog,   "prog run FILE [PROGRAM] [--mem HEX] [--engine interp|jit]" },
	{ "prog",   cmd_prog,   "prog dump FILE [PROGRAM]" },
	{ "verify", cmd_verify, "verify OBJ [PROGRAM] [--strict-consistency]" },
	{ "sim",    cmd_sim,    "sim OBJ [--coll NAME] [--ranks N] [--nodes N] [--sizes MIN:MAX] [--nvls]" },
	{ "bench",  cmd_bench,  "bench OBJ [--calls N]" },
};

int cli_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("ncclbpf: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return CLI_USAGE;
}

void cli_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch == '\t')
			fputs("\\t", f);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void usage(FILE *f)
{
	fputs("usage: ncclbpf [-j] OBJECT VERB [ARGS]\n", f);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "       ncclbpf %s\n", cmds[i].help);
}

int main(int argc, char **argv)
{
	struct cli c = { .prog = argv[0] };
	int out = 1;

	/* -j / --json may appear anywhere; strip it so subcommands never see it. */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json"))
			c.json = true;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return CLI_OK;
		} else
			argv[out++] = argv[i];
	}
	argc = out;
	argv[argc] = NULL;
	if (argc < 2) {
		usage(stderr);
		return CLI_USAGE;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(&c, argc - 2, argv + 2);
	return cli_usage_error("unknown object '%s' (ncclbpf -h lists them)", argv[1]);
}
