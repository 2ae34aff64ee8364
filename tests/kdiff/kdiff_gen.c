// SPDX-License-Identifier: Apache-2.0
/*
 * kdiff_gen.c - the generator's vocabulary (kdiff_gen.h): a deterministic
 * random source, values (a context field, a map value at any width,
 * signed or not, a constant, a helper's result), operations (every ALU
 * operation of both widths, movsx, byte swaps), checks (every jump of both
 * widths, the constant on either side, random or aimed at the edge of the
 * use they guard) and uses whose safety depends on the bounds (an access
 * at base + value near an edge of the stack frame or the map value, a
 * helper's size argument, a divisor, the returned value).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "helpers.h"
#include "insn_build.h"
#include "kdiff_gen.h"

static uint64_t kg_rnd64(struct gen *g)
{
	return kd_mix(g->s++);
}

uint32_t kg_rnd(struct gen *g, uint32_t n)
{
	return n ? (uint32_t)(kg_rnd64(g) % n) : 0;
}

bool kg_pct(struct gen *g, uint32_t p)
{
	return kg_rnd(g, 100) < p;
}

void kg_put(struct gen *g, uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	ib_put(g->p, &g->n, g->cap, code, dst, src, off, imm);
}

void kg_put_lddw(struct gen *g, uint8_t dst, uint8_t src, int32_t imm, int32_t imm2)
{
	ib_put_lddw(g->p, &g->n, g->cap, dst, src, imm, imm2);
}

/* A forward jump to patch with kg_land(); UINT32_MAX when the program is full. */
uint32_t kg_jfwd(struct gen *g, uint8_t code, uint8_t dst, uint8_t src, int32_t imm)
{
	uint32_t at = g->n;

	kg_put(g, code, dst, src, 0, imm);
	return g->n > at ? at : UINT32_MAX;
}

void kg_land(struct gen *g, uint32_t at)
{
	if (at != UINT32_MAX)
		ib_set_jump_off(&g->p[at], (int64_t)g->n - at - 1);
}

/* Constants at the edges where bounds go wrong: widths, signs, powers of two. */
int32_t kg_edge(struct gen *g)
{
	static const int32_t e[] = { 0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 127, 128, 255, 256,
				     511, 512, 0x7fff, 0x8000, 0xffff, 0x10000, 0x7fffffff, INT32_MIN,
				     -1, -2, -4, -7, -8, -16, -64, -127, -128, -129, -255, -256,
				     -512, -32768, -32769 };

	switch (kg_rnd(g, 4)) {
	case 0:
		return (int32_t)kg_rnd(g, 20) - 4;
	case 1:
		return (int32_t)kg_rnd64(g);
	default:
		return e[kg_rnd(g, sizeof(e) / sizeof(e[0]))];
	}
}

/* A bound an index is checked against: mostly small, sometimes at a sign or width edge. */
int32_t kg_bound(struct gen *g)
{
	static const int32_t e[] = { 0, 1, 7, 8, 15, 16, 31, 32, 56, 63, 64, 127, 128, 255, 256,
				     -1, -8, -128, 0x7fff, 0x8000, 0x7fffffff, INT32_MIN };

	return kg_pct(g, 55) ? (int32_t)kg_rnd(g, 18) : e[kg_rnd(g, sizeof(e) / sizeof(e[0]))];
}

/* A mask that makes a value fit a width, or nearly. */
int32_t kg_mask(struct gen *g)
{
	static const int32_t m[] = { 0xff, 0x7f, 0xf, 7, 0x3f, 0xffff, 0x7fff, 0x1ff, 0x80, 0xf0,
				     -8, 0x7fffffff, -1, 0x8000ff, 0x18 };

	return m[kg_rnd(g, sizeof(m) / sizeof(m[0]))];
}

int kg_width(struct gen *g)
{
	return 1 << kg_rnd(g, 4);
}

/* A value register: r8 or r9, or a scratch one, never a loop counter. */
uint8_t kg_val(struct gen *g)
{
	for (;;) {
		uint8_t r = kg_pct(g, 60) ? (uint8_t)(8 + kg_rnd(g, 2)) : (uint8_t)kg_rnd(g, 6);

		if (r != g->loop_reg)
			return r;
	}
}

