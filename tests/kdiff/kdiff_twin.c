// SPDX-License-Identifier: Apache-2.0
/*
 * kdiff_twin.c - twins of a program: the same program, with operations one
 * verifier models less precisely than the other replaced by exactly
 * equivalent sequences it models well.
 *
 * Every rewrite is the instruction's definition (two's complement,
 * little-endian stack, the ISA's semantics), so a twin computes what the
 * program computes on every input.  Where a verifier follows a register
 * copy as the same value (one id), a rewrite may choose between a copy and
 * a computation by a test of the value (`if y fits: mov x, y`): both arms
 * compute the same value, the copy shows the verifier a relation that
 * holds on exactly those inputs.
 *
 *   KD_RW_SIGN_EXT  movsx dst, src, W      where src fits W bits signed:
 *                                          mov dst, src; else mov dst, src;
 *                                          lsh dst, 64-W; arsh dst, 64-W
 *                   movsx32 dst, src, W    where src is in [0, 2^(W-1)):
 *                                          mov dst, src; else mov32 dst, src;
 *                                          lsh32 dst, 32-W; arsh32 dst, 32-W
 *                   mov32 dst, src         where src is in [0, 2^31): mov dst, src
 *                   ldxsW dst, [b+o]       ldxW dst, [b+o]; lsh dst, 64-8W;
 *                                          arsh dst, 64-8W
 *   KD_RW_FILL      stxWs [r10+o1], y ... ldxWf dst, [r10+o2] (a fill of the
 *                   spill's bytes, reached from it by falling through (no
 *                   call, no store in between; y written only by constant
 *                   additions):
 *                                          mov dst, y; add dst, -added; then
 *                                          where y fits Wf bytes (unsigned for
 *                                          ldx, signed for ldxs) and o2 == o1
 *                                          nothing, else rsh dst, 8(o2-o1);
 *                                          lsh dst, 64-8Wf; rsh/arsh dst, 64-8Wf
 *                   stWs [r10+o1], imm ... ldxWf dst, [r10+o2]
 *                                          mov (lddw) dst, the bytes read
 *   KD_RW_NEG       neg dst (neg32)        mul dst, -1 (mul32)
 *   KD_RW_ZEXT      a 32-bit shift by a register, division, modulo, le16/be16
 *                                          the same, then mov32 dst, dst
 *                                          (and dst, 0xffff)
 *   KD_RW_CONST     jCC x, y with y (or x) set by mov y, K before it
 *                                          jCC x, K (mirrored for a constant x);
 *                   jset x, y with y set by mov32 y, K (K < 0)
 *                                          jset32 x, K
 *   KD_RW_JSET      jset x, -2^k (jset32)  jgt x, 2^k - 1 (jgt32)
 *   KD_RW_MUL       mul x, -K              mul x, K; neg x
 *   KD_RW_IDENT     xor/or/add/sub x, 0    mov x, x (mov32 for the 32-bit forms:
 *                                          the kernel's XOR and OR take their
 *                                          bounds from the tnum alone)
 *   KD_RW_COPY      a 32-bit or sign-extending copy of s made again (s
 *                   unchanged): mov dst, the first copy; and after a 32-bit
 *                   comparison of s, its copies of s's low half (mov32,
 *                   movsx32-to-64) made before it, made again on the way on
 *   ("before" and "again": on the path falling through to the rewritten
 *   slot, which nothing in between is entered from elsewhere)
 *   (shift M)       add x, v               add v, M; add x, v; add v, -M; add x, -M
 *                                          (a pointer's variable part the kernel
 *                                          sees as non-negative)
 *
 * The kernel twin (KD_RW_KERNEL) is what the kernel's verifier models
 * less precisely than ours; when the kernel accepts it, the program is
 * safe and its refusal was its model, not the program.  Single rewrites
 * of ours name the cause of a precision gap: the first whose twin we
 * accept.
 */
#include <string.h>

#include "insn_build.h"
#include "kdiff.h"

