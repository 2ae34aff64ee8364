/*
 * cmd_prog.c - `ncclbpf prog run` and `ncclbpf prog dump`.
 *
 *   prog run FILE [PROGRAM] [--mem HEX] [--engine interp|jit]
 *   prog dump FILE [PROGRAM]        (-j: one JSON document)
 *
 * FILE is a BPF ELF object (recognised by its magic) or a raw program: one
 * "0x" + 16 hex digit word per line, or an ISA conformance .data file whose
 * "-- raw" section is taken (and whose "-- mem" is the default memory).
 *
 * Objects are verified against the hook their section names and run with
 * ctx = the --mem bytes, zero-padded to the hook's context size.  Raw
 * programs run unverified with the conformance helper set, r1 = mem and
 * r2 = its length, for testing the engines: the interpreter runs them with
 * a checker confining memory accesses to mem and the stack, and the JIT
 * only runs a program that first ran to completion in that checked
 * interpreter (a disagreement between the two is reported).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "host/hooks.h"
#include "interp.h"
#include "jit/jit.h"
#include "ncclbpf/runtime.h"
#include "object.h"
#include "text/disasm.h"
#include "text/rawprog.h"

/* Unverified raw programs get a budget, so a looping program ends with an error. */
#define RAW_MAX_STEPS (1ull << 27)

struct prog_args {
	const char *file;
	const char *program;
	const char *mem_hex;
	const char *engine;
};

static int parse_args(int argc, char **argv, struct prog_args *a, int allow_run_opts)
{
	int npos = 0;

	memset(a, 0, sizeof(*a));
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (allow_run_opts && (!strcmp(arg, "--mem") || !strcmp(arg, "--engine"))) {
			if (i + 1 >= argc)
				return cli_usage_error("prog: %s needs a value", arg);
			if (arg[2] == 'm')
				a->mem_hex = argv[++i];
			else
				a->engine = argv[++i];
		} else if (allow_run_opts && !strncmp(arg, "--mem=", 6)) {
			a->mem_hex = arg + 6;
		} else if (allow_run_opts && !strncmp(arg, "--engine=", 9)) {
			a->engine = arg + 9;
		} else if (arg[0] == '-' && arg[1]) {
			return cli_usage_error("prog: unknown option '%s'", arg);
		} else if (npos == 0) {
			a->file = arg;
			npos++;
		} else if (npos == 1) {
			a->program = arg;
			npos++;
		} else {
			return cli_usage_error("prog: unexpected argument '%s'", arg);
		}
	}
	if (!a->file)
		return cli_usage_error("prog: missing FILE");
	return 0;
}

static int is_elf(const char *buf, size_t len)
{
	return len >= 4 && !memcmp(buf, "\177ELF", 4);
}

static void print_r0(const struct cli *c, uint64_t r0)
{
	if (c->json)
		printf("{\"r0\": \"0x%" PRIx64 "\"}\n", r0);
	else
		printf("0x%" PRIx64 "\n", r0);
}

/* Confines a raw program's memory accesses to the --mem block. */
struct raw_bounds {
	uint64_t lo, hi;
};

static int raw_check(void *user, uint64_t addr, uint32_t size, int is_write)
{
	const struct raw_bounds *b = user;

	(void)is_write;
	return !(addr >= b->lo && addr <= b->hi && size <= b->hi - addr);
}

/* Loads a raw program (words or .data); *mem gets the .data's "-- mem" if any. */
static int load_raw(const char *path, const char *text, size_t len, struct nbpf_insn **insns,
		    uint32_t *n, uint8_t **mem, size_t *mem_len)
{
	struct nbpf_conf_test t;
	int err;

	if (!nbpf_text_is_conf(text, len)) {
		err = nbpf_raw_parse(text, len, insns, n);
		if (err)
			return cli_usage_error("%s: %s", path, ncclbpf_errmsg());
		return 0;
	}
	err = nbpf_conf_parse(text, len, &t);
	if (err)
		return cli_usage_error("%s: %s", path, ncclbpf_errmsg());
	if (!t.has_raw) {
		nbpf_conf_free(&t);
		return cli_usage_error("%s: no '-- raw' section", path);
	}
	*insns = t.insns;
	*n = t.n_insns;
	*mem = t.mem;
	*mem_len = t.mem_len;
	t.insns = NULL;
	t.mem = NULL;
	nbpf_conf_free(&t);
	return 0;
}

