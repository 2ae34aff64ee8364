/* SPDX-License-Identifier: MIT */
/*
 * patho_gen.h - a program shape that once made verification take seconds:
 * a chain of bpf-to-bpf calls, every frame's 512 bytes initialised, and in
 * the innermost function a row of diamonds, each choosing one of two
 * constants that is spilled and later used as a stack offset.  The
 * constants reach addresses, so no two paths through the diamonds can be
 * joined or pruned: 2^diamonds paths, each carrying a state of depth full
 * frames.  Shared by tests/verifier/test_verify_time.c and bench/verify.
 */
#ifndef NCCLBPF_TEST_PATHO_GEN_H
#define NCCLBPF_TEST_PATHO_GEN_H

#include <stdbool.h>
#include <stdint.h>

#include "insn.h"

#define PG_INS(c, d, s, o, i) \
	((struct nbpf_insn){ .code = (c), .dst = (d), .src = (s), .off = (o), .imm = (i) })

/*
 * The two shapes of the report: 8 frames, 13 diamonds, each constant read
 * back once (694 instructions, accepted), or twice with a longer tail
 * (730 instructions, past the instruction budget).
 */
#define PATHO_SMALL_USES 1
#define PATHO_LARGE_USES 2

/*
 * Writes the program into p (room for 4096 instructions) and returns its
 * length.  depth frames (1..8), diamonds (1..20) in the innermost one,
 * each constant loaded back and used as an offset uses times.
 */
static inline uint32_t patho_gen2(struct nbpf_insn *p, int depth, int diamonds, int uses,
				  bool outer);
static inline uint32_t patho_diamonds(struct nbpf_insn *p, uint32_t n, int diamonds, int uses);

static inline uint32_t patho_gen(struct nbpf_insn *p, int depth, int diamonds, int uses)
{
	return patho_gen2(p, depth, diamonds, uses, false);
}

/*
 * outer: the diamonds and their uses are in the main program, before the
 * call chain, so paths differ only in the outermost frame while they run
 * the callees (each callee is then a diamond of its own, so that its
 * frames are compared at its join).
 */
static inline uint32_t patho_gen2(struct nbpf_insn *p, int depth, int diamonds, int uses,
				  bool outer)
{
	uint32_t n = 0, call_at[8];

	for (int k = 0; k < depth; k++) {
		uint32_t start = n;

		if (k)
			p[call_at[k - 1]].imm = (int32_t)(start - call_at[k - 1] - 1);
		p[n++] = PG_INS(NBPF_ALU64 | NBPF_MOV | NBPF_X, 6, 1, 0, 0);
		for (int j = 0; j < 64; j++)
			p[n++] = PG_INS(NBPF_ST | NBPF_MEM | NBPF_DW, 10, 0, (int16_t)(-8 * (j + 1)), 0);
		if (outer && k == 0)
			n = patho_diamonds(p, n, diamonds, uses);
		if (outer && k) {
			/* a diamond that both sides leave alike: its join prunes */
			p[n++] = PG_INS(NBPF_LDX | NBPF_MEM | NBPF_W, 7, 6, 24, 0);
			p[n++] = PG_INS(NBPF_JMP | NBPF_JSET | NBPF_K, 7, 0, 2, 1 << k);
			p[n++] = PG_INS(NBPF_ALU64 | NBPF_MOV | NBPF_K, 2, 0, 0, 1);
			p[n++] = PG_INS(NBPF_OP_JA, 0, 0, 1, 0);
			p[n++] = PG_INS(NBPF_ALU64 | NBPF_MOV | NBPF_K, 2, 0, 0, 1);
			p[n++] = PG_INS(NBPF_STX | NBPF_MEM | NBPF_DW, 10, 2, -8, 0);
		}
		if (k + 1 < depth) {
			p[n++] = PG_INS(NBPF_ALU64 | NBPF_MOV | NBPF_X, 1, 6, 0, 0);
			call_at[k] = n;
			p[n++] = PG_INS(NBPF_OP_CALL, 0, NBPF_PSEUDO_CALL, 0, 0);
			p[n++] = PG_INS(NBPF_ALU64 | NBPF_MOV | NBPF_K, 0, 0, 0, 0);
			p[n++] = PG_INS(NBPF_OP_EXIT, 0, 0, 0, 0);
			continue;
		}
		if (!outer)
			n = patho_diamonds(p, n, diamonds, uses);
		else
			p[n++] = PG_INS(NBPF_ALU64 | NBPF_MOV | NBPF_K, 0, 0, 0, 0);
		p[n++] = PG_INS(NBPF_ALU64 | NBPF_AND | NBPF_K, 0, 0, 0, 1);
		p[n++] = PG_INS(NBPF_OP_EXIT, 0, 0, 0, 0);
	}
	return n;
}

