/* SPDX-License-Identifier: MIT */
/*
 * cli.h - the ncclbpf command's subcommands and shared output helpers.
 *
 * bpftool style: `ncclbpf OBJECT VERB [ARGS]`, `-j` for JSON anywhere (one
 * document per run, errors included: output.c), `-p` for the same JSON
 * indented.
 * Exit status (docs/man/ncclbpf.txt, EXIT STATUS): 0 success; 1 the
 * operation failed or its verdict is negative (verify rejected, a reload
 * refused, a named process not running the plugin); 2 usage errors and
 * unreadable or malformed input.
 */
#ifndef NCCLBPF_CLI_H
#define NCCLBPF_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct cli {
	bool json;
	bool pretty;      /* -p: json, indented by a filter on stdout */
	bool doc_open;    /* unused: the document writer (output.c) needs no help */
	const char *prog; /* argv[0] */
};

/* One row per OBJECT VERB: the one source of synopses and summaries (main.c). */
struct cli_cmd {
	const char *object;
	const char *verb; /* NULL: the object takes no verb */
	int (*fn)(struct cli *c, int argc, char **argv);
	const char *synopsis;
	const char *summary;
};
extern const struct cli_cmd cli_cmds[];
extern const size_t cli_n_cmds;

#define CLI_OK    0
#define CLI_NO    1
#define CLI_USAGE 2
/* An agreed change some processes applied and others did not, or may not have. */
#define CLI_PARTIAL 3

/* Each takes the arguments after OBJECT (argv[0] is the verb, if any). */
int cmd_prog(struct cli *c, int argc, char **argv);   /* cmd_prog.c */
int cmd_verify(struct cli *c, int argc, char **argv); /* cmd_verify.c */
int cmd_sim(struct cli *c, int argc, char **argv);    /* cmd_sim.c */
int cmd_bench(struct cli *c, int argc, char **argv);  /* cmd_bench.c */
int cmd_tune(struct cli *c, int argc, char **argv);   /* cmd_tune.c */
/* Live processes, over their control sockets. */
int cmd_ps(struct cli *c, int argc, char **argv);        /* cmd_ps.c */
int cmd_prog_live(struct cli *c, int argc, char **argv); /* cmd_ps.c: prog list|show, else cmd_prog */
int cmd_map(struct cli *c, int argc, char **argv);       /* cmd_map.c */
int cmd_reload(struct cli *c, int argc, char **argv);    /* cmd_reload.c */
int cmd_rollback(struct cli *c, int argc, char **argv);  /* cmd_reload.c */
int cmd_top(struct cli *c, int argc, char **argv);       /* cmd_top.c */
int cmd_export(struct cli *c, int argc, char **argv);    /* cmd_export.c */
int cmd_report(struct cli *c, int argc, char **argv);    /* cmd_report.c */
int cmd_version(struct cli *c, int argc, char **argv);   /* main.c */
int cmd_help(struct cli *c, int argc, char **argv);      /* main.c */
int cmd_observe(struct cli *c, int argc, char **argv);   /* cmd_observe.c: kernel-side probes */
int cmd_loop(struct cli *c, int argc, char **argv);      /* cmd_loop.c: closed loop 1 */
int cmd_loop_kernel(struct cli *c, int argc, char **argv); /* loop_kernel.c: loop 2 */

/* Prints the rows of OBJECT [VERB] (all rows without OBJECT) to stdout. */
int cli_help(const char *object, const char *verb);

/*
 * The one error path (output.c): "ncclbpf: MSG" on stderr, or under -j a
 * part of the one document on stdout ({"error":"MSG"}).  Returns rc.  Say
 * what is wrong once and what to do about it.
 */
__attribute__((format(printf, 2, 3)))
int cli_err(int rc, const char *fmt, ...);

/* cli_err(CLI_USAGE, ...). */
__attribute__((format(printf, 1, 2)))
int cli_usage_error(const char *fmt, ...);
/* JSON string literal (quoted, escaped) to f; NULL writes "". */
void cli_json_str(FILE *f, const char *s);
/* The same, but NULL writes null: for fields that may be absent. */
void cli_json_str_or_null(FILE *f, const char *s);

/*
 * Under -j (json), holds what the verb writes to stdout until cli_doc_end
 * writes the one document, with the errors cli_err recorded (output.c).
 */
void cli_doc_begin(bool json);
void cli_doc_end(void);
/*
 * For verbs that report as they go (top, observe, export to stdout): from
 * now on stdout is a stream of JSON documents, one per line; an error is
 * a {"error":"MSG"} line.  Nothing without -j.
 */
void cli_json_stream(const struct cli *c);

/*
 * getopt_long over a verb's arguments, where argv[0] is the verb or
 * object (so the first argument is argv[1]).  --opt=value, --opt value and
 * "--" work as in git.  Returns the option, -1 at the end of options, or
 * '?' after reporting an unknown option or a missing value (cli_err).
 */
