// SPDX-License-Identifier: MIT
/*
 * main.c - global options, the verb table and dispatch for the ncclbpf
 * command (what it writes, errors included, goes through output.c).
 *
 * The table below is the one place each verb's synopsis and one-line
 * description live: `ncclbpf help`, `help OBJECT [VERB]`, `OBJECT [VERB] -h`
 * and the generated man page all read it.  A row's verb is NULL when the
 * object takes no verb (verify OBJ); rows of one object with verbs share
 * one handler, which receives the arguments after OBJECT (argv[0] = verb).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "cli.h"
#include "emulator/emu_cli.h"

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
	  "map update PID|all MAP|id ID key HEX... value HEX... [--sync | --at-call N | --now] [--timeout S] [--id ID] [flags any|noexist|exist]",
	  "write one entry of a map; a map the tuner reads changes on every rank at one agreed call (--now: at once)" },
	{ "map", "delete", cmd_map, "map delete PID|all MAP|id ID key HEX... [--at-call N | --now] [--timeout S]",
	  "delete one entry of a hash map (agreed like update for a map the tuner reads)" },
	{ "reload", NULL, cmd_reload,
	  "reload TARGET OBJ[:OBJ...] [--sync [--margin N] | --at-call N | --now] [--timeout S] [--id ID]",
	  "load, verify and publish a new policy in running processes (TARGET: PID, all, --exe NAME, --policy PATH, --comm ID)" },
	{ "rollback", NULL, cmd_rollback, "rollback TARGET [--sync [--margin N] | --at-call N | --now] [--timeout S] [--id ID]",
	  "re-publish the policy the last reload replaced" },
	{ "change", "stage", cmd_change,
	  "change stage ID TARGET (OBJ[:OBJ...] | --rollback | --map NAME key HEX... [value HEX...]) [--timeout S]",
	  "phase 1 on this node: every target process loads and verifies the change; -j prints the node's vote" },
	{ "change", "plan", cmd_change, "change plan [--margin-seconds S | --margin N] [VOTE-FILE...]",
	  "the agreed call and communicators from every node's vote (stdin: the votes, one JSON document each)" },
	{ "change", "commit", cmd_change, "change commit ID [--at-call N --known LIST]",
	  "phase 2 on this node: switch at the agreed call; without --at-call, complete a change a process here committed" },
	{ "change", "abort", cmd_change, "change abort ID", "drop a staged change on this node (its id is spent)" },
	{ "change", "status", cmd_change, "change status [PID] [ID]",
	  "what each process did with its changes: staged, committed (at which call), aborted, expired" },
	{ "change", "apply", cmd_change,
	  "change apply ID TARGET (OBJ[:OBJ...] | --rollback | --map ...) --node NAME --nodes K (--share-dir DIR | --etcd URLS) [--timeout S] [--margin-seconds S]",
	  "every phase on this node, agreed with the other nodes through a shared directory or etcd: commit everywhere or abort everywhere" },
	{ "top", NULL, cmd_top, "top [PID] [INTERVAL] [COUNT] | top [--interval S] [--count N] [PID]",
	  "live collective latency, bandwidth and tuner decisions (-j: a document per sample)" },
	{ "observe", NULL, cmd_observe,
	  "observe [--pid PID | --cgroup PATH | --comm NAME] [--probes io,net,sched,gpu] "
	  "[--duration S] [--interval MS] [--outlier MS] [--btf FILE] "
	  "[--pin-numa auto|NODE [--repin-rate N] | --no-repin] "
	  "[--deep-when runq-p99=MS|block-p99=MS] [--deep-listen ADDR:PORT] [--deep-window S] [--deep-budget N]",
	  "the kernel's view of the job (block and io_uring I/O, page cache, TCP per peer, scheduling, "
	  "NUMA placement, GPU submission and its gaps) beside its collective P99; --pin-numa moves "
	  "threads that left their NUMA node back; --deep-when sends every latency record for a while "
	  "when a P99 is too high, --deep-listen when an Alertmanager webhook (POST /deep) says an "
	  "alert fires; needs root or CAP_BPF+CAP_PERFMON" },
	{ "loop", NULL, cmd_loop,
	  "loop [--channels LIST] [--window N] [--margin N] [--ranks N] [--pids P,...] [(--share-dir DIR | --etcd URLS) --node NAME --nodes K [--job NAME]] [--take-over] | "
	  "loop --kernel (--lossy-channels N | --lossy-proto ll|ll128|simple | --no-tuner) [--retrans-per-mib N] [--retrans-rate N] [--srtt-ms MS] "
	  "[--hold S] [--interval MS] [--duration S] [--peer-map NAME] [--plan-map NAME]",
	  "closed loops: every rank's latency telemetry -> one channel plan -> every rank, from an agreed call; "
	  "--kernel: the kernel's per-peer TCP retransmits and RTT -> the policy's peer map (socket marking) "
	  "and a lossy-peer tuner plan, from an agreed call; --kernel needs root or CAP_BPF+CAP_PERFMON" },
	{ "export", NULL, cmd_export,
	  "export [--listen ADDR:PORT | --textfile PATH] [--interval S] [--count N] "
	  "[--observe io,net,sched,gpu [--outlier MS] [--deep-log FILE] [--deep-window S] [--deep-budget N]] "
	  "[--alert-webhook URL [--alert-p99 SIZE=S,...] [--alert-refused]] [PID...]",
	  "Prometheus text exposition of every process's telemetry (and, with --observe, the kernel's; "
	  "with --listen, POST /deep takes Alertmanager webhooks that switch the deep tier on, its "
	  "records to --deep-log); -j: the same samples as a document per collection" },
	{ "report", NULL, cmd_report, "report [-o FILE.html] [PID... | --from FILE.prom]",
	  "one self-contained HTML page of inline SVG plots: latency per size class, bandwidth, "
	  "algorithm/protocol mix, from live processes or a saved export (default: a new "
	  "ncclbpf-report-DATE-TIME.html here)" },
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
	  "tune [--backend emu|nccl] [--coll LIST] [--sizes MIN:MAX] [--channels LIST] [--chunks LIST] [--reps N] "
	  "[--min-gain PCT] [--out DIR] [--name NAME] [--no-compile] [--sweep-obj FILE] [--clang PATH] "
	  "[--include DIR] [--ranks N] [--nodes N] [--nvls] [--emu-noise F] [--emu-skew SPEC] [--seed N] "
	  "[--sweep-bin PATH] [--plugin PATH] [--ngpus N] [--iters N] [--warmup N] [--run-timeout S]",
	  "measure every (algorithm, protocol, channels, chunk size) cell through the plugin and write a policy that beats NCCL's pick only outside the noise, into --out DIR (default: a new tune-DATE-TIME directory here) (docs/tune.md)" },
	{ "version", NULL, cmd_version, "version",
	  "the command's version, libbpf's, and every feature with whether this build and machine have it" },
	{ "help", NULL, cmd_help, "help [OBJECT [VERB]]", "this text, or one object's or verb's" },
};
const size_t cli_n_cmds = sizeof(cli_cmds) / sizeof(cli_cmds[0]);

static bool row_matches(const struct cli_cmd *r, const char *object, const char *verb)
{
	return (!object || !strcmp(r->object, object)) &&
	       (!verb || (r->verb && !strcmp(r->verb, verb)));
}

static int count_rows(const char *object, const char *verb)
{
	int n = 0;

	for (size_t i = 0; i < cli_n_cmds; i++)
		n += row_matches(&cli_cmds[i], object, verb);
	return n;
}

/* Rows of OBJECT (and VERB when given). */
static void print_rows(FILE *f, const char *object, const char *verb, bool summaries)
{
	int n = 0;

	for (size_t i = 0; i < cli_n_cmds; i++) {
		const struct cli_cmd *r = &cli_cmds[i];

		if (!row_matches(r, object, verb))
			continue;
		fprintf(f, "%s ncclbpf %s\n", n++ || !object ? "      " : "usage:", r->synopsis);
		if (summaries)
			fprintf(f, "           %s\n", r->summary);
	}
}

