// SPDX-License-Identifier: MIT
/*
 * test_precision.c - comparisons against a register holding a known value.
 *
 * Each program reads an unknown 64-bit value v (bpf_ktime_get_ns), may
 * bound it with a first test against an immediate, loads a constant c
 * into r2 and compares v with r2 (either order, 32 or 64 bits, every
 * operator).  The second jump leads to a path that reads r1 (clobbered by
 * the call): the verifier accepts exactly when it proves that path
 * impossible.  A concrete oracle tries v over values at every boundary that
 * matters (around 0, 2^31, 2^32, 2^63, with garbage in the upper half) and
 * decides whether the path is reachable.
 *
 * - precision: the listed patterns (those the kernel proves, and more) must
 *   be accepted, and the oracle must agree that they are safe;
 * - near misses: each listed pattern with the constant moved by one must be
 *   rejected, and the oracle must find a value that reaches the path;
 * - soundness: over a grid of all operators, widths, orders and constants,
 *   every program the oracle can reach the path in is rejected.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "helpers.h"
#include "host/hooks.h"
#include "verifier/verifier.h"

#define INS(c, d, s, o, i) ((struct nbpf_insn){ .code = (c), .dst = (d), .src = (s), .off = (o), .imm = (i) })

static const uint8_t ops[] = { NBPF_JEQ, NBPF_JNE, NBPF_JGT, NBPF_JGE, NBPF_JLT, NBPF_JLE,
			       NBPF_JSGT, NBPF_JSGE, NBPF_JSLT, NBPF_JSLE };

struct pcase {
	bool w32;
	uint8_t pre;     /* first test: v PRE k1 -> out (0: none) */
	int32_t k1;
	int32_t c;       /* r2 */
	uint8_t op;      /* second test: jumps to the bad path */
	bool c_left;     /* c OP v rather than v OP c */
	int32_t near;    /* the near miss's c */
};

/* Concrete semantics of a conditional jump. */
static bool jump(uint8_t op, bool w32, uint64_t a, uint64_t b)
{
	int64_t sa = (int64_t)a, sb = (int64_t)b;

	if (w32) {
		a = (uint32_t)a;
		b = (uint32_t)b;
		sa = (int32_t)a;
		sb = (int32_t)b;
	}
	switch (op) {
	case NBPF_JEQ: return a == b;
	case NBPF_JNE: return a != b;
	case NBPF_JGT: return a > b;
	case NBPF_JGE: return a >= b;
	case NBPF_JLT: return a < b;
	case NBPF_JLE: return a <= b;
	case NBPF_JSGT: return sa > sb;
	case NBPF_JSGE: return sa >= sb;
	case NBPF_JSLT: return sa < sb;
	case NBPF_JSLE: return sa <= sb;
	}
	return false;
}

/* Whether some v reaches the bad path (a witness search over boundary values). */
static bool reachable(const struct pcase *p, int32_t c)
{
	static const uint64_t base[] = { 0, 1ull << 31, 1ull << 32, 1ull << 63, 0xffffffff00000000ull,
					 0x123456700000000ull };
	uint64_t cc = p->w32 ? (uint32_t)c : (uint64_t)(int64_t)c;

	for (size_t b = 0; b < sizeof(base) / sizeof(base[0]); b++)
		for (int d = -12; d <= 12; d++) {
			uint64_t v = base[b] + (uint64_t)(int64_t)d;
			uint64_t k1 = p->w32 ? (uint32_t)p->k1 : (uint64_t)(int64_t)p->k1;

			if (p->pre && jump(p->pre, p->w32, v, k1))
				continue; /* left by the first test */
			if (p->c_left ? jump(p->op, p->w32, cc, v) : jump(p->op, p->w32, v, cc))
				return true;
		}
	return false;
}

static uint32_t build(struct nbpf_insn *q, const struct pcase *p, int32_t c)
{
	uint8_t jc = p->w32 ? NBPF_JMP32 : NBPF_JMP, ac = p->w32 ? NBPF_ALU : NBPF_ALU64;
	uint32_t n = 0;

	q[n++] = INS(NBPF_OP_CALL, 0, 0, 0, NBPF_HELPER_KTIME_GET_NS);
	if (p->pre)
		q[n++] = INS(jc | p->pre | NBPF_K, 0, 0, 2, p->k1); /* to out */
	q[n++] = INS(ac | NBPF_MOV | NBPF_K, 2, 0, 0, c);
	q[n++] = p->c_left ? INS(jc | p->op | NBPF_X, 2, 0, 2, 0) : INS(jc | p->op | NBPF_X, 0, 2, 2, 0);
	/* out: */
	q[n++] = INS(NBPF_ALU64 | NBPF_MOV | NBPF_K, 0, 0, 0, 0);
	q[n++] = INS(NBPF_OP_EXIT, 0, 0, 0, 0);
	/* the bad path: r1 was clobbered by the call */
	q[n++] = INS(NBPF_ALU64 | NBPF_SUB | NBPF_X, 0, 1, 0, 0);
	q[n++] = INS(NBPF_OP_EXIT, 0, 0, 0, 0);
	return n;
}