struct twin {
	const struct kd_prog *p;    /* the program, for the analyses */
	const uint8_t *is_target;
	uint32_t j;                 /* the slot rewritten */
	struct nbpf_insn in;        /* slot j as it is in the twin so far */
	unsigned rw;
	int32_t shift;
	struct nbpf_insn seq[8];
	uint32_t n;
};

static void emit(struct twin *t, struct nbpf_insn in)
{
	t->seq[t->n++] = in;
}

static void targets(const struct kd_prog *p, uint8_t *is_target)
{
	memset(is_target, 0, p->n + 1);
	for (uint32_t i = 0; i < p->n; i++) {
		const struct nbpf_insn *in = &p->insns[i];
		int64_t t;

		if (ib_is_jump(in))
			t = (int64_t)i + 1 + ib_jump_off(in);
		else if (in->code == NBPF_OP_CALL && in->src == NBPF_PSEUDO_CALL)
			t = (int64_t)i + 1 + in->imm;
		else
			continue;
		if (t >= 0 && t <= p->n)
			is_target[t] = 1;
	}
}

static bool second_slot(const struct kd_prog *p, int64_t i)
{
	return i > 0 && nbpf_insn_is_lddw(&p->insns[i - 1]);
}

/* Whether the next slot may run after in: not an exit or an unconditional jump. */
static bool falls_through(const struct nbpf_insn *in)
{
	return in->code != NBPF_OP_EXIT && in->code != NBPF_OP_JA && in->code != NBPF_OP_GOTOL;
}

/* Whether insn writes register r (as a destination, a fetching atomic's source, a call's r0-r5). */
static bool writes_reg(const struct nbpf_insn *in, uint8_t r)
{
	uint8_t cls = NBPF_CLASS(in->code);

	if (in->code == NBPF_OP_CALL)
		return r <= 5;
	if (cls == NBPF_ALU || cls == NBPF_ALU64 || cls == NBPF_LDX || in->code == NBPF_OP_LDDW)
		return in->dst == r;
	if (cls == NBPF_STX && NBPF_MODE(in->code) == NBPF_ATOMIC)
		return (in->imm & NBPF_FETCH) && (in->src == r || (in->imm == NBPF_CMPXCHG && r == 0));
	return false;
}

/*
 * The store a stack fill at j reads: a store at [r10+o1] covering the
 * fill's bytes, reaching j by falling through (nothing in between entered
 * from elsewhere, no call, no other store).  Its index, or -1.
 */
static int64_t spill_for(const struct kd_prog *p, const uint8_t *is_target, uint32_t j)
{
	const struct nbpf_insn *f = &p->insns[j];
	int wf = ib_size_bytes(f->code);

	if (is_target[j])
		return -1;
	for (int64_t i = (int64_t)j - 1; i >= 0; i--) {
		const struct nbpf_insn *in = &p->insns[i];
		uint8_t cls = NBPF_CLASS(in->code);

		if (second_slot(p, i))
			continue;
		if ((cls == NBPF_ST || (cls == NBPF_STX && in->src != 10)) &&
		    NBPF_MODE(in->code) == NBPF_MEM && in->dst == 10) {
			int ws = ib_size_bytes(in->code);

			if (f->off >= in->off && f->off + wf <= in->off + ws)
				return i;
			if (f->off < in->off + ws && in->off < f->off + wf)
				return -1; /* a partial overwrite */
		} else if (cls == NBPF_ST || cls == NBPF_STX || in->code == NBPF_OP_CALL ||
			   !falls_through(in)) {
			return -1;
		}
		if (is_target[i])
			return -1;
	}
	return -1;
}

/* What was added to the spilled register between spill i and fill j: false if it changed otherwise. */
static bool source_delta(const struct kd_prog *p, int64_t i, uint32_t j, int64_t *delta)
{
	uint8_t y = p->insns[i].src;

	*delta = 0;
	for (int64_t k = i + 1; k < j; k++) {
		const struct nbpf_insn *in = &p->insns[k];

		if (!writes_reg(in, y))
			continue;
		if (in->code == (NBPF_ALU64 | NBPF_ADD | NBPF_K))
			*delta += in->imm;
		else if (in->code == (NBPF_ALU64 | NBPF_SUB | NBPF_K))
			*delta -= in->imm;
		else
			return false;
	}
	return true;
}

