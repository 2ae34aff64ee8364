/*
 * x86_emit.h - a minimal x86-64 instruction encoder for the JIT.
 *
 * The encoder writes into a struct nbpf_x86 buffer.  When buf is NULL it
 * only counts bytes, which is how the JIT's sizing passes run: the same
 * code path produces the size and, later, the bytes, so the two cannot
 * disagree.  Only the handful of forms the translator needs are here.
 */
#ifndef NCCLBPF_JIT_X86_EMIT_H
#define NCCLBPF_JIT_X86_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum {
	X_RAX = 0, X_RCX, X_RDX, X_RBX, X_RSP, X_RBP, X_RSI, X_RDI,
	X_R8, X_R9, X_R10, X_R11, X_R12, X_R13, X_R14, X_R15,
};

/* Condition codes (low nibble of Jcc). */
enum {
	CC_B = 0x2, CC_AE = 0x3, CC_E = 0x4, CC_NE = 0x5, CC_BE = 0x6, CC_A = 0x7,
	CC_L = 0xc, CC_GE = 0xd, CC_LE = 0xe, CC_G = 0xf,
};

/* Group-1 ALU operations: /ext for 0x81/0x83 and opcode base for r/m,reg forms. */
enum { G1_ADD = 0, G1_OR = 1, G1_AND = 4, G1_SUB = 5, G1_XOR = 6, G1_CMP = 7 };

struct nbpf_x86 {
	uint8_t *buf;   /* NULL: count only */
	size_t pos;
	size_t cap;     /* bytes available in buf */
	bool overflow;  /* a write past cap was refused (internal error) */
};

static inline bool x86_fits8(int64_t v) { return v >= -128 && v <= 127; }
static inline bool x86_fits32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

static inline void x86_byte(struct nbpf_x86 *e, uint8_t b)
{
	if (e->buf) {
		if (e->pos >= e->cap) {
			e->overflow = true;
			return;
		}
		e->buf[e->pos] = b;
	}
	e->pos++;
}

static inline void x86_u16(struct nbpf_x86 *e, uint16_t v)
{
	x86_byte(e, (uint8_t)v);
	x86_byte(e, (uint8_t)(v >> 8));
}

static inline void x86_u32(struct nbpf_x86 *e, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		x86_byte(e, (uint8_t)(v >> (8 * i)));
}

static inline void x86_u64(struct nbpf_x86 *e, uint64_t v)
{
	x86_u32(e, (uint32_t)v);
	x86_u32(e, (uint32_t)(v >> 32));
}

/* Overwrites a byte already emitted (local forward branches). */
static inline void x86_patch8(struct nbpf_x86 *e, size_t at, uint8_t v)
{
	if (e->buf && at < e->cap)
		e->buf[at] = v;
}

/*
 * One instruction with a ModRM operand: optional REX, the opcode bytes,
 * ModRM (register-direct when !mem) and the displacement.  byteop forces a
 * REX prefix when a byte register 4..7 is named, so sil/dil/bpl/spl are
 * meant rather than ah/ch/dh/bh.
 */
static inline void x86_rm(struct nbpf_x86 *e, int w, int byteop, const uint8_t *op, int oplen,
			  int reg, bool mem, int base, int32_t disp)
{
	uint8_t rex = 0x40 | (w ? 8 : 0) | ((reg & 8) ? 4 : 0) | ((base & 8) ? 1 : 0);

	if (rex != 0x40 || (byteop && ((reg & 0xf) >= 4 || (!mem && base >= 4))))
		x86_byte(e, rex);
	for (int i = 0; i < oplen; i++)
		x86_byte(e, op[i]);
	if (!mem) {
		x86_byte(e, (uint8_t)(0xc0 | ((reg & 7) << 3) | (base & 7)));
		return;
	}
	if (disp == 0 && (base & 7) != X_RBP) {
		x86_byte(e, (uint8_t)(((reg & 7) << 3) | (base & 7)));
		if ((base & 7) == X_RSP)
			x86_byte(e, 0x24);
	} else if (x86_fits8(disp)) {
		x86_byte(e, (uint8_t)(0x40 | ((reg & 7) << 3) | (base & 7)));
		if ((base & 7) == X_RSP)
			x86_byte(e, 0x24);
		x86_byte(e, (uint8_t)disp);
	} else {
		x86_byte(e, (uint8_t)(0x80 | ((reg & 7) << 3) | (base & 7)));
		if ((base & 7) == X_RSP)
			x86_byte(e, 0x24);
		x86_u32(e, (uint32_t)disp);
	}
}

