/*
 * jit_x86_64.c - the x86-64 template JIT.
 *
 * Each eBPF instruction becomes a short fixed x86-64 sequence.  BPF
 * registers live in x86 registers for the whole program (see docs/jit.md
 * for the map): r1-r5 sit in the SysV argument registers and r6-r9/r10 in
 * callee-saved ones, so a helper call is a bare `call`.  Code is produced
 * by running the same emitter several times: sizing passes (no buffer)
 * until every instruction offset is stable, then one writing pass into an
 * exactly sized RW mapping, which is then made RX.  Jumps to other
 * instructions take their displacement from the previous pass's offsets,
 * so they are right by construction once the offsets stop changing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include "error.h"
#include "jit.h"
#include "maps/map.h"

#if defined(__x86_64__)

#include "x86_emit.h"

/*
 * BPF register -> x86 register.  r1..r5 are the SysV argument registers.
 * r10 has no register: the frame sits at a fixed distance above rsp, so
 * [r10 + off] becomes [rsp + fp_off + off] and its value, when a program
 * takes it, is one lea (into x86 r10, FP_TMP).
 */
static const int bpf2x86_default[NBPF_NREGS] = {
	X_RAX, X_RDI, X_RSI, X_RDX, X_RCX, X_R8, X_RBX, X_R13, X_R14, X_R15, X_R10,
};

/* Scratch registers the sequences may clobber: r9, r10, r11.  r12 holds the
 * main frame's stack pointer (for unwinding) when the program needs it. */
#define FP_TMP    X_R10
#define SUB_ALLOC (NBPF_STACK_SIZE + 8)        /* keeps subprogram calls aligned */
#define SUB_FRAME (8 + 4 * 8 + SUB_ALLOC)       /* ret addr + saved regs + stack */
#define MAX_PASSES 20

/* Inlined lookup key known without reading the stack (see find_key). */
#define KEY_CONST 1u /* on the call: the key is key_imm[i] */
#define KEY_R9    2u /* on the call: the key is in r9d */
#define KEY_COPY  4u /* on the store: also copy the stored value to r9d */
#define KEY_STORE 8u /* on the store: its slot is read only by the forwarded lookup */
#define KEY_FPMOV 16u /* on mov r2, r10 and its adds: only feed the forwarded lookup */
#define KEY_LDDW  32u /* on lddw r1, map: only feeds the inlined lookup, not emitted */
#define KEY_NULLJ 64u /* on the call: the next insn tests r0 against 0, fused in */
#define KEY_FUSED 128u /* on that jeq/jne: emitted by the lookup, nothing here */
#define MUL_ADD   256u /* on mul dst, 2^k+-1: the add that follows is folded in */
#define ADD_FUSED 512u /* on that add: emitted by the mul, nothing here */
#define ZEXT32    1024u /* on lsh dst, 32 followed by rsh dst, 32: one mov r32, r32 */
#define ZEXT_DONE 2048u /* on that rsh: nothing here */
#define NO_TEST   4096u /* on jeq/jne dst, 0 right after an ALU op on dst: ZF is set */
#define JCMOV     8192u /* on `if cc goto +1` over one 64-bit mov: a cmov */
#define MOV_CMOVED 16384u /* on that mov: emitted by the jump, nothing here */
#define MOV_DEAD  32768u /* on mov r, imm whose only use is the store after it */
#define STX_IMM   65536u /* on that store: stores the immediate */
#define LOG2_HEAD 131072u /* first insn of clang's log2 ladder: one bsr (find_log2) */
#define LOG2_BODY 262144u /* the rest of it: nothing here */
#define JA_TAIL   524288u /* on ja to a short tail that exits: a copy of the tail (exit_tail) */
#define DIAMOND   1048576u /* on `if cc goto A` heading an if/else of movs and stores: cmovs */
#define DIAMOND_BODY 2097152u /* its arms and the ja between them: emitted by the jump */
#define MOV_SHIFT 4194304u /* on mov dst, a followed by a shift of dst by a register: one shlx/shrx/sarx */
#define SHIFT_DONE 8388608u /* on that shift: emitted by the mov, nothing here */
#define UNROLL_HEAD 16777216u /* first insn of a counted loop's body: every trip (counted_loop) */
#define UNROLL_BODY 33554432u /* the rest of the loop, back edge included: nothing here */
#define UNROLL_SUBST 67108864u /* on the head: the counter's value is an immediate in each copy */

/*
 * A counted loop is unrolled up to this many trips and body instructions in
 * all; a program's loops together add at most UNROLL_BUDGET instructions,
 * so no program grows its code much past what it already costs to verify.
 */
#define UNROLL_TRIPS 16
#define UNROLL_INSNS 128
#define UNROLL_BUDGET 65536

/* At most this many movs and stores in each arm of an if/else turned into cmovs. */
#define DIAMOND_MAX 4

/* At most this many instructions, the exit included, are copied over a ja. */
#define TAIL_MAX 4

/* A value an if/else arm writes, in terms of the state before the arm. */
struct dval {
	bool imm;    /* v; else BPF register reg as it was before the arm */
	bool v32;    /* reg's low half, zero-extended (through a mov32) */
	uint8_t reg;
	uint64_t v;
};

/* What one arm writes: its stores in order, and the final value of each register it writes. */
struct darm {
	const struct nbpf_insn *st[DIAMOND_MAX];
	struct dval sv[DIAMOND_MAX];
	uint32_t nst;
	uint32_t wrote;
	struct dval reg[NBPF_NREGS];
};

struct jit {
	const struct nbpf_insn *insns;
	int bpf2x86[NBPF_NREGS]; /* BPF -> x86 register for this program (see assign_regs) */
	uint32_t n;
	const struct nbpf_env *env;
	struct nbpf_x86 e;
	uint64_t base;       /* final code address (writing pass only) */
	uint32_t *addrs;     /* this pass: code offset of insn i; [n] = unwind tail */
	uint32_t *prev;      /* previous pass */
	bool first_pass;     /* no previous offsets: every jump long */
	bool long_jumps;     /* fallback if offsets never settle */
	bool far_calls;      /* helpers out of rel32 range: movabs + call rax */
	bool bmi2;           /* shlx/shrx/sarx for shifts by a register */
	/* Whole-program facts. */
	uint8_t *entry;      /* 1: first insn of a subprogram */
	uint8_t *in_main;    /* 1: insn belongs to the main function */
	struct ncclbpf_map **inline_map; /* call 1 inlined as an array lookup */
	uint32_t *kflags;    /* per-insn translation flags (KEY_*, pair folds) */
	uint32_t *key_imm;   /* KEY_CONST: the key; DIAMOND: k, its arms darms[2k], [2k + 1] */
	struct darm *darms;  /* the if/else arms diamond() read, for emit_diamond */
	uint32_t ndarms;
	bool uses_fp, has_calls, has_bpf_calls, needs_r12;
	bool no_frame;       /* r10 only feeds forwarded keys: no frame, key stores elided */
	int pushes[6], npush;
	int32_t alloc;       /* main frame bytes below the pushes */
	int32_t fp_off;      /* r10 - rsp in the function being emitted */
	uint32_t sub_prologue;  /* size of a subprogram prologue */
};

/* ---- prologues and epilogues -------------------------------------------- */

static void emit_sub_rsp(struct nbpf_x86 *e, int32_t v)
{
	x86_alu_ri(e, 1, G1_SUB, X_RSP, v);
}

static void emit_main_prologue(struct jit *j)
{
	struct nbpf_x86 *e = &j->e;

	for (int k = 0; k < j->npush; k++)
		x86_push(e, j->pushes[k]);
	if (j->alloc)
		emit_sub_rsp(e, j->alloc);
	if (j->needs_r12)
		x86_mov_rr(e, 1, X_R12, X_RSP);
}

static void emit_main_epilogue(struct jit *j)
{
	struct nbpf_x86 *e = &j->e;

	if (j->alloc)
		x86_alu_ri(e, 1, G1_ADD, X_RSP, j->alloc);
	for (int k = j->npush - 1; k >= 0; k--)
		x86_pop(e, j->pushes[k]);
	x86_byte(e, 0xc3);
}

/* A subprogram saves the caller's r6-r9 and gets its own 512 bytes (r10). */
static void emit_sub_prologue(struct nbpf_x86 *e)
{
	x86_push(e, X_RBX);
	x86_push(e, X_R13);
	x86_push(e, X_R14);
	x86_push(e, X_R15);
	x86_op1_rr(e, 1, 0x81, G1_SUB, X_RSP);
	x86_u32(e, SUB_ALLOC);
}

static void emit_sub_epilogue(struct nbpf_x86 *e)
{
	x86_op1_rr(e, 1, 0x81, G1_ADD, X_RSP);
	x86_u32(e, SUB_ALLOC);
	x86_pop(e, X_R15);
	x86_pop(e, X_R14);
	x86_pop(e, X_R13);
	x86_pop(e, X_RBX);
	x86_byte(e, 0xc3);
}

/* ---- r10 ------------------------------------------------------------------ */

/* The x86 register holding BPF register r's value (r10 materialised). */
static int reg_val(struct jit *j, int r)
{
	if (r != NBPF_REG_FP)
		return j->bpf2x86[r];
	x86_lea(&j->e, FP_TMP, X_RSP, j->fp_off);
	return FP_TMP;
}

/* Memory operand [r + off] as x86 base and displacement. */
static void mem_operand(const struct jit *j, int r, int16_t off, int *base, int32_t *disp)
{
	if (r == NBPF_REG_FP) {
		*base = X_RSP;
		*disp = j->fp_off + off;
	} else {
		*base = j->bpf2x86[r];
		*disp = off;
	}
}

/* ---- jumps to instructions ---------------------------------------------- */

/*
 * Jump (cc < 0: unconditional) to the code of instruction `target` (n: the
 * unwind tail).  The short form is used only when the previous pass says
 * it fits; once offsets are stable that is exact.
 */
static void emit_jump(struct jit *j, int cc, uint32_t target)
{
	struct nbpf_x86 *e = &j->e;

	if (!j->first_pass && !j->long_jumps) {
		int64_t d = (int64_t)j->prev[target] - (int64_t)(e->pos + 2);

		if (x86_fits8(d)) {
			x86_byte(e, cc < 0 ? 0xeb : (uint8_t)(0x70 + cc));
			x86_byte(e, (uint8_t)d);
			return;
		}
	}
	if (cc < 0) {
		x86_byte(e, 0xe9);
	} else {
		x86_byte(e, 0x0f);
		x86_byte(e, (uint8_t)(0x80 + cc));
	}
	x86_u32(e, (uint32_t)(j->first_pass ? 0 : (int64_t)j->prev[target] - (int64_t)(e->pos + 4)));
}

/* ---- ALU ------------------------------------------------------------------ */

/* Divide or modulo, with BPF's answers where x86 would trap: x / 0 = 0,
 * x % 0 = x, and signed INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0. */
static void emit_divmod(struct jit *j, const struct nbpf_insn *in, int w)
{
	struct nbpf_x86 *e = &j->e;
	int dst = j->bpf2x86[in->dst];
	bool is_mod = NBPF_OP(in->code) == NBPF_MOD;
	bool sgn = in->off == 1;
	size_t to_zero = 0, to_norm = 0, to_done1 = 0, to_done2 = 0;
	bool k = NBPF_SRC(in->code) == NBPF_K;

	if (k && in->imm == 0)
		goto zero_case;
	if (k && sgn && in->imm == -1) {
		if (is_mod)
			x86_alu_rr(e, 0, G1_XOR, dst, dst);
		else
			x86_op1_rr(e, w, 0xf7, 3, dst);
		return;
	}
	if (k) {
		x86_mov_imm64(e, X_R11, w ? (uint64_t)(int64_t)in->imm : (uint32_t)in->imm);
	} else {
		x86_mov_rr(e, w, X_R11, reg_val(j, in->src));
		x86_test_rr(e, w, X_R11, X_R11);
		to_zero = x86_jcc8(e, CC_E);
		if (sgn) {
			x86_alu_ri(e, w, G1_CMP, X_R11, -1);
			to_norm = x86_jcc8(e, CC_NE);
			if (is_mod)
				x86_alu_rr(e, 0, G1_XOR, dst, dst);
			else
				x86_op1_rr(e, w, 0xf7, 3, dst);
			to_done1 = x86_jmp8(e);
			x86_land8(e, to_norm);
		}
	}
	x86_mov_rr(e, 1, X_R9, X_RAX);
	x86_mov_rr(e, 1, X_R10, X_RDX);
	x86_mov_rr(e, w, X_RAX, dst);
	if (sgn) {
		if (w)
			x86_byte(e, 0x48);
		x86_byte(e, 0x99); /* cqo / cdq */
	} else {
		x86_alu_rr(e, 0, G1_XOR, X_RDX, X_RDX);
	}
	x86_op1_rr(e, w, 0xf7, sgn ? 7 : 6, X_R11);
	x86_mov_rr(e, 1, X_R11, is_mod ? X_RDX : X_RAX);
	x86_mov_rr(e, 1, X_RAX, X_R9);
	x86_mov_rr(e, 1, X_RDX, X_R10);
	x86_mov_rr(e, 1, dst, X_R11);
	if (k)
		return;
	to_done2 = x86_jmp8(e);
	x86_land8(e, to_zero);
zero_case:
	if (!is_mod)
		x86_alu_rr(e, 0, G1_XOR, dst, dst);
	else if (!w)
		x86_mov_rr(e, 0, dst, dst);
	if (!k) {
		x86_land8(e, to_done2);
		if (sgn)
			x86_land8(e, to_done1);
	}
}