/* r8 or r9, whichever is not a loop counter. */
uint8_t kg_val89(struct gen *g)
{
	uint8_t r = (uint8_t)(8 + kg_rnd(g, 2));

	return r == g->loop_reg ? (uint8_t)(17 - r) : r;
}

/* A scratch register holding nothing the fragment still needs. */
uint8_t kg_scratch(struct gen *g, uint32_t avoid)
{
	uint32_t start = kg_rnd(g, 6);

	for (uint32_t i = 0; i < 6; i++) {
		uint8_t r = (uint8_t)((start + i) % 6);

		if (!((avoid | g->busy) & (1u << r)))
			return r;
	}
	return 0;
}

uint8_t kg_other(struct gen *g, uint8_t a)
{
	for (;;) {
		uint8_t r = kg_val(g);

		if (r != a)
			return r;
	}
}

int16_t kg_top_slot(struct gen *g)
{
	return (int16_t)(-8 * (int)(1 + kg_rnd(g, 8)));
}

/* ---- values ---- */

/* A context field read at a width it allows, at a natural alignment inside it. */
void kg_ctx_load(struct gen *g, uint8_t d, uint8_t mode)
{
	const struct ncclbpf_ctx_field *f = &kd_hook.fields[kg_rnd(g, kd_hook.n_fields)];
	int w = 1 << kg_rnd(g, 3);

	if ((uint32_t)w > f->size)
		w = (int)f->size;
	kg_put(g, NBPF_LDX | mode | ib_size_code(w), d, 6,
	    (int16_t)(f->off + (uint32_t)w * kg_rnd(g, f->size / (uint32_t)w)), 0);
}

/*
 * A helper whose result is a value.  Not get_smp_processor_id: the kernel
 * bounds it by the machine's CPU count, our runtime's by its thread slots,
 * so verdicts on it would depend on the machine.
 */
int32_t kg_helper_value(struct gen *g)
{
	return kg_pct(g, 50) ? NBPF_HELPER_PRANDOM_U32 : NBPF_HELPER_KTIME_GET_NS;
}

void kg_src_value(struct gen *g, uint8_t d)
{
	int w = kg_width(g);

	switch (kg_rnd(g, 11)) {
	case 0: case 1:
		kg_ctx_load(g, d, NBPF_MEM);
		break;
	case 2: case 3: case 4: /* the global data value: any width, signed or not */
		kg_put(g, NBPF_LDX | (w < 8 && kg_pct(g, 35) ? NBPF_MEMSX : NBPF_MEM) | ib_size_code(w), d, 7,
		    (int16_t)(w * (int)kg_rnd(g, 64 / w)), 0);
		break;
	case 5:
		kg_put(g, (kg_pct(g, 75) ? NBPF_ALU64 : NBPF_ALU) | NBPF_MOV | NBPF_K, d, 0, 0, kg_edge(g));
		break;
	case 6:
		kg_put_lddw(g, d, 0, kg_edge(g), kg_edge(g));
		break;
	case 7: /* another value (r8 and r9 hold values once the prologue is done) */
		if (g->n > 3 + 8)
			kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, d, (uint8_t)(8 + kg_rnd(g, 2)), 0, 0);
		else
			kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, d, 0, 0, kg_edge(g));
		break;
	case 8: /* an initialised stack slot */
		kg_put(g, NBPF_LDX | NBPF_MEM | ib_size_code(w), d, 10, (int16_t)(kg_top_slot(g) + 0), 0);
		break;
	case 9: /* a helper's result (r1-r5 are clobbered, so only into r0 or r8/r9) */
		if (d == 0 || d >= 6) {
			kg_put(g, NBPF_OP_CALL, 0, 0, 0, kg_helper_value(g));
			if (d)
				kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, d, 0, 0, 0);
			break;
		}
		/* fall through */
	default: /* two halves: a context field on top of a map value */
		kg_ctx_load(g, d, NBPF_MEM);
		kg_put(g, NBPF_ALU64 | NBPF_LSH | NBPF_K, d, 0, 0, 32);
		kg_put(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, d, 0, 0, kg_edge(g));
		break;
	}
}

