/*
 * cmd_verify.c - `ncclbpf verify OBJ [PROGRAM] [--strict-consistency]`.
 *
 * Verifies every program of OBJ (or the one named) against the hook its
 * section names.  Exit 0 when all are accepted (warnings are printed),
 * 1 when one is rejected, 2 for usage errors and unreadable or malformed
 * objects.  A rejection prints "FILE.c:LINE: insn N: REASON" first (or
 * "OBJ: insn N: REASON" without line info), then the instruction with the
 * registers involved, the source line and a hint; then one summary line
 * per program (an object with no programs, e.g. env overrides only, is
 * accepted with a line saying so), after a note when the object has no
 * BTF to check the program's declared context type with.  -j prints one
 * JSON document instead.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "host/hooks.h"
#include "ncclbpf/runtime.h"

struct prog_verdict {
	const char *name, *section, *hook;
	const struct ncclbpf_hook_desc *desc;
	bool accepted, unknown_section;
	uint32_t insns;
	uint64_t time_us;
	struct ncclbpf_verify_result res;
	char unknown_msg[256];
	char tag[17]; /* the program's tag (ncclbpf_program__tag) */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void known_hooks(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (size_t i = 0; i < NCCLBPF_HOOK_COUNT && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
					 ncclbpf_hooks[i].section);
}

static void print_finding(FILE *f, const char *obj, const char *prog,
			  const struct ncclbpf_finding *fd)
{
	const char *kind = fd->kind == NCCLBPF_FINDING_WARNING ? "warning: " : "";

	if (fd->file && fd->line)
		fprintf(f, "%s:%u: insn %u: %s%s\n", fd->file, fd->line, fd->insn, kind, fd->reason);
	else
		fprintf(f, "%s: insn %u: %s%s\n", obj, fd->insn, kind, fd->reason);
	if (fd->detail[0])
		fprintf(f, "    %s\n", fd->detail);
	if (fd->src && fd->src[0]) {
		const char *s = fd->src;

		while (*s == ' ' || *s == '\t')
			s++;
		fprintf(f, "    source: %s\n", s);
	}
	fprintf(f, "    program: %s\n", prog);
	if (fd->hint[0])
		fprintf(f, "    hint: %s\n", fd->hint);
}

static void json_finding(FILE *f, const char *prog, const struct ncclbpf_finding *fd)
{
	fputs("{\"program\":", f);
	cli_json_str(f, prog);
	fprintf(f, ",\"kind\":\"%s\",\"insn\":%u,\"file\":",
		fd->kind == NCCLBPF_FINDING_WARNING ? "warning" : "error", fd->insn);
	cli_json_str_or_null(f, fd->file);
	fprintf(f, ",\"line\":%u,\"source\":", fd->line);
	cli_json_str_or_null(f, fd->src);
	fputs(",\"reason\":", f);
	cli_json_str(f, fd->reason);
	fputs(",\"detail\":", f);
	cli_json_str(f, fd->detail);
	fputs(",\"hint\":", f);
	cli_json_str(f, fd->hint);
	fputc('}', f);
}

