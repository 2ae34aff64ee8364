/*
 * fuzz_diff.c - differential fuzzing: the interpreter against the JIT.
 *
 * LLVMFuzzerTestOneInput decodes any byte string into a well-formed,
 * terminating program (so random bytes are a program generator, and
 * mutations of a program's bytes are mutated programs), runs it on both
 * engines with identical copies of the same memory block, and aborts with
 * the program's listing on any difference in r0, the memory block, the
 * registers, the stack window, or the array map's contents.
 *
 * The programs' shape: r6 holds the memory block (never written), r9 is
 * the loop counter (read-only outside loop heads), r10 the frame; every
 * memory access is confined to the 512-byte block, the top 64 bytes of the
 * stack (initialised first, since the interpreter zeroes its stack and the
 * JIT does not), or an array map value after a NULL check.  Jumps go
 * forward to instruction-group starts inside their block; loops are
 * bounded counted loops; helpers are the conformance unwind helper and map
 * lookup, after which r1-r5 are reloaded (they are clobbered by a real
 * call, not by the interpreter).  An optional subprogram exercises
 * bpf-to-bpf calls.  Pointer values (r6, r10) never flow into compared
 * state, since they differ between the two runs by construction.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "insn_build.h"
#include "interp.h"
#include "jit/jit.h"
#include "maps/map.h"
#include "text/disasm.h"

#define MEM_DATA   512               /* accessible block */
#define DUMP_REGS  (MEM_DATA)        /* r0-r5, r7-r9 dumped here at exit */
#define DUMP_STACK (MEM_DATA + 9 * 8) /* the stack window dumped here */
#define MEM_SIZE   (DUMP_STACK + 64)
#define WINDOW     64                /* stack bytes the program uses */
#define MAX_INSNS  2048
#define RESERVE    256               /* room kept for epilogue and subprogram */
#define UNWIND_HELPER 5              /* conformance helper: r1 == 0 stops the program */
#define MAX_UNITS  48

struct gen {
	const uint8_t *d;
	size_t len, pos;
	struct nbpf_insn insns[MAX_INSNS];
	uint32_t n;
	int has_sub;
	uint32_t calls[MAX_UNITS];       /* bpf-to-bpf call sites to patch */
	uint32_t n_calls;
};

/* Pending forward jump: land on the first group start at or after want. */
struct fixup {
	uint32_t at, want;
};

static uint8_t u8(struct gen *g)
{
	return g->pos < g->len ? g->d[g->pos++] : 0;
}

static uint32_t u32(struct gen *g)
{
	uint32_t v = u8(g);

	v |= (uint32_t)u8(g) << 8;
	v |= (uint32_t)u8(g) << 16;
	return v | (uint32_t)u8(g) << 24;
}

static int32_t imm_any(struct gen *g)
{
	static const int32_t interesting[] = { 0, 1, -1, 2, 7, 31, 32, 63, 64, INT32_MIN, INT32_MAX,
					       0xff, 0x8000, -2, 3, 33, 0xffff };
	uint8_t k = u8(g);

	if (k < 128)
		return interesting[k % (sizeof(interesting) / sizeof(interesting[0]))];
	return (int32_t)u32(g);
}

static void put(struct gen *g, uint8_t code, int dst, int src, int16_t off, int32_t imm)
{
	ib_put(g->insns, &g->n, MAX_INSNS, code, (uint8_t)dst, (uint8_t)src, off, imm);
}

static const int writable[] = { 0, 1, 2, 3, 4, 5, 7, 8 };
static const int readable[] = { 0, 1, 2, 3, 4, 5, 7, 8, 9 };

static int wreg(struct gen *g) { return writable[u8(g) % 8]; }
static int rreg(struct gen *g) { return readable[u8(g) % 9]; }

/* A memory operand inside the block (r6) or the stack window (r10). */
static void mem_operand(struct gen *g, int bytes, int aligned, int *base, int16_t *off)
{
	uint32_t r = u32(g);

	if (r & 1) {
		*base = 6;
		*off = (int16_t)((r >> 1) % (MEM_DATA - bytes + 1));
	} else {
		*base = 10;
		*off = (int16_t)(-WINDOW + (int)((r >> 1) % (WINDOW - bytes + 1)));
	}
	if (aligned)
		*off = (int16_t)(*off & ~(bytes - 1));
}