/* ---- operations ---- */

void kg_alu_one(struct gen *g, uint8_t v, int src)
{
	bool is64 = kg_pct(g, 65);
	uint8_t cls = is64 ? NBPF_ALU64 : NBPF_ALU;
	int bits = is64 ? 64 : 32;

	switch (kg_rnd(g, 16)) {
	case 0:
		kg_put(g, cls | NBPF_AND | NBPF_K, v, 0, 0, kg_mask(g));
		break;
	case 1:
		kg_put(g, cls | NBPF_RSH | NBPF_K, v, 0, 0, (int32_t)kg_rnd(g, (uint32_t)bits));
		break;
	case 2:
		kg_put(g, cls | NBPF_ARSH | NBPF_K, v, 0, 0, (int32_t)kg_rnd(g, (uint32_t)bits));
		break;
	case 3:
		kg_put(g, cls | NBPF_LSH | NBPF_K, v, 0, 0, (int32_t)kg_rnd(g, (uint32_t)bits));
		break;
	case 4: /* (no division: the kernel does not bound its result, see frag_div) */
		kg_put(g, cls | NBPF_XOR | NBPF_K, v, 0, 0, kg_mask(g));
		break;
	case 5: case 6:
		kg_put(g, cls | (kg_pct(g, 50) ? NBPF_ADD : NBPF_SUB) | NBPF_K, v, 0, 0, kg_edge(g));
		break;
	case 7:
		kg_put(g, cls | NBPF_MUL | NBPF_K, v, 0, 0, (int32_t)kg_rnd(g, 19) - 9);
		break;
	case 8:
		kg_put(g, cls | (kg_pct(g, 50) ? NBPF_OR : NBPF_XOR) | NBPF_K, v, 0, 0, kg_edge(g));
		break;
	case 9:
		kg_put(g, cls | NBPF_NEG, v, 0, 0, 0);
		break;
	case 10: { /* movsx: 64-bit from 8, 16, 32 bits; 32-bit from 8, 16 */
		int16_t w = (int16_t)(8 << kg_rnd(g, is64 ? 3 : 2));

		kg_put(g, cls | NBPF_MOV | NBPF_X, v, src >= 0 ? (uint8_t)src : v, w, 0);
		break;
	}
	case 11: /* a 32-bit copy: zero extension */
		kg_put(g, NBPF_ALU | NBPF_MOV | NBPF_X, v, src >= 0 ? (uint8_t)src : v, 0, 0);
		break;
	case 12: { /* byte swaps */
		static const int32_t w[] = { 16, 32, 64 };

		if (kg_pct(g, 40))
			kg_put(g, NBPF_ALU64 | NBPF_END, v, 0, 0, w[kg_rnd(g, 3)]);
		else
			kg_put(g, NBPF_ALU | NBPF_END | (kg_pct(g, 50) ? NBPF_TO_BE : NBPF_TO_LE), v, 0, 0,
			    w[kg_rnd(g, 3)]);
		break;
	}
	default: { /* register operand */
		static const uint8_t ops[] = { NBPF_ADD, NBPF_SUB, NBPF_MUL, NBPF_OR, NBPF_AND,
					       NBPF_XOR, NBPF_LSH, NBPF_RSH, NBPF_ARSH, NBPF_MOV };
		uint8_t op = ops[kg_rnd(g, sizeof(ops))], r = src >= 0 ? (uint8_t)src : (uint8_t)(8 + kg_rnd(g, 2));

		/*
		 * A count past the width is masked by the ISA (and our engines)
		 * but unknown to the kernel: mask it, so that the kernel judges.
		 */
		if (op == NBPF_LSH || op == NBPF_RSH || op == NBPF_ARSH) {
			uint8_t t = kg_scratch(g, 1u << v);

			kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, t, r, 0, 0);
			kg_put(g, NBPF_ALU64 | NBPF_AND | NBPF_K, t, 0, 0, bits - 1);
			r = t;
		}
		kg_put(g, cls | op | NBPF_X, v, r, 0, 0);
		break;
	}
	}
}

