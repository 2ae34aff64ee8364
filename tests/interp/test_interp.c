/*
 * test_interp.c - the reference interpreter's semantics and faults.
 *
 * Runs every tests/interp/cases .data program (written in assembler
 * text: "-- asm", optional "-- mem", then "-- result" or "-- error" with a
 * substring of the expected message), then C-level checks of what text
 * cannot express: the checker, the step budget, helper_ret, lddw map
 * references and argument errors.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "interp.h"
#include "ncclbpf/runtime.h"
#include "text/asm.h"
#include "text/rawprog.h"

#ifndef INTERP_CASES_DIR
#define INTERP_CASES_DIR "cases"
#endif

static const struct nbpf_env conf_env = { .helper = nbpf_helper_find_conformance };

static int assemble(const char *text, struct nbpf_insn **v, uint32_t *n)
{
	int err = nbpf_asm(text, strlen(text), v, n);

	if (err)
		fprintf(stderr, "asm failed: %s\n", ncclbpf_errmsg());
	return err;
}

static void run_case(const char *dir, const char *name)
{
	char path[4096];
	struct nbpf_conf_test t;
	struct nbpf_insn *v = NULL;
	uint32_t n = 0;
	uint8_t *mem = NULL;
	uint64_t r0 = 0;
	int err;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (nbpf_conf_load(path, &t)) {
		CHECK_MSG(0, "%s: %s", name, ncclbpf_errmsg());
		return;
	}
	CHECK_MSG(t.asm_text && (t.has_result || t.has_error), "%s: needs asm and result/error",
		  name);
	if (!t.asm_text || assemble(t.asm_text, &v, &n)) {
		CHECK_MSG(0, "%s: does not assemble", name);
		goto out;
	}
	if (t.mem_len) {
		mem = malloc(t.mem_len);
		memcpy(mem, t.mem, t.mem_len);
	}
	err = nbpf_interp_run(v, n, &conf_env, mem, t.mem_len, NULL, 1u << 20, &r0);
	if (t.has_error) {
		CHECK_MSG(err < 0, "%s: expected an error, got r0 = 0x%" PRIx64, name, r0);
		CHECK_MSG(err >= 0 || strstr(ncclbpf_errmsg(), t.error),
			  "%s: message \"%s\" lacks \"%s\"", name, ncclbpf_errmsg(), t.error);
	} else {
		CHECK_MSG(err == 0, "%s: failed: %s", name, ncclbpf_errmsg());
		CHECK_MSG(err || r0 == t.result, "%s: r0 = 0x%" PRIx64 ", expected 0x%" PRIx64, name,
			  r0, t.result);
	}
out:
	free(mem);
	free(v);
	nbpf_conf_free(&t);
}

static int run_cases(const char *dir)
{
	struct dirent **ents = NULL;
	int n = scandir(dir, &ents, NULL, alphasort), count = 0;

	CHECK_MSG(n > 0, "cannot read %s", dir);
	for (int i = 0; i < n; i++) {
		size_t l = strlen(ents[i]->d_name);

		if (l > 5 && !strcmp(ents[i]->d_name + l - 5, ".data")) {
			run_case(dir, ents[i]->d_name);
			count++;
		}
		free(ents[i]);
	}
	free(ents);
	return count;
}

/* ---- checker ------------------------------------------------------------ */

struct trace {
	uint64_t lo, hi;      /* the one region the checker allows */
	int calls, traps, helper_rets;
	uint64_t last_r0;
};

static int chk_mem(void *user, uint64_t addr, uint32_t size, int is_write)
{
	struct trace *t = user;

	(void)is_write;
	t->calls++;
	if (addr >= t->lo && addr + size <= t->hi)
		return 0;
	t->traps++;
	return 1;
}

static void chk_ret(void *user, const struct nbpf_helper *h, const uint64_t args[5], uint64_t r0)
{
	struct trace *t = user;

	t->helper_rets++;
	t->last_r0 = r0;
	CHECK(h && h->id == 5);
	CHECK_EQ_U64(args[0], 42);
}