/*
 * Shift by a register.  With BMI2, shlx/shrx/sarx take the count from any
 * register, write no flags and mask the count like shl/shr/sar (31 or 63);
 * the 32-bit forms always write their destination, so they zero-extend.
 * Without it x86 wants the count in cl, and cl is BPF r4.
 */
/* BMI2's three-operand form: dst = val shift (cnt & mask); see emit_shift_x. */
static void emit_shiftx3(struct nbpf_x86 *e, int w, int ext, int dst, int val, int cnt)
{
	/* VEX.LZ.{66,F2,F3}.0F38.W F7 /r: reg = dst, r/m = val, vvvv = cnt */
	uint8_t pp = ext == 4 ? 1 : ext == 5 ? 3 : 2;

	x86_byte(e, 0xc4);
	x86_byte(e, (uint8_t)(((dst & 8) ? 0 : 0x80) | 0x40 | ((val & 8) ? 0 : 0x20) | 0x02));
	x86_byte(e, (uint8_t)((w ? 0x80 : 0) | ((~cnt & 0xf) << 3) | pp));
	x86_byte(e, 0xf7);
	x86_byte(e, (uint8_t)(0xc0 | ((dst & 7) << 3) | (val & 7)));
}

static void emit_shift_x(struct nbpf_x86 *e, bool bmi2, int w, int ext, int dst, int src)
{
	if (bmi2) {
		emit_shiftx3(e, w, ext, dst, dst, src);
		return;
	}
	if (src == X_RCX) {
		x86_shift_cl(e, w, ext, dst);
	} else {
		x86_mov_rr(e, 1, X_R11, X_RCX);
		x86_mov_rr(e, 1, X_RCX, src);
		if (dst == X_RCX) {
			x86_shift_cl(e, w, ext, X_R11);
			x86_mov_rr(e, 1, X_RCX, X_R11);
		} else {
			x86_shift_cl(e, w, ext, dst);
			x86_mov_rr(e, 1, X_RCX, X_R11);
		}
	}
	/* A masked count of 0 may leave the upper half alone: zero it. */
	if (!w)
		x86_mov_rr(e, 0, dst, dst);
}

static void emit_end(struct nbpf_x86 *e, int dst, int to_be, int32_t bits)
{
	static const uint8_t movzw[2] = { 0x0f, 0xb7 };

	if (!to_be) {
		if (bits == 16)
			x86_rm(e, 0, 0, movzw, 2, dst, false, dst, 0);
		else if (bits == 32)
			x86_mov_rr(e, 0, dst, dst);
		return;
	}
	if (bits == 16) {
		x86_byte(e, 0x66);
		x86_shift_ri(e, 0, 1, dst, 8); /* ror r16, 8 */
		x86_rm(e, 0, 0, movzw, 2, dst, false, dst, 0);
	} else {
		uint8_t rex = (uint8_t)(0x40 | (bits == 64 ? 8 : 0) | ((dst & 8) ? 1 : 0));

		if (rex != 0x40)
			x86_byte(e, rex);
		x86_byte(e, 0x0f);
		x86_byte(e, (uint8_t)(0xc8 + (dst & 7)));
	}
}

/*
 * dst *= imm for a multiplier 2^k, 2^k - 1 or 2^k + 1 (k >= 1, up to
 * INT32_MAX), as shl (1 cycle) or mov/shl/sub|add (2 cycles on dst's
 * dependency chain) instead of imul (3): a hashing loop's `h = h * 31 + x`
 * is bound by that chain.  Same result modulo 2^64 or 2^32; the 32-bit
 * forms zero the upper half like imul r32 does (shl by a nonzero count
 * always writes its destination).  Clobbers r11 and flags.  Returns false
 * (nothing emitted) for any other multiplier.
 */
static bool emit_mul_pow2(struct nbpf_x86 *e, int w, int dst, int32_t imm)
{
	uint32_t v = (uint32_t)imm, p;
	int g;

	if (imm < 2)
		return false;
	if (!(v & (v - 1))) {
		x86_shift_ri(e, w, 4, dst, (uint8_t)__builtin_ctz(v));
		return true;
	}
	if (!((v + 1) & v)) {
		p = v + 1;
		g = G1_SUB;
	} else if (!((v - 1) & (v - 2))) {
		p = v - 1;
		g = G1_ADD;
	} else {
		return false;
	}
	x86_mov_rr(e, w, X_R11, dst);
	x86_shift_ri(e, w, 4, dst, (uint8_t)__builtin_ctz(p));
	x86_alu_rr(e, w, g, dst, X_R11);
	return true;
}

/*
 * dst = dst * (2^k -+ 1) + s, the multiply and the add that follows it
 * (a hash step, h = h * 31 + x) as
 *     mov r11, s; sub|add r11, dst; shl dst, k; add dst, r11
 * r11 = s -+ dst runs beside the shift, so dst's dependency chain is two
 * cycles (shl, add) instead of three (shl, sub, add).  Same bits modulo
 * 2^64 or 2^32; the 32-bit forms zero the upper half.
 */
static void emit_mul_add(struct nbpf_x86 *e, int w, int dst, int src, uint32_t v)
{
	bool minus = !((v + 1) & v);
	uint32_t p = minus ? v + 1 : v - 1;

	x86_mov_rr(e, w, X_R11, src);
	x86_alu_rr(e, w, minus ? G1_SUB : G1_ADD, X_R11, dst);
	x86_shift_ri(e, w, 4, dst, (uint8_t)__builtin_ctz(p));
	x86_alu_rr(e, w, G1_ADD, dst, X_R11);
}

/* Whether mul at i and the add after it can be one emit_mul_add. */
static bool mul_add_fusable(const struct jit *j, const uint8_t *target, uint32_t i)
{
	const struct nbpf_insn *m = &j->insns[i], *a = &j->insns[i + 1];
	uint8_t cls = NBPF_CLASS(m->code);
	uint32_t v = (uint32_t)m->imm;

	if (i + 1 >= j->n || target[i + 1] || j->entry[i + 1])
		return false;
	if ((cls != NBPF_ALU && cls != NBPF_ALU64) || m->code != (cls | NBPF_MUL | NBPF_K) ||
	    m->off != 0 || m->imm < 3)
		return false;
	if (a->code != (cls | NBPF_ADD | NBPF_X) || a->off != 0 || a->dst != m->dst ||
	    a->src == m->dst || a->src >= NBPF_REG_FP || m->dst >= NBPF_REG_FP)
		return false;
	/* 2^k - 1 or 2^k + 1 with k >= 1; plain powers of two are one shl already. */
	return !(v & (v - 1)) ? false : (!((v + 1) & v) || !((v - 1) & (v - 2)));
}

/*
 * r = a; r <<= / >>= / s>>= c (c a register): with BMI2, one shlx/shrx/sarx
 * r, a, c, which reads its value from a, so the mov goes.  After the mov r
 * holds a, so a count taken from r itself is a.  A 32-bit shift reads the
 * low half of a as it would read r's.
 */
static bool mov_shift_pair(const struct jit *j, const uint8_t *target, uint32_t i)
{
	const struct nbpf_insn *a = &j->insns[i], *b = &j->insns[i + 1];
	uint8_t cls = NBPF_CLASS(b->code), op = NBPF_OP(b->code);

	if (!j->bmi2 || target[i + 1] || j->entry[i + 1])
		return false;
	if (a->code != (NBPF_ALU64 | NBPF_MOV | NBPF_X) || a->off != 0 || a->dst == a->src ||
	    a->dst >= NBPF_REG_FP || a->src >= NBPF_REG_FP)
		return false;
	return (cls == NBPF_ALU || cls == NBPF_ALU64) && NBPF_SRC(b->code) == NBPF_X &&
	       (op == NBPF_LSH || op == NBPF_RSH || op == NBPF_ARSH) && b->off == 0 &&
	       b->dst == a->dst && b->src < NBPF_REG_FP;
}

/* An ALU op with a register source (the X bit of neg and byte swaps means something else). */
static bool alu_reads_src(const struct nbpf_insn *in)
{
	uint8_t op = NBPF_OP(in->code);

	return NBPF_SRC(in->code) == NBPF_X && op != NBPF_NEG && op != NBPF_END;
}

/* The counter's value on trip k of a counted loop (counted_loop). */
static uint64_t loop_value(const struct jit *j, uint32_t head, uint32_t e, uint32_t k)
{
	const struct nbpf_insn *inc = &j->insns[e - 1];
	uint64_t v = (uint64_t)(int64_t)j->insns[head - 1].imm, s = (uint64_t)(int64_t)inc->imm;

	return NBPF_OP(inc->code) == NBPF_ADD ? v + s * k : v - s * k;
}

/*
 * The loop clang unrolls in C but a hand-written or -O1 program keeps:
 *
 *	v = K0;  head: body;  v += S (or -=);  if v OP K goto head
 *
 * where the body is straight-line ALU and memory instructions that leave v
 * alone (pair folds allowed; no jumps, calls, atomics or lddw), nothing
 * else jumps into it, and running the counter from K0 gives a small trip
 * count.  The back edge is then that many copies of the body, less the
 * one already emitted, and no jump: no taken branch per trip and no exit
 * for the predictor to miss.  Returns the trip count, 0 if not such a loop.
 */
static uint32_t counted_loop(const struct jit *j, const uint8_t *target, uint32_t e)
{
	const uint32_t pure = MUL_ADD | ADD_FUSED | ZEXT32 | ZEXT_DONE | MOV_SHIFT | SHIFT_DONE;
	const struct nbpf_insn *br = &j->insns[e], *inc, *init;
	uint8_t op = NBPF_OP(br->code);
	uint32_t head, trips;
	uint64_t v;

	if (br->code != (NBPF_JMP | op | NBPF_K) || op == NBPF_JA || op == NBPF_CALL ||
	    op == NBPF_EXIT || op > NBPF_JSLE || br->off > -3 || (int64_t)e + 1 + br->off < 1 ||
	    br->dst >= NBPF_REG_FP)
		return 0;
	head = (uint32_t)((int64_t)e + 1 + br->off);
	init = &j->insns[head - 1];
	inc = &j->insns[e - 1];
	if (target[head] != 1 || j->entry[head] || target[e - 1] || target[e] || j->entry[e - 1] ||
	    j->entry[e] || j->kflags[head - 1] || j->kflags[e - 1] ||
	    (j->kflags[head] & (ADD_FUSED | ZEXT_DONE | SHIFT_DONE)))
		return 0;
	if (init->code != (NBPF_ALU64 | NBPF_MOV | NBPF_K) || init->dst != br->dst || init->off ||
	    (head >= 2 && j->insns[head - 2].code == NBPF_OP_LDDW))
		return 0;
	if ((inc->code != (NBPF_ALU64 | NBPF_ADD | NBPF_K) &&
	     inc->code != (NBPF_ALU64 | NBPF_SUB | NBPF_K)) || inc->dst != br->dst || inc->off)
		return 0;
	for (uint32_t x = head; x < e - 1; x++) {
		const struct nbpf_insn *in = &j->insns[x];
		uint8_t cls = NBPF_CLASS(in->code);

		if ((x != head && target[x]) || j->entry[x] || (j->kflags[x] & ~pure))
			return 0;
		if (cls == NBPF_ALU || cls == NBPF_ALU64 || cls == NBPF_LDX) {
			if (in->dst == br->dst)
				return 0;
		} else if (cls != NBPF_ST && (cls != NBPF_STX || NBPF_MODE(in->code) != NBPF_MEM)) {
			return 0;
		}
	}
	for (trips = 1;; trips++) {
		v = loop_value(j, head, e, trips);
		if (!nbpf_jmp_taken(op, v, (uint64_t)(int64_t)br->imm, 0))
			break;
		if (trips >= UNROLL_TRIPS)
			return 0;
	}
	return trips >= 2 && trips * (e - head) <= UNROLL_INSNS ? trips : 0;
}

/*
 * Whether every read of the counter in an unrolled body can take its value
 * as an immediate: ALU ops by it (not div/mod, not movsx), a mov+shift
 * pair's count, with each trip's value fitting a sign-extended imm32 where
 * a 64-bit op reads it.  Then the copies drop the counter's increments and
 * one mov sets its final value.  Memory operands and fused pairs that read
 * it keep the register (and the increments).
 */
static bool unroll_subst(const struct jit *j, uint32_t head, uint32_t e, uint32_t trips)
{
	int vr = j->insns[e].dst;
	bool wide = false;

	for (uint32_t x = head; x < e - 1; x++) {
		const struct nbpf_insn *in = &j->insns[x];
		uint8_t cls = NBPF_CLASS(in->code), op = NBPF_OP(in->code);
		uint32_t kf = j->kflags[x];

		if (cls == NBPF_LDX || cls == NBPF_ST || cls == NBPF_STX) {
			if (in->dst == vr || (cls != NBPF_ST && in->src == vr))
				return false;
			continue;
		}
		if (!alu_reads_src(in) || in->src != vr || (kf & (ZEXT_DONE | SHIFT_DONE)))
			continue; /* reads no counter (a folded shift's count: with its mov) */
		if (kf & (ADD_FUSED | MOV_SHIFT) || op == NBPF_DIV || op == NBPF_MOD ||
		    (op == NBPF_MOV && in->off))
			return false;
		wide |= cls == NBPF_ALU64 && op != NBPF_LSH && op != NBPF_RSH && op != NBPF_ARSH;
	}
	for (uint32_t k = 0; wide && k < trips; k++) {
		uint64_t v = loop_value(j, head, e, k);

		if (v != (uint64_t)(int64_t)(int32_t)v)
			return false;
	}
	return true;
}