/* The same rows as one JSON document: {"commands":[{object,verb,synopsis,summary}]}. */
static void json_rows(FILE *f, const char *object, const char *verb)
{
	int n = 0;

	fputs("{\"commands\":[", f);
	for (size_t i = 0; i < cli_n_cmds; i++) {
		const struct cli_cmd *r = &cli_cmds[i];

		if (!row_matches(r, object, verb))
			continue;
		fprintf(f, "%s{\"object\":", n++ ? "," : "");
		cli_json_str(f, r->object);
		fputs(",\"verb\":", f);
		cli_json_str_or_null(f, r->verb);
		fputs(",\"synopsis\":", f);
		cli_json_str(f, r->synopsis);
		fputs(",\"summary\":", f);
		cli_json_str(f, r->summary);
		fputc('}', f);
	}
	fputs("]}\n", f);
}

static void usage(FILE *f)
{
	fputs("usage: ncclbpf [-j|-p] OBJECT VERB [ARGS]   (ncclbpf help OBJECT [VERB] for one)\n", f);
	print_rows(f, NULL, NULL, false);
	fputs("options: -j, --json  JSON output (one document)   -p, --pretty  indented JSON\n"
	      "         -V, --version   -h, --help   --  ends the options\n"
	      "exit status: 0 success, 1 failed or rejected, 2 usage or unreadable input "
	      "(ncclbpf(1), EXIT STATUS)\n", f);
}

static bool help_json;

