// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_printk_run.c - what bpf_printk prints: a program whose format has
 * one argument per conversion prints exactly its values on the
 * interpreter and the JIT, and a program with fewer arguments than
 * conversions is refused (it used to run and print whatever r4 held, a
 * host address under the JIT).
 *
 * usage: test_printk_run printk_run.bpf.o
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "host/hooks.h"
#include "ncclbpf/policy.h"
#include "ncclbpf/runtime.h"

static char lines[8][256];
static int n_lines;

static void capture(int level, const char *msg)
{
	(void)level;
	if (n_lines < 8)
		snprintf(lines[n_lines], sizeof(lines[0]), "%s", msg);
	n_lines++;
}

static const char *run_once(struct ncclbpf_program *p, enum ncclbpf_engine engine, int *err)
{
	struct ncclbpf_prepare_opts po = { .sz = sizeof(po), .engine = engine };
	struct ncclbpf_tuner_ctx ctx;
	uint64_t ret = 0;

	memset(&ctx, 0, sizeof(ctx));
	ctx.n_ranks = 8;
	ctx.n_bytes = 4096;
	*err = ncclbpf_program__prepare(p, ncclbpf_hook_find("tuner"), &po);
	if (*err)
		return NULL;
	n_lines = 0;
	*err = ncclbpf_program__run(p, &ctx, sizeof(ctx), &ret);
	return n_lines == 1 ? lines[0] : NULL;
}

int main(int argc, char **argv)
{
	static const enum ncclbpf_engine engines[] = { NCCLBPF_ENGINE_INTERP, NCCLBPF_ENGINE_JIT };
	struct ncclbpf_object *obj = NULL;
	struct ncclbpf_program *match, *shrt;
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: test_printk_run printk_run.bpf.o\n");
		return 2;
	}
	err = ncclbpf_object__open_file(argv[1], NULL, &obj);
	CHECK_MSG(!err, "open %s: %s", argv[1], ncclbpf_errmsg());
	if (err)
		return check_summary("printk_run");
	match = ncclbpf_object__find_program(obj, "printk_match");
	shrt = ncclbpf_object__find_program(obj, "printk_short");
	CHECK(match && shrt);
	ncclbpf_set_logger(capture);
	for (size_t i = 0; match && shrt && i < sizeof(engines) / sizeof(engines[0]); i++) {
		const char *line = run_once(match, engines[i], &err);

		CHECK_MSG(!err, "engine %d: %s", engines[i], ncclbpf_errmsg());
		CHECK_MSG(line && !strcmp(line, "bpf_trace_printk: ranks=8 bytes=4096 d=-3"),
			  "engine %d printed \"%s\"", engines[i], line ? line : "(no single line)");

		line = run_once(shrt, engines[i], &err);
		CHECK_MSG(err == -EACCES, "engine %d: printk_short accepted; it printed \"%s\"",
			  engines[i], line ? line : "(nothing)");
		if (err == -EACCES) {
			struct ncclbpf_verify_result r;

			ncclbpf_program__verify(shrt, ncclbpf_hook_find("tuner"), NULL, &r);
			CHECK(r.n_findings && !strcmp(r.findings[0].reason, "bpf_printk argument missing"));
		}
	}
	ncclbpf_set_logger(NULL);
	ncclbpf_object__close(obj);
	return check_summary("printk_run");
}