/* r <<= 32; r >>= 32 (clang's zero extension), as one mov r32, r32. */
static bool zext_pair(const struct jit *j, const uint8_t *target, uint32_t i)
{
	const struct nbpf_insn *a = &j->insns[i], *b = &j->insns[i + 1];

	if (target[i + 1] || j->entry[i + 1])
		return false;
	return a->code == (NBPF_ALU64 | NBPF_LSH | NBPF_K) && a->imm == 32 && a->off == 0 &&
	       b->code == (NBPF_ALU64 | NBPF_RSH | NBPF_K) && b->imm == 32 && b->off == 0 &&
	       a->dst == b->dst && a->dst < NBPF_REG_FP;
}

/*
 * `if r == 0` / `!= 0` right after an add/sub/and/or/xor into r, reached
 * only from it: x86's op already set ZF from r (a 32-bit op from the
 * zero-extended result, so it serves both compare widths; a 64-bit op only
 * the 64-bit one), and the test is dropped.  Not after ops that are
 * emitted as something else (and 0xff/0xffff is movzx, which sets no flags)
 * or folded away.
 */
static void mark_no_test(struct jit *j, const uint8_t *target, uint32_t i)
{
	const struct nbpf_insn *a = &j->insns[i], *b = &j->insns[i + 1];
	uint8_t cls = NBPF_CLASS(a->code), op = NBPF_OP(a->code), bcls = NBPF_CLASS(b->code);

	if (target[i + 1] || j->entry[i + 1] || j->kflags[i] || j->kflags[i + 1])
		return;
	if ((cls != NBPF_ALU && cls != NBPF_ALU64) || a->off != 0 || a->dst >= NBPF_REG_FP)
		return;
	if (op != NBPF_ADD && op != NBPF_SUB && op != NBPF_AND && op != NBPF_OR && op != NBPF_XOR)
		return;
	if (NBPF_SRC(a->code) == NBPF_K && op == NBPF_AND && (a->imm == 0xff || a->imm == 0xffff))
		return;
	if (b->code != (bcls | NBPF_JEQ | NBPF_K) && b->code != (bcls | NBPF_JNE | NBPF_K))
		return;
	if ((bcls != NBPF_JMP && bcls != NBPF_JMP32) || b->imm != 0 || b->dst != a->dst)
		return;
	if (cls == NBPF_ALU64 && bcls == NBPF_JMP32)
		return;
	j->kflags[i + 1] |= NO_TEST;
}

static int jump_cc(uint8_t op);

/* Where the ja or gotol at i goes (gotol keeps its offset in imm). */
static int64_t ja_target(const struct nbpf_insn *in, uint32_t i)
{
	return (int64_t)i + 1 + (NBPF_CLASS(in->code) == NBPF_JMP ? in->off : in->imm);
}

static void emit_diamond(struct jit *j, uint32_t i, int cc);
static uint32_t insn_writes(const struct nbpf_insn *in);

/* Whether in reads BPF register r (a conservative yes for what it does not know). */
static bool insn_reads(const struct nbpf_insn *in, unsigned r)
{
	uint8_t cls = NBPF_CLASS(in->code), op = NBPF_OP(in->code);
	bool x = NBPF_SRC(in->code) == NBPF_X;

	switch (cls) {
	case NBPF_LD:
		return false; /* lddw writes dst only */
	case NBPF_ALU: case NBPF_ALU64:
		if (op == NBPF_MOV)
			return x && in->src == r;
		return in->dst == r || (x && in->src == r);
	case NBPF_LDX:
		return in->src == r;
	case NBPF_ST:
		return in->dst == r;
	case NBPF_STX:
		return in->dst == r || in->src == r ||
		       (NBPF_MODE(in->code) == NBPF_ATOMIC && r == 0);
	default:
		return true;
	}
}

/*
 * r holds no value anyone reads from k on: a straight-line search until r
 * is written (yes) or the function exits (yes, unless r is r0, or in a
 * subprogram r1-r5, which its caller sees); a read, a branch or a call
 * ends it with no.
 */
static bool reg_dead_from(const struct jit *j, uint32_t k, unsigned r)
{
	for (; k < j->n; k++) {
		const struct nbpf_insn *in = &j->insns[k];
		uint8_t cls = NBPF_CLASS(in->code);

		if (in->code == NBPF_OP_EXIT)
			return r != 0 && (j->in_main[k] || r >= 6);
		if (cls == NBPF_JMP || cls == NBPF_JMP32 || insn_reads(in, r))
			return false;
		if (insn_writes(in) & (1u << r))
			return true;
		if (in->code == NBPF_OP_LDDW)
			k++;
	}
	return false;
}

/*
 * `rX = imm; *(size *)(rY + off) = rX` with rX read by nothing after the
 * store: the store takes the immediate and the mov goes (clang's BPF puts
 * a constant in a register before storing it); rX's deadness is
 * reg_dead_from's straight-line search.  A 32-bit mov of a negative value
 * is not folded into an 8-byte store (the value is zero-, the store's
 * immediate sign-extended).
 */
static bool store_imm_pair(const struct jit *j, const uint8_t *target, uint32_t i)
{
	const struct nbpf_insn *m = &j->insns[i], *st = &j->insns[i + 1];
	uint8_t mcls = NBPF_CLASS(m->code);
	unsigned r = m->dst;

	if (i + 1 >= j->n || target[i + 1] || j->entry[i + 1] || j->kflags[i] || j->kflags[i + 1])
		return false;
	if (m->code != (mcls | NBPF_MOV | NBPF_K) || (mcls != NBPF_ALU && mcls != NBPF_ALU64) ||
	    m->off != 0 || r >= NBPF_REG_FP)
		return false;
	if (NBPF_CLASS(st->code) != NBPF_STX || NBPF_MODE(st->code) != NBPF_MEM ||
	    st->src != r || st->dst == r)
		return false;
	if (mcls == NBPF_ALU && NBPF_SIZE(st->code) == NBPF_DW && m->imm < 0)
		return false;
	return reg_dead_from(j, i + 2, r);
}

/*
 * `if cc goto +1; rX = v` (v an immediate or a register, 64-bit mov), the
 * second reached only from the first: a cmov on the inverse condition, so
 * a data-dependent choice costs no branch.  32-bit movs are left alone: a
 * 32-bit cmov writes (zero-extends) its destination even when it does not
 * move.
 */
static bool cmov_pair(const struct jit *j, const uint8_t *target, uint32_t i)
{
	const struct nbpf_insn *b = &j->insns[i], *m = &j->insns[i + 1];
	uint8_t cls = NBPF_CLASS(b->code), op = NBPF_OP(b->code);

	if (i + 2 >= j->n || target[i + 1] || j->entry[i + 1] || j->kflags[i] || j->kflags[i + 1])
		return false;
	if ((cls != NBPF_JMP && cls != NBPF_JMP32) || b->off != 1 || jump_cc(op) < 0)
		return false;
	if (m->code != (NBPF_ALU64 | NBPF_MOV | NBPF_K) && m->code != (NBPF_ALU64 | NBPF_MOV | NBPF_X))
		return false;
	return m->off == 0 && m->dst < NBPF_REG_FP &&
	       (NBPF_SRC(m->code) == NBPF_K || m->src < NBPF_REG_FP);
}

/*
 * Reads the arm [s, e) of an if/else symbolically: only plain movs into
 * registers and stores, values followed through the arm's own movs
 * (clang's `r = 1; *p = r; r = 2`), no store through a base the arm has
 * written, and no register left holding another written register's old
 * value.  What the arm writes then depends only on the state before it,
 * and the stores can go first, the register writes in any order.
 */
static bool read_arm(const struct jit *j, uint32_t s, uint32_t e, struct darm *arm)
{
	arm->nst = 0;
	arm->wrote = 0; /* reg[r] only for the registers written; the others hold their own */
	if (e - s > DIAMOND_MAX)
		return false;
	for (uint32_t x = s; x < e; x++) {
		const struct nbpf_insn *in = &j->insns[x];
		uint8_t cls = NBPF_CLASS(in->code);
		bool alu = cls == NBPF_ALU || cls == NBPF_ALU64;
		struct dval v;

		/* in stores that bit is part of the size: only ALU has a source flag */
		if (cls == NBPF_ST || (alu && NBPF_SRC(in->code) == NBPF_K))
			v = (struct dval){ .imm = true, .v = (uint64_t)(int64_t)in->imm };
		else if (in->src < NBPF_REG_FP && (arm->wrote & (1u << in->src)))
			v = arm->reg[in->src];
		else if (in->src < NBPF_REG_FP)
			v = (struct dval){ .reg = in->src };
		else
			return false;
		if (alu && NBPF_OP(in->code) == NBPF_MOV) {
			if (in->off || in->dst >= NBPF_REG_FP)
				return false;
			if (cls == NBPF_ALU) {
				if (v.imm)
					v.v = (uint32_t)v.v;
				else
					v.v32 = true;
			}
			arm->reg[in->dst] = v;
			arm->wrote |= 1u << in->dst;
		} else if ((cls == NBPF_ST || cls == NBPF_STX) && NBPF_MODE(in->code) == NBPF_MEM) {
			if (arm->wrote & (1u << in->dst))
				return false;
			arm->st[arm->nst] = in;
			arm->sv[arm->nst++] = v;
		} else {
			return false;
		}
	}
	for (uint8_t r = 0; r < NBPF_NREGS; r++) {
		const struct dval *v = &arm->reg[r];

		if (!(arm->wrote & (1u << r)) || v->imm || v->reg == r)
			continue;
		if (arm->wrote & (1u << v->reg))
			return false;
	}
	return true;
}

static bool dval_same(const struct dval *a, const struct dval *b)
{
	return a->imm == b->imm && (a->imm ? a->v == b->v : a->reg == b->reg && a->v32 == b->v32);
}

/*
 * `if cc goto A; F...; goto J; A: T...; J:` where F and T write the same
 * places (the same registers, the same stores in the same order: two
 * bases may alias), at most
 * DIAMOND_MAX instructions each (read_arm): an if/else choosing what to
 * write, as a policy picking algorithm and protocol by size does.  It
 * becomes one cmov per place on the one compare, with no branch
 * (emit_diamond).  Only the jump may enter the arms: nothing else jumps
 * to A or into either arm, and no other fold has claimed any of it.
 * Returns J, or 0.
 */
static uint32_t diamond(const struct jit *j, const uint8_t *target, uint32_t i,
			struct darm *fa, struct darm *ta)
{
	const struct nbpf_insn *b = &j->insns[i], *g;
	uint8_t cls = NBPF_CLASS(b->code);
	int64_t a, m, jt;

	if ((cls != NBPF_JMP && cls != NBPF_JMP32) || jump_cc(NBPF_OP(b->code)) < 0 || b->off < 2)
		return 0;
	m = (int64_t)i + b->off; /* the goto J closing the else arm */
	a = m + 1;
	if (a >= j->n)
		return 0;
	g = &j->insns[m];
	if (g->code != (NBPF_JMP | NBPF_JA) && g->code != (NBPF_JMP32 | NBPF_JA))
		return 0;
	jt = ja_target(g, (uint32_t)m);
	if (jt <= a || jt >= j->n)
		return 0;
	if (j->kflags[i] || target[a] != 1)
		return 0;
	for (int64_t x = i + 1; x < jt; x++)
		if (j->kflags[x] || j->entry[x] || (x != a && target[x]))
			return 0;
	if (!read_arm(j, i + 1, (uint32_t)m, fa) || !read_arm(j, (uint32_t)a, (uint32_t)jt, ta) ||
	    fa->nst != ta->nst || fa->wrote != ta->wrote)
		return 0;
	for (uint32_t p = 0; p < fa->nst; p++) {
		const struct nbpf_insn *x = fa->st[p], *y = ta->st[p];

		if (NBPF_SIZE(x->code) != NBPF_SIZE(y->code) || x->dst != y->dst ||
		    x->off != y->off)
			return 0;
	}
	return (uint32_t)jt;
}

/*
 * `goto L` where L starts a straight run of at most TAIL_MAX instructions
 * ending in exit (`r0 = 0; exit`: the join point of an if/else that
 * returns): the ja becomes a copy of that run, as compilers duplicate a
 * small epilogue into each arm.  Each arm then ends in its own ret instead
 * of a taken jump to a shared one, which costs front-end cycles even when
 * predicted.  The run may hold only plain ALU, loads and stores that no
 * other fold has claimed, so its copy is the same code as the original.
 */
static bool exit_tail(const struct jit *j, uint32_t i)
{
	const struct nbpf_insn *in = &j->insns[i];
	int64_t t = ja_target(in, i);

	if (NBPF_OP(in->code) != NBPF_JA || j->kflags[i])
		return false;
	if ((in->code != (NBPF_JMP | NBPF_JA) && in->code != (NBPF_JMP32 | NBPF_JA)) || t < 0)
		return false;
	for (uint32_t k = 0; k < TAIL_MAX && t + k < j->n; k++) {
		const struct nbpf_insn *x = &j->insns[t + k];
		uint8_t cls = NBPF_CLASS(x->code);

		if (j->kflags[t + k] || (k && j->entry[t + k]))
			return false;
		if (x->code == NBPF_OP_EXIT)
			return true;
		if (cls != NBPF_ALU && cls != NBPF_ALU64 && cls != NBPF_LDX && cls != NBPF_ST &&
		    !(cls == NBPF_STX && NBPF_MODE(x->code) == NBPF_MEM))
			return false;
	}
	return false;
}

/*
 * clang's BPF code for ncclbpf_log2() (include/ncclbpf/policy.h): BPF has
 * no clz, so the ladder is 24 instructions and 12 branches where gcc
 * emits one bsr.  The symbols stand for registers bound on the first
 * match: X the input, R the result, T the shifted input, B the last
 * step's bit, C, K0 and K the constant registers (clang reuses X's
 * register for K when X is dead by then).
 */