static void gen_alu(struct gen *g)
{
	static const uint8_t ops[] = { NBPF_ADD, NBPF_SUB, NBPF_MUL, NBPF_DIV, NBPF_OR, NBPF_AND,
				       NBPF_LSH, NBPF_RSH, NBPF_NEG, NBPF_MOD, NBPF_XOR, NBPF_MOV,
				       NBPF_ARSH, NBPF_END };
	uint8_t sel = u8(g), op = ops[sel % sizeof(ops)];
	int is64 = sel & 0x80, x = u8(g) & 1, dst = wreg(g), src = rreg(g);
	uint8_t cls = is64 ? NBPF_ALU64 : NBPF_ALU;
	int16_t off = 0;
	int32_t imm = x ? 0 : imm_any(g);

	switch (op) {
	case NBPF_NEG:
		put(g, cls | op, dst, 0, 0, 0);
		return;
	case NBPF_END: {
		static const int32_t widths[] = { 16, 32, 64 };

		imm = widths[u8(g) % 3];
		put(g, cls | op | (is64 ? 0 : (x ? NBPF_TO_BE : NBPF_TO_LE)), dst, 0, 0, imm);
		return;
	}
	case NBPF_DIV: case NBPF_MOD:
		off = (int16_t)(u8(g) & 1);
		break;
	case NBPF_MOV:
		if (x) {
			static const int16_t sx[] = { 0, 0, 8, 16, 32 };

			off = sx[u8(g) % 5];
			if (off == 32 && !is64)
				off = 0;
		}
		break;
	case NBPF_LSH: case NBPF_RSH: case NBPF_ARSH:
		/*
		 * Often after a mov into dst (the JIT fuses the pair into one
		 * shlx/shrx/sarx): the count then in dst, the mov's source or
		 * another register.
		 */
		if (x && (sel & 0x40)) {
			int a = rreg(g), pick = u8(g) % 3;

			put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, dst, a, 0, 0);
			src = pick == 0 ? dst : pick == 1 ? a : src;
		}
		break;
	default:
		break;
	}
	put(g, cls | op | (x ? NBPF_X : NBPF_K), dst, x ? src : 0, off, imm);
}

static void gen_mem(struct gen *g)
{
	static const int sizes[] = { 1, 2, 4, 8 };
	uint8_t k = u8(g);
	int bytes = sizes[(k >> 2) % 4], base;
	int16_t off;

	mem_operand(g, bytes, 0, &base, &off);
	switch (k & 3) {
	case 0: { /* load, maybe sign-extending */
		int sx = bytes != 8 && (u8(g) & 1);

		put(g, NBPF_LDX | (sx ? NBPF_MEMSX : NBPF_MEM) | ib_size_code(bytes), wreg(g), base, off, 0);
		break;
	}
	case 1:
		put(g, NBPF_ST | NBPF_MEM | ib_size_code(bytes), base, 0, off, imm_any(g));
		break;
	case 2:
		put(g, NBPF_STX | NBPF_MEM | ib_size_code(bytes), base, rreg(g), off, 0);
		break;
	default: { /* through another base register, which is then reset */
		int b = wreg(g), v = wreg(g);

		if (base == 10)
			off = (int16_t)(-WINDOW + (int)(u8(g) % (WINDOW - bytes + 1)));
		put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, b, base, 0, 0);
		if (u8(g) & 1) {
			put(g, NBPF_LDX | NBPF_MEM | ib_size_code(bytes), v, b, off, 0);
			if (v == b)
				break;
		} else {
			put(g, NBPF_STX | NBPF_MEM | ib_size_code(bytes), b, v != b ? v : b == 7 ? 8 : 7, off, 0);
		}
		put(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, b, 0, 0, imm_any(g));
		break;
	}
	}
}

