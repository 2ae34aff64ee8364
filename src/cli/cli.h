/*
 * cli.h - the ncclbpf command's subcommands and shared output helpers.
 *
 * bpftool style: `ncclbpf OBJECT VERB [ARGS]`, `-j` for JSON anywhere.
 * Exit status: 0 success, 1 a negative verdict (e.g. verify rejected),
 * 2 usage errors and unreadable or malformed input.
 */
#ifndef NCCLBPF_CLI_H
#define NCCLBPF_CLI_H

#include <stdbool.h>
#include <stdio.h>

struct cli {
	bool json;
	const char *prog; /* argv[0] */
};

#define CLI_OK    0
#define CLI_NO    1
#define CLI_USAGE 2

/* Each takes the arguments after OBJECT (argv[0] is the verb, if any). */
int cmd_prog(struct cli *c, int argc, char **argv);   /* cmd_prog.c */
int cmd_verify(struct cli *c, int argc, char **argv); /* cmd_verify.c */
int cmd_sim(struct cli *c, int argc, char **argv);    /* cmd_sim.c */
int cmd_bench(struct cli *c, int argc, char **argv);  /* cmd_bench.c */
/* Live processes, over their control sockets. */
int cmd_ps(struct cli *c, int argc, char **argv);        /* cmd_ps.c */
int cmd_prog_live(struct cli *c, int argc, char **argv); /* cmd_ps.c: prog list|show, else cmd_prog */
int cmd_map(struct cli *c, int argc, char **argv);       /* cmd_map.c */
int cmd_reload(struct cli *c, int argc, char **argv);    /* cmd_reload.c */
int cmd_rollback(struct cli *c, int argc, char **argv);  /* cmd_reload.c */
int cmd_top(struct cli *c, int argc, char **argv);       /* cmd_top.c */
int cmd_export(struct cli *c, int argc, char **argv);    /* cmd_export.c */
int cmd_loop(struct cli *c, int argc, char **argv);      /* cmd_loop.c: closed loop 1 */
int cmd_observe(struct cli *c, int argc, char **argv);   /* cmd_observe.c: kernel-side probes */

/* Prints "ncclbpf: <msg>" to stderr and returns CLI_USAGE. */
__attribute__((format(printf, 1, 2)))
int cli_usage_error(const char *fmt, ...);
/* JSON string literal (quoted, escaped) to f. */
void cli_json_str(FILE *f, const char *s);

/* ---- helpers shared by the live-process verbs (ctl_util.c) --------------- */

struct nbpf_ctl_rec;

/* Writes rec's fields as JSON members ("k":v,...; numbers and number lists unquoted). */
void cli_rec_json_fields(FILE *f, const struct nbpf_ctl_rec *rec);
/* Writes {"kind fields"} for rec. */
void cli_rec_json(FILE *f, const struct nbpf_ctl_rec *rec);
/* Parses a pid argument: >0, or -1 when s is not a pid. */
int cli_parse_pid(const char *s);
/*
 * Target processes: pids given, or every live one when argc is 0.  *pids
 * malloc'ed; returns the count, or a negative errno (message printed).
 */
int cli_target_pids(int argc, char **argv, int **pids);

#endif