enum { LX, LT, LB, LK0, LR, LK, LC, LNSYM, LNONE = LNSYM };

struct log2_step {
	uint8_t code;
	uint8_t dst, src;  /* symbols; src LNONE for immediates */
	int16_t off;
	int32_t imm;
};

#define L_JGT(a, b, o) { NBPF_JMP | NBPF_JGT | NBPF_X, a, b, o, 0 }
#define L_ALU(op, d, v) { NBPF_ALU64 | (op) | NBPF_K, d, LNONE, 0, v }
#define L_STEP(lim, bit, sh) L_ALU(NBPF_MOV, LK, lim), L_JGT(LK, LT, 1), L_ALU(NBPF_OR, LR, bit), \
	L_JGT(LK, LT, 1), L_ALU(NBPF_RSH, LT, sh)

static const struct log2_step log2_ladder[] = {
	{ NBPF_OP_LDDW, LC, LNONE, 0, 0 }, { 0, 0, LNONE, 0, 1 },  /* C = 1 << 32 */
	{ NBPF_ALU64 | NBPF_MOV | NBPF_X, LT, LX, 0, 0 },
	L_JGT(LC, LX, 2),
	{ NBPF_ALU64 | NBPF_MOV | NBPF_X, LT, LX, 0, 0 },
	L_ALU(NBPF_RSH, LT, 32),
	L_ALU(NBPF_MOV, LB, 1),
	{ NBPF_OP_LDDW, LK0, LNONE, 0, -1 }, { 0, 0, LNONE, 0, 0 }, /* K = 2^32 - 1 */
	L_ALU(NBPF_MOV, LR, 1),
	L_JGT(LX, LK0, 1),
	L_ALU(NBPF_MOV, LR, 0),
	L_ALU(NBPF_LSH, LR, 5),
	L_STEP(65536, 16, 16), L_STEP(256, 8, 8), L_STEP(16, 4, 4),
	L_ALU(NBPF_MOV, LK, 4), L_JGT(LK, LT, 1), L_ALU(NBPF_ADD, LR, 2),
	L_JGT(LK, LT, 1), L_ALU(NBPF_RSH, LT, 2),
	{ NBPF_JMP | NBPF_JGT | NBPF_K, LT, LNONE, 1, 1 },
	L_ALU(NBPF_MOV, LB, 0),
	{ NBPF_ALU64 | NBPF_ADD | NBPF_X, LR, LB, 0, 0 },
};
#define LOG2_LEN ((uint32_t)(sizeof(log2_ladder) / sizeof(log2_ladder[0])))

static bool log2_bind(int8_t *sym, uint8_t s, uint8_t reg)
{
	if (s == LNONE)
		return true;
	if (sym[s] < 0)
		sym[s] = (int8_t)reg;
	return sym[s] == reg;
}


/*
 * The ladder at i, exactly as above: same opcodes, constants and offsets,
 * one register per symbol (see the aliasing rules below), no other
 * translation folded into it,
 * no jump or call from outside landing after its first instruction, and T
 * and B dead after it (their final values are not computed).  R, K, K0
 * and C get what the ladder leaves in them, so it may be replaced by
 * `R = bsr(X | 1); K = 4; K0 = 2^32 - 1; C = 2^32` (a register shared by
 * two symbols keeps the later write).
 */
static bool find_log2(const struct jit *j, uint32_t i, int8_t *sym)
{
	uint32_t end = i + LOG2_LEN;

	if (end > j->n)
		return false;
	memset(sym, -1, LNSYM);
	for (uint32_t k = 0; k < LOG2_LEN; k++) {
		const struct log2_step *t = &log2_ladder[k];
		const struct nbpf_insn *in = &j->insns[i + k];

		if (j->kflags[i + k] || (k && j->entry[i + k]))
			return false;
		if (k && log2_ladder[k - 1].code == NBPF_OP_LDDW) { /* second half of an lddw */
			if (in->code != 0 || in->imm != t->imm)
				return false;
			continue;
		}
		if (in->code != t->code || in->off != t->off || in->imm != t->imm ||
		    (t->code == NBPF_OP_LDDW && in->src != 0) || in->dst >= NBPF_REG_FP ||
		    !log2_bind(sym, t->dst, in->dst))
			return false;
		if (t->src != LNONE && (in->src >= NBPF_REG_FP || !log2_bind(sym, t->src, in->src)))
			return false;
		if (t->src == LNONE && t->code != NBPF_OP_LDDW && in->src != 0)
			return false;
	}
	/* X T B K0 R distinct; K and C only reuse registers dead before they are written. */
	for (int a = 0; a < LC; a++)
		for (int b = a + 1; b <= LC; b++)
			if (sym[a] == sym[b] && b < LK)
				return false;
	if (sym[LK] == sym[LT] || sym[LK] == sym[LB] || sym[LK] == sym[LR] ||
	    sym[LC] == sym[LX] || sym[LC] == sym[LT])
		return false;
	for (uint32_t k = 0; k < j->n; k++) { /* nothing from outside lands inside */
		const struct nbpf_insn *in = &j->insns[k];
		uint8_t cls = NBPF_CLASS(in->code), op = NBPF_OP(in->code);
		int64_t to;

		if (k >= i && k < end)
			continue;
		if (in->code == NBPF_OP_LDDW) {
			k++;
			continue;
		}
		if ((cls != NBPF_JMP && cls != NBPF_JMP32) || op == NBPF_EXIT ||
		    (op == NBPF_CALL && in->src != 1))
			continue;
		to = (int64_t)k + 1 + (op == NBPF_CALL || (op == NBPF_JA && cls == NBPF_JMP32) ?
				       in->imm : in->off);
		if (to > i && to < end)
			return false;
	}
	return reg_dead_from(j, end, (unsigned)sym[LT]) && reg_dead_from(j, end, (unsigned)sym[LB]);
}

/*
 * floor(log2(X)), 0 for X <= 1: bsr of X | 1 is the same for X >= 1 and 0
 * for X = 0, and never sees 0 (where its result is undefined).  bsr is
 * baseline x86-64; lzcnt would need a CPUID check for the same latency.
 */
static void emit_log2(struct jit *j, uint32_t i)
{
	struct nbpf_x86 *e = &j->e;
	int8_t sym[LNSYM];
	int x, r;

	/* find_log2 checked the ladder; its flags are set now, so only bind */
	memset(sym, -1, sizeof(sym));
	for (uint32_t k = 0; k < LOG2_LEN; k++) {
		const struct log2_step *t = &log2_ladder[k];
		const struct nbpf_insn *in = &j->insns[i + k];

		if (k && log2_ladder[k - 1].code == NBPF_OP_LDDW)
			continue;
		log2_bind(sym, t->dst, in->dst);
		log2_bind(sym, t->src, in->src);
	}
	x = j->bpf2x86[sym[LX]];
	r = j->bpf2x86[sym[LR]];
	x86_mov_rr(e, 1, X_R11, x);
	x86_alu_ri(e, 1, G1_OR, X_R11, 1);
	x86_op2_rr(e, 1, 0xbd, r, X_R11);
	x86_mov_imm64(e, j->bpf2x86[sym[LK]], 4);
	if (sym[LK0] != sym[LK])
		x86_mov_imm64(e, j->bpf2x86[sym[LK0]], UINT32_MAX);
	if (sym[LC] != sym[LB] && sym[LC] != sym[LK0] && sym[LC] != sym[LK] && sym[LC] != sym[LR])
		x86_mov_imm64(e, j->bpf2x86[sym[LC]], 1ull << 32);
}

static int emit_alu(struct jit *j, uint32_t i, const struct nbpf_insn *in, uint32_t kf)
{
	struct nbpf_x86 *e = &j->e;
	int w = NBPF_CLASS(in->code) == NBPF_ALU64;
	int dst = j->bpf2x86[in->dst], src;
	bool x = NBPF_SRC(in->code) == NBPF_X;
	uint8_t op = NBPF_OP(in->code);
	static const int g1[16] = {
		[NBPF_ADD >> 4] = G1_ADD, [NBPF_SUB >> 4] = G1_SUB, [NBPF_OR >> 4] = G1_OR,
		[NBPF_AND >> 4] = G1_AND, [NBPF_XOR >> 4] = G1_XOR,
	};

	if (j->no_frame && (kf & KEY_FPMOV))
		return 0; /* r2 = r10 + c fed only a lookup that takes its key directly */
	if (kf & (ADD_FUSED | ZEXT_DONE | MOV_CMOVED | MOV_DEAD | SHIFT_DONE))
		return 0; /* folded into a neighbour */
	if (kf & MOV_SHIFT) {
		const struct nbpf_insn *s = &in[1];
		uint8_t sop = NBPF_OP(s->code);

		emit_shiftx3(e, NBPF_CLASS(s->code) == NBPF_ALU64,
			     sop == NBPF_LSH ? 4 : sop == NBPF_RSH ? 5 : 7, j->bpf2x86[in->dst],
			     j->bpf2x86[in->src], j->bpf2x86[s->src == in->dst ? in->src : s->src]);
		return 0;
	}
	if (kf & ZEXT32) {
		x86_mov_rr(e, 0, j->bpf2x86[in->dst], j->bpf2x86[in->dst]);
		return 0;
	}
	if (in->off != 0 && op != NBPF_DIV && op != NBPF_MOD && op != NBPF_MOV)
		return nbpf_err(-EINVAL, "jit: insn %u: nonzero offset on ALU op 0x%02x", i, in->code);
	if (in->dst == NBPF_REG_FP)
		return nbpf_err(-EINVAL, "jit: insn %u: r10 is read-only", i);
	if (x && op == NBPF_MOV && in->off == 0 && in->src == NBPF_REG_FP) {
		x86_lea(e, dst, X_RSP, j->fp_off);
		if (!w)
			x86_mov_rr(e, 0, dst, dst);
		return 0;
	}
	src = x && op != NBPF_DIV && op != NBPF_MOD ? reg_val(j, in->src) : j->bpf2x86[in->src];
	switch (op) {
	case NBPF_ADD: case NBPF_SUB: case NBPF_OR: case NBPF_AND: case NBPF_XOR:
		if (!x && op == NBPF_AND && (in->imm == 0xff || in->imm == 0xffff)) {
			/* movzx: 3-4 bytes instead of 7; the result is the same for both widths */
			uint8_t o[2] = { 0x0f, in->imm == 0xff ? 0xb6 : 0xb7 };

			x86_rm(e, 0, in->imm == 0xff, o, 2, dst, false, dst, 0);
		} else if (x)
			x86_alu_rr(e, w, g1[op >> 4], dst, src);
		else
			x86_alu_ri(e, w, g1[op >> 4], dst, in->imm);
		return 0;
	case NBPF_MUL:
		if (x) {
			x86_op2_rr(e, w, 0xaf, dst, src);
		} else if (kf & MUL_ADD) {
			emit_mul_add(e, w, dst, j->bpf2x86[in[1].src], (uint32_t)in->imm);
		} else if (emit_mul_pow2(e, w, dst, in->imm)) {
			/* shl, or shl and add/sub: shorter latency than imul's 3 cycles */
		} else if (x86_fits8(in->imm)) {
			x86_op1_rr(e, w, 0x6b, dst, dst);
			x86_byte(e, (uint8_t)in->imm);
		} else {
			x86_op1_rr(e, w, 0x69, dst, dst);
			x86_u32(e, (uint32_t)in->imm);
		}
		return 0;
	case NBPF_DIV: case NBPF_MOD:
		if (in->off != 0 && in->off != 1)
			return nbpf_err(-EINVAL, "jit: insn %u: bad div/mod offset %d", i, in->off);
		emit_divmod(j, in, w);
		return 0;
	case NBPF_LSH: case NBPF_RSH: case NBPF_ARSH: {
		int ext = op == NBPF_LSH ? 4 : op == NBPF_RSH ? 5 : 7;

		if (x) {
			emit_shift_x(e, j->bmi2, w, ext, dst, src);
		} else {
			uint8_t cnt = (uint8_t)(in->imm & (w ? 63 : 31));

			if (cnt)
				x86_shift_ri(e, w, ext, dst, cnt);
			else if (!w)
				x86_mov_rr(e, 0, dst, dst);
		}
		return 0;
	}
	case NBPF_NEG:
		x86_op1_rr(e, w, 0xf7, 3, dst);
		return 0;
	case NBPF_MOV:
		if (!x) {
			if (in->off)
				return nbpf_err(-EINVAL, "jit: insn %u: offset on mov imm", i);
			if (in->imm == 0) /* 2-3 bytes; no BPF jump reads flags set before it */
				x86_alu_rr(e, 0, G1_XOR, dst, dst);
			else
				x86_mov_imm64(e, dst, w ? (uint64_t)(int64_t)in->imm : (uint32_t)in->imm);
		} else if (in->off == 0) {
			if (dst != src || !w)
				x86_mov_rr(e, w, dst, src);
		} else if (in->off == 8 || in->off == 16) {
			uint8_t o[2] = { 0x0f, in->off == 8 ? 0xbe : 0xbf };

			x86_rm(e, w, in->off == 8, o, 2, dst, false, src, 0);
		} else if (in->off == 32 && w) {
			uint8_t o = 0x63;

			x86_rm(e, 1, 0, &o, 1, dst, false, src, 0);
		} else {
			return nbpf_err(-EINVAL, "jit: insn %u: bad movsx offset %d", i, in->off);
		}
		return 0;
	case NBPF_END:
		if (in->imm != 16 && in->imm != 32 && in->imm != 64)
			return nbpf_err(-EINVAL, "jit: insn %u: bad byte swap width %d", i, in->imm);
		if (w && x)
			return nbpf_err(-EINVAL, "jit: insn %u: bad bswap encoding", i);
		emit_end(e, dst, w || x, in->imm);
		return 0;
	default:
		return nbpf_err(-EINVAL, "jit: insn %u: unknown ALU opcode 0x%02x", i, in->code);
	}
}