/*
 * The fork shape: the same chain of depth full frames, and in the innermost
 * function a row of forks, each a JSET on one context value (a bit of it
 * set on one side, clear on the other) that both sides leave at once.  The
 * tested register stays live, so no two paths meet in one state: every
 * processed instruction is a fork of a state of depth full frames, until
 * the instruction budget.  Room for 4096 instructions: forks up to
 * 4096 - 74 * depth.
 */
static inline uint32_t patho_forks(struct nbpf_insn *p, int depth, int forks)
{
	uint32_t n = 0, call_at[8];

	for (int k = 0; k < depth; k++) {
		uint32_t start = n;

		if (k)
			p[call_at[k - 1]].imm = (int32_t)(start - call_at[k - 1] - 1);
		p[n++] = PG_INS(NBPF_ALU64 | NBPF_MOV | NBPF_X, 6, 1, 0, 0);
		for (int j = 0; j < 64; j++)
			p[n++] = PG_INS(NBPF_ST | NBPF_MEM | NBPF_DW, 10, 0, (int16_t)(-8 * (j + 1)), 0);
		if (k + 1 < depth) {
			p[n++] = PG_INS(NBPF_ALU64 | NBPF_MOV | NBPF_X, 1, 6, 0, 0);
			call_at[k] = n;
			p[n++] = PG_INS(NBPF_OP_CALL, 0, NBPF_PSEUDO_CALL, 0, 0);
			p[n++] = PG_INS(NBPF_ALU64 | NBPF_MOV | NBPF_K, 0, 0, 0, 0);
			p[n++] = PG_INS(NBPF_OP_EXIT, 0, 0, 0, 0);
			continue;
		}
		p[n++] = PG_INS(NBPF_LDX | NBPF_MEM | NBPF_W, 7, 6, 24, 0);
		for (int i = 0; i < forks; i++)
			p[n++] = PG_INS(NBPF_JMP | NBPF_JSET | NBPF_K, 7, 0, 0, 1 << (i % 31));
		p[n++] = PG_INS(NBPF_ALU64 | NBPF_MOV | NBPF_X, 0, 7, 0, 0);
		p[n++] = PG_INS(NBPF_ALU64 | NBPF_AND | NBPF_K, 0, 0, 0, 1);
		p[n++] = PG_INS(NBPF_OP_EXIT, 0, 0, 0, 0);
	}
	return n;
}

/* The diamonds, at n in the frame of r6 (the context); r0 holds a sum of stack bytes after. */
static inline uint32_t patho_diamonds(struct nbpf_insn *p, uint32_t n, int diamonds, int uses)
{
	{
		/* a context field (the tuner's bytes) picks the side of each diamond */
		p[n++] = PG_INS(NBPF_LDX | NBPF_MEM | NBPF_W, 7, 6, 24, 0);
		for (int i = 0; i < diamonds; i++) {
			p[n++] = PG_INS(NBPF_JMP | NBPF_JSET | NBPF_K, 7, 0, 2, 1 << (i % 31));
			p[n++] = PG_INS(NBPF_ALU64 | NBPF_MOV | NBPF_K, 2, 0, 0, -8 * (24 + i));
			p[n++] = PG_INS(NBPF_OP_JA, 0, 0, 1, 0);
			p[n++] = PG_INS(NBPF_ALU64 | NBPF_MOV | NBPF_K, 2, 0, 0, -8 * (44 + i));
			p[n++] = PG_INS(NBPF_STX | NBPF_MEM | NBPF_DW, 10, 2, (int16_t)(-8 * (i + 1)), 0);
		}
		p[n++] = PG_INS(NBPF_ALU64 | NBPF_MOV | NBPF_K, 0, 0, 0, 0);
		for (int u = 0; u < uses; u++) {
			for (int i = 0; i < diamonds; i++) {
				p[n++] = PG_INS(NBPF_LDX | NBPF_MEM | NBPF_DW, 3, 10, (int16_t)(-8 * (i + 1)), 0);
				p[n++] = PG_INS(NBPF_ALU64 | NBPF_MOV | NBPF_X, 4, 10, 0, 0);
				p[n++] = PG_INS(NBPF_ALU64 | NBPF_ADD | NBPF_X, 4, 3, 0, 0);
				p[n++] = PG_INS(NBPF_LDX | NBPF_MEM | NBPF_DW, 5, 4, 0, 0);
				p[n++] = PG_INS(NBPF_ALU64 | NBPF_ADD | NBPF_X, 0, 5, 0, 0);
			}
		}
	}
	return n;
}

#endif