static void gen_atomic(struct gen *g)
{
	static const int32_t ops[] = { NBPF_ADD, NBPF_OR, NBPF_AND, NBPF_XOR,
				       NBPF_ADD | NBPF_FETCH, NBPF_OR | NBPF_FETCH,
				       NBPF_AND | NBPF_FETCH, NBPF_XOR | NBPF_FETCH,
				       NBPF_XCHG, NBPF_CMPXCHG };
	uint8_t k = u8(g);
	int32_t op = ops[k % 10];
	int bytes = (k & 0x80) ? 8 : 4, base;
	int16_t off;
	int src = (op & NBPF_FETCH) ? wreg(g) : rreg(g);

	mem_operand(g, bytes, 1, &base, &off);
	put(g, NBPF_STX | NBPF_ATOMIC | ib_size_code(bytes), base, src, off, op);
}

static void gen_lddw(struct gen *g)
{
	int dst = wreg(g);

	put(g, NBPF_OP_LDDW, dst, 0, 0, (int32_t)u32(g));
	put(g, 0, 0, 0, 0, (int32_t)u32(g));
}

static void gen_cond(struct gen *g, struct fixup *fx, int *nfx, uint32_t horizon)
{
	static const uint8_t ops[] = { NBPF_JEQ, NBPF_JGT, NBPF_JGE, NBPF_JSET, NBPF_JNE,
				       NBPF_JSGT, NBPF_JSGE, NBPF_JLT, NBPF_JLE, NBPF_JSLT,
				       NBPF_JSLE, NBPF_JA };
	uint8_t k = u8(g), op = ops[k % 12];
	int x = u8(g) & 1, is32 = k & 0x80;
	uint32_t want = g->n + 1 + u8(g) % horizon;

	if (*nfx < MAX_UNITS)
		fx[(*nfx)++] = (struct fixup){ .at = g->n, .want = want };
	if (op == NBPF_JA)
		put(g, is32 ? NBPF_OP_GOTOL : NBPF_OP_JA, 0, 0, 0, 0);
	else
		put(g, (is32 ? NBPF_JMP32 : NBPF_JMP) | op | (x ? NBPF_X : NBPF_K), rreg(g),
		    x ? rreg(g) : 0, 0, x ? 0 : imm_any(g));
}

/* One instruction that touches no pointer: an ALU op or a store into the block. */
static void gen_one(struct gen *g)
{
	static const int sizes[] = { 1, 2, 4, 8 };
	uint8_t k = u8(g);
	int bytes = sizes[k % 4];

	if (k & 4)
		put(g, NBPF_ST | NBPF_MEM | ib_size_code(bytes), 6, 0,
		    (int16_t)(u8(g) % (MEM_DATA - bytes + 1)), imm_any(g));
	else
		gen_alu(g);
}

/*
 * An if/else that returns: `if cond goto A; X; goto T; A: Y; T: Z...; exit`
 * with zero to four instructions in Z, so the JIT's copy of a short exit
 * tail over the goto (and its refusal past TAIL_MAX) meets random code.
 */
static void gen_return(struct gen *g)
{
	uint8_t k = u8(g);
	int tail = u8(g) % 5;

	put(g, (k & 1 ? NBPF_JMP32 : NBPF_JMP) | NBPF_JGT | NBPF_K, rreg(g), 0, 2, imm_any(g));
	gen_one(g);
	if (k & 2)
		put(g, NBPF_OP_GOTOL, 0, 0, 0, 1);
	else
		put(g, NBPF_OP_JA, 0, 0, 1, 0);
	gen_one(g);
	for (int t = 0; t < tail; t++)
		gen_one(g);
	put(g, NBPF_OP_EXIT, 0, 0, 0, 0);
}

/* A place an if/else arm writes: a register, or size bytes at [base + off]. */
struct place {
	int reg;    /* -1: memory */
	int base;
	int bytes;
	int16_t off;
};