static int verify(const struct pcase *p, int32_t c)
{
	struct nbpf_insn q[16];
	uint32_t n = build(q, p, c);
	struct nbpf_verify_input in = { .insns = q, .n_insns = n };
	struct ncclbpf_verify_result r;
	int err = nbpf_verify_insns(&in, ncclbpf_hook_find("tuner"), NULL, &r);

	if (err && (!r.n_findings || strcmp(r.findings[0].reason, "read of uninitialised register")))
		err = -EINVAL; /* rejected for another reason: the harness is wrong */
	free(r.findings);
	return err;
}

/* Patterns: v bounded by a first test, then compared with a known value on either side. */
static const struct pcase cases[] = {
	/* v OP c, 64 and 32 bits */
	{ false, NBPF_JLT, 3, 2, NBPF_JEQ, false, 3 },
	{ false, NBPF_JGT, 3, 4, NBPF_JEQ, false, 3 },
	{ false, NBPF_JLT, 3, 2, NBPF_JLT, false, 4 },
	{ true, NBPF_JLT, 4, 3, NBPF_JEQ, false, 4 },
	{ true, NBPF_JGT, 4, 5, NBPF_JEQ, false, 4 },
	{ true, NBPF_JLT, 4, 4, NBPF_JLT, false, 5 },
	{ true, NBPF_JSGT, 4, 4, NBPF_JSGT, false, 3 },
	/* c OP v, every operator, 64 bits */
	{ false, 0, 0, 0, NBPF_JGT, true, 1 },
	{ false, NBPF_JLT, 4, 4, NBPF_JGT, true, 5 },
	{ false, NBPF_JLT, 4, 3, NBPF_JGE, true, 4 },
	{ false, NBPF_JGT, 4, 4, NBPF_JLT, true, 3 },
	{ false, NBPF_JGE, 4, 4, NBPF_JLE, true, 3 },
	{ false, NBPF_JLT, 3, 2, NBPF_JEQ, true, 3 },
	{ false, NBPF_JSLT, 4, 4, NBPF_JSGT, true, 5 },
	{ false, NBPF_JSLT, 4, 3, NBPF_JSGE, true, 4 },
	{ false, NBPF_JSGT, 4, 4, NBPF_JSLT, true, 3 },
	{ false, NBPF_JSGT, 4, 5, NBPF_JSLE, true, 4 },
	/* c OP v, every operator, 32 bits: v's upper half is unknown */
	{ true, 0, 0, 0, NBPF_JGT, true, 1 },
	{ true, NBPF_JLT, 4, 4, NBPF_JGT, true, 5 },
	{ true, NBPF_JLT, 4, 3, NBPF_JGE, true, 4 },
	{ true, NBPF_JGT, 4, 4, NBPF_JLT, true, 3 },
	{ true, NBPF_JGE, 4, 4, NBPF_JLE, true, 3 },
	{ true, NBPF_JLT, 4, 3, NBPF_JEQ, true, 4 },
	{ true, NBPF_JSLT, 4, 4, NBPF_JSGT, true, 5 },
	{ true, NBPF_JSLT, 4, 3, NBPF_JSGE, true, 4 },
	{ true, NBPF_JSGT, 4, 5, NBPF_JSLT, true, 3 },
	{ true, NBPF_JSGE, 4, 4, NBPF_JSLE, true, 3 },
	{ true, NBPF_JSGE, 4, 3, NBPF_JSLT, true, 2 },
	{ true, NBPF_JGT, 7, 7, NBPF_JSLT, true, 6 },  /* unsigned bound, signed test */
	{ true, NBPF_JSLT, 0, 0, NBPF_JGT, true, 1 },  /* w < 0 signed: w >= 2^31, 0 > w never */
};

int main(void)
{
	unsigned grid = 0, grid_reject = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct pcase *p = &cases[i];
		int err;

		CHECK_MSG(!reachable(p, p->c), "case %zu: the oracle reaches the path", i);
		err = verify(p, p->c);
		CHECK_MSG(err == 0, "case %zu (%s, pre %#x %d, c %d, op %#x, %s): %d", i,
			  p->w32 ? "32" : "64", p->pre, p->k1, p->c, p->op, p->c_left ? "c OP v" : "v OP c",
			  err);
		CHECK_MSG(reachable(p, p->near), "case %zu: the near miss is not reachable", i);
		err = verify(p, p->near);
		CHECK_MSG(err == -EACCES, "case %zu near miss c=%d: %d", i, p->near, err);
	}

	/* soundness over a grid */
	for (int w = 0; w < 2; w++)
		for (size_t pre = 0; pre <= sizeof(ops); pre++)
			for (int k1 = -1; k1 <= 5; k1 += 2)
				for (size_t o = 0; o < sizeof(ops); o++)
					for (int left = 0; left < 2; left++)
						for (int c = -2; c <= 6; c++) {
							struct pcase p = {
								.w32 = w, .pre = pre ? ops[pre - 1] : 0,
								.k1 = k1, .c = c, .op = ops[o], .c_left = left,
							};
							int err = verify(&p, c);

							grid++;
							CHECK_MSG(err != -EINVAL, "grid: harness rejected for another reason");
							if (reachable(&p, c)) {
								grid_reject++;
								CHECK_MSG(err == -EACCES,
									  "unsound: w32 %d pre %#x k1 %d op %#x left %d c %d",
									  w, p.pre, k1, p.op, left, c);
							}
						}
	printf("grid: %u programs, %u with a reachable path (all rejected)\n", grid, grid_reject);
	return check_summary("verifier_precision");
}