/* The fill's value from a constant store: the bytes it reads, extended. */
static int64_t stored_bytes(const struct nbpf_insn *st, const struct nbpf_insn *f, bool sx)
{
	uint64_t v = (uint64_t)(int64_t)st->imm;
	int w = ib_size_bytes(f->code);

	v >>= 8 * (f->off - st->off);
	if (w == 8)
		return (int64_t)v;
	v &= (1ull << (8 * w)) - 1;
	if (sx && (v >> (8 * w - 1)))
		v |= ~0ull << (8 * w);
	return (int64_t)v;
}

/*
 * The constant register r holds at j: mov r, K falling through to j, r not
 * written since.  *zext: set by mov32 with K < 0 (r is K's low 32 bits,
 * zero-extended, which no 64-bit immediate spells).
 */
static bool const_before(const struct twin *t, uint8_t r, int32_t *k, bool *zext)
{
	if (t->is_target[t->j])
		return false;
	for (int64_t i = (int64_t)t->j - 1; i >= 0; i--) {
		const struct nbpf_insn *in = &t->p->insns[i];

		if (second_slot(t->p, i))
			continue;
		if (in->dst == r && (in->code == (NBPF_ALU64 | NBPF_MOV | NBPF_K) ||
				     in->code == (NBPF_ALU | NBPF_MOV | NBPF_K))) {
			*k = in->imm;
			*zext = in->code == (NBPF_ALU | NBPF_MOV | NBPF_K) && in->imm < 0;
			return true;
		}
		if (writes_reg(in, r) || !falls_through(in) || t->is_target[i])
			return false;
	}
	return false;
}

/* "where src fits [lo, hi]: mov dst, src" before the computation that follows (3 slots after). */
static void copy_where_fits(struct twin *t, uint8_t dst, uint8_t src, int64_t lo, int32_t hi,
			    uint32_t after)
{
	if (lo < 0) {
		emit(t, ib_insn(NBPF_JMP | NBPF_JSGT | NBPF_K, src, 0, 3, hi));
		emit(t, ib_insn(NBPF_JMP | NBPF_JSLT | NBPF_K, src, 0, 2, (int32_t)lo));
	} else {
		emit(t, ib_insn(NBPF_JMP | NBPF_JGT | NBPF_K, src, 0, 2, hi));
	}
	emit(t, ib_insn(NBPF_ALU64 | NBPF_MOV | NBPF_X, dst, src, 0, 0));
	emit(t, ib_insn(NBPF_OP_JA, 0, 0, (int16_t)after, 0));
}

/*
 * The copy of s's low half that d holds at j (mov32 d, s or movsx32-to-64
 * d, s earlier on j's path, neither written since), or NULL.
 */
static const struct nbpf_insn *same_copy_into(const struct twin *t, uint8_t d, uint8_t s);

/*
 * Whether control from slot i reaches j only by falling through (a
 * conditional jump in between may leave, nothing may enter), leaving
 * registers a and b alone.
 */
static bool path_keeps(const struct twin *t, int64_t i, uint8_t a, uint8_t b)
{
	for (int64_t k = i + 1; k <= t->j; k++) {
		const struct nbpf_insn *in = &t->p->insns[k];

		if (t->is_target[k])
			return false;
		if (k < t->j && (writes_reg(in, a) || writes_reg(in, b) || !falls_through(in)))
			return false;
	}
	return true;
}

/*
 * The register holding what `code dst, src, off` computes at j, computed
 * earlier on the path falling through to j from the same src (neither
 * changed since), or -1.
 */
static const struct nbpf_insn *same_copy_into(const struct twin *t, uint8_t d, uint8_t s)
{
	for (int64_t i = (int64_t)t->j - 1; i >= 0; i--) {
		const struct nbpf_insn *in = &t->p->insns[i];

		if (second_slot(t->p, i))
			continue;
		if (in->dst == d && in->src == s &&
		    ((in->code == (NBPF_ALU | NBPF_MOV | NBPF_X) && !in->off) ||
		     (in->code == (NBPF_ALU64 | NBPF_MOV | NBPF_X) && in->off == 32)))
			return path_keeps(t, i, d, s) ? in : NULL;
		if (writes_reg(in, d) || !falls_through(in) || t->is_target[i])
			return NULL;
	}
	return NULL;
}