/* Writes p: an immediate or a register (ALU or ALU32), a store, or clang's `r4 = v; *p = r4`. */
static void put_write(struct gen *g, const struct place *p)
{
	uint8_t k = u8(g);
	uint8_t cls = (k & 1) ? NBPF_ALU : NBPF_ALU64;

	if (p->reg >= 0) {
		if (k & 2)
			put(g, cls | NBPF_MOV | NBPF_X, p->reg, rreg(g), 0, 0);
		else
			put(g, cls | NBPF_MOV | NBPF_K, p->reg, 0, 0, imm_any(g));
		return;
	}
	switch ((k >> 1) & 3) {
	case 0:
		put(g, NBPF_ST | NBPF_MEM | ib_size_code(p->bytes), p->base, 0, p->off, imm_any(g));
		break;
	case 1:
		put(g, NBPF_STX | NBPF_MEM | ib_size_code(p->bytes), p->base, rreg(g), p->off, 0);
		break;
	default:
		put(g, cls | NBPF_MOV | NBPF_K, 4, 0, 0, imm_any(g));
		put(g, NBPF_STX | NBPF_MEM | ib_size_code(p->bytes), p->base, 4, p->off, 0);
		break;
	}
}

/*
 * An if/else whose arms write the same one to three places (`if c goto A;
 * F; goto J; A: T; J:`), each arm in its own order and value forms, and
 * now and then one arm writing a place of its own: the JIT's cmov form of
 * an if/else, and its refusals, against random code.
 */
static void gen_diamond(struct gen *g)
{
	static const int regs[] = { 0, 2, 3, 5 };
	static const uint8_t ops[] = { NBPF_JEQ, NBPF_JGT, NBPF_JGE, NBPF_JSET, NBPF_JNE,
				       NBPF_JSGT, NBPF_JSGE, NBPF_JLT, NBPF_JLE, NBPF_JSLT, NBPF_JSLE };
	struct place pl[4];
	uint8_t k = u8(g);
	int np = 1 + k % 3, x = (k >> 2) & 1;
	uint32_t at, ja = 0;

	for (int q = 0; q < np; q++) {
		uint8_t c = u8(g);

		pl[q] = (struct place){ .reg = -1, .base = (c & 1) ? 6 : 10, .bytes = 1 << ((c >> 1) % 4) };
		pl[q].off = (int16_t)(((c >> 3) & 3) * 8 - (pl[q].base == 10 ? WINDOW : 0));
		if (c & 0x20)
			pl[q].reg = regs[(c >> 6) & 3];
	}
	at = g->n;
	put(g, ((k & 0x80) ? NBPF_JMP32 : NBPF_JMP) | ops[u8(g) % 11] | (x ? NBPF_X : NBPF_K), rreg(g),
	    x ? rreg(g) : 0, 0, x ? 0 : imm_any(g));
	for (int arm = 0; arm < 2; arm++) {
		uint8_t order = u8(g);

		for (int q = 0; q < np; q++)
			put_write(g, &pl[(order & 1) ? np - 1 - q : q]);
		if ((order & 0x1e) == 0) /* a place of this arm alone */
			put(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 7, 0, 0, imm_any(g));
		if (arm == 0) {
			ja = g->n;
			put(g, (k & 0x40) ? NBPF_OP_GOTOL : NBPF_OP_JA, 0, 0, 0, 0);
			g->insns[at].off = (int16_t)(g->n - (at + 1));
		}
	}
	ib_set_jump_off(&g->insns[ja], g->n - (ja + 1));
}

/* r1-r5 are undefined after a helper call: give them fresh values. */
static void reload_args(struct gen *g)
{
	for (int r = 1; r <= 5; r++)
		put(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, r, 0, 0, imm_any(g));
}