static inline void x86_op1_rr(struct nbpf_x86 *e, int w, uint8_t op, int reg, int rm)
{
	x86_rm(e, w, 0, &op, 1, reg, false, rm, 0);
}

static inline void x86_op2_rr(struct nbpf_x86 *e, int w, uint8_t op, int reg, int rm)
{
	uint8_t o[2] = { 0x0f, op };

	x86_rm(e, w, 0, o, 2, reg, false, rm, 0);
}

/* dst = dst OP src for group-1 ops (and cmp). */
static inline void x86_alu_rr(struct nbpf_x86 *e, int w, int g1, int dst, int src)
{
	x86_op1_rr(e, w, (uint8_t)(g1 * 8 + 1), src, dst);
}

static inline void x86_alu_ri(struct nbpf_x86 *e, int w, int g1, int dst, int32_t imm)
{
	if (x86_fits8(imm)) {
		x86_op1_rr(e, w, 0x83, g1, dst);
		x86_byte(e, (uint8_t)imm);
	} else {
		x86_op1_rr(e, w, 0x81, g1, dst);
		x86_u32(e, (uint32_t)imm);
	}
}

static inline void x86_mov_rr(struct nbpf_x86 *e, int w, int dst, int src)
{
	x86_op1_rr(e, w, 0x89, src, dst);
}

static inline void x86_test_rr(struct nbpf_x86 *e, int w, int a, int b)
{
	x86_op1_rr(e, w, 0x85, b, a);
}

static inline void x86_test_ri(struct nbpf_x86 *e, int w, int r, int32_t imm)
{
	x86_op1_rr(e, w, 0xf7, 0, r);
	x86_u32(e, (uint32_t)imm);
}

/* dst = imm64, choosing the shortest encoding (flags untouched). */
static inline void x86_mov_imm64(struct nbpf_x86 *e, int dst, uint64_t imm)
{
	if (imm <= UINT32_MAX) {
		if (dst & 8)
			x86_byte(e, 0x41);
		x86_byte(e, (uint8_t)(0xb8 + (dst & 7)));
		x86_u32(e, (uint32_t)imm);
	} else if (x86_fits32((int64_t)imm)) {
		x86_op1_rr(e, 1, 0xc7, 0, dst);
		x86_u32(e, (uint32_t)imm);
	} else {
		x86_byte(e, (uint8_t)(0x48 | ((dst & 8) ? 1 : 0)));
		x86_byte(e, (uint8_t)(0xb8 + (dst & 7)));
		x86_u64(e, imm);
	}
}

/* dst = imm64 always in the 10-byte form (addresses patched by size-stable passes). */
static inline void x86_movabs(struct nbpf_x86 *e, int dst, uint64_t imm)
{
	x86_byte(e, (uint8_t)(0x48 | ((dst & 8) ? 1 : 0)));
	x86_byte(e, (uint8_t)(0xb8 + (dst & 7)));
	x86_u64(e, imm);
}

static inline void x86_push(struct nbpf_x86 *e, int r)
{
	if (r & 8)
		x86_byte(e, 0x41);
	x86_byte(e, (uint8_t)(0x50 + (r & 7)));
}