/*
 * Runs a raw program.  The checked interpreter always runs first: it is
 * the answer for --engine interp and the safety gate for --engine jit.
 */
static int run_raw(struct cli *c, const struct prog_args *a, const char *text, size_t len)
{
	static const struct nbpf_env env = { .helper = nbpf_helper_find_conformance };
	struct nbpf_insn *insns = NULL;
	uint8_t *file_mem = NULL, *mem = NULL, *run_mem = NULL;
	size_t file_mem_len = 0, mem_len = 0;
	struct raw_bounds b;
	struct nbpf_checker ck = { .mem = raw_check, .user = &b };
	uint64_t r0 = 0;
	uint32_t n = 0;
	int jit = 0, rc;

	if (a->program) {
		rc = cli_usage_error("prog: %s is a raw program; it has no program '%s'", a->file,
				     a->program);
		goto out;
	}
	if (a->engine && strcmp(a->engine, "interp")) {
		if (strcmp(a->engine, "jit")) {
			rc = cli_usage_error("prog: unknown engine '%s' (interp or jit)", a->engine);
			goto out;
		}
		jit = 1;
	}
	rc = load_raw(a->file, text, len, &insns, &n, &file_mem, &file_mem_len);
	if (rc)
		goto out;
	if (a->mem_hex) {
		if (nbpf_hex_parse(a->mem_hex, strlen(a->mem_hex), &mem, &mem_len)) {
			rc = cli_usage_error("prog: --mem: %s", ncclbpf_errmsg());
			goto out;
		}
	} else {
		mem = file_mem;
		mem_len = file_mem_len;
		file_mem = NULL;
	}
	/* Work on a copy: the JIT run must see the same initial bytes. */
	if (mem_len && !(run_mem = malloc(mem_len))) {
		rc = cli_usage_error("prog: out of memory");
		goto out;
	}
	if (mem_len)
		memcpy(run_mem, mem, mem_len);
	b.lo = (uint64_t)(uintptr_t)run_mem;
	b.hi = b.lo + mem_len;
	if (nbpf_interp_run(insns, n, &env, run_mem, mem_len, &ck, RAW_MAX_STEPS, &r0)) {
		rc = cli_usage_error("prog: %s: %s", a->file, ncclbpf_errmsg());
		goto out;
	}
	if (jit) {
		struct nbpf_jit_image *img = NULL;
		uint64_t ir0 = r0;

		if (nbpf_jit_compile(insns, n, &env, &img)) {
			rc = cli_usage_error("prog: %s: jit: %s", a->file, ncclbpf_errmsg());
			goto out;
		}
		if (mem_len)
			memcpy(run_mem, mem, mem_len);
		r0 = img->func(run_mem, mem_len);
		nbpf_jit_free(img);
		if (r0 != ir0)
			fprintf(stderr, "ncclbpf: warning: jit returned 0x%" PRIx64
				", the interpreter 0x%" PRIx64 "\n", r0, ir0);
	}
	print_r0(c, r0);
	rc = CLI_OK;
out:
	free(run_mem);
	free(mem);
	free(file_mem);
	free(insns);
	return rc;
}

static struct ncclbpf_program *pick_program(const struct ncclbpf_object *obj, const char *name,
					    const char *path)
{
	struct ncclbpf_program *p;

	if (name) {
		p = ncclbpf_object__find_program(obj, name);
		if (!p)
			cli_usage_error("prog: %s has no program '%s'", path, name);
		return p;
	}
	p = ncclbpf_object__prog_count(obj) ? ncclbpf_object__prog(obj, 0) : NULL;
	if (!p)
		cli_usage_error("prog: %s contains no programs", path);
	return p;
}

static void print_findings(const struct ncclbpf_verify_result *res)
{
	for (uint32_t i = 0; res && i < res->n_findings; i++) {
		const struct ncclbpf_finding *f = &res->findings[i];

		if (f->file)
			fprintf(stderr, "%s:%u: ", f->file, f->line);
		fprintf(stderr, "insn %u: %s: %s\n", f->insn,
			f->kind == NCCLBPF_FINDING_ERROR ? "error" : "warning", f->reason);
		if (f->detail[0])
			fprintf(stderr, "    %s\n", f->detail);
		if (f->hint[0])
			fprintf(stderr, "    hint: %s\n", f->hint);
	}
}