/* ---- memory --------------------------------------------------------------- */

static int size_bytes(uint8_t code)
{
	switch (NBPF_SIZE(code)) {
	case NBPF_B: return 1;
	case NBPF_H: return 2;
	case NBPF_W: return 4;
	default: return 8;
	}
}

static int emit_atomic(struct jit *j, uint32_t i, const struct nbpf_insn *in)
{
	struct nbpf_x86 *e = &j->e;
	int w = NBPF_SIZE(in->code) == NBPF_DW;
	int dst, src = j->bpf2x86[in->src];
	int32_t op = in->imm, off;
	uint8_t alu;

	if (in->src == NBPF_REG_FP)
		return nbpf_err(-EINVAL, "jit: insn %u: atomic operation on r10's value", i);
	mem_operand(j, in->dst, in->off, &dst, &off);

	if (NBPF_SIZE(in->code) != NBPF_W && !w)
		return nbpf_err(-EINVAL, "jit: insn %u: atomic op needs W or DW", i);
	switch (op & ~NBPF_FETCH) {
	case NBPF_ADD: alu = 0x01; break;
	case NBPF_OR:  alu = 0x09; break;
	case NBPF_AND: alu = 0x21; break;
	case NBPF_XOR: alu = 0x31; break;
	default: alu = 0; break;
	}
	if (op == NBPF_XCHG) {
		uint8_t o = 0x87;

		x86_rm(e, w, 0, &o, 1, src, true, dst, off);
		return 0;
	}
	if (op == NBPF_CMPXCHG) {
		static const uint8_t o[2] = { 0x0f, 0xb1 };

		x86_byte(e, 0xf0);
		x86_rm(e, w, 0, o, 2, src, true, dst, off);
		if (!w)
			x86_mov_rr(e, 0, X_RAX, X_RAX);
		return 0;
	}
	if (!alu)
		return nbpf_err(-EINVAL, "jit: insn %u: unknown atomic op 0x%x", i, op);
	if (!(op & NBPF_FETCH)) {
		x86_byte(e, 0xf0);
		x86_rm(e, w, 0, &alu, 1, src, true, dst, off);
		return 0;
	}
	if (alu == 0x01) {
		static const uint8_t xadd[2] = { 0x0f, 0xc1 };

		x86_byte(e, 0xf0);
		x86_rm(e, w, 0, xadd, 2, src, true, dst, off);
		return 0;
	}
	/* fetch-or/and/xor: a cmpxchg loop through rax, which is BPF r0. */
	{
		static const uint8_t cx[2] = { 0x0f, 0xb1 };
		int s = src == X_RAX ? X_R9 : src;
		size_t loop;

		x86_lea(e, X_R10, dst, off);
		x86_mov_rr(e, 1, X_R9, X_RAX);
		x86_load_zx(e, w ? 8 : 4, X_RAX, X_R10, 0);
		loop = e->pos;
		x86_mov_rr(e, w, X_R11, X_RAX);
		x86_alu_rr(e, w, (alu - 1) / 8, X_R11, s);
		x86_byte(e, 0xf0);
		x86_rm(e, w, 0, cx, 2, X_R11, true, X_R10, 0);
		x86_byte(e, 0x70 + CC_NE);
		x86_byte(e, (uint8_t)(int8_t)((int64_t)loop - (int64_t)(e->pos + 1)));
		x86_mov_rr(e, w, src, X_RAX);
		if (src != X_RAX)
			x86_mov_rr(e, 1, X_RAX, X_R9);
	}
	return 0;
}

static int emit_mem(struct jit *j, uint32_t i, const struct nbpf_insn *in)
{
	struct nbpf_x86 *e = &j->e;
	int size = size_bytes(in->code), base;
	uint8_t mode = NBPF_MODE(in->code);
	int32_t off;

	switch (NBPF_CLASS(in->code)) {
	case NBPF_LDX:
		if (in->dst == NBPF_REG_FP)
			return nbpf_err(-EINVAL, "jit: insn %u: r10 is read-only", i);
		mem_operand(j, in->src, in->off, &base, &off);
		if (mode == NBPF_MEM)
			x86_load_zx(e, size, j->bpf2x86[in->dst], base, off);
		else if (mode == NBPF_MEMSX && size != 8)
			x86_load_sx(e, size, j->bpf2x86[in->dst], base, off);
		else
			return nbpf_err(-EINVAL, "jit: insn %u: unknown load opcode 0x%02x", i, in->code);
		return 0;
	case NBPF_ST:
		if (mode != NBPF_MEM)
			return nbpf_err(-EINVAL, "jit: insn %u: unknown store opcode 0x%02x", i, in->code);
		if (j->no_frame && (j->kflags[i] & KEY_STORE))
			return 0; /* the lookup takes the key as an immediate */
		mem_operand(j, in->dst, in->off, &base, &off);
		x86_store_i(e, size, base, off, in->imm);
		return 0;
	default: {
		int src;

		if (mode == NBPF_ATOMIC)
			return emit_atomic(j, i, in);
		if (mode != NBPF_MEM)
			return nbpf_err(-EINVAL, "jit: insn %u: unknown store opcode 0x%02x", i, in->code);
		if (j->kflags[i] & STX_IMM) {
			mem_operand(j, in->dst, in->off, &base, &off);
			x86_store_i(e, size, base, off, in[-1].imm);
			return 0;
		}
		src = reg_val(j, in->src);
		if (!(j->no_frame && (j->kflags[i] & KEY_STORE))) {
			mem_operand(j, in->dst, in->off, &base, &off);
			x86_store_r(e, size, base, off, src);
		}
		if (j->kflags[i] & KEY_COPY)
			x86_mov_rr(e, 0, X_R9, src);
		return 0;
	}
	}
}

static int emit_lddw(struct jit *j, uint32_t i, const struct nbpf_insn *in)
{
	const struct nbpf_env *env = j->env;
	struct ncclbpf_map *map;
	uint64_t v;

	if (i + 1 >= j->n || in[1].code != 0)
		return nbpf_err(-EINVAL, "jit: insn %u: lddw without its second slot", i);
	if (in->dst == NBPF_REG_FP)
		return nbpf_err(-EINVAL, "jit: insn %u: r10 is read-only", i);
	if (j->kflags[i] & KEY_LDDW)
		return 0; /* r1 only names the map of an inlined lookup */
	switch (in->src) {
	case 0:
		v = (uint32_t)in->imm | ((uint64_t)(uint32_t)in[1].imm << 32);
		break;
	case NBPF_PSEUDO_MAP_FD: case NBPF_PSEUDO_MAP_IDX:
	case NBPF_PSEUDO_MAP_VALUE: case NBPF_PSEUDO_MAP_IDX_VALUE:
		if (!env || !env->maps || (uint32_t)in->imm >= env->n_maps || !env->maps[in->imm])
			return nbpf_err(-EINVAL, "jit: insn %u: lddw names unknown map %d", i, in->imm);
		map = env->maps[in->imm];
		if (in->src == NBPF_PSEUDO_MAP_FD || in->src == NBPF_PSEUDO_MAP_IDX) {
			v = (uintptr_t)map;
		} else {
			void *p = nbpf_map_value_addr(map, (uint32_t)in[1].imm);

			if (!p)
				return nbpf_err(-EINVAL, "jit: insn %u: map %d has no value at offset %d",
						i, in->imm, in[1].imm);
			v = (uintptr_t)p;
		}
		break;
	default:
		return nbpf_err(-EINVAL, "jit: insn %u: unsupported lddw source %d", i, in->src);
	}
	x86_mov_imm64(&j->e, j->bpf2x86[in->dst], v);
	return 0;
}

/* ---- calls ---------------------------------------------------------------- */

/*
 * bpf_map_lookup_elem on a known array map: bounds check and address math.
 * With KEY_NULLJ the program's next instruction (`if r0 == 0` or `!= 0`)
 * is folded in: r0 is zeroed before the bounds check, whose failing
 * branch goes straight to the null side, so neither a join jump nor a
 * test of r0 remains.
 */
static void emit_inline_lookup(struct jit *j, uint32_t i)
{
	struct nbpf_x86 *e = &j->e;
	const struct ncclbpf_map *map = j->inline_map[i];
	uint32_t kf = j->kflags[i];
	uint32_t stride = map->value_stride, key = j->key_imm[i];
	bool fused = kf & KEY_NULLJ, on_null = false;
	uint32_t jt = 0, fall = i + 2;
	size_t to_null = 0, to_done;
	int kreg;

	if (fused) {
		const struct nbpf_insn *t = &j->insns[i + 1];

		on_null = NBPF_OP(t->code) == NBPF_JEQ;
		jt = (uint32_t)((int64_t)i + 2 + t->off);
	}
	if (kf & KEY_CONST) {
		/* The bounds check and the address are folded at compile time. */
		if (key < map->max_entries) {
			x86_mov_imm64(e, X_RAX, (uintptr_t)map->array_base + (uint64_t)key * stride);
			if (fused && !on_null)
				emit_jump(j, -1, jt);
		} else {
			x86_alu_rr(e, 0, G1_XOR, X_RAX, X_RAX);
			if (fused && on_null)
				emit_jump(j, -1, jt);
		}
		return;
	}
	if (kf & KEY_R9) {
		kreg = X_R9;
	} else {
		kreg = X_R11;
		x86_load_zx(e, 4, X_R11, X_RSI, 0);
	}
	if (fused)
		x86_alu_rr(e, 0, G1_XOR, X_RAX, X_RAX);
	x86_alu_ri(e, 0, G1_CMP, kreg, (int32_t)map->max_entries);
	if (fused)
		emit_jump(j, CC_AE, on_null ? jt : fall);
	else
		to_null = x86_jcc8(e, CC_AE);
	x86_mov_rr(e, 0, X_RAX, kreg);
	if (stride && !(stride & (stride - 1))) {
		uint8_t sh = (uint8_t)__builtin_ctz(stride);

		if (sh)
			x86_shift_ri(e, 1, 4, X_RAX, sh);
	} else {
		x86_op1_rr(e, 1, 0x69, X_RAX, X_RAX);
		x86_u32(e, stride);
	}
	x86_movabs(e, X_R11, (uintptr_t)map->array_base);
	x86_alu_rr(e, 1, G1_ADD, X_RAX, X_R11);
	if (fused) {
		if (!on_null)
			emit_jump(j, -1, jt);
		return;
	}
	to_done = x86_jmp8(e);
	x86_land8(e, to_null);
	x86_alu_rr(e, 0, G1_XOR, X_RAX, X_RAX);
	x86_land8(e, to_done);
}

static void emit_call_abs(struct jit *j, uint64_t fn)
{
	struct nbpf_x86 *e = &j->e;

	if (j->far_calls) {
		x86_movabs(e, X_RAX, fn);
		x86_byte(e, 0xff);
		x86_byte(e, 0xd0); /* call rax */
		return;
	}
	x86_byte(e, 0xe8);
	/* Range was checked against the mapping before the writing pass. */
	x86_u32(e, (uint32_t)(e->buf ? (int64_t)fn - (int64_t)(j->base + e->pos + 4) : 0));
}

/* The runtime-resolved call (callx): conformance programs only. */
static void emit_callx(struct jit *j, int idreg)
{
	struct nbpf_x86 *e = &j->e;
	size_t to_skip;
	uint8_t o = 0xf7, ff = 0xff;
	static const int saved[5] = { X_RDI, X_RSI, X_RDX, X_RCX, X_R8 };

	for (int k = 0; k < 5; k++)
		x86_push(e, saved[k]);
	x86_push(e, X_R8); /* pad: keeps the call aligned; becomes the helper slot */
	x86_mov_rr(e, 0, X_RDI, idreg);
	x86_movabs(e, X_RAX, (uintptr_t)j->env->helper);
	x86_byte(e, 0xff);
	x86_byte(e, 0xd0);
	x86_rm(e, 1, 0, (const uint8_t[]){ 0x89 }, 1, X_RAX, true, X_RSP, 0);
	x86_pop(e, X_R11);
	for (int k = 4; k >= 0; k--)
		x86_pop(e, saved[k]);
	x86_test_rr(e, 1, X_R11, X_R11);
	emit_jump(j, CC_E, j->n);
	x86_rm(e, 0, 0, &o, 1, 0, true, X_R11, (int32_t)offsetof(struct nbpf_helper, flags));
	x86_u32(e, NBPF_HELPER_UNWIND);
	to_skip = x86_jcc8(e, CC_E);
	x86_test_rr(e, 1, X_RDI, X_RDI);
	emit_jump(j, CC_E, j->n);
	x86_land8(e, to_skip);
	x86_rm(e, 0, 0, &ff, 1, 2, true, X_R11, (int32_t)offsetof(struct nbpf_helper, fn));
}