static inline void x86_pop(struct nbpf_x86 *e, int r)
{
	if (r & 8)
		x86_byte(e, 0x41);
	x86_byte(e, (uint8_t)(0x58 + (r & 7)));
}

/* lea dst, [base + disp] */
static inline void x86_lea(struct nbpf_x86 *e, int dst, int base, int32_t disp)
{
	uint8_t op = 0x8d;

	x86_rm(e, 1, 0, &op, 1, dst, true, base, disp);
}

/* Shift/rotate group 2 by imm8: ext 0 rol, 1 ror, 4 shl, 5 shr, 7 sar. */
static inline void x86_shift_ri(struct nbpf_x86 *e, int w, int ext, int dst, uint8_t n)
{
	x86_op1_rr(e, w, 0xc1, ext, dst);
	x86_byte(e, n);
}

static inline void x86_shift_cl(struct nbpf_x86 *e, int w, int ext, int dst)
{
	x86_op1_rr(e, w, 0xd3, ext, dst);
}

/* Load/store through [base + disp]; size 1, 2, 4 or 8. */
static inline void x86_load_zx(struct nbpf_x86 *e, int size, int dst, int base, int32_t disp)
{
	static const uint8_t movzb[2] = { 0x0f, 0xb6 }, movzw[2] = { 0x0f, 0xb7 };
	uint8_t mov = 0x8b;

	if (size == 1)
		x86_rm(e, 0, 0, movzb, 2, dst, true, base, disp);
	else if (size == 2)
		x86_rm(e, 0, 0, movzw, 2, dst, true, base, disp);
	else
		x86_rm(e, size == 8, 0, &mov, 1, dst, true, base, disp);
}

static inline void x86_load_sx(struct nbpf_x86 *e, int size, int dst, int base, int32_t disp)
{
	static const uint8_t movsb[2] = { 0x0f, 0xbe }, movsw[2] = { 0x0f, 0xbf };
	uint8_t movsxd = 0x63;

	if (size == 1)
		x86_rm(e, 1, 0, movsb, 2, dst, true, base, disp);
	else if (size == 2)
		x86_rm(e, 1, 0, movsw, 2, dst, true, base, disp);
	else
		x86_rm(e, 1, 0, &movsxd, 1, dst, true, base, disp);
}

static inline void x86_store_r(struct nbpf_x86 *e, int size, int base, int32_t disp, int src)
{
	uint8_t op = size == 1 ? 0x88 : 0x89;

	if (size == 2)
		x86_byte(e, 0x66);
	x86_rm(e, size == 8, size == 1, &op, 1, src, true, base, disp);
}

static inline void x86_store_i(struct nbpf_x86 *e, int size, int base, int32_t disp, int32_t imm)
{
	uint8_t op = size == 1 ? 0xc6 : 0xc7;

	if (size == 2)
		x86_byte(e, 0x66);
	x86_rm(e, size == 8, 0, &op, 1, 0, true, base, disp);
	if (size == 1)
		x86_byte(e, (uint8_t)imm);
	else if (size == 2)
		x86_u16(e, (uint16_t)imm);
	else
		x86_u32(e, (uint32_t)imm);
}

/* Jumps.  The rel8 forms return the offset of the displacement byte to patch. */
static inline size_t x86_jcc8(struct nbpf_x86 *e, int cc)
{
	x86_byte(e, (uint8_t)(0x70 + cc));
	x86_byte(e, 0);
	return e->pos - 1;
}

static inline size_t x86_jmp8(struct nbpf_x86 *e)
{
	x86_byte(e, 0xeb);
	x86_byte(e, 0);
	return e->pos - 1;
}

/* Points a rel8 emitted at `at` to the current position. */
static inline void x86_land8(struct nbpf_x86 *e, size_t at)
{
	int64_t d = (int64_t)e->pos - (int64_t)(at + 1);

	if (!x86_fits8(d))
		e->overflow = true;
	x86_patch8(e, at, (uint8_t)d);
}

#endif