static void print_json(const char *obj, struct prog_verdict *v, size_t n, bool all_ok)
{
	bool first = true;
	uint64_t total_us = 0, total_insns = 0;

	fputs("{\"object\":", stdout);
	cli_json_str(stdout, obj);
	fprintf(stdout, ",\"verdict\":\"%s\",\"programs\":[", all_ok ? "accepted" : "rejected");
	for (size_t i = 0; i < n; i++) {
		fprintf(stdout, "%s{\"name\":", i ? "," : "");
		cli_json_str(stdout, v[i].name);
		fputs(",\"section\":", stdout);
		cli_json_str(stdout, v[i].section);
		fputs(",\"tag\":", stdout);
		cli_json_str(stdout, v[i].tag);
		fputs(",\"hook\":", stdout);
		cli_json_str_or_null(stdout, v[i].hook);
		fprintf(stdout,
			",\"verdict\":\"%s\",\"insns\":%u,\"insns_processed\":%u,\"states\":%u,"
			"\"peak_states\":%u,\"stack_depth\":%u,\"ret_min\":%" PRId64
			",\"ret_max\":%" PRId64 ",\"time_us\":%" PRIu64 ",\"ctx_type_checked\":%s"
			",\"work\":%" PRIu64 "}",
			v[i].accepted ? "accepted" : "rejected", v[i].insns, v[i].res.insns_processed,
			v[i].res.states, v[i].res.peak_states, v[i].res.stack_depth, v[i].res.ret_min,
			v[i].res.ret_max, v[i].time_us, v[i].res.ctx_type_checked ? "true" : "false",
			v[i].res.work);
		total_us += v[i].time_us;
		total_insns += v[i].res.insns_processed;
	}
	fputs("],\"findings\":[", stdout);
	for (size_t i = 0; i < n; i++) {
		if (v[i].unknown_section) {
			fprintf(stdout, "%s{\"program\":", first ? "" : ",");
			cli_json_str(stdout, v[i].name);
			fputs(",\"kind\":\"error\",\"insn\":0,\"file\":null,\"line\":0,\"source\":null,"
			      "\"reason\":",
			      stdout);
			cli_json_str(stdout, v[i].unknown_msg);
			fputs(",\"detail\":\"\",\"hint\":\"use a section a hook declares\"}", stdout);
			first = false;
		}
		for (uint32_t k = 0; k < v[i].res.n_findings; k++) {
			if (!first)
				fputc(',', stdout);
			json_finding(stdout, v[i].name, &v[i].res.findings[k]);
			first = false;
		}
	}
	fprintf(stdout, "],\"stats\":{\"programs\":%zu,\"insns_processed\":%" PRIu64
		",\"time_us\":%" PRIu64 "}}", n, total_insns, total_us);
}

static int verify_one(struct cli *c, const char *path, const char *only,
		      const struct ncclbpf_verify_opts *vopts, int *n_docs);

/*
 * `verify OBJ[:OBJ...]`: the list a deployment names in NCCLBPF_POLICY;
 * each object is verified on its own (the hook contract is per program),
 * and -j prints an array of the per-object documents for a list.
 */