/* A chain of 0-3 operations. */
void kg_shape(struct gen *g, uint8_t v)
{
	int k = (int)kg_rnd(g, 4);

	while (k--)
		kg_alu_one(g, v, -1);
}

/* Weighted: signed comparisons, unsigned ones, then equality and JSET. */
uint8_t kg_jop(struct gen *g)
{
	static const uint8_t sg[] = { NBPF_JSGT, NBPF_JSGE, NBPF_JSLT, NBPF_JSLE };
	static const uint8_t us[] = { NBPF_JGT, NBPF_JGE, NBPF_JLT, NBPF_JLE };
	static const uint8_t eq[] = { NBPF_JEQ, NBPF_JNE, NBPF_JSET };
	uint32_t r = kg_rnd(g, 10);

	return r < 4 ? sg[kg_rnd(g, 4)] : r < 8 ? us[kg_rnd(g, 4)] : eq[kg_rnd(g, 3)];
}

/*
 * A check on v that jumps past the rest of the fragment: 64 or 32 bits,
 * against an immediate or a register holding the constant, on either side.
 */
uint32_t kg_check(struct gen *g, uint8_t v, uint32_t avoid)
{
	uint8_t cls = kg_pct(g, 30) ? NBPF_JMP32 : NBPF_JMP, op = kg_jop(g);
	int32_t k = kg_bound(g);

	if (op == NBPF_JSET && kg_pct(g, 70)) /* mostly the high bits: "if (x & ~(2^k - 1))" */
		k = -(1 << kg_rnd(g, 12));

	if (kg_pct(g, 60))
		return kg_jfwd(g, cls | op | NBPF_K, v, 0, k);
	{
		uint8_t t = kg_scratch(g, avoid | 1u << v);

		kg_put(g, (kg_pct(g, 60) ? NBPF_ALU64 : NBPF_ALU) | NBPF_MOV | NBPF_K, t, 0, 0, k);
		if (kg_pct(g, 50))
			return kg_jfwd(g, cls | op | NBPF_X, t, v, 0); /* the constant on the left */
		return kg_jfwd(g, cls | op | NBPF_X, v, t, 0);
	}
}

/* ---- uses that need bounds ---- */

/* An access of w bytes at t + off, a load or a store. */
static void kg_access_w(struct gen *g, uint8_t t, int16_t off, int w)
{
	uint8_t r = t == 0 ? 1 : 0;

	switch (kg_rnd(g, 3)) {
	case 0:
		kg_put(g, NBPF_LDX | (w < 8 && kg_pct(g, 20) ? NBPF_MEMSX : NBPF_MEM) | ib_size_code(w), r, t,
		    off, 0);
		break;
	case 1:
		kg_put(g, NBPF_ST | NBPF_MEM | ib_size_code(w), t, 0, off, kg_edge(g));
		break;
	default:
		kg_put(g, NBPF_STX | NBPF_MEM | ib_size_code(w), t, (uint8_t)(8 + kg_rnd(g, 2)), off, 0);
		break;
	}
}

void kg_access(struct gen *g, uint8_t t, int16_t off)
{
	kg_access_w(g, t, off, kg_width(g));
}