static void gen_helper(struct gen *g)
{
	uint8_t k = u8(g);

	if (k & 1) {
		/* unwind helper: r1 == 0 ends the program with r0 = 0 */
		put(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 1, 0, 0, (k & 6) ? (int32_t)u32(g) | 1 : 0);
		put(g, NBPF_OP_CALL, 0, 0, 0, UNWIND_HELPER);
	} else {
		/* array lookup; a "ja +0" in between makes the call a jump target (not inlined) */
		/* the key: a constant store, or a register store (forwarded in r9) */
		int32_t key = (int32_t)(u8(g) % 6) - ((k & 0x20) ? 3 : 0);

		if (k & 4) {
			put(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 3, 0, 0, key);
			put(g, NBPF_STX | NBPF_MEM | NBPF_W, 10, 3, -4, 0);
		} else {
			put(g, NBPF_ST | NBPF_MEM | NBPF_W, 10, 0, -4, key);
		}
		if (k & 8)
			gen_alu(g); /* may clobber r9 (div/mod) or r2 */
		put(g, NBPF_OP_LDDW, 1, NBPF_PSEUDO_MAP_IDX, 0, 0);
		put(g, 0, 0, 0, 0, 0);
		if (k & 2)
			put(g, NBPF_OP_JA, 0, 0, 0, 0);
		if (k & 0x10) {
			put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 2, 10, 0, 0);
			put(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, 2, 0, 0, -4);
		} else {
			put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 2, 10, 0, 0);
			put(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, 2, 0, 0, -8);
			put(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, 2, 0, 0, 4);
		}
		put(g, NBPF_OP_CALL, 0, 0, 0, NBPF_HELPER_MAP_LOOKUP);
		/* if (r0) { access the value at a random offset } */
		{
			int bytes = 1 << (u8(g) % 4);
			int16_t off = (int16_t)((u8(g) % (16 - bytes + 1)) & ~(bytes - 1));
			uint8_t how = u8(g) % 3;

			put(g, NBPF_JMP | NBPF_JEQ | NBPF_K, 0, 0, 1, 0);
			if (how == 0)
				put(g, NBPF_LDX | NBPF_MEM | ib_size_code(bytes), 7, 0, off, 0);
			else if (how == 1)
				put(g, NBPF_ST | NBPF_MEM | ib_size_code(bytes), 0, 0, off, imm_any(g));
			else
				put(g, NBPF_STX | NBPF_ATOMIC | NBPF_DW, 0, 7, (int16_t)(off & ~7), NBPF_ADD);
		}
	}
	reload_args(g);
}

static void gen_block(struct gen *g, int units, int in_loop, int in_sub);

/*
 * r9 counts (no unit writes it): down to zero, or up with a step and a
 * compare the JIT must count exactly when it unrolls the loop.
 */
static void gen_loop(struct gen *g, int in_sub)
{
	uint8_t shape = u8(g) % 3, trips = (uint8_t)(1 + u8(g) % 6);
	static const uint8_t up_ops[] = { NBPF_JLT, NBPF_JLE, NBPF_JNE, NBPF_JSLT, NBPF_JSLE };
	int32_t k0 = shape == 2 ? -3 : 0, step = 1 + (shape == 2);
	uint8_t op = up_ops[u8(g) % sizeof(up_ops)];
	int32_t bound = op == NBPF_JLE || op == NBPF_JSLE ? k0 + step * (trips - 1)
							  : k0 + step * trips;
	uint32_t head;

	if (op == NBPF_JLT || op == NBPF_JLE) /* unsigned: stay non-negative */
		k0 = 0, bound = op == NBPF_JLE ? step * (trips - 1) : step * trips;
	put(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 9, 0, 0, shape ? k0 : trips);
	head = g->n;
	gen_block(g, 1 + u8(g) % 6, 1, in_sub);
	if (!shape) {
		put(g, NBPF_ALU64 | NBPF_SUB | NBPF_K, 9, 0, 0, 1);
		put(g, NBPF_JMP | NBPF_JNE | NBPF_K, 9, 0, (int16_t)((int64_t)head - (g->n + 1)), 0);
		return;
	}
	put(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, 9, 0, 0, step);
	put(g, NBPF_JMP | op | NBPF_K, 9, 0, (int16_t)((int64_t)head - (g->n + 1)), bound);
}