static int same_copy(const struct twin *t, uint8_t code, uint8_t src, int16_t off)
{
	for (int64_t i = (int64_t)t->j - 1; i >= 0; i--) {
		const struct nbpf_insn *in = &t->p->insns[i];

		if (second_slot(t->p, i))
			continue;
		if (in->code == code && in->src == src && in->off == off && in->dst != src)
			return path_keeps(t, i, in->dst, src) ? in->dst : -1;
		if (!falls_through(in) || t->is_target[i])
			return -1;
	}
	return -1;
}

/*
 * After a 32-bit comparison of s, the copies of s's low half (32-bit or
 * sign-extending) made before it in its block, made again: the same
 * values, now tied to what the comparison learnt about s's low half.
 */
static bool rematerialize(struct twin *t, const struct nbpf_insn *jmp)
{
	uint8_t regs[2] = { jmp->dst, NBPF_SRC(jmp->code) == NBPF_X ? jmp->src : jmp->dst };
	uint32_t first = t->n ? 0 : 1, added = 0;

	if (!t->n)
		emit(t, *jmp);
	for (int r = 0; r < 2; r++)
		for (uint8_t d = 0; d < 10 && added < 3; d++) {
			const struct nbpf_insn *c = d != regs[r] ? same_copy_into(t, d, regs[r]) : NULL;

			if (c) {
				emit(t, *c);
				added++;
			}
		}
	if (!added) {
		t->n -= first;
		return false;
	}
	if (t->seq[0].off > 0) /* the copies sit before the jump's target now */
		ib_set_jump_off(&t->seq[0], ib_jump_off(&t->seq[0]) + added);
	return true;
}

static bool rw_jump(struct twin *t)
{
	struct nbpf_insn *in = &t->in;
	uint8_t cls = NBPF_CLASS(in->code);
	bool changed = false;
	int32_t k;

	if ((cls != NBPF_JMP && cls != NBPF_JMP32) || !ib_is_jump(in) || NBPF_OP(in->code) == NBPF_JA)
		return false;
	if ((t->rw & KD_RW_CONST) && NBPF_SRC(in->code) == NBPF_X) {
		uint8_t op = NBPF_OP(in->code);
		bool zext;

		/* x & zext32(K) tests x's low half only: jset32 x, K (no other test has a form) */
		if (const_before(t, in->src, &k, &zext) && (!zext || op == NBPF_JSET))
			*in = ib_insn((zext ? NBPF_JMP32 : cls) | op | NBPF_K, in->dst, 0, in->off, k);
		else if (const_before(t, in->dst, &k, &zext) && (!zext || op == NBPF_JSET))
			*in = ib_insn((zext ? NBPF_JMP32 : cls) | ib_jmp_mirror(op) | NBPF_K, in->src, 0,
				      in->off, k);
		if (NBPF_SRC(in->code) == NBPF_K) {
			cls = NBPF_CLASS(in->code);
			changed = true;
		}
	}
	if ((t->rw & KD_RW_JSET) && in->code == (cls | NBPF_JSET | NBPF_K)) {
		uint64_t m = cls == NBPF_JMP ? (uint64_t)(int64_t)in->imm : (uint32_t)in->imm;
		uint64_t low = ~m & (cls == NBPF_JMP ? ~0ull : 0xffffffffull);

		if (m && (low & (low + 1)) == 0 && low <= INT32_MAX) {
			*in = ib_insn(cls | NBPF_JGT | NBPF_K, in->dst, 0, in->off, (int32_t)low);
			changed = true;
		}
	}
	if (changed)
		emit(t, *in);
	if ((t->rw & KD_RW_COPY) && cls == NBPF_JMP32)
		changed |= rematerialize(t, in);
	return changed;
}