void kg_plan_use(struct gen *g, struct use *u)
{
	uint32_t r = kg_rnd(g, 10);

	memset(u, 0, sizeof(*u));
	u->w = kg_width(g);
	/*
	 * The kernel keeps a pointer's variable offset unsigned, and wants a
	 * variable stack access aligned by the offset's known bits: such
	 * uses, which only we can judge, are rare.
	 */
	u->sub = kg_pct(g, 3);
	if (r < 3) { /* the stack, near the top or the bottom of the frame */
		u->kind = USE_STACK;
		u->base = kg_pct(g, 60) ? kg_top_slot(g) : (int16_t)(g->floor + 8 * (int)kg_rnd(g, 8));
		if (kg_pct(g, 90))
			u->w = kg_pct(g, 70) ? 1 : u->w;
		u->off = (int16_t)(kg_pct(g, 70) ? 0 : (int)kg_rnd(g, 17) - 8);
		if (kg_pct(g, 95))
			u->off = (int16_t)(u->off & ~(u->w - 1));
		u->room = u->sub ? u->base + u->off + NBPF_STACK_SIZE : -(u->base + u->off + u->w);
	} else if (r < 6 || r == 7) { /* the global data value, or its 32-bit view */
		u->kind = r == 7 ? USE_MAP32 : USE_MAP;
		u->sub = false; /* the kernel cannot judge a map value pointer minus a value */
		u->off = (int16_t)(kg_pct(g, 50) ? 0 : kg_pct(g, 50) ? 56 : (int)kg_rnd(g, 70) - 3);
		u->room = u->sub ? u->off : 64 - u->off - u->w;
	} else if (r == 6) {
		u->kind = USE_SIZE;
		u->room = 64;
	} else if (r == 9) { /* returned: r0 must stay in the range proven */
		u->kind = USE_RETURN;
		u->room = (int32_t)kg_bound(g);
	} else {
		u->kind = USE_DIVISOR;
		u->room = -1;
	}
}

void kg_emit_use(struct gen *g, uint8_t v, const struct use *u)
{
	uint8_t t = v == 5 ? 4 : 5;

	switch (u->kind) {
	case USE_STACK:
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, t, 10, 0, 0);
		kg_put(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, t, 0, 0, u->base);
		kg_put(g, NBPF_ALU64 | (u->sub && kg_pct(g, 30) ? NBPF_SUB : NBPF_ADD) | NBPF_X, t, v, 0, 0);
		/* the kernel wants a variable stack offset aligned by its known bits */
		kg_access_w(g, t, u->off, u->aligned || kg_pct(g, 5) ? u->w : 1);
		break;
	case USE_MAP:
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, t, 7, 0, 0);
		kg_put(g, NBPF_ALU64 | (u->sub ? NBPF_SUB : NBPF_ADD) | NBPF_X, t, v, 0, 0);
		kg_access_w(g, t, u->off, u->w);
		break;
	case USE_MAP32: /* pointer arithmetic through a 32-bit copy of the value */
		kg_put(g, NBPF_ALU | NBPF_MOV | NBPF_X, t, v, 0, 0);
		kg_put(g, NBPF_ALU64 | NBPF_ADD | NBPF_X, t, 7, 0, 0);
		kg_access_w(g, t, u->off, u->w);
		break;
	case USE_RETURN:
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 0, v, 0, 0);
		kg_put(g, NBPF_OP_EXIT, 0, 0, 0, 0);
		break;
	case USE_SIZE: /* ringbuf_output(rb, fp - 64, v, 0) */
		if (v != 3)
			kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 3, v, 0, 0);
		kg_put_lddw(g, 1, NBPF_PSEUDO_MAP_IDX, KD_MAP_RB, 0);
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 2, 10, 0, 0);
		kg_put(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, 2, 0, 0, -64);
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 4, 0, 0, 0);
		kg_put(g, NBPF_OP_CALL, 0, 0, 0, NBPF_HELPER_RINGBUF_OUTPUT);
		break;
	default: { /* a divisor (the quotient is dead: see frag_div) */
		uint8_t d = kg_scratch(g, 1u << v);

		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, d, 8, 0, 0);
		kg_put(g, (kg_pct(g, 60) ? NBPF_ALU64 : NBPF_ALU) | (kg_pct(g, 50) ? NBPF_DIV : NBPF_MOD) | NBPF_X,
		    d, v, (int16_t)kg_pct(g, 30), 0);
		break;
	}
	}
}

void kg_sink(struct gen *g, uint8_t v)
{
	struct use u;

	kg_plan_use(g, &u);
	kg_emit_use(g, v, &u);
}