/* Verifies, prepares and runs one program of an object on the --mem context. */
static int run_object(struct cli *c, const struct prog_args *a)
{
	struct ncclbpf_object *obj = NULL;
	struct ncclbpf_program *prog;
	const struct ncclbpf_hook_desc *hook;
	struct ncclbpf_verify_result res = { 0 };
	struct ncclbpf_prepare_opts popts = { .sz = sizeof(popts), .result = &res };
	uint8_t *mem = NULL, *ctx = NULL;
	size_t mem_len = 0;
	uint64_t r0 = 0;
	int rc;

	if (!a->engine)
		popts.engine = NCCLBPF_ENGINE_DEFAULT;
	else if (!strcmp(a->engine, "interp"))
		popts.engine = NCCLBPF_ENGINE_INTERP;
	else if (!strcmp(a->engine, "jit"))
		popts.engine = NCCLBPF_ENGINE_JIT;
	else
		return cli_usage_error("prog: unknown engine '%s' (interp or jit)", a->engine);
	if (a->mem_hex && nbpf_hex_parse(a->mem_hex, strlen(a->mem_hex), &mem, &mem_len))
		return cli_usage_error("prog: --mem: %s", ncclbpf_errmsg());
	if (ncclbpf_object__open_file(a->file, NULL, &obj)) {
		rc = cli_usage_error("prog: %s", ncclbpf_errmsg());
		goto out;
	}
	prog = pick_program(obj, a->program, a->file);
	if (!prog) {
		rc = CLI_USAGE;
		goto out;
	}
	hook = ncclbpf_hook_find_section(ncclbpf_program__section(prog));
	if (!hook) {
		rc = cli_usage_error("prog: %s: section '%s' of program '%s' names no hook", a->file,
				     ncclbpf_program__section(prog), ncclbpf_program__name(prog));
		goto out;
	}
	if (mem_len > hook->ctx_size) {
		rc = cli_usage_error("prog: --mem has %zu bytes, the %s context only %u", mem_len,
				     hook->name, hook->ctx_size);
		goto out;
	}
	ctx = calloc(1, hook->ctx_size ? hook->ctx_size : 1);
	if (!ctx) {
		rc = cli_usage_error("prog: out of memory");
		goto out;
	}
	if (mem_len)
		memcpy(ctx, mem, mem_len);
	rc = ncclbpf_program__prepare(prog, hook, &popts);
	if (rc == -EACCES) {
		cli_err(0, "prog: %s: program '%s' rejected by the verifier", a->file,
			ncclbpf_program__name(prog));
		print_findings(&res);
		rc = CLI_NO;
		goto out;
	}
	if (rc) {
		rc = cli_usage_error("prog: %s: %s", a->file, ncclbpf_errmsg());
		goto out;
	}
	if (ncclbpf_program__run(prog, ctx, hook->ctx_size, &r0)) {
		rc = cli_usage_error("prog: %s: %s", a->file, ncclbpf_errmsg());
		goto out;
	}
	print_r0(c, r0);
	rc = CLI_OK;
out:
	free(ctx);
	free(mem);
	ncclbpf_object__close(obj);
	return rc;
}

static int prog_run(struct cli *c, int argc, char **argv)
{
	struct prog_args a;
	char *text = NULL;
	size_t len = 0;
	int rc = parse_args(argc, argv, &a, 1);

	if (rc)
		return rc;
	if (nbpf_read_file(a.file, &text, &len))
		return cli_usage_error("prog: %s", ncclbpf_errmsg());
	rc = is_elf(text, len) ? run_object(c, &a) : run_raw(c, &a, text, len);
	free(text);
	return rc;
}

static const char *dump_map_name(void *user, uint32_t idx)
{
	const struct ncclbpf_object *obj = user;

	return idx < ncclbpf_object__map_count(obj) ?
	       ncclbpf_map__name(ncclbpf_object__map(obj, idx)) : NULL;
}

/*
 * Prints insns as assembler text, or with -j one JSON document
 * {"program", "section", "insns": [{"idx", "asm", "file", "line", "source"}]};
 * prog is NULL for a raw program (no names, no source lines).
 */
