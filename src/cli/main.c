// SPDX-License-Identifier: MIT
/*
 * main.c - global options, the verb table and dispatch for the ncclbpf
 * command, and its one error path.
 *
 * The table below is the one place each verb's synopsis and one-line
 * description live: `ncclbpf help`, `help OBJECT [VERB]`, `OBJECT [VERB] -h`
 * and the generated man page all read it.  A row's verb is NULL when the
 * object takes no verb (verify OBJ); rows of one object with verbs share
 * one handler, which receives the arguments after OBJECT (argv[0] = verb).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "cli.h"

#ifndef NCCLBPF_VERSION
#define NCCLBPF_VERSION "unknown"
#endif

const struct cli_cmd cli_cmds[] = {
	{ "ps", NULL, cmd_ps, "ps [PID...]",
	  "processes running the plugin: communicators, images, programs, load attempts" },
	{ "prog", "list", cmd_prog_live, "prog list [PID...]",
	  "programs per process: tag, hook, runs, mean cost, refused outputs" },
	{ "prog", "show", cmd_prog_live, "prog show [PID...]",
	  "prog list plus object, instruction count, engine, refusals by reason, warnings" },
	{ "prog", "run", cmd_prog_live, "prog run FILE [PROGRAM] [--mem HEX] [--engine interp|jit]",
	  "run one program of an object or raw file on a memory buffer, print r0" },
	{ "prog", "dump", cmd_prog_live, "prog dump FILE [PROGRAM]",
	  "disassemble a program with its source lines" },
	{ "map", "show", cmd_map, "map show [PID...]",
	  "maps per process: id, name, type, key/value size, max entries, owner pid" },
	{ "map", "list", cmd_map, "map list PID",
	  "maps of one process with their shared-memory files" },
	{ "map", "dump", cmd_map, "map dump PID MAP | map dump id ID",
	  "every entry of a map, formatted with its BTF (hex bytes without)" },
	{ "map", "lookup", cmd_map, "map lookup PID MAP|id ID key HEX...",
	  "one entry of a map" },
	{ "map", "update", cmd_map,
	  "map update PID MAP|id ID key HEX... value HEX... [flags any|noexist|exist]",
	  "write one entry of a map (the job sees it at its next lookup)" },
	{ "map", "delete", cmd_map, "map delete PID MAP|id ID key HEX...",
	  "delete one entry of a hash map" },
	{ "reload", NULL, cmd_reload,
	  "reload TARGET OBJ[:OBJ...] [--sync [--margin N] | --at-call N | --now]",
	  "load, verify and publish a new policy in running processes (TARGET: PID, all, --exe NAME, --policy PATH, --comm ID)" },
	{ "rollback", NULL, cmd_rollback, "rollback TARGET [--sync [--margin N] | --at-call N | --now]",
	  "re-publish the policy the last reload replaced" },
	{ "top", NULL, cmd_top, "top [PID] [INTERVAL] [COUNT]",
	  "live collective latency, bandwidth and tuner decisions" },
	{ "observe", NULL, cmd_observe,
	  "observe [--pid PID | --cgroup PATH | --comm NAME] [--probes io,net,sched,gpu] "
	  "[--duration S] [--interval MS] [--outlier MS] [--btf FILE] "
	  "[--pin-numa auto|NODE [--repin-rate N] | --no-repin] "
	  "[--deep-when runq-p99=MS|block-p99=MS [--deep-window S] [--deep-budget N]]",
	  "the kernel's view of the job (block and io_uring I/O, TCP per peer, scheduling, GPU "
	  "submission) beside its collective P99; --pin-numa moves threads that left their NUMA "
	  "node back; --deep-when sends every latency record for a while when a P99 is too high; "
	  "needs root or CAP_BPF+CAP_PERFMON" },
	{ "loop", NULL, cmd_loop,
	  "loop [--channels LIST] [--window N] [--margin N] [--ranks N] [--pids P,...] [--share-dir DIR --node NAME --nodes K] | "
	  "loop --kernel (--lossy-channels N | --lossy-proto ll|ll128|simple | --no-tuner) [--retrans-per-mib N] [--retrans-rate N] [--srtt-ms MS] "
	  "[--hold S] [--interval MS] [--duration S] [--peer-map NAME] [--plan-map NAME]",
	  "closed loops: every rank's latency telemetry -> one channel plan -> every rank, from an agreed call; "
	  "--kernel: the kernel's per-peer TCP retransmits and RTT -> the policy's peer map (socket marking) "
	  "and a lossy-peer tuner plan, from an agreed call; --kernel needs root or CAP_BPF+CAP_PERFMON" },
	{ "export", NULL, cmd_export,
	  "export [--listen ADDR:PORT | --textfile PATH] [--interval S] [--count N] "
	  "[--observe io,net,sched,gpu] [--alert-webhook URL [--alert-p99 SIZE=S,...] [--alert-refused]] [PID...]",
	  "Prometheus text exposition of every process's telemetry (and, with --observe, the kernel's)" },
	{ "report", NULL, cmd_report, "report [-o FILE.html] [PID... | --from FILE.prom]",
	  "one self-contained HTML page of inline SVG plots: latency per size class, bandwidth, "
	  "algorithm/protocol mix, from live processes or a saved export" },
	{ "verify", NULL, cmd_verify, "verify OBJ[:OBJ...] [PROGRAM] [--strict-consistency]",
	  "verify every program of the objects against its hook; a rejection names the source line" },
	{ "sim", NULL, cmd_sim,
	  "sim OBJ[:OBJ...] [--coll NAME] [--ranks N] [--nodes N] [--sizes MIN:MAX] [--nvls] | "
	  "sim --serve [OBJ[:OBJ...]] [--ranks N] [--rate N] [--duration S]",
	  "the policy's decision table against NCCL's over message sizes, in an emulated NCCL; "
	  "--serve runs a live emulated job (tuner and profiler calls of every rank) until stopped" },
	{ "bench", NULL, cmd_bench, "bench OBJ[:OBJ...] [--calls N]",
	  "time getCollInfo and the profiler path per collective, with and without the policy" },
	{ "tune", NULL, cmd_tune,
	  "tune [--backend emu|nccl] [--coll LIST] [--sizes MIN:MAX] [--channels LIST] [--chunks LIST] [--reps N] [--min-gain PCT] [--out DIR] [--name NAME] [--no-compile] ...",
	  "measure every (algorithm, protocol, channels, chunk size) cell through the plugin and write a policy that beats NCCL's pick only outside the noise (docs/tune.md)" },
	{ "version", NULL, cmd_version, "version",
	  "the command's version, libbpf's, and the features built in" },
	{ "help", NULL, cmd_help, "help [OBJECT [VERB]]", "this text, or one object's or verb's" },
};
const size_t cli_n_cmds = sizeof(cli_cmds) / sizeof(cli_cmds[0]);

static struct cli *g_cli;

static void json_str_v(FILE *f, const char *fmt, va_list ap)
{
	char buf[4096];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	cli_json_str(f, buf);
}

int cli_err(int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (g_cli && g_cli->json) {
		/* Inside a document (per-process errors of a list) it would break it. */
		FILE *f = g_cli->doc_open ? stderr : stdout;

		fputs("{\"error\":", f);
		json_str_v(f, fmt, ap);
		fputs("}\n", f);
	} else {
		fputs("ncclbpf: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
	return rc;
}

int cli_usage_error(const char *fmt, ...)
{
	char buf[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return cli_err(CLI_USAGE, "%s", buf);
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
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/* Rows of OBJECT (and VERB when given); prints them and returns how many. */
static int print_rows(FILE *f, const char *object, const char *verb, bool summaries)
{
	int n = 0;

	for (size_t i = 0; i < cli_n_cmds; i++) {
		const struct cli_cmd *r = &cli_cmds[i];

		if (object && strcmp(r->object, object))
			continue;
		if (verb && (!r->verb || strcmp(r->verb, verb)))
			continue;
		fprintf(f, "%s ncclbpf %s\n", n || !object ? "      " : "usage:", r->synopsis);
		if (summaries)
			fprintf(f, "           %s\n", r->summary);
		n++;
	}
	return n;
}

static void usage(FILE *f)
{
	fputs("usage: ncclbpf [-j|-p] OBJECT VERB [ARGS]   (ncclbpf help OBJECT [VERB] for one)\n", f);
	print_rows(f, NULL, NULL, false);
	fputs("options: -j, --json  JSON output (one document)   -p, --pretty  indented JSON\n"
	      "         -V, --version   -h, --help\n", f);
}

int cli_help(const char *object, const char *verb)
{
	if (!object) {
		usage(stdout);
		return CLI_OK;
	}
	if (print_rows(stdout, object, verb, true))
		return CLI_OK;
	if (verb && print_rows(stdout, object, NULL, true))
		return CLI_OK;
	return cli_usage_error("no object '%s' (ncclbpf help lists them)", object);
}

int cmd_help(struct cli *c, int argc, char **argv)
{
	(void)c;
	if (argc > 2)
		return cli_usage_error("help: too many arguments ('%s')", argv[2]);
	return cli_help(argc > 0 ? argv[0] : NULL, argc > 1 ? argv[1] : NULL);
}

int cmd_version(struct cli *c, int argc, char **argv)
{
	bool jit = false, kbtf = access("/sys/kernel/btf/vmlinux", R_OK) == 0;

#if defined(__x86_64__)
	jit = true;
#endif
	if (argc)
		return cli_usage_error("version: unexpected argument '%s'", argv[0]);
	if (c->json) {
		printf("{\"version\":\"%s\",\"libbpf_version\":\"%s\",\"features\":{\"jit\":%s,"
		       "\"btf\":true,\"kernel_btf\":%s}}\n",
		       NCCLBPF_VERSION, libbpf_version_string(), jit ? "true" : "false",
		       kbtf ? "true" : "false");
		return CLI_OK;
	}
	printf("ncclbpf v%s\nusing libbpf %s\nfeatures: %s, btf%s\n", NCCLBPF_VERSION,
	       libbpf_version_string(), jit ? "jit (x86-64)" : "interpreter only",
	       kbtf ? ", kernel_btf" : "");
	return CLI_OK;
}

static const struct cli_cmd *find_cmd(const char *object, const char *verb, bool *object_known)
{
	*object_known = false;
	for (size_t i = 0; i < cli_n_cmds; i++) {
		const struct cli_cmd *r = &cli_cmds[i];

		if (strcmp(r->object, object))
			continue;
		*object_known = true;
		if (!r->verb || (verb && !strcmp(r->verb, verb)))
			return r;
	}
	return NULL;
}

static int object_verbs_error(const char *object, const char *verb)
{
	char list[256];
	size_t used = 0;

	list[0] = 0;
	for (size_t i = 0; i < cli_n_cmds && used < sizeof(list); i++)
		if (!strcmp(cli_cmds[i].object, object))
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
						 used ? ", " : "", cli_cmds[i].verb);
	if (!verb)
		return cli_usage_error("%s: which verb? (%s)", object, list);
	return cli_usage_error("%s: unknown verb '%s' (%s)", object, verb, list);
}

/* Finds the verb's row and runs its handler on the arguments after OBJECT. */
static int cli_dispatch(struct cli *c, int argc, char **argv)
{
	const struct cli_cmd *cmd;
	bool known;

	cmd = find_cmd(argv[1], argc > 2 ? argv[2] : NULL, &known);
	if (!cmd)
		return known ? object_verbs_error(argv[1], argc > 2 ? argv[2] : NULL)
			     : cli_usage_error("unknown object '%s' (ncclbpf help lists them)", argv[1]);
	return cmd->fn(c, argc - 2, argv + 2);
}

int main(int argc, char **argv)
{
	struct cli c = { .prog = argv[0] };
	bool help = false;
	int out = 1, i;

	g_cli = &c;
	/*
	 * Global options may appear anywhere before "--" (bpftool allows -j
	 * after the verb); they are removed so verbs never see them.  "--"
	 * itself stays for the verb's getopt, which ends its options there.
	 */
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			while (i < argc)
				argv[out++] = argv[i++];
			break;
		}
		if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json")) {
			c.json = true;
		} else if (!strcmp(argv[i], "-p") || !strcmp(argv[i], "--pretty")) {
			c.json = c.pretty = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			help = true;
		} else if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
			argv[1] = "version";
			out = 2;
			break;
		} else {
			argv[out++] = argv[i];
		}
	}
	argc = out;
	argv[argc] = NULL;
	if (help)
		return cli_help(argc > 1 ? argv[1] : NULL,
				argc > 2 && argv[2][0] != '-' ? argv[2] : NULL);
	if (argc < 2) {
		usage(stderr);
		return CLI_USAGE;
	}
	/* export and help write text, never JSON: nothing to indent. */
	if (c.pretty && strcmp(argv[1], "export") && strcmp(argv[1], "help")) {
		int rc, err = cli_pretty_begin();

		if (err)
			return cli_err(CLI_NO, "-p: %s", strerror(-err));
		rc = cli_dispatch(&c, argc, argv);
		cli_pretty_end();
		return rc;
	}
	return cli_dispatch(&c, argc, argv);
}