static bool rw_alu(struct twin *t)
{
	const struct nbpf_insn *in = &t->in;
	uint8_t cls = NBPF_CLASS(in->code), op = NBPF_OP(in->code), d = in->dst;

	if (cls != NBPF_ALU && cls != NBPF_ALU64)
		return false;
	if ((t->rw & KD_RW_COPY) && in->code == (cls | NBPF_MOV | NBPF_X) &&
	    (cls == NBPF_ALU || in->off) && d != in->src) {
		int x = same_copy(t, in->code, in->src, in->off);

		if (x >= 0) { /* the same extension of the same value: a copy of the first */
			emit(t, ib_insn(NBPF_ALU64 | NBPF_MOV | NBPF_X, d, (uint8_t)x, 0, 0));
			return true;
		}
	}
	if ((t->rw & KD_RW_IDENT) && NBPF_SRC(in->code) == NBPF_K && in->imm == 0 &&
	    (op == NBPF_XOR || op == NBPF_OR || op == NBPF_ADD || op == NBPF_SUB)) {
		emit(t, ib_insn(cls | NBPF_MOV | NBPF_X, d, d, 0, 0));
	} else if ((t->rw & KD_RW_NEG) && op == NBPF_NEG) {
		emit(t, ib_insn(cls | NBPF_MUL | NBPF_K, d, 0, 0, -1));
	} else if ((t->rw & KD_RW_MUL) && in->code == (cls | NBPF_MUL | NBPF_K) && in->imm < 0 &&
		   in->imm != INT32_MIN) {
		emit(t, ib_insn(cls | NBPF_MUL | NBPF_K, d, 0, 0, -in->imm));
		emit(t, ib_insn(cls | NBPF_NEG, d, 0, 0, 0));
	} else if ((t->rw & KD_RW_ZEXT) && cls == NBPF_ALU &&
		   ((NBPF_SRC(in->code) == NBPF_X && (op == NBPF_LSH || op == NBPF_RSH || op == NBPF_ARSH)) ||
		    op == NBPF_DIV || op == NBPF_MOD || (op == NBPF_END && in->imm == 16))) {
		emit(t, *in);
		if (op == NBPF_END)
			emit(t, ib_insn(NBPF_ALU64 | NBPF_AND | NBPF_K, d, 0, 0, 0xffff));
		else
			emit(t, ib_insn(NBPF_ALU | NBPF_MOV | NBPF_X, d, d, 0, 0));
	} else if ((t->rw & KD_RW_SIGN_EXT) && in->code == (cls | NBPF_MOV | NBPF_X) && in->off) {
		int bits = cls == NBPF_ALU64 ? 64 : 32;
		int32_t hi = (int32_t)((1ull << (in->off - 1)) - 1);

		copy_where_fits(t, d, in->src, cls == NBPF_ALU64 ? -(int64_t)hi - 1 : 0, hi, 3);
		emit(t, ib_insn(cls | NBPF_MOV | NBPF_X, d, in->src, 0, 0));
		emit(t, ib_insn(cls | NBPF_LSH | NBPF_K, d, 0, 0, bits - in->off));
		emit(t, ib_insn(cls | NBPF_ARSH | NBPF_K, d, 0, 0, bits - in->off));
	} else if ((t->rw & KD_RW_SIGN_EXT) && in->code == (NBPF_ALU | NBPF_MOV | NBPF_X) &&
		   d != in->src) {
		copy_where_fits(t, d, in->src, 0, INT32_MAX, 1);
		emit(t, *in);
	} else if (t->shift && in->code == (NBPF_ALU64 | NBPF_ADD | NBPF_X) && d != in->src &&
		   in->src != 10) {
		/* adds only: the kernel refuses any subtraction from a frame pointer */
		emit(t, ib_insn(NBPF_ALU64 | NBPF_ADD | NBPF_K, in->src, 0, 0, t->shift));
		emit(t, *in);
		emit(t, ib_insn(NBPF_ALU64 | NBPF_ADD | NBPF_K, in->src, 0, 0, -t->shift));
		emit(t, ib_insn(NBPF_ALU64 | NBPF_ADD | NBPF_K, d, 0, 0, -t->shift));
	} else {
		return false;
	}
	return true;
}