static void test_checker(void)
{
	uint8_t ctx[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct trace tr = { .lo = (uint64_t)(uintptr_t)ctx, .hi = (uint64_t)(uintptr_t)ctx + 8 };
	struct nbpf_checker ck = { .mem = chk_mem, .helper_ret = chk_ret, .user = &tr };
	struct nbpf_insn *v = NULL;
	uint32_t n = 0;
	uint64_t r0 = 0;

	/* In-bounds ctx reads are offered and allowed; stack accesses are not offered. */
	if (!assemble("ldxdw %r0, [%r1]\n stdw [%r10-8], 1\n ldxdw %r2, [%r10-8]\n"
		      "mov %r6, %r0\n mov %r1, 42\n call 5\n mov %r0, %r6\n exit\n", &v, &n)) {
		CHECK_EQ_U64(nbpf_interp_run(v, n, &conf_env, ctx, 8, &ck, 0, &r0), 0);
		CHECK_EQ_U64(r0, 0x0807060504030201ull);
		CHECK_EQ_U64(tr.calls, 1);
		CHECK_EQ_U64(tr.traps, 0);
		CHECK_EQ_U64(tr.helper_rets, 1);
		CHECK_EQ_U64(tr.last_r0, 42);
	}
	free(v);

	/* One byte past the block is trapped before it happens. */
	memset(&tr.calls, 0, sizeof(tr) - offsetof(struct trace, calls));
	if (!assemble("mov %r0, 0\n stb [%r1+8], 1\n exit\n", &v, &n)) {
		CHECK_EQ_U64(nbpf_interp_run(v, n, &conf_env, ctx, 8, &ck, 0, &r0), (uint64_t)-EFAULT);
		CHECK_STR_CONTAINS(ncclbpf_errmsg(), "insn 1: write of 1 bytes");
		CHECK_EQ_U64(tr.traps, 1);
	}
	free(v);

	/* Stack accesses outside the live frames are trapped by the interpreter itself. */
	memset(&tr.calls, 0, sizeof(tr) - offsetof(struct trace, calls));
	if (!assemble("ldxdw %r0, [%r10-520]\n exit\n", &v, &n)) {
		CHECK_EQ_U64(nbpf_interp_run(v, n, &conf_env, ctx, 8, &ck, 0, &r0), (uint64_t)-EFAULT);
		CHECK_STR_CONTAINS(ncclbpf_errmsg(), "insn 0: read of 8 bytes");
		CHECK_EQ_U64(tr.calls, 0);
	}
	free(v);

	/* A callee may reach into its caller's frame (live), not past the stack top. */
	memset(&tr.calls, 0, sizeof(tr) - offsetof(struct trace, calls));
	if (!assemble("stdw [%r10-8], 9\n call local f\n exit\n"
		      "f: ldxdw %r0, [%r10+504]\n exit\n", &v, &n)) {
		CHECK_EQ_U64(nbpf_interp_run(v, n, &conf_env, ctx, 8, &ck, 0, &r0), 0);
		CHECK_EQ_U64(r0, 9);
	}
	free(v);
	if (!assemble("ldxb %r0, [%r10]\n exit\n", &v, &n))
		CHECK_EQ_U64(nbpf_interp_run(v, n, &conf_env, ctx, 8, &ck, 0, &r0), (uint64_t)-EFAULT);
	free(v);

	/* Atomics are offered as writes. */
	memset(&tr.calls, 0, sizeof(tr) - offsetof(struct trace, calls));
	if (!assemble("mov %r2, 1\n lock add [%r1+4], %r2\n ldxw %r0, [%r1+4]\n exit\n", &v, &n)) {
		uint32_t w = 0;

		memset(ctx, 0, sizeof(ctx));
		CHECK_EQ_U64(nbpf_interp_run(v, n, &conf_env, ctx, 8, &ck, 0, &r0), (uint64_t)-EFAULT);
		CHECK_EQ_U64(tr.traps, 1); /* dw at +4 runs past the 8-byte block */
		memcpy(&w, ctx + 4, 4);
		CHECK_EQ_U64(w, 0);        /* trapped before it happened */
	}
	free(v);
}

/* ---- budget, maps, arguments -------------------------------------------- */

static void test_budget(void)
{
	struct nbpf_insn *v = NULL;
	uint32_t n = 0;
	uint64_t r0 = 0;

	if (!assemble("mov %r0, 0\n loop: add %r0, 1\n ja loop\n exit\n", &v, &n)) {
		CHECK_EQ_U64(nbpf_interp_run(v, n, &conf_env, NULL, 0, NULL, 1000, &r0),
			     (uint64_t)-E2BIG);
		CHECK_STR_CONTAINS(ncclbpf_errmsg(), "instruction budget of 1000 exhausted");
	}
	free(v);
	/* Exactly max_steps instructions may run. */
	if (!assemble("mov %r0, 1\n add %r0, 1\n exit\n", &v, &n)) {
		CHECK_EQ_U64(nbpf_interp_run(v, n, &conf_env, NULL, 0, NULL, 3, &r0), 0);
		CHECK_EQ_U64(r0, 2);
		CHECK_EQ_U64(nbpf_interp_run(v, n, &conf_env, NULL, 0, NULL, 2, &r0),
			     (uint64_t)-E2BIG);
	}
	free(v);
}

static void test_maps(void)
{
	/* The interpreter only takes map addresses; opaque storage stands in for maps. */
	static uint64_t fake[2][4];
	struct ncclbpf_map *maps[2] = { (struct ncclbpf_map *)fake[0],
					(struct ncclbpf_map *)fake[1] };
	struct nbpf_env env = { .maps = maps, .n_maps = 2, .helper = nbpf_helper_find_conformance };
	struct nbpf_insn *v = NULL;
	uint32_t n = 0;
	uint64_t r0 = 0;

	if (!assemble("lddw %r0, map[1]\n exit\n", &v, &n)) {
		CHECK_EQ_U64(nbpf_interp_run(v, n, &env, NULL, 0, NULL, 0, &r0), 0);
		CHECK_EQ_U64(r0, (uintptr_t)maps[1]);
	}
	free(v);
	if (!assemble("lddw %r0, map_fd[0]\n exit\n", &v, &n)) {
		CHECK_EQ_U64(nbpf_interp_run(v, n, &env, NULL, 0, NULL, 0, &r0), 0);
		CHECK_EQ_U64(r0, (uintptr_t)maps[0]);
	}
	free(v);
	if (!assemble("mov %r0, 0\n lddw %r0, map[2]\n exit\n", &v, &n)) {
		CHECK_EQ_U64(nbpf_interp_run(v, n, &env, NULL, 0, NULL, 0, &r0), (uint64_t)-EINVAL);
		CHECK_STR_CONTAINS(ncclbpf_errmsg(), "insn 1: lddw refers to map 2");
		/* No maps at all. */
		CHECK_EQ_U64(nbpf_interp_run(v, n, &conf_env, NULL, 0, NULL, 0, &r0),
			     (uint64_t)-EINVAL);
	}
	free(v);
	if (!assemble(".insn 0x0000000000003018\n .insn 0\n exit\n", &v, &n)) {
		CHECK_EQ_U64(nbpf_interp_run(v, n, &env, NULL, 0, NULL, 0, &r0), (uint64_t)-ENOTSUP);
		CHECK_STR_CONTAINS(ncclbpf_errmsg(), "pseudo source 3");
	}
	free(v);
}

static void test_args(void)
{
	struct nbpf_insn ex = { .code = NBPF_OP_EXIT };
	uint64_t r0 = 0;

	CHECK_EQ_U64(nbpf_interp_run(NULL, 1, &conf_env, NULL, 0, NULL, 0, &r0), (uint64_t)-EINVAL);
	CHECK_EQ_U64(nbpf_interp_run(&ex, 1, &conf_env, NULL, 0, NULL, 0, NULL), (uint64_t)-EINVAL);
	CHECK_EQ_U64(nbpf_interp_run(&ex, 0, &conf_env, NULL, 0, NULL, 0, &r0), (uint64_t)-EINVAL);
	/* No env: helper calls fail cleanly. */
	{
		struct nbpf_insn p[2] = { { .code = NBPF_OP_CALL, .imm = 5 }, { .code = NBPF_OP_EXIT } };

		CHECK_EQ_U64(nbpf_interp_run(p, 2, NULL, NULL, 0, NULL, 0, &r0), (uint64_t)-ENOENT);
	}
	/* r1/r2 carry ctx and its length. */
	{
		struct nbpf_insn p[2] = { { .code = NBPF_ALU64 | NBPF_MOV | NBPF_X, .dst = 0, .src = 2 },
					  { .code = NBPF_OP_EXIT } };

		CHECK_EQ_U64(nbpf_interp_run(p, 2, NULL, &r0, 1234, NULL, 0, &r0), 0);
		CHECK_EQ_U64(r0, 1234);
	}
}

int main(int argc, char **argv)
{
	int cases = run_cases(argc > 1 ? argv[1] : INTERP_CASES_DIR);

	printf("interp: %d data-driven cases\n", cases);
	CHECK(cases >= 60);
	test_checker();
	test_budget();
	test_maps();
	test_args();
	return check_summary("interp");
}