/* Emits up to `units` groups; forward jumps land on group starts within the block. */
static void gen_block(struct gen *g, int units, int in_loop, int in_sub)
{
	uint32_t starts[MAX_UNITS + 1];
	struct fixup fx[MAX_UNITS];
	int ns = 0, nfx = 0;

	for (int u = 0; u < units && g->pos < g->len && g->n + 64 < MAX_INSNS - RESERVE; u++) {
		uint8_t k = u8(g);

		starts[ns++] = g->n;
		if (k < 100)
			gen_alu(g);
		else if (k < 150)
			gen_mem(g);
		else if (k < 170)
			gen_atomic(g);
		else if (k < 180)
			gen_lddw(g);
		else if (k < 220 && (k & 7) == 0)
			gen_return(g);
		else if (k < 220 && (k & 7) == 1)
			gen_diamond(g);
		else if (k < 220)
			gen_cond(g, fx, &nfx, 24);
		else if (k < 235)
			gen_helper(g);
		else if (k < 245 && !in_loop)
			gen_loop(g, in_sub);
		else if (!in_sub && g->has_sub && g->n_calls < MAX_UNITS) {
			g->calls[g->n_calls++] = g->n;
			put(g, NBPF_OP_CALL, 0, NBPF_PSEUDO_CALL, 0, 0);
		} else {
			gen_alu(g);
		}
	}
	starts[ns] = g->n;
	for (int f = 0; f < nfx; f++) {
		uint32_t t = g->n;

		for (int s = 0; s <= ns; s++) {
			if (starts[s] >= fx[f].want) {
				t = starts[s];
				break;
			}
		}
		ib_set_jump_off(&g->insns[fx[f].at], (int64_t)t - (fx[f].at + 1));
	}
}

static void gen_program(struct gen *g)
{
	uint32_t sub;

	g->has_sub = u8(g) < 64;
	put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 6, 1, 0, 0);
	for (int k = 0; k < WINDOW / 8; k++) {
		put(g, NBPF_LDX | NBPF_MEM | NBPF_DW, 0, 6, (int16_t)(8 * k), 0);
		put(g, NBPF_STX | NBPF_MEM | NBPF_DW, 10, 0, (int16_t)(-WINDOW + 8 * k), 0);
	}
	for (int k = 0; k < 9; k++)
		put(g, NBPF_LDX | NBPF_MEM | NBPF_DW, readable[k], 6, (int16_t)(WINDOW + 8 * k), 0);
	gen_block(g, 1 + u8(g) % MAX_UNITS, 0, 0);
	for (int k = 0; k < 9; k++)
		put(g, NBPF_STX | NBPF_MEM | NBPF_DW, 6, readable[k], (int16_t)(DUMP_REGS + 8 * k), 0);
	for (int k = 0; k < WINDOW / 8; k++) {
		put(g, NBPF_LDX | NBPF_MEM | NBPF_DW, 1, 10, (int16_t)(-WINDOW + 8 * k), 0);
		put(g, NBPF_STX | NBPF_MEM | NBPF_DW, 6, 1, (int16_t)(DUMP_STACK + 8 * k), 0);
	}
	put(g, NBPF_OP_EXIT, 0, 0, 0, 0);
	if (!g->has_sub)
		return;
	/* The subprogram: its own stack window, a block, r0 as the result. */
	sub = g->n;
	for (int k = 0; k < WINDOW / 8; k++)
		put(g, NBPF_ST | NBPF_MEM | NBPF_DW, 10, 0, (int16_t)(-WINDOW + 8 * k), imm_any(g));
	gen_block(g, 1 + u8(g) % 16, 0, 1);
	put(g, NBPF_OP_EXIT, 0, 0, 0, 0);
	for (uint32_t c = 0; c < g->n_calls; c++)
		g->insns[g->calls[c]].imm = (int32_t)(sub - (g->calls[c] + 1));
}

/* ---- the map and helpers both engines see ----------------------------- */

static uint8_t map_data[4 * 16] __attribute__((aligned(16)));

static void *array_lookup(struct ncclbpf_map *map, const void *key)
{
	uint32_t k;

	memcpy(&k, key, 4);
	return k < map->max_entries ? map->array_base + (size_t)k * map->value_stride : NULL;
}

static const struct nbpf_map_ops array_ops = { .lookup_elem = array_lookup };

static struct ncclbpf_map fuzz_map = {
	.ops = &array_ops, .type = NCCLBPF_MAP_ARRAY, .key_size = 4, .value_size = 16,
	.max_entries = 4, .array_base = map_data, .value_stride = 16,
};

