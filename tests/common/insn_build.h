/* SPDX-License-Identifier: Apache-2.0 */
/*
 * insn_build.h - building eBPF programs in tests: one instruction
 * constructor, an append into a bounded buffer, the operation tables the
 * generators draw from, and the kernel-style shorthands hand-written test
 * programs read best in.  Shared by the program generators
 * (tests/verifier/fuzz_sound.c, tests/jit/fuzz_diff.c, tests/kdiff) so
 * that they build instructions one way.
 */
#ifndef NCCLBPF_TEST_INSN_BUILD_H
#define NCCLBPF_TEST_INSN_BUILD_H

#include <stdint.h>

#include "insn.h"

static inline struct nbpf_insn ib_insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off,
				       int32_t imm)
{
	return (struct nbpf_insn){ .code = code, .dst = dst, .src = src, .off = off, .imm = imm };
}

/*
 * Appends one slot to p[0..*n) if there is room (cap slots): generators
 * emit freely and a program that would overflow is simply cut, which the
 * verifier then refuses or the generator's epilogue, kept in reserve, ends.
 */
static inline void ib_put(struct nbpf_insn *p, uint32_t *n, uint32_t cap, uint8_t code,
			  uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	if (*n < cap)
		p[(*n)++] = ib_insn(code, dst, src, off, imm);
}

/* lddw: both slots or neither. */
static inline void ib_put_lddw(struct nbpf_insn *p, uint32_t *n, uint32_t cap, uint8_t dst,
			       uint8_t src, int32_t imm, int32_t imm2)
{
	if (*n + 2 <= cap) {
		ib_put(p, n, cap, NBPF_OP_LDDW, dst, src, 0, imm);
		ib_put(p, n, cap, 0, 0, 0, 0, imm2);
	}
}

/* Size field of a load or store of `bytes` (1, 2, 4, 8), and back. */
static inline uint8_t ib_size_code(int bytes)
{
	return bytes == 1 ? NBPF_B : bytes == 2 ? NBPF_H : bytes == 4 ? NBPF_W : NBPF_DW;
}

static inline int ib_size_bytes(uint8_t code)
{
	switch (NBPF_SIZE(code)) {
	case NBPF_B: return 1;
	case NBPF_H: return 2;
	case NBPF_W: return 4;
	default: return 8;
	}
}

/* Whether insn is a jump with an offset (conditional, ja or gotol), not a call or exit. */
static inline int ib_is_jump(const struct nbpf_insn *in)
{
	uint8_t cls = NBPF_CLASS(in->code), op = NBPF_OP(in->code);

	return (cls == NBPF_JMP || cls == NBPF_JMP32) && op != NBPF_CALL && op != NBPF_EXIT;
}

/* The signed distance a jump travels (gotol keeps it in imm). */
static inline int64_t ib_jump_off(const struct nbpf_insn *in)
{
	return in->code == NBPF_OP_GOTOL ? in->imm : in->off;
}

static inline void ib_set_jump_off(struct nbpf_insn *in, int64_t off)
{
	if (in->code == NBPF_OP_GOTOL)
		in->imm = (int32_t)off;
	else
		in->off = (int16_t)off;
}

/* A jump operator with its operands swapped: a < b is b > a. */
static inline uint8_t ib_jmp_mirror(uint8_t op)
{
	switch (op) {
	case NBPF_JGT: return NBPF_JLT;
	case NBPF_JLT: return NBPF_JGT;
	case NBPF_JGE: return NBPF_JLE;
	case NBPF_JLE: return NBPF_JGE;
	case NBPF_JSGT: return NBPF_JSLT;
	case NBPF_JSLT: return NBPF_JSGT;
	case NBPF_JSGE: return NBPF_JSLE;
	case NBPF_JSLE: return NBPF_JSGE;
	default: return op; /* JEQ, JNE and JSET are symmetric */
	}
}

static const uint8_t ib_sizes[4] = { NBPF_B, NBPF_H, NBPF_W, NBPF_DW };
/* Every two-operand ALU operation and NEG (no END: it has its own encoding). */
static const uint8_t ib_alu_ops[13] = { NBPF_ADD, NBPF_SUB, NBPF_MUL, NBPF_DIV, NBPF_OR,
					NBPF_AND, NBPF_LSH, NBPF_RSH, NBPF_NEG, NBPF_MOD,
					NBPF_XOR, NBPF_MOV, NBPF_ARSH };