struct option;
int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
	       const char *verb);
extern int cli_optind; /* first operand once cli_getopt returned -1 */

/* Every entry of an OBJ[:OBJ...] list is a regular file; else usage error. */
int cli_check_spec(const char *spec, const char *verb);

/* Output files (outfiles.c).  mkdir -p; 0 or a negative errno. */
int cli_mkdirs(const char *dir);
/* PREFIX + local time (YYYYmmdd-HHMMSS) + SUFFIX: a default a second run does not overwrite. */
void cli_stamp_name(char *out, size_t n, const char *prefix, const char *suffix);
/* path made absolute (out, n: PATH_MAX) for "wrote ..." lines; path itself when it cannot be. */
const char *cli_abspath(const char *path, char *out, size_t n);

/* -p: indents what the verb writes to stdout (json_pretty.c). */
int cli_pretty_begin(void);
void cli_pretty_end(void);

/* BTF formatting of map keys and values (btf_json.c). */
struct btf;
/* JSON of data (size bytes) as BTF type id; nothing printed and -EINVAL when it does not fit. */
int cli_btf_json(FILE *f, const struct btf *btf, unsigned int id, const void *data, size_t size);
/* The key and value type ids of map in the object's ".maps" BTF (0: undeclared); -ENOENT. */
int cli_btf_map_types(const struct btf *btf, const char *map, unsigned int *key_id,
		      unsigned int *val_id);

/* Prometheus text as {"metrics":[{name,labels,value}]} (export_json.c); -1 if malformed. */
int cli_prom_json(FILE *f, const char *text);

/* Adds the maps every process's policy declares for export (export_maps.c). */
struct nbpf_export_set;
void cli_export_policy_maps(struct nbpf_export_set *set, const int *pids, int n_pids);

/* ---- agreed changes over this node's processes (change_run.c) ------------ */

struct cli_change {
	const char *verb;     /* "reload", "rollback", "map update": messages and recovery */
	const char *summary;  /* what each process did, for the report ("loaded /x.o") */
	const char *fields;   /* the stage record's own fields (" path=/x.o"), encoded */
	const char *records;  /* further records (map writes), or NULL */
	const char *id;       /* the change id, NULL: a fresh one */
	const char *owner;    /* who asks (a lease holder names itself), NULL: ncclbpf */
	enum { CLI_AT_SYNC, CLI_AT_CALL, CLI_AT_NOW } when;
	uint64_t at_call;     /* CLI_AT_CALL */
	uint64_t margin;      /* CLI_AT_SYNC: calls past the highest; 0: a second of calls + 1000 */
	int timeout_ms;       /* stage deadline; commits retried until 3x; 0: the client default */
	bool skip_gone;       /* targets were chosen (all, a selector): ignore vanished ones */
};
/* Stages on pids, then commits or aborts everywhere, and reports each process's outcome. */
int cli_change_run(struct cli *c, const struct cli_change *ch, const int *pids, int n);
/* Each process's outcome of co: a JSON array, the applied ones as text, who did not and the recovery. */
struct nbpf_coord;
void cli_change_json(const struct nbpf_coord *co, uint64_t at_call, bool committed);
void cli_change_text(const struct nbpf_coord *co, const struct cli_change *ch, uint64_t at_call);
void cli_change_partial(const struct nbpf_coord *co, const struct cli_change *ch, uint64_t at_call);
/* `change stage|commit|abort|status|plan|apply` (cmd_change.c). */
int cmd_change(struct cli *c, int argc, char **argv);

/* ---- helpers shared by the live-process verbs (ctl_util.c) --------------- */

struct nbpf_ctl_rec;

/* Writes rec's fields as JSON members ("k":v,...; numbers and number lists unquoted). */
void cli_rec_json_fields(FILE *f, const struct nbpf_ctl_rec *rec);
/* Writes {"kind fields"} for rec. */
void cli_rec_json(FILE *f, const struct nbpf_ctl_rec *rec);
/* Reports a failed call to pid (not running the plugin, or em); returns rc. */
int cli_pid_err(int rc, int pid, int err, const char *em);
/*
 * Each named process answers on its control socket: CLI_OK, else CLI_NO
 * after cli_pid_err for each that does not (the same words and exit status
 * in every verb that takes pids).
 */
int cli_check_pids(const int *pids, int n);
/* Parses a pid argument: >0, or -1 when s is not a pid. */
int cli_parse_pid(const char *s);
/* Sleeps s seconds (any length; usleep takes at most one), or until a signal. */
void cli_nap(double s);
/* A duration for a table cell: "-", then ns, us, ms or s with 0-2 decimals. */
void cli_fmt_ns(char *out, size_t n, double ns);
/*
 * Target processes: pids given, or every live one when argc is 0.  *pids
 * malloc'ed; returns the count, or a negative errno (message printed).
 */
int cli_target_pids(int argc, char **argv, int **pids);

#endif