static void dump_insns(const struct cli *c, struct ncclbpf_program *prog,
		       const struct ncclbpf_object *obj, const struct nbpf_insn *pi, uint32_t pn)
{
	struct nbpf_disasm_opts o = { .map_name = dump_map_name, .user = (void *)obj };
	uint32_t last_line = 0;
	char line[256];

	if (c->json) {
		fputs("{\"program\":", stdout);
		cli_json_str_or_null(stdout, prog ? ncclbpf_program__name(prog) : NULL);
		fputs(",\"section\":", stdout);
		cli_json_str_or_null(stdout, prog ? ncclbpf_program__section(prog) : NULL);
		fputs(",\"insns\":[", stdout);
	} else if (prog) {
		printf("%s (section %s, %u insns):\n", ncclbpf_program__name(prog),
		       ncclbpf_program__section(prog), pn);
	}
	for (uint32_t i = 0; i < pn;) {
		const char *file = NULL, *src = NULL;
		uint32_t ln = 0;
		int slots, has_line;

		has_line = prog && !ncclbpf_program__line(prog, i, &file, &ln, &src);
		slots = nbpf_disasm_insn_opts(pi, pn, i, line, sizeof(line), obj ? &o : NULL);
		if (slots < 0)
			break;
		if (c->json) {
			printf("%s{\"idx\":%u,\"asm\":", i ? "," : "", i);
			cli_json_str(stdout, line);
			fputs(",\"file\":", stdout);
			cli_json_str_or_null(stdout, has_line ? file : NULL);
			printf(",\"line\":%u,\"source\":", has_line ? ln : 0);
			cli_json_str_or_null(stdout, has_line ? src : NULL);
			fputc('}', stdout);
		} else {
			if (has_line && ln != last_line) {
				printf("; %s:%u: %s\n", file ? file : "?", ln, src ? src : "");
				last_line = ln;
			}
			printf("%4u: %s\n", i, line);
		}
		i += (uint32_t)slots;
	}
	if (c->json)
		fputs("]}\n", stdout);
}

/* Prints a program as assembler text, with source lines for objects. */
static int prog_dump(struct cli *c, int argc, char **argv)
{
	struct ncclbpf_object *obj = NULL;
	struct ncclbpf_program *prog;
	struct nbpf_insn *insns = NULL;
	uint8_t *mem = NULL;
	size_t mem_len = 0, len = 0;
	char *text = NULL;
	uint32_t n = 0;
	struct prog_args a;
	int rc = parse_args(argc, argv, &a, 0);

	if (rc)
		return rc;
	if (nbpf_read_file(a.file, &text, &len))
		return cli_usage_error("prog: %s", ncclbpf_errmsg());
	if (!is_elf(text, len)) {
		if (a.program)
			rc = cli_usage_error("prog: %s is a raw program; it has no program '%s'",
					     a.file, a.program);
		else if (!(rc = load_raw(a.file, text, len, &insns, &n, &mem, &mem_len)))
			dump_insns(c, NULL, NULL, insns, n);
		goto out;
	}
	if (ncclbpf_object__open_file(a.file, NULL, &obj)) {
		rc = cli_usage_error("prog: %s", ncclbpf_errmsg());
		goto out;
	}
	prog = pick_program(obj, a.program, a.file);
	if (!prog) {
		rc = CLI_USAGE;
		goto out;
	}
	dump_insns(c, prog, obj, ncclbpf_program__insns(prog),
		   (uint32_t)ncclbpf_program__insn_count(prog));
	rc = CLI_OK;
out:
	ncclbpf_object__close(obj);
	free(insns);
	free(mem);
	free(text);
	return rc;
}

int cmd_prog(struct cli *c, int argc, char **argv)
{
	if (argc < 1)
		return cli_usage_error("prog: expected a verb: run FILE [PROGRAM] [--mem HEX] "
				       "[--engine interp|jit], dump FILE [PROGRAM]");
	if (!strcmp(argv[0], "run"))
		return prog_run(c, argc, argv);
	if (!strcmp(argv[0], "dump"))
		return prog_dump(c, argc, argv);
	return cli_usage_error("prog: unknown verb '%s' (run, dump)", argv[0]);
}