/* Every conditional jump. */
static const uint8_t ib_jmp_ops[11] = { NBPF_JEQ, NBPF_JGT, NBPF_JGE, NBPF_JSET, NBPF_JNE,
					NBPF_JSGT, NBPF_JSGE, NBPF_JLT, NBPF_JLE, NBPF_JSLT,
					NBPF_JSLE };

/* Shorthands in the kernel's BPF_* style, for hand-written programs. */
#define IB_MOV64_IMM(d, i)        ib_insn(NBPF_ALU64 | NBPF_MOV | NBPF_K, (d), 0, 0, (i))
#define IB_MOV32_IMM(d, i)        ib_insn(NBPF_ALU | NBPF_MOV | NBPF_K, (d), 0, 0, (i))
#define IB_MOV64_REG(d, s)        ib_insn(NBPF_ALU64 | NBPF_MOV | NBPF_X, (d), (s), 0, 0)
#define IB_MOV32_REG(d, s)        ib_insn(NBPF_ALU | NBPF_MOV | NBPF_X, (d), (s), 0, 0)
#define IB_MOVSX64_REG(d, s, w)   ib_insn(NBPF_ALU64 | NBPF_MOV | NBPF_X, (d), (s), (w), 0)
#define IB_ALU64_IMM(op, d, i)    ib_insn(NBPF_ALU64 | (op) | NBPF_K, (d), 0, 0, (i))
#define IB_ALU32_IMM(op, d, i)    ib_insn(NBPF_ALU | (op) | NBPF_K, (d), 0, 0, (i))
#define IB_ALU64_REG(op, d, s)    ib_insn(NBPF_ALU64 | (op) | NBPF_X, (d), (s), 0, 0)
#define IB_ALU32_REG(op, d, s)    ib_insn(NBPF_ALU | (op) | NBPF_X, (d), (s), 0, 0)
#define IB_LDX(sz, d, s, o)       ib_insn(NBPF_LDX | NBPF_MEM | (sz), (d), (s), (o), 0)
#define IB_LDXSX(sz, d, s, o)     ib_insn(NBPF_LDX | NBPF_MEMSX | (sz), (d), (s), (o), 0)
#define IB_STX(sz, d, s, o)       ib_insn(NBPF_STX | NBPF_MEM | (sz), (d), (s), (o), 0)
#define IB_ST(sz, d, o, i)        ib_insn(NBPF_ST | NBPF_MEM | (sz), (d), 0, (o), (i))
#define IB_JMP_IMM(op, d, i, o)   ib_insn(NBPF_JMP | (op) | NBPF_K, (d), 0, (o), (i))
#define IB_JMP32_IMM(op, d, i, o) ib_insn(NBPF_JMP32 | (op) | NBPF_K, (d), 0, (o), (i))
#define IB_JMP_REG(op, d, s, o)   ib_insn(NBPF_JMP | (op) | NBPF_X, (d), (s), (o), 0)
#define IB_JA(o)                  ib_insn(NBPF_OP_JA, 0, 0, (o), 0)
#define IB_CALL(id)               ib_insn(NBPF_OP_CALL, 0, 0, 0, (id))
#define IB_CALL_LOCAL(o)          ib_insn(NBPF_OP_CALL, 0, NBPF_PSEUDO_CALL, 0, (o))
#define IB_EXIT()                 ib_insn(NBPF_OP_EXIT, 0, 0, 0, 0)
/* lddw is two slots: IB_LDDW_MAP(...), IB_LDDW_HI(...) */
#define IB_LDDW_MAP(d, idx)       ib_insn(NBPF_OP_LDDW, (d), NBPF_PSEUDO_MAP_IDX, 0, (idx))
#define IB_LDDW_MAP_VALUE(d, idx) ib_insn(NBPF_OP_LDDW, (d), NBPF_PSEUDO_MAP_IDX_VALUE, 0, (idx))
#define IB_LDDW_HI(i)             ib_insn(0, 0, 0, 0, (i))

#endif