static int emit_call(struct jit *j, uint32_t i, const struct nbpf_insn *in)
{
	struct nbpf_x86 *e = &j->e;

	if (in->code == NBPF_OP_CALLX) {
		if (!j->env || !j->env->helper)
			return nbpf_err(-EINVAL, "jit: insn %u: callx without a helper table", i);
		emit_callx(j, reg_val(j, in->dst));
		return 0;
	}
	if (in->src == NBPF_PSEUDO_CALL) {
		int64_t t = (int64_t)i + 1 + in->imm;

		x86_lea(e, X_R11, X_R12, -(NBPF_MAX_CALL_DEPTH - 2) * SUB_FRAME);
		x86_alu_rr(e, 1, G1_CMP, X_RSP, X_R11);
		emit_jump(j, CC_B, j->n);
		x86_byte(e, 0xe8);
		x86_u32(e, (uint32_t)(j->first_pass ? 0 :
				      (int64_t)j->prev[t] - j->sub_prologue - (int64_t)(e->pos + 4)));
		return 0;
	}
	if (in->src != 0)
		return nbpf_err(-EINVAL, "jit: insn %u: unsupported call source %d", i, in->src);
	if (j->inline_map[i]) {
		emit_inline_lookup(j, i);
		return 0;
	}
	{
		const struct nbpf_helper *h = j->env && j->env->helper ? j->env->helper(in->imm) : NULL;

		if (!h || !h->fn)
			return nbpf_err(-EINVAL, "jit: insn %u: unknown helper %d", i, in->imm);
		if (h->flags & NBPF_HELPER_UNWIND) {
			x86_test_rr(e, 1, X_RDI, X_RDI);
			emit_jump(j, CC_E, j->n);
		}
		emit_call_abs(j, (uintptr_t)h->fn);
	}
	return 0;
}

/* ---- jumps ---------------------------------------------------------------- */

static int jump_cc(uint8_t op)
{
	switch (op) {
	case NBPF_JEQ: return CC_E;
	case NBPF_JNE: return CC_NE;
	case NBPF_JSET: return CC_NE;
	case NBPF_JGT: return CC_A;
	case NBPF_JGE: return CC_AE;
	case NBPF_JLT: return CC_B;
	case NBPF_JLE: return CC_BE;
	case NBPF_JSGT: return CC_G;
	case NBPF_JSGE: return CC_GE;
	case NBPF_JSLT: return CC_L;
	case NBPF_JSLE: return CC_LE;
	default: return -1;
	}
}

static int emit_jmp(struct jit *j, uint32_t i, const struct nbpf_insn *in)
{
	struct nbpf_x86 *e = &j->e;
	int w = NBPF_CLASS(in->code) == NBPF_JMP;
	uint8_t op = NBPF_OP(in->code);
	int dst, src;
	int cc;

	if (op == NBPF_JA) {
		if (!(j->kflags[i] & JA_TAIL)) /* else emit_pass copies the tail here */
			emit_jump(j, -1, (uint32_t)ja_target(in, i));
		return 0;
	}
	if (op == NBPF_CALL && w)
		return emit_call(j, i, in);
	if (op == NBPF_EXIT && w) {
		if (j->in_main[i])
			emit_main_epilogue(j);
		else
			emit_sub_epilogue(e);
		return 0;
	}
	if (j->kflags[i] & KEY_FUSED)
		return 0; /* folded into the inlined lookup before it */
	cc = jump_cc(op);
	if (cc < 0)
		return nbpf_err(-EINVAL, "jit: insn %u: unknown jump opcode 0x%02x", i, in->code);
	if (j->kflags[i] & JCMOV) {
		/* `if cc goto +1; r = v` is `r = cc ? r : v`: the value first (mov keeps flags) */
		const struct nbpf_insn *m = &in[1];

		if (NBPF_SRC(m->code) == NBPF_K)
			x86_mov_imm64(e, X_R11, (uint64_t)(int64_t)m->imm);
		else
			x86_mov_rr(e, 1, X_R11, j->bpf2x86[m->src]);
	}
	dst = in->dst == NBPF_REG_FP ? reg_val(j, in->dst) : j->bpf2x86[in->dst];
	src = NBPF_SRC(in->code) == NBPF_X ? reg_val(j, in->src) : 0;
	if (NBPF_SRC(in->code) == NBPF_X) {
		if (op == NBPF_JSET)
			x86_test_rr(e, w, dst, src);
		else
			x86_alu_rr(e, w, G1_CMP, dst, src);
	} else if (op == NBPF_JSET) {
		x86_test_ri(e, w, dst, in->imm);
	} else if (in->imm == 0 && (j->kflags[i] & NO_TEST)) {
		/* the ALU op just before set ZF from dst */
	} else if (in->imm == 0) {
		x86_test_rr(e, w, dst, dst);
	} else {
		x86_alu_ri(e, w, G1_CMP, dst, in->imm);
	}
	if (j->kflags[i] & JCMOV) {
		x86_op2_rr(e, 1, (uint8_t)(0x40 + (cc ^ 1)), j->bpf2x86[in[1].dst], X_R11);
		return 0;
	}
	if (j->kflags[i] & DIAMOND) {
		emit_diamond(j, i, cc);
		return 0;
	}
	emit_jump(j, cc, (uint32_t)((int64_t)i + 1 + in->off));
	return 0;
}

/* ---- if/else as cmov -------------------------------------------------------- */

/* A diamond value into x86 register r (never xor for 0: the flags are live). */
static void dval_load(struct jit *j, const struct dval *d, int r)
{
	if (d->imm)
		x86_mov_imm64(&j->e, r, d->v);
	else
		x86_mov_rr(&j->e, !d->v32, r, j->bpf2x86[d->reg]);
}

/*
 * dst = cc ? t : f: f into dst, then a cmov from t's register when it is a
 * full register other than dst, else from r11, loaded first (dst may be
 * t's source).
 */
static void dval_select(struct jit *j, int cc, int dst, const struct dval *f, const struct dval *t)
{
	int src = X_R11;

	if (dval_same(f, t)) {
		dval_load(j, f, dst);
		return;
	}
	if (!t->imm && !t->v32 && j->bpf2x86[t->reg] != dst)
		src = j->bpf2x86[t->reg];
	else
		dval_load(j, t, X_R11);
	dval_load(j, f, dst);
	x86_op2_rr(&j->e, 1, (uint8_t)(0x40 + cc), dst, src);
}

/*
 * The if/else that diamond() found, after the compare: each store of the
 * else arm's value or, by cmov on the jump's condition, the then arm's,
 * then each register the arms write, likewise.  Movs, stores and cmovs
 * leave the flags alone, so the one compare serves every place; every
 * value is one from before the arms (read_arm), stores go before any
 * register is written, and computing the value not taken is harmless.
 */
static void emit_diamond(struct jit *j, uint32_t i, int cc)
{
	const struct darm *f = &j->darms[2 * j->key_imm[i]], *t = f + 1;

	for (uint32_t p = 0; p < f->nst; p++) {
		const struct nbpf_insn *st = f->st[p];
		int size = size_bytes(st->code), base;
		int32_t off;

		mem_operand(j, st->dst, st->off, &base, &off);
		if (dval_same(&f->sv[p], &t->sv[p]) && f->sv[p].imm &&
		    (size < 8 || x86_fits32((int64_t)f->sv[p].v))) {
			x86_store_i(&j->e, size, base, off, (int32_t)f->sv[p].v);
			continue;
		}
		dval_select(j, cc, X_R9, &f->sv[p], &t->sv[p]);
		x86_store_r(&j->e, size, base, off, X_R9);
	}
	for (uint8_t r = 0; r < NBPF_REG_FP; r++)
		if (f->wrote & (1u << r))
			dval_select(j, cc, j->bpf2x86[r], &f->reg[r], &t->reg[r]);
}

/*
 * One body instruction of an unrolled loop.  With subst, reads of the
 * counter vr take val, its value on this trip, as an immediate
 * (unroll_subst said which can).
 */
static int emit_body_insn(struct jit *j, uint32_t x, int vr, bool subst, uint64_t val)
{
	const struct nbpf_insn *in = &j->insns[x];
	uint8_t cls = NBPF_CLASS(in->code);
	uint32_t kf = j->kflags[x] & ~(UNROLL_HEAD | UNROLL_SUBST | UNROLL_BODY);
	struct nbpf_insn k;

	if (cls == NBPF_LDX || cls == NBPF_ST || cls == NBPF_STX)
		return emit_mem(j, x, in);
	if (subst && (kf & MOV_SHIFT) && in[1].src == vr) {
		/* the pair's count is the counter: the mov, then a shift by an immediate */
		x86_mov_rr(&j->e, 1, j->bpf2x86[in->dst], j->bpf2x86[in->src]);
		k = in[1];
		k.code = (uint8_t)(k.code & ~NBPF_X);
		k.src = 0;
		k.imm = (int32_t)val;
		return emit_alu(j, x + 1, &k, 0);
	}
	if (subst && !kf && alu_reads_src(in) && in->src == vr) {
		k = *in;
		k.code = (uint8_t)(k.code & ~NBPF_X);
		k.src = 0;
		k.imm = (int32_t)val;
		return emit_alu(j, x, &k, 0);
	}
	return emit_alu(j, x, in, kf);
}

/*
 * A counted loop, every trip (counted_loop): the body's copies with the
 * counter's increments, or, with UNROLL_SUBST, with its values as
 * immediates and one mov of its final value.  No jump.
 */
static int emit_unrolled(struct jit *j, uint32_t head)
{
	uint32_t trips = j->key_imm[head], e = j->key_imm[head + 1];
	bool subst = j->kflags[head] & UNROLL_SUBST;
	int vr = j->insns[e].dst, err;

	for (uint32_t t = 0; t < trips; t++) {
		uint64_t val = loop_value(j, head, e, t);

		for (uint32_t x = head; x < e - 1; x++) {
			err = emit_body_insn(j, x, vr, subst, val);
			if (err)
				return err;
		}
		if (!subst) {
			err = emit_alu(j, e - 1, &j->insns[e - 1], 0);
			if (err)
				return err;
		}
	}
	if (subst)
		x86_mov_imm64(&j->e, j->bpf2x86[vr], loop_value(j, head, e, trips));
	return 0;
}

/* ---- passes --------------------------------------------------------------- */

static int emit_insn(struct jit *j, uint32_t i)
{
	const struct nbpf_insn *in = &j->insns[i];

	j->fp_off = j->in_main[i] ? j->alloc : SUB_ALLOC;
	if (j->kflags[i] & (LOG2_BODY | DIAMOND_BODY | UNROLL_BODY))
		return 0;
	if (j->kflags[i] & UNROLL_HEAD)
		return emit_unrolled(j, i);
	if (j->kflags[i] & LOG2_HEAD) {
		emit_log2(j, i);
		return 0;
	}
	switch (NBPF_CLASS(in->code)) {
	case NBPF_ALU: case NBPF_ALU64:
		return emit_alu(j, i, in, j->kflags[i]);
	case NBPF_LDX: case NBPF_ST: case NBPF_STX:
		return emit_mem(j, i, in);
	case NBPF_JMP: case NBPF_JMP32:
		return emit_jmp(j, i, in);
	default:
		if (in->code == NBPF_OP_LDDW)
			return emit_lddw(j, i, in);
		return nbpf_err(-EINVAL, "jit: insn %u: unknown opcode 0x%02x", i, in->code);
	}
}

/* One pass over the program: fills j->addrs and, when e.buf is set, the code. */
static int emit_pass(struct jit *j)
{
	struct nbpf_x86 *e = &j->e;
	int err;

	e->pos = 0;
	e->overflow = false;
	emit_main_prologue(j);
	for (uint32_t i = 0; i < j->n; i++) {
		if (j->entry[i] && i)
			emit_sub_prologue(e);
		j->addrs[i] = (uint32_t)e->pos;
		/* one call site, so that emit_insn stays inlined */
		for (uint32_t t = i;;) {
			const struct nbpf_insn *in = &j->insns[t];

			err = emit_insn(j, t);
			if (err)
				return err;
			/* after a JA_TAIL ja, its target's run once more, up to the exit */
			if (t == i && (j->kflags[i] & JA_TAIL))
				t = (uint32_t)ja_target(in, i);
			else if (t != i && in->code != NBPF_OP_EXIT)
				t++;
			else
				break;
		}
		if (j->insns[i].code == NBPF_OP_LDDW)
			j->addrs[++i] = (uint32_t)e->pos;
	}
	j->addrs[j->n] = (uint32_t)e->pos;
	if (j->needs_r12) {
		x86_mov_rr(e, 1, X_RSP, X_R12);
		x86_alu_rr(e, 0, G1_XOR, X_RAX, X_RAX);
		emit_main_epilogue(j);
	}
	if (e->overflow)
		return nbpf_err(-EFAULT, "jit: internal error: code buffer overrun");
	return 0;
}

/* Registers written by an instruction (bitmask of BPF registers). */
static uint32_t insn_writes(const struct nbpf_insn *in)
{
	uint8_t cls = NBPF_CLASS(in->code);

	switch (cls) {
	case NBPF_ALU: case NBPF_ALU64: case NBPF_LDX:
		return 1u << in->dst;
	case NBPF_LD:
		return 1u << in->dst;
	case NBPF_STX:
		if (NBPF_MODE(in->code) != NBPF_ATOMIC)
			return 0;
		if (in->imm == NBPF_CMPXCHG)
			return 1u;
		return (in->imm & NBPF_FETCH) ? 1u << in->src : 0;
	case NBPF_JMP:
		if (NBPF_OP(in->code) == NBPF_CALL)
			return 0x3f; /* r0-r5 */
		return 0;
	default:
		return 0;
	}
}