static uint64_t lookup_fn(uint64_t map, uint64_t key, uint64_t a, uint64_t b, uint64_t c)
{
	struct ncclbpf_map *m = (struct ncclbpf_map *)(uintptr_t)map;

	return (uintptr_t)m->ops->lookup_elem(m, (const void *)(uintptr_t)key);
}

static const struct nbpf_helper lookup_helper = {
	.id = NBPF_HELPER_MAP_LOOKUP, .name = "map_lookup_elem", .fn = lookup_fn,
	.ret = NBPF_RET_PTR_TO_MAP_VALUE_OR_NULL,
};

static const struct nbpf_helper *fuzz_helper(int32_t id)
{
	if (id == NBPF_HELPER_MAP_LOOKUP)
		return &lookup_helper;
	return nbpf_helper_find_conformance(id);
}

/* Totals printed at exit with NCCLBPF_FUZZ_STATS=1, to see what a run covered. */
static uint64_t st_programs, st_insns, st_subs, st_unwound;

static void print_stats(void)
{
	fprintf(stderr, "fuzz_diff: %" PRIu64 " programs, %.1f insns average, %" PRIu64
		" with a subprogram, %" PRIu64 " returned 0\n", st_programs,
		st_programs ? (double)st_insns / (double)st_programs : 0.0, st_subs, st_unwound);
}

static void fail(const struct gen *g, const char *what)
{
	fprintf(stderr, "fuzz_diff: DIVERGENCE: %s\n", what);
	nbpf_disasm_prog(stderr, g->insns, g->n, 1, NULL);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gen g;
	static uint8_t m1[MEM_SIZE], m2[MEM_SIZE];
	uint8_t map_init[sizeof(map_data)], map_interp[sizeof(map_data)];
	struct ncclbpf_map *maps[1] = { &fuzz_map };
	const struct nbpf_env env = { .maps = maps, .n_maps = 1, .helper = fuzz_helper };
	struct nbpf_jit_image *img = NULL;
	uint64_t ri = 0, rj;
	int err;

	if (!st_programs && getenv("NCCLBPF_FUZZ_STATS"))
		atexit(print_stats);
	memset(&g, 0, sizeof(g));
	g.d = data;
	g.len = size;
	gen_program(&g);
	for (size_t i = 0; i < MEM_SIZE; i++)
		m1[i] = (uint8_t)(i * 37 + (size ? data[i % size] : 0));
	memcpy(m2, m1, MEM_SIZE);
	for (size_t i = 0; i < sizeof(map_data); i++)
		map_data[i] = (uint8_t)(i * 11 + 3);
	memcpy(map_init, map_data, sizeof(map_data));

	err = nbpf_interp_run(g.insns, g.n, &env, m1, MEM_SIZE, NULL, 1u << 22, &ri);
	if (err)
		fail(&g, ncclbpf_errmsg());
	memcpy(map_interp, map_data, sizeof(map_data));
	memcpy(map_data, map_init, sizeof(map_data));
	err = nbpf_jit_compile(g.insns, g.n, &env, &img);
	if (err)
		fail(&g, ncclbpf_errmsg());
	rj = img->func(m2, MEM_SIZE);
	nbpf_jit_free(img);
	if (ri != rj) {
		fprintf(stderr, "r0: interp 0x%" PRIx64 " jit 0x%" PRIx64 "\n", ri, rj);
		fail(&g, "r0 differs");
	}
	for (size_t i = 0; i < MEM_SIZE; i++) {
		if (m1[i] != m2[i]) {
			fprintf(stderr, "byte %zu: interp 0x%02x jit 0x%02x\n", i, m1[i], m2[i]);
			fail(&g, i < MEM_DATA ? "memory differs" : i < DUMP_STACK ? "registers differ"
								    : "stack differs");
		}
	}
	if (memcmp(map_interp, map_data, sizeof(map_data)))
		fail(&g, "map contents differ");
	st_programs++;
	st_insns += g.n;
	st_subs += g.has_sub && g.n_calls;
	st_unwound += ri == 0;
	return 0;
}