int cli_help(const char *object, const char *verb)
{
	if (object && !count_rows(object, NULL))
		return cli_usage_error("no object '%s' (ncclbpf help lists them)", object);
	if (verb && !count_rows(object, verb))
		verb = NULL; /* not one of the object's verbs: all of them */
	if (help_json)
		json_rows(stdout, object, verb);
	else if (!object)
		usage(stdout);
	else
		print_rows(stdout, object, verb, true);
	return CLI_OK;
}

int cmd_help(struct cli *c, int argc, char **argv)
{
	(void)c;
	if (argc > 2)
		return cli_usage_error("help: too many arguments ('%s')", argv[2]);
	return cli_help(argc > 0 ? argv[0] : NULL, argc > 1 ? argv[1] : NULL);
}

/* What this build and this machine have; "why" says what is missing. */
struct feature {
	const char *name;
	bool on;
	const char *why;
};

int cmd_version(struct cli *c, int argc, char **argv)
{
	char found[PATH_MAX], plugin[PATH_MAX];
	bool have_plugin = !emu_cli_plugin_path(found, sizeof(found)) && realpath(found, plugin);
	const struct feature feats[] = {
#if defined(__x86_64__)
		{ "jit", true, "x86-64" },
#else
		{ "jit", false, "not x86-64: interpreter only" },
#endif
		{ "btf", true, "policy BTF: context types, map key/value formatting" },
		{ "kernel_btf", access("/sys/kernel/btf/vmlinux", R_OK) == 0,
		  "this kernel's /sys/kernel/btf/vmlinux (observe, export --observe, loop --kernel)" },
#ifdef NCCLBPF_HAVE_OBSERVE
		{ "observe", true, "kernel-side probes: observe, export --observe, loop --kernel" },
#else
		{ "observe", false, "not built: no bpftool or kernel BTF at build time" },
#endif
		{ "export_http", true, "export --listen (libmicrohttpd)" },
		{ "plugin", have_plugin, have_plugin ? plugin : "libnccl-ncclbpf.so not found (set NCCLBPF_PLUGIN)" },
	};
	const size_t n = sizeof(feats) / sizeof(feats[0]);

	if (argc)
		return cli_usage_error("version: unexpected argument '%s'", argv[0]);
	if (c->json) {
		printf("{\"version\":\"%s\",\"libbpf_version\":\"%s\",\"features\":{", NCCLBPF_VERSION,
		       libbpf_version_string());
		for (size_t i = 0; i < n; i++)
			printf("%s\"%s\":%s", i ? "," : "", feats[i].name, feats[i].on ? "true" : "false");
		printf("},\"notes\":{");
		for (size_t i = 0; i < n; i++) {
			printf("%s\"%s\":", i ? "," : "", feats[i].name);
			cli_json_str(stdout, feats[i].why);
		}
		printf("}}\n");
		return CLI_OK;
	}
	printf("ncclbpf v%s\nusing libbpf %s\nfeatures:", NCCLBPF_VERSION, libbpf_version_string());
	for (size_t i = 0, k = 0; i < n; i++)
		if (feats[i].on)
			printf("%s %s", k++ ? "," : "", feats[i].name);
	putchar('\n');
	for (size_t i = 0; i < n; i++)
		printf("  %-12s %-3s %s\n", feats[i].name, feats[i].on ? "yes" : "no", feats[i].why);
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
	const char *bad = NULL;
	bool help = false;
	int out = 1, i, rc, err = 0;

	/*
	 * Global options may appear anywhere before "--" (bpftool allows -j
	 * after the verb); they are removed so verbs never see them.  A "--"
	 * before OBJECT ends the global options and goes; after it, it stays
	 * for the verb's getopt, which ends its options there.
	 */
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			if (out == 1)
				i++;
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
		} else if (out == 1 && argv[i][0] == '-' && !bad) {
			bad = argv[i]; /* before OBJECT: only global options */
		} else {
			argv[out++] = argv[i];
		}
	}
	argc = out;
	argv[argc] = NULL;
	/* -p indents what -j writes: a filter on fd 1, under the document writer. */
	if (c.pretty)
		err = cli_pretty_begin();
	cli_doc_begin(c.json);
	help_json = c.json;
	if (err)
		rc = cli_err(CLI_NO, "-p: %s", strerror(-err));
	else if (bad)
		rc = cli_usage_error("unknown option '%s' (global options: -j -p -h -V --)", bad);
	else if (help)
		rc = cli_help(argc > 1 ? argv[1] : NULL, argc > 2 && argv[2][0] != '-' ? argv[2] : NULL);
	else if (argc < 2 && !c.json)
		usage(stderr), rc = CLI_USAGE;
	else if (argc < 2)
		rc = cli_usage_error("which object? (ncclbpf help lists them)");
	else
		rc = cli_dispatch(&c, argc, argv);
	cli_doc_end();
	if (c.pretty && !err)
		cli_pretty_end();
	return rc;
}