/* if (v OP k) skip, against an immediate or a register holding k, on either side. */
uint32_t kg_skip_if(struct gen *g, uint8_t cls, uint8_t op, uint8_t v, int32_t k, uint32_t avoid)
{
	uint8_t t;

	if (kg_pct(g, 55))
		return kg_jfwd(g, cls | op | NBPF_K, v, 0, k);
	t = kg_scratch(g, avoid | 1u << v);
	kg_put(g, (kg_pct(g, 70) ? NBPF_ALU64 : NBPF_ALU) | NBPF_MOV | NBPF_K, t, 0, 0, k);
	if (kg_pct(g, 50))
		return kg_jfwd(g, cls | ib_jmp_mirror(op) | NBPF_X, t, v, 0); /* the constant on the left */
	return kg_jfwd(g, cls | op | NBPF_X, v, t, 0);
}

/*
 * Checks that aim at the use's edge: the value's range on the way to the
 * use is [0, room] (or off by one), by an unsigned bound, a signed pair,
 * a mask's JSET, or a nonzero test for a divisor; 32-bit forms too.
 */
static int kg_aimed_checks(struct gen *g, uint8_t c, const struct use *u, uint32_t avoid, uint32_t *at)
{
	uint8_t cls = kg_pct(g, 25) ? NBPF_JMP32 : NBPF_JMP;
	int32_t k = u->room + (kg_pct(g, 15) ? 1 : 0);

	if (u->kind == USE_DIVISOR) {
		at[0] = kg_skip_if(g, cls, kg_pct(g, 80) ? NBPF_JEQ : NBPF_JLE, c, 0, avoid);
		return 1;
	}
	if (k < 0)
		k = 0;
	switch (kg_rnd(g, 5)) {
	case 0: case 1: /* unsigned */
		at[0] = kg_pct(g, 50) ? kg_skip_if(g, cls, NBPF_JGT, c, k, avoid)
				   : kg_skip_if(g, cls, NBPF_JGE, c, k + 1, avoid);
		return 1;
	case 2: case 3: /* signed: both ends */
		at[0] = kg_pct(g, 50) ? kg_skip_if(g, cls, NBPF_JSGT, c, k, avoid)
				   : kg_skip_if(g, cls, NBPF_JSGE, c, k + 1, avoid);
		at[1] = kg_pct(g, 50) ? kg_skip_if(g, cls, NBPF_JSLT, c, 0, avoid)
				   : kg_skip_if(g, cls, NBPF_JSLE, c, -1, avoid);
		if (kg_pct(g, 10)) /* the lower end missing */
			return 1;
		return 2;
	default: { /* high bits clear (JSET with a mask), then unsigned */
		int32_t m = ~0;

		while (m && (uint32_t)~m <= (uint32_t)k / 2)
			m = (int32_t)((uint32_t)m << 1);
		at[0] = kg_skip_if(g, cls, NBPF_JSET, c, k ? m : ~0, avoid);
		at[1] = kg_skip_if(g, cls, NBPF_JGT, c, k, avoid);
		return 2;
	}
	}
}

/* Checks (random, or aimed at the use's edge) on c, the use through u, the checks landing after it. */
void kg_checks_then_sink(struct gen *g, uint8_t c, uint8_t v, int min_checks)
{
	uint32_t at[3];
	int k;
	struct use u;

	kg_plan_use(g, &u);
	/*
	 * A variable stack offset must be aligned by its known bits for the
	 * kernel: masked before the checks (masking after them would meet the
	 * kernel's coarser AND), or one byte wide when checked through a copy.
	 */
	if (u.kind == USE_STACK && u.w > 1) {
		if (c == v && kg_pct(g, 85)) {
			kg_put(g, NBPF_ALU64 | NBPF_AND | NBPF_K, v, 0, 0, -u.w);
			u.aligned = true;
		} else if (c != v) {
			u.w = 1;
		}
		u.room = u.sub ? u.base + u.off + NBPF_STACK_SIZE : -(u.base + u.off + u.w);
	}
	if (kg_pct(g, 55)) {
		k = kg_aimed_checks(g, c, &u, 1u << v, at);
	} else {
		k = min_checks + (int)kg_rnd(g, 3 - (uint32_t)min_checks);
		for (int i = 0; i < k; i++)
			at[i] = kg_check(g, c, 1u << v);
	}
	kg_emit_use(g, v, &u);
	for (int i = 0; i < k; i++)
		kg_land(g, at[i]);
}