static bool rw_load(struct twin *t)
{
	const struct nbpf_insn *in = &t->in;
	bool sx = NBPF_MODE(in->code) == NBPF_MEMSX;
	int w = ib_size_bytes(in->code);
	int64_t i = -1, delta;
	uint8_t d = in->dst;

	if (NBPF_CLASS(in->code) != NBPF_LDX || (!sx && NBPF_MODE(in->code) != NBPF_MEM))
		return false;
	if ((t->rw & KD_RW_FILL) && in->src == 10)
		i = spill_for(t->p, t->is_target, t->j);
	if (i >= 0 && NBPF_CLASS(t->p->insns[i].code) == NBPF_ST) {
		int64_t v = stored_bytes(&t->p->insns[i], in, sx);

		if (v == (int32_t)v) {
			emit(t, ib_insn(NBPF_ALU64 | NBPF_MOV | NBPF_K, d, 0, 0, (int32_t)v));
		} else {
			emit(t, ib_insn(NBPF_OP_LDDW, d, 0, 0, (int32_t)v));
			emit(t, ib_insn(0, 0, 0, 0, (int32_t)((uint64_t)v >> 32)));
		}
		return true;
	}
	if (i >= 0 && source_delta(t->p, i, t->j, &delta) && delta == (int32_t)delta) {
		const struct nbpf_insn *sp = &t->p->insns[i];

		if (sp->src != d)
			emit(t, ib_insn(NBPF_ALU64 | NBPF_MOV | NBPF_X, d, sp->src, 0, 0));
		if (delta)
			emit(t, ib_insn(NBPF_ALU64 | NBPF_ADD | NBPF_K, d, 0, 0, (int32_t)-delta));
		if (in->off == sp->off && w < 8) {
			/* an immediate is sign-extended: a 4-byte zero extension tests [0, 2^31) */
			int32_t hi = sx || w == 4 ? (int32_t)((1ull << (8 * w - 1)) - 1)
						  : (1 << (8 * w)) - 1;

			emit(t, ib_insn(NBPF_JMP | (sx ? NBPF_JSGT : NBPF_JGT) | NBPF_K, d, 0, sx ? 2 : 1,
					hi));
			if (sx)
				emit(t, ib_insn(NBPF_JMP | NBPF_JSLT | NBPF_K, d, 0, 1, -hi - 1));
			emit(t, ib_insn(NBPF_OP_JA, 0, 0, 2, 0));
		}
		if (in->off > sp->off)
			emit(t, ib_insn(NBPF_ALU64 | NBPF_RSH | NBPF_K, d, 0, 0, 8 * (in->off - sp->off)));
	} else if (sx && (t->rw & KD_RW_SIGN_EXT)) {
		emit(t, ib_insn(NBPF_LDX | NBPF_MEM | NBPF_SIZE(in->code), d, in->src, in->off, 0));
	} else {
		return false;
	}
	if (w < 8) {
		emit(t, ib_insn(NBPF_ALU64 | NBPF_LSH | NBPF_K, d, 0, 0, 64 - 8 * w));
		emit(t, ib_insn(NBPF_ALU64 | (sx ? NBPF_ARSH : NBPF_RSH) | NBPF_K, d, 0, 0, 64 - 8 * w));
	}
	return true;
}

uint32_t kd_twin(const struct kd_prog *p, unsigned rewrites, int32_t shift, struct kd_prog *out)
{
	static uint8_t is_target[KD_MAX_INSNS + 1];
	struct twin t = { .p = p, .is_target = is_target, .rw = rewrites, .shift = shift };
	uint32_t done = 0;

	*out = *p;
	targets(p, is_target);
	/* from the end, so that the slots still to visit keep their indices */
	for (int64_t j = (int64_t)p->n - 1; j >= 0; j--) {
		if (second_slot(p, j))
			continue;
		t.j = (uint32_t)j;
		t.in = out->insns[j];
		t.n = 0;
		if ((rw_jump(&t) || rw_alu(&t) || rw_load(&t)) &&
		    kd_prog_replace(out, (uint32_t)j, t.seq, t.n) == 0)
			done++;
	}
	return done;
}