/* Whether in names register r as an operand (read or written). */
static bool insn_mentions(const struct nbpf_insn *in, unsigned r)
{
	uint8_t cls = NBPF_CLASS(in->code), op = NBPF_OP(in->code);

	switch (cls) {
	case NBPF_LD:
		return in->dst == r;
	case NBPF_ALU: case NBPF_ALU64:
		return in->dst == r || (NBPF_SRC(in->code) == NBPF_X && in->src == r);
	case NBPF_LDX: case NBPF_STX:
		return in->dst == r || in->src == r;
	case NBPF_ST:
		return in->dst == r;
	case NBPF_JMP: case NBPF_JMP32:
		if (op == NBPF_CALL)
			return r >= 1 && r <= 5;
		if (op == NBPF_EXIT)
			return r == 0;
		return in->dst == r || (NBPF_SRC(in->code) == NBPF_X && in->src == r);
	default:
		return true;
	}
}

/*
 * For the inlined lookup at call i, looks back through its basic block for
 * where the key comes from: r2 must be r10 + c (mov r2, r10; add r2, K...)
 * and the last memory write before the call a 4-byte store to [r10 + c].
 * A constant store folds the whole lookup; a register store is also copied
 * into r9 (nothing between it and the call may clobber r9: no div/mod, and
 * calls and atomics are memory writes, which end the search).
 */
static void find_key(struct jit *j, const uint8_t *target, uint32_t i)
{
	const struct nbpf_insn *ins = j->insns;
	int64_t c = 0;
	int r2_done = 0, store = -1, mov = -1;
	bool r2_other = false; /* r2 read between its mov and the call */

	for (uint32_t k = i; k > 0 && !target[k] && !j->entry[k];) {
		const struct nbpf_insn *in;
		uint8_t cls, op;

		k--;
		if (k > 0 && ins[k - 1].code == NBPF_OP_LDDW)
			k--;
		in = &ins[k];
		cls = NBPF_CLASS(in->code);
		op = NBPF_OP(in->code);
		if (store < 0) {
			if ((cls == NBPF_ALU || cls == NBPF_ALU64) && (op == NBPF_DIV || op == NBPF_MOD))
				return;
			if (cls == NBPF_ST || cls == NBPF_STX || in->code == NBPF_OP_CALL ||
			    in->code == NBPF_OP_CALLX) {
				if (in->code != (NBPF_ST | NBPF_MEM | NBPF_W) &&
				    in->code != (NBPF_STX | NBPF_MEM | NBPF_W))
					return;
				if (in->dst != NBPF_REG_FP)
					return;
				store = (int)k;
			}
		}
		if (!r2_done && (insn_writes(in) & 4u)) {
			if (in->code == (NBPF_ALU64 | NBPF_ADD | NBPF_K) && in->dst == 2) {
				c += in->imm;
			} else if (in->code == (NBPF_ALU64 | NBPF_MOV | NBPF_X) && in->dst == 2 &&
				   in->src == NBPF_REG_FP && in->off == 0) {
				r2_done = 1;
				mov = (int)k;
			} else {
				return;
			}
		} else if (!r2_done && (insn_mentions(in, 2) || cls == NBPF_JMP || cls == NBPF_JMP32)) {
			r2_other = true; /* read, or a branch out of the block with r2 live */
		}
		if (r2_done && store >= 0)
			break;
	}
	if (!r2_done || store < 0 || ins[store].off != c)
		return;
	if (NBPF_CLASS(ins[store].code) == NBPF_ST) {
		j->kflags[i] |= KEY_CONST;
		j->key_imm[i] = (uint32_t)ins[store].imm;
	} else {
		j->kflags[i] |= KEY_R9;
		j->kflags[store] |= KEY_COPY;
	}
	/*
	 * The slot's address went nowhere else: the store may go, and so may
	 * r2's mov and adds, which only the lookup would read (see analyze).
	 */
	if (!r2_other) {
		j->kflags[store] |= KEY_STORE;
		for (uint32_t k = (uint32_t)mov; k < i; k++)
			if (k == (uint32_t)mov || (ins[k].code == (NBPF_ALU64 | NBPF_ADD | NBPF_K) &&
						   ins[k].dst == 2))
				j->kflags[k] |= KEY_FPMOV;
	}
}

/*
 * The lddw that put an inlined lookup's map in r1 (at insn k) emits
 * nothing when r1 goes nowhere else: nothing between it and the call
 * mentions r1 and no branch leaves the block in between (where r1 could
 * be live).  After the call r1 is scratch (the verifier rejects reading
 * it, and a real helper call clobbers it), so the map pointer is dead.
 */
static void mark_lddw(struct jit *j, uint32_t k, uint32_t call)
{
	for (uint32_t i = k + 2; i < call; i++) {
		const struct nbpf_insn *in = &j->insns[i];
		uint8_t cls = NBPF_CLASS(in->code);

		if (insn_mentions(in, 1) || cls == NBPF_JMP || cls == NBPF_JMP32)
			return;
		if (in->code == NBPF_OP_LDDW)
			i++;
	}
	j->kflags[k] |= KEY_LDDW;
}

/*
 * `if r0 == 0 goto` (or `!= 0`) right after an inlined lookup, reached
 * only from it, is folded into the lookup's bounds check.
 */
static void mark_null_test(struct jit *j, const uint8_t *target, uint32_t call)
{
	const struct nbpf_insn *t;
	uint32_t i = call + 1;

	if (i >= j->n || target[i] || j->entry[i])
		return;
	t = &j->insns[i];
	if (t->code != (NBPF_JMP | NBPF_JEQ | NBPF_K) && t->code != (NBPF_JMP | NBPF_JNE | NBPF_K))
		return;
	if (t->dst != 0 || t->imm != 0)
		return;
	j->kflags[call] |= KEY_NULLJ;
	j->kflags[i] |= KEY_FUSED;
}

static bool callee_saved(int x)
{
	return x == X_RBX || x == X_RBP || x == X_R12 || x == X_R13 || x == X_R14 || x == X_R15;
}

/*
 * r6-r9 live in callee-saved registers so that they survive helper calls.
 * A main function that makes no real call (inlined lookups are not calls)
 * needs no such survival: r6-r9 then take the caller-saved registers of
 * r2-r5 that the program never names, and the prologue pushes nothing
 * for them (clang keeps the context in r6 across a lookup even when the
 * lookup is inlined).  x86 r10 joins the pool when no division, fetch
 * atomic or use of r10's value needs it as scratch; r9 and r11 stay
 * scratch, and rdi (r1, the context on entry) is always named.
 */
static bool uses_x86_r10(const struct jit *j)
{
	for (uint32_t i = 0; i < j->n; i++) {
		const struct nbpf_insn *in = &j->insns[i];
		uint8_t cls = NBPF_CLASS(in->code), op = NBPF_OP(in->code);

		if (in->code == NBPF_OP_LDDW) {
			i++;
			continue;
		}
		if ((cls == NBPF_ALU || cls == NBPF_ALU64) && (op == NBPF_DIV || op == NBPF_MOD))
			return true; /* rdx saved in r10 around div */
		if (cls == NBPF_STX && NBPF_MODE(in->code) == NBPF_ATOMIC)
			return true; /* the fetch loop's address */
		/* r10's value materialised (reg_val): anything but a load base or mov r, r10 */
		if (in->src == NBPF_REG_FP && cls != NBPF_LDX &&
		    !(in->code == (NBPF_ALU64 | NBPF_MOV | NBPF_X) && in->off == 0) &&
		    !((cls == NBPF_ALU || cls == NBPF_ALU64 || cls == NBPF_JMP || cls == NBPF_JMP32) &&
		      NBPF_SRC(in->code) == NBPF_K))
			return true;
		if ((cls == NBPF_JMP || cls == NBPF_JMP32) && in->dst == NBPF_REG_FP)
			return true;
	}
	return false;
}

static void assign_regs(struct jit *j, uint32_t used)
{
	static const int spare[4] = { 3, 4, 5, 2 }; /* rdx, rcx, r8, rsi */
	int pool[5], np = 0, next = 0;

	memcpy(j->bpf2x86, bpf2x86_default, sizeof(j->bpf2x86));
	if (j->has_calls || j->has_bpf_calls || j->needs_r12)
		return;
	for (int k = 0; k < 4; k++)
		if (!(used & (1u << spare[k])))
			pool[np++] = bpf2x86_default[spare[k]];
	/* x86 r10 is scratch only for division, fetch atomics and taking r10's value. */
	if (!uses_x86_r10(j))
		pool[np++] = X_R10;
	for (int r = 6; r <= 9 && next < np; r++)
		if (used & (1u << r))
			j->bpf2x86[r] = pool[next++];
}

/*
 * Whole-program facts: jump targets and subprogram entries (checked in
 * range), which callee-saved registers and frames the main function needs,
 * and which map lookups can be inlined (r1 loaded with an array map by an
 * lddw earlier in the same basic block).
 */