int cmd_verify(struct cli *c, int argc, char **argv)
{
	const char *path = NULL, *only = NULL;
	struct ncclbpf_verify_opts vopts = { .sz = sizeof(vopts) };
	static const struct option lo[] = {
		{ "strict-consistency", no_argument, NULL, 's' },
		{ 0 },
	};
	int opt;

	/* argv[-1] is the object name "verify": getopt's argv[0]. */
	while ((opt = cli_getopt(argc + 1, argv - 1, "", lo, "verify")) != -1) {
		if (opt == '?')
			return CLI_USAGE;
		vopts.strict_consistency = true;
	}
	for (int i = cli_optind - 1; i < argc; i++) {
		if (!path)
			path = argv[i];
		else if (!only)
			only = argv[i];
		else
			return cli_usage_error("verify: too many arguments ('%s')", argv[i]);
	}
	if (!path)
		return cli_usage_error("verify: which object? (ncclbpf help verify)");
	if (!strchr(path, ':')) {
		int rc = verify_one(c, path, only, &vopts, NULL);

		if (c->json && rc != CLI_USAGE)
			putchar('\n');
		return rc;
	}
	if (only)
		return cli_usage_error("verify: PROGRAM goes with one object, not a list");
	if (cli_check_spec(path, "verify"))
		return CLI_USAGE;
	{
		char *list = strdup(path), *save = NULL;
		int rc = CLI_OK, n = 0;

		if (!list)
			return cli_err(CLI_USAGE, "verify: out of memory");
		if (c->json)
			putchar('[');
		for (char *p = strtok_r(list, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
			int r;

			r = verify_one(c, p, NULL, &vopts, &n);
			if (r > rc)
				rc = r;
		}
		if (c->json)
			puts("]");
		free(list);
		return rc;
	}
}

/*
 * Verifies one object; CLI_OK, CLI_NO (rejected) or CLI_USAGE.  In a list
 * (n_docs), its document is the n_docs'th element: a comma before all but
 * the first, none for an object that could not be read.
 */
static int verify_one(struct cli *c, const char *path, const char *only,
		      const struct ncclbpf_verify_opts *vopts, int *n_docs)
{
	struct ncclbpf_object *obj = NULL;
	struct prog_verdict *v = NULL;
	size_t n = 0, count;
	bool all_ok = true;
	int err, rc = CLI_OK;

	err = ncclbpf_object__open_file(path, NULL, &obj);
	if (err)
		return cli_usage_error("verify: %s", ncclbpf_errmsg()); /* names the file */
	count = ncclbpf_object__prog_count(obj);
	if (only && !ncclbpf_object__find_program(obj, only)) {
		char names[512];
		size_t used = 0;

		names[0] = 0;
		for (size_t i = 0; i < count && used < sizeof(names); i++)
			used += (size_t)snprintf(names + used, sizeof(names) - used, " %s",
						 ncclbpf_program__name(ncclbpf_object__prog(obj, i)));
		cli_err(0, "verify: %s has no program '%s'; it has:%s", path, only,
			count ? names : " none");
		ncclbpf_object__close(obj);
		return CLI_USAGE;
	}
	v = calloc(count ? count : 1, sizeof(*v));
	if (!v) {
		ncclbpf_object__close(obj);
		return cli_usage_error("verify: out of memory");
	}
	for (size_t i = 0; i < count; i++) {
		struct ncclbpf_program *p = ncclbpf_object__prog(obj, i);
		const struct ncclbpf_hook_desc *h;
		struct prog_verdict *pv;
		uint64_t t0;

		if (only && strcmp(ncclbpf_program__name(p), only))
			continue;
		pv = &v[n++];
		pv->name = ncclbpf_program__name(p);
		pv->section = ncclbpf_program__section(p);
		pv->insns = (uint32_t)ncclbpf_program__insn_count(p);
		if (ncclbpf_program__tag(p, pv->tag))
			pv->tag[0] = 0;
		h = ncclbpf_hook_find_section(pv->section);
		if (!h) {
			char known[128];

			known_hooks(known, sizeof(known));
			snprintf(pv->unknown_msg, sizeof(pv->unknown_msg),
				 "unknown section '%s' (known hooks: %s)", pv->section ? pv->section : "",
				 known);
			pv->unknown_section = true;
			all_ok = false;
			continue;
		}
		pv->hook = h->name;
		pv->desc = h;
		t0 = now_ns();
		err = ncclbpf_program__verify(p, h, vopts, &pv->res);
		pv->time_us = (now_ns() - t0 + 500) / 1000;
		if (err && err != -EACCES) {
			cli_err(0, "verify: %s: %s", pv->name, ncclbpf_errmsg());
			rc = CLI_USAGE;
		}
		pv->accepted = !err;
		if (!pv->accepted)
			all_ok = false;
	}
	if (c->json) {
		if (n_docs && (*n_docs)++)
			putchar(',');
		print_json(path, v, n, all_ok);
	} else {
		/* An env-only object (just an ncclbpf_env table) is valid: say so, exit 0. */
		if (!count)
			printf("%s: no programs, nothing to verify\n", path);
		for (size_t i = 0; i < n; i++) {
			struct prog_verdict *pv = &v[i];

			if (pv->unknown_section) {
				printf("%s: insn 0: %s\n", path, pv->unknown_msg);
				printf("    program: %s\n", pv->name);
				printf("%s (%s): rejected\n", pv->name, pv->section ? pv->section : "?");
				continue;
			}
			/* errors first, so a rejection's first line is its reason */
			for (uint32_t k = 0; k < pv->res.n_findings; k++)
				if (pv->res.findings[k].kind == NCCLBPF_FINDING_ERROR)
					print_finding(stdout, path, pv->name, &pv->res.findings[k]);
			for (uint32_t k = 0; k < pv->res.n_findings; k++)
				if (pv->res.findings[k].kind != NCCLBPF_FINDING_ERROR)
					print_finding(stdout, path, pv->name, &pv->res.findings[k]);
			/*
			 * Without BTF the declared context type is unknown: say it went
			 * unchecked (a verification that failed outright has no result).
			 */
			if ((pv->desc->ctx_check & NCCLBPF_CTX_CHECK_TYPE) && !pv->res.ctx_type_checked &&
			    (pv->accepted || pv->res.n_findings))
				printf("note: %s: context type not checked against %s * (no BTF for it in %s; build with clang -g)\n",
				       pv->name, pv->desc->ctx_type, path);
			if (pv->accepted)
				printf("%s (%s): accepted, tag %s, %u insns, %u states, %" PRIu64 " us\n",
				       pv->name, pv->hook, pv->tag, pv->insns, pv->res.states, pv->time_us);
			else
				printf("%s (%s): rejected\n", pv->name, pv->hook);
		}
	}
	if (rc == CLI_OK && !all_ok)
		rc = CLI_NO;
	free(v);
	ncclbpf_object__close(obj);
	return rc;
}
