/* SPDX-License-Identifier: Apache-2.0 */
/*
 * consumer.c - a program outside the project that uses the installed
 * runtime (libncclbpf.a, <ncclbpf/runtime.h>) the way a user would: open
 * shipped policies, verify them against a hook contract of its own, run one.
 *
 *   consumer [POLICY_DIR]     (default: the directory the build found)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <ncclbpf/runtime.h>

#ifndef POLICY_DIR
#define POLICY_DIR ""
#endif

/* A hook whose context has no fields: a program that reads its context is refused. */
static const struct ncclbpf_hook_desc bare_hook = {
	.name = "tuner",
	.section = "tuner",
	.ctx_type = "struct consumer_ctx",
	.ctx_size = 64,
	.ret_min = 0,
	.ret_max = 0,
	.doc = "a contract declared by the consumer",
};

static int open_prog(const char *dir, const char *name, struct ncclbpf_object **obj,
		     struct ncclbpf_program **prog)
{
	char path[4096];
	int err;

	snprintf(path, sizeof(path), "%s/%s.bpf.o", dir, name);
	err = ncclbpf_object__open_file(path, NULL, obj);
	if (err) {
		fprintf(stderr, "consumer: %s: %s\n", path, ncclbpf_errmsg());
		return err;
	}
	if (ncclbpf_object__prog_count(*obj) < 1) {
		fprintf(stderr, "consumer: %s: no programs\n", path);
		return -ENOENT;
	}
	*prog = ncclbpf_object__prog(*obj, 0);
	printf("%s: program %s (%s), %zu insns, tag %s\n", name, ncclbpf_program__name(*prog),
	       ncclbpf_program__section(*prog), ncclbpf_program__insn_count(*prog),
	       ncclbpf_object__tag(*obj));
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : POLICY_DIR;
	struct ncclbpf_object *noop = NULL, *sized = NULL;
	struct ncclbpf_program *prog;
	struct ncclbpf_verify_result res = { 0 };
	struct ncclbpf_prepare_opts popts = { .sz = sizeof(popts),
					      .engine = NCCLBPF_ENGINE_INTERP };
	uint8_t ctx[64] = { 0 };
	uint64_t ret = 1;
	int err, rc = 1;

	/* noop reads nothing and returns 0: accepted, runs, returns 0. */
	if (open_prog(dir, "noop", &noop, &prog))
		goto out;
	err = ncclbpf_program__prepare(prog, &bare_hook, &popts);
	if (err) {
		fprintf(stderr, "consumer: noop refused: %d %s\n", err, ncclbpf_errmsg());
		goto out;
	}
	err = ncclbpf_program__run(prog, ctx, sizeof(ctx), &ret);
	if (err || ret != 0) {
		fprintf(stderr, "consumer: noop run: err %d ret %llu\n", err, (unsigned long long)ret);
		goto out;
	}
	printf("noop: accepted, ran, returned %llu\n", (unsigned long long)ret);

	/* size_aware reads context fields this hook does not declare: refused. */
	if (open_prog(dir, "size_aware", &sized, &prog))
		goto out;
	err = ncclbpf_program__verify(prog, &bare_hook, NULL, &res);
	if (err != -EACCES || res.accepted || !res.n_findings) {
		fprintf(stderr, "consumer: size_aware: expected a rejection, got %d\n", err);
		goto out;
	}
	printf("size_aware: rejected: %s\n", res.findings[0].reason);
	rc = 0;
out:
	ncclbpf_object__close(sized);
	ncclbpf_object__close(noop);
	return rc;
}