static int analyze(struct jit *j)
{
	const struct nbpf_insn *ins = j->insns;
	uint32_t n = j->n, used = 0;
	uint8_t *target = calloc(n + 1, 1);
	struct ncclbpf_map *r1_map = NULL;
	uint32_t r1_lddw = 0;
	int err = 0;

	if (!target)
		return nbpf_err(-ENOMEM, "jit: out of memory");
	j->entry[0] = 1;
	for (uint32_t i = 0; i < n; i++) {
		const struct nbpf_insn *in = &ins[i];
		uint8_t cls = NBPF_CLASS(in->code), op = NBPF_OP(in->code);

		if (in->dst >= NBPF_NREGS || in->src >= NBPF_NREGS) {
			if (!(in->code == NBPF_OP_LDDW || (cls == NBPF_JMP && op == NBPF_CALL &&
							   NBPF_SRC(in->code) == NBPF_K))) {
				err = nbpf_err(-EINVAL, "jit: insn %u: bad register", i);
				goto out;
			}
		}
		used |= (1u << in->dst) | (1u << in->src);
		if (in->code == NBPF_OP_LDDW) {
			if (in->dst >= NBPF_NREGS) {
				err = nbpf_err(-EINVAL, "jit: insn %u: bad register", i);
				goto out;
			}
			i++;
			continue;
		}
		if (cls == NBPF_JMP || cls == NBPF_JMP32) {
			int64_t t;

			if (op == NBPF_EXIT)
				continue;
			if (op == NBPF_CALL) {
				if (cls != NBPF_JMP)
					continue;
				if (in->code == NBPF_OP_CALLX) {
					j->has_calls = j->needs_r12 = true;
					continue;
				}
				if (in->src != NBPF_PSEUDO_CALL)
					continue;
				t = (int64_t)i + 1 + in->imm;
				if (t <= 0 || t >= n) {
					err = nbpf_err(-EINVAL, "jit: insn %u: call target %" PRId64 " out of range",
						       i, t);
					goto out;
				}
				j->entry[t] = 1;
				j->has_bpf_calls = j->has_calls = j->needs_r12 = true;
				continue;
			}
			t = (int64_t)i + 1 + (cls == NBPF_JMP32 && op == NBPF_JA ? in->imm : in->off);
			if (t < 0 || t >= n) {
				err = nbpf_err(-EINVAL, "jit: insn %u: jump target %" PRId64 " out of range", i, t);
				goto out;
			}
			if (target[t] < UINT8_MAX)
				target[t]++; /* jumps to t, so diamond() can tell a lone one */
		}
	}
	/* A jump may not land in the middle of an lddw. */
	for (uint32_t i = 0; i + 1 < n; i++) {
		if (ins[i].code == NBPF_OP_LDDW) {
			if (target[i + 1] || j->entry[i + 1]) {
				err = nbpf_err(-EINVAL, "jit: insn %u: jump into the middle of lddw", i + 1);
				goto out;
			}
			i++;
		}
	}
	for (uint32_t i = 0; i + 1 < n; i++) {
		if (ins[i].code == NBPF_OP_LDDW) {
			i++;
			continue;
		}
		if (mul_add_fusable(j, target, i)) {
			j->kflags[i] |= MUL_ADD;
			j->kflags[i + 1] |= ADD_FUSED;
			i++;
		} else if (zext_pair(j, target, i)) {
			j->kflags[i] |= ZEXT32;
			j->kflags[i + 1] |= ZEXT_DONE;
			i++;
		} else if (mov_shift_pair(j, target, i)) {
			j->kflags[i] |= MOV_SHIFT;
			j->kflags[i + 1] |= SHIFT_DONE;
			i++;
		}
	}
	for (uint32_t i = 0, main = 1; i < n; i++) {
		if (i && j->entry[i])
			main = 0;
		j->in_main[i] = (uint8_t)main;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct nbpf_insn *in = &ins[i];

		if (target[i] || j->entry[i])
			r1_map = NULL;
		if (in->code == NBPF_OP_CALL && in->src == 0 && in->imm == NBPF_HELPER_MAP_LOOKUP &&
		    r1_map) {
			j->inline_map[i] = r1_map;
			mark_lddw(j, r1_lddw, i);
			mark_null_test(j, target, i);
		}
		if (in->code == NBPF_OP_CALL && in->src == 0 && !j->inline_map[i])
			j->has_calls = true;
		if (in->code == NBPF_OP_CALL && in->src == 0 && j->env && j->env->helper) {
			const struct nbpf_helper *h = j->env->helper(in->imm);

			if (h && (h->flags & NBPF_HELPER_UNWIND))
				j->needs_r12 = true;
		}
		if (insn_writes(in) & 2u)
			r1_map = NULL;
		if (in->code == NBPF_OP_LDDW) {
			if (in->dst == 1 && (in->src == NBPF_PSEUDO_MAP_FD || in->src == NBPF_PSEUDO_MAP_IDX) &&
			    j->env && j->env->maps && (uint32_t)in->imm < j->env->n_maps) {
				struct ncclbpf_map *m = j->env->maps[in->imm];

				if (m && m->type == NCCLBPF_MAP_ARRAY && m->key_size == 4 && m->array_base &&
				    m->value_stride <= INT32_MAX) {
					r1_map = m;
					r1_lddw = i;
				}
			}
			i++;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		if (j->inline_map[i])
			find_key(j, target, i);
	for (uint32_t i = 0; i < n; i++) {
		int8_t sym[LNSYM];

		if (ins[i].code == NBPF_OP_LDDW && find_log2(j, i, sym)) {
			j->kflags[i] |= LOG2_HEAD;
			for (uint32_t k = 1; k < LOG2_LEN; k++)
				j->kflags[i + k] |= LOG2_BODY;
			i += LOG2_LEN - 1;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		uint8_t cls = NBPF_CLASS(ins[i].code);
		struct darm fa, ta;
		uint32_t end;

		if (ins[i].code == NBPF_OP_LDDW) {
			i++;
			continue;
		}
		if ((cls != NBPF_JMP && cls != NBPF_JMP32) || ins[i].off < 2)
			continue; /* the cheap part of diamond()'s test, inline */
		end = diamond(j, target, i, &fa, &ta);
		if (end) {
			struct darm *d = realloc(j->darms, (j->ndarms + 1) * 2 * sizeof(*d));

			if (!d) {
				err = nbpf_err(-ENOMEM, "jit: out of memory");
				goto out;
			}
			j->darms = d;
			d[2 * j->ndarms] = fa;
			d[2 * j->ndarms + 1] = ta;
			j->key_imm[i] = j->ndarms++;
			j->kflags[i] |= DIAMOND;
			for (uint32_t x = i + 1; x < end; x++)
				j->kflags[x] |= DIAMOND_BODY;
		}
	}
	for (uint32_t i = 0; i + 1 < n; i++) {
		if (j->kflags[i] & (LOG2_HEAD | LOG2_BODY | DIAMOND | DIAMOND_BODY))
			continue;
		if (ins[i].code == NBPF_OP_LDDW) {
			i++;
			continue;
		}
		if (cmov_pair(j, target, i)) {
			j->kflags[i] |= JCMOV;
			j->kflags[i + 1] |= MOV_CMOVED;
			i++;
			continue;
		}
		if (store_imm_pair(j, target, i)) {
			j->kflags[i] |= MOV_DEAD;
			j->kflags[i + 1] |= STX_IMM;
			i++;
			continue;
		}
		mark_no_test(j, target, i);
	}
	/* After every other fold: a tail copy must not carry one (exit_tail). */
	for (uint32_t i = 0; i < n; i++) {
		if (ins[i].code == NBPF_OP_LDDW) {
			i++;
			continue;
		}
		if (NBPF_OP(ins[i].code) == NBPF_JA && exit_tail(j, i))
			j->kflags[i] |= JA_TAIL;
	}
	/* Last: a counted loop's body may carry only the pair folds above. */
	for (uint32_t i = 0, grown = 0; i < n; i++) {
		uint32_t trips;

		if (ins[i].code == NBPF_OP_LDDW) {
			i++;
			continue;
		}
		if (NBPF_CLASS(ins[i].code) == NBPF_JMP && ins[i].off < 0 &&
		    (trips = counted_loop(j, target, i)) &&
		    grown + trips * (uint32_t)-ins[i].off <= UNROLL_BUDGET) {
			uint32_t head = (uint32_t)((int64_t)i + 1 + ins[i].off);

			grown += trips * (uint32_t)-ins[i].off;
			if (unroll_subst(j, head, i, trips))
				j->kflags[head] |= UNROLL_SUBST;
			j->kflags[head] |= UNROLL_HEAD;
			for (uint32_t x = head + 1; x <= i; x++)
				j->kflags[x] |= UNROLL_BODY;
			j->key_imm[head] = trips;
			j->key_imm[head + 1] = i;
		}
	}
	/* Callee-saved registers the main function touches, and its frame. */
	assign_regs(j, used);
	j->uses_fp = used & (1u << NBPF_REG_FP);
	j->npush = 0;
	{
		static const int reg_of[4] = { 6, 7, 8, 9 };

		for (int k = 0; k < 4; k++)
			if (((used & (1u << reg_of[k])) || j->has_bpf_calls) &&
			    callee_saved(j->bpf2x86[reg_of[k]]))
				j->pushes[j->npush++] = j->bpf2x86[reg_of[k]];
		if (j->needs_r12)
			j->pushes[j->npush++] = X_R12;
	}
	/*
	 * No frame when r10 only appears in forwarded keys (store + mov r2,
	 * r10 with the address going nowhere else): nothing can read the
	 * slots, so the key stores are dropped and the 512 bytes never
	 * allocated.  A JA/exit mentions no register, so the check is exact.
	 */
	if (j->uses_fp && !j->has_bpf_calls) {
		bool only_keys = true;

		for (uint32_t i = 0; i < n && only_keys; i++) {
			if (ins[i].code == NBPF_OP_CALL || ins[i].code == NBPF_OP_CALLX)
				continue; /* src is a flag, not a register */
			if (insn_mentions(&ins[i], NBPF_REG_FP) &&
			    !(j->kflags[i] & (KEY_STORE | KEY_FPMOV)))
				only_keys = false;
			if (ins[i].code == NBPF_OP_LDDW)
				i++;
		}
		if (only_keys) {
			j->no_frame = true;
			j->uses_fp = false;
		}
	}
	j->alloc = j->uses_fp ? NBPF_STACK_SIZE : 0;
	if (j->has_calls && (8 + 8 * j->npush + j->alloc) % 16)
		j->alloc += 8;
out:
	free(target);
	return err;
}

/*
 * Code goes near the runtime's own text, for two reasons: helper calls then
 * fit in rel32, and calls from the host into the code stay near: on recent
 * x86 cores, an indirect call whose target lies gigabytes away costs about
 * a nanosecond more than a near one (measured: a 3-instruction program
 * ran 1.2-1.5x its native twin when placed far, 1.0x near), which is the
 * whole cost of a small policy.  One fixed hint only served the first
 * program (later ones found it taken and the kernel put them far away),
 * so a cursor walks down from 128 MiB below the text, one region per
 * program, and NOREPLACE skips what is taken.  Freed regions are not
 * reused; the walk stays within rel32 reach for about 300000 programs, and
 * past that (or on a kernel that ignores the flag) the kernel chooses.
 */
#define CODE_NEAR_START (128u << 20)
#define CODE_NEAR_LIMIT (1536u << 20)
#define CODE_NEAR_TRIES 64

static _Atomic uintptr_t code_cursor;

static void *map_code(size_t size)
{
	uintptr_t text = (uintptr_t)&nbpf_jit_compile;
	uintptr_t top = (text & ~(uintptr_t)0xfffff) - CODE_NEAR_START;
	uintptr_t zero = 0;
	void *p;

	if (text > CODE_NEAR_LIMIT + CODE_NEAR_START) {
		atomic_compare_exchange_strong(&code_cursor, &zero, top);
		for (int i = 0; i < CODE_NEAR_TRIES; i++) {
			uintptr_t hint = atomic_fetch_sub(&code_cursor, size) - size;

			if (top - hint > CODE_NEAR_LIMIT)
				break;
			p = mmap((void *)hint, size, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == (void *)hint)
				return p;
			if (p != MAP_FAILED) /* a kernel older than NOREPLACE took it as a hint */
				munmap(p, size);
		}
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static bool calls_in_range(const struct jit *j, uint64_t base, size_t size)
{
	for (uint32_t i = 0; i < j->n; i++) {
		const struct nbpf_insn *in = &j->insns[i];
		const struct nbpf_helper *h;

		if (in->code == NBPF_OP_LDDW) {
			i++;
			continue;
		}
		if (in->code != NBPF_OP_CALL || in->src != 0 || j->inline_map[i])
			continue;
		h = j->env->helper(in->imm);
		if (!x86_fits32((int64_t)(uintptr_t)h->fn - (int64_t)base) ||
		    !x86_fits32((int64_t)(uintptr_t)h->fn - (int64_t)(base + size)))
			return false;
	}
	return true;
}

/* Runs sizing passes until every instruction's offset is unchanged. */
static int settle(struct jit *j)
{
	int err;

	j->e.buf = NULL;
	j->first_pass = true;
	err = emit_pass(j);
	if (err)
		return err;
	j->first_pass = false;
	for (int pass = 0; pass < MAX_PASSES; pass++) {
		memcpy(j->prev, j->addrs, (j->n + 1) * sizeof(*j->addrs));
		err = emit_pass(j);
		if (err)
			return err;
		if (!memcmp(j->prev, j->addrs, (j->n + 1) * sizeof(*j->addrs)))
			return 0;
	}
	/* Did not settle (should not happen): long jumps are always stable. */
	j->long_jumps = true;
	for (int pass = 0; pass < 2; pass++) {
		memcpy(j->prev, j->addrs, (j->n + 1) * sizeof(*j->addrs));
		err = emit_pass(j);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Compiles insns[0..n) for env.  The code is written into an exactly sized
 * private mapping that is RW while written and RX afterwards.  On failure
 * nothing is left allocated and the error says which instruction.
 */
/*
 * Whether the CPU has BMI2.  NBPF_JIT_NO_BMI2=1 in the environment turns
 * it off, so the tests can cover the cl-based shift sequences on any CPU
 * (not an NCCLBPF_ name: the NCCL adapters warn about unknown ones).
 */
static bool use_bmi2(void)
{
	const char *no = getenv("NBPF_JIT_NO_BMI2");

	if (no && *no && strcmp(no, "0"))
		return false;
	__builtin_cpu_init();
	return __builtin_cpu_supports("bmi2");
}

int nbpf_jit_compile(const struct nbpf_insn *insns, uint32_t n, const struct nbpf_env *env,
		     struct nbpf_jit_image **out)
{
	struct jit j = { .insns = insns, .n = n, .env = env, .bmi2 = use_bmi2() };
	struct nbpf_jit_image *img = NULL;
	struct nbpf_x86 cnt = { 0 };
	void *mem = NULL;
	size_t size = 0, page = (size_t)sysconf(_SC_PAGESIZE), mem_size = 0;
	int err;

	*out = NULL;
	if (!insns || !n)
		return nbpf_err(-EINVAL, "jit: empty program");
	if (n > (1u << 24))
		return nbpf_err(-E2BIG, "jit: program too large (%u instructions)", n);
	j.addrs = calloc(n + 1, sizeof(*j.addrs));
	j.prev = calloc(n + 1, sizeof(*j.prev));
	j.entry = calloc(n, 1);
	j.in_main = calloc(n, 1);
	j.inline_map = calloc(n, sizeof(*j.inline_map));
	j.kflags = calloc(n, sizeof(*j.kflags));
	j.key_imm = calloc(n, sizeof(*j.key_imm));
	if (!j.addrs || !j.prev || !j.entry || !j.in_main || !j.inline_map || !j.kflags || !j.key_imm) {
		err = nbpf_err(-ENOMEM, "jit: out of memory");
		goto cleanup;
	}
	emit_sub_prologue(&cnt);
	j.sub_prologue = (uint32_t)cnt.pos;
	err = analyze(&j);
	if (err)
		goto cleanup;
	for (int attempt = 0; attempt < 2; attempt++) {
		err = settle(&j);
		if (err)
			goto cleanup;
		size = j.e.pos;
		mem_size = (size + page - 1) / page * page;
		mem = map_code(mem_size);
		if (!mem) {
			err = nbpf_err(-ENOMEM, "jit: cannot map %zu bytes of code", mem_size);
			goto cleanup;
		}
		if (j.far_calls || calls_in_range(&j, (uintptr_t)mem, size))
			break;
		munmap(mem, mem_size);
		mem = NULL;
		j.far_calls = true;
	}
	/* The writing pass: offsets are those of the last sizing pass. */
	memcpy(j.prev, j.addrs, (n + 1) * sizeof(*j.addrs));
	j.e.buf = mem;
	j.e.cap = size;
	j.base = (uintptr_t)mem;
	err = emit_pass(&j);
	if (err)
		goto cleanup;
	if (j.e.pos != size || memcmp(j.prev, j.addrs, (n + 1) * sizeof(*j.addrs))) {
		err = nbpf_err(-EFAULT, "jit: internal error: code size changed in the final pass");
		goto cleanup;
	}
	/* Never writable and executable at once. */
	if (mprotect(mem, mem_size, PROT_READ | PROT_EXEC)) {
		err = nbpf_err(-errno, "jit: mprotect: %s", strerror(errno));
		goto cleanup;
	}
	img = calloc(1, sizeof(*img));
	if (!img) {
		err = nbpf_err(-ENOMEM, "jit: out of memory");
		goto cleanup;
	}
	img->mem = mem;
	img->mem_size = mem_size;
	img->code_size = size;
	img->func = (ncclbpf_func_t)mem;
	*out = img;
	mem = NULL;
cleanup:
	if (mem)
		munmap(mem, mem_size);
	free(j.addrs);
	free(j.prev);
	free(j.entry);
	free(j.in_main);
	free(j.inline_map);
	free(j.kflags);
	free(j.key_imm);
	free(j.darms);
	return err;
}

void nbpf_jit_free(struct nbpf_jit_image *img)
{
	if (!img)
		return;
	if (img->mem)
		munmap(img->mem, img->mem_size);
	free(img);
}

#else /* !__x86_64__ */

int nbpf_jit_compile(const struct nbpf_insn *insns, uint32_t n, const struct nbpf_env *env,
		     struct nbpf_jit_image **out)
{
	*out = NULL;
	return nbpf_err(-ENOTSUP, "jit: only x86-64 is supported; use the interpreter");
}

void nbpf_jit_free(struct nbpf_jit_image *img)
{
}

#endif
