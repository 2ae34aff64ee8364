/*
 * verifier.c - the exploration: a depth-first walk over all paths of the
 * program with one abstract state per path, forking at branches whose
 * outcome is unknown, pruning at prune points against fully explored
 * checkpoints, and stopping at the first error.  Instruction semantics for
 * ALU and jumps are here; memory, calls and exits are in mem.c and
 * calls.c; structure, bounds, states and taint in their own files.
 */
#include "verifier.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../error.h"
#include "../maps/map.h"
#include "vstate.h"

#define MAX_PENDING 8192
#define MAX_VAR_OFF (1ll << 29)

const struct ncclbpf_map *venv_map(const struct venv *e, uint32_t idx)
{
	if (!e->maps || idx >= e->n_maps)
		return NULL;
	return e->maps[idx];
}

void mark_reg_not_init(struct vreg *r)
{
	memset(r, 0, sizeof(*r));
}

struct vreg *vreg_get(struct venv *e, uint8_t regno)
{
	return &cur_frame(e)->regs[regno];
}

void for_each_reg_with_id(struct venv *e, uint32_t id, void (*fn)(struct vreg *, void *),
			  void *arg)
{
	struct vstate *s = e->cur;

	for (uint32_t f = 0; f < s->nframes; f++) {
		struct vframe *fr = &s->frames[f];
		bool hit = false;

		e->work += vwork_frame(fr);
		for (int r = 0; r < NBPF_NREGS; r++)
			if (fr->regs[r].id == id && fr->regs[r].type != VT_NOT_INIT) {
				fn(&fr->regs[r], arg);
				hit = true;
			}
		for (uint32_t k = 0; k < fr->nslots; k++)
			if (slot_spill_mask(&fr->slots[k]) && fr->slots[k].spill.id == id) {
				fn(&fr->slots[k].spill, arg);
				hit = true;
			}
		/* a caller's frame changed: no longer the one its stamp names */
		if (hit)
			fr->gen = 0;
	}
}

static int push_branch(struct venv *e, uint32_t pc, struct vstate **out)
{
	*out = NULL;
	if (e->n_stack >= MAX_PENDING)
		return vbudget_refuse(e, e->cur->pc, VM_LOOP_BRANCHES, VM_BUDGET_BRANCHES,
				     "8192 pending branches");
	*out = vstate_push(e, pc);
	return *out ? 0 : -ENOMEM;
}

static void const_reg(struct vreg *r, uint64_t v)
{
	memset(r, 0, sizeof(*r));
	reg_mark_const(r, v);
}

static bool is_ptr(const struct vreg *r)
{
	return r->type != VT_SCALAR && r->type != VT_NOT_INIT;
}

/* ---- ALU ---- */

/*
 * Compilers index a stack array with `fp_base | (i << k)` when they know
 * the base is aligned: every engine's frame pointer is 8-byte aligned (the
 * interpreter's frames are 16-aligned, the JIT's sit at 8-aligned offsets
 * from rsp, and the compiler's BPF target assumes 8), so when the pointer's
 * offset is constant and a multiple of `align` and every bit the scalar may
 * set is below `align`, OR adds.  Only frame pointers: map values and
 * records promise no alignment here.
 */
static bool stack_or_is_add(const struct vreg *dst, const struct vreg *src)
{
	uint64_t bits, align;

	if (dst->type != VT_STACK || src->type != VT_SCALAR || !tnum_is_const(dst->var_off) ||
	    dst->var_off.value)
		return false;
	bits = src->var_off.value | src->var_off.mask;
	align = dst->off % 8 ? (uint64_t)(dst->off & -dst->off) : 8;
	return bits < align;
}

/*
 * Compilers lower `x % K` (unsigned, K constant) as
 *     t = x; t /= K; t *= K; x -= t;
 * and the interval domain loses the relation between x and t, leaving the
 * remainder unbounded (fatal when it indexes an array).  Recognise the
 * sequence ending at `pc` (a `dst -= src` of the class `cls`) by walking
 * back through at most 8 straight-line instructions with no jump into
 * them: the first writes of src going back must be `src *= K`,
 * `src /= K` (unsigned, same K) and `src = dst` (same width, no sign
 * extension), and nothing between the mov and pc writes dst or src other
 * than those.  Then dst is exactly x mod K: [0, K - 1].  Returns K, or 0.
 */
static uint64_t mod_idiom(const struct venv *e, uint32_t pc, const struct nbpf_insn *sub)
{
	uint8_t cls = NBPF_CLASS(sub->code), d = sub->dst, s = sub->src;
	int step = 0; /* 0: want mul, 1: want div, 2: want mov */
	int32_t k = 0;

	if (d == s || s == NBPF_REG_FP)
		return 0;
	for (uint32_t i = pc, n = 0; i > 0 && n < 8; n++) {
		const struct nbpf_insn *in;
		uint8_t c;

		if (e->flags[i] & (IF_PRUNE | IF_LDDW2))
			return 0; /* something may enter between the mov and pc */
		in = &e->insns[--i];
		c = NBPF_CLASS(in->code);
		if (e->flags[i] & IF_LDDW2)
			return 0;
		if (c == NBPF_ST || (c == NBPF_STX && NBPF_MODE(in->code) == NBPF_MEM))
			continue;
		if (c != NBPF_ALU && c != NBPF_ALU64 && c != NBPF_LDX)
			return 0;
		if (in->dst == d)
			return 0;
		if (in->dst != s)
			continue;
		if (c != cls || in->off)
			return 0;
		if (step == 0 && in->code == (uint8_t)(cls | NBPF_MUL | NBPF_K) && in->imm > 0) {
			k = in->imm;
			step = 1;
		} else if (step == 1 && in->code == (uint8_t)(cls | NBPF_DIV | NBPF_K) && in->imm == k) {
			step = 2;
		} else if (step == 2 && in->code == (uint8_t)(cls | NBPF_MOV | NBPF_X) && in->src == d) {
			return (uint64_t)k;
		} else {
			return 0;
		}
	}
	return 0;
}

static int ptr_arith(struct venv *e, uint32_t pc, const struct nbpf_insn *in, struct vreg *dst,
		     const struct vreg *src)
{
	uint8_t op = NBPF_OP(in->code);
	uint8_t regs[3] = { in->dst, NBPF_SRC(in->code) == NBPF_X ? in->src : 0xff, 0xff };
	const struct vreg *ptr, *sc;
	struct vreg res, var;
	bool is_map;

	if (NBPF_CLASS(in->code) != NBPF_ALU64)
		return verr(e, pc, VM_PTR_ARITH, regs, "32-bit operation on a pointer");
	if (op == NBPF_OR && stack_or_is_add(dst, src))
		op = NBPF_ADD;
	if (op != NBPF_ADD && op != NBPF_SUB)
		return verr(e, pc, VM_PTR_ARITH, regs, "only + and - with an integer");
	if (is_ptr(dst) && is_ptr(src))
		return verr(e, pc, VM_PTR_ARITH, regs, "operation on two pointers");
	if (op == NBPF_SUB && !is_ptr(dst))
		return verr(e, pc, VM_PTR_ARITH, regs, "integer minus pointer");
	ptr = is_ptr(dst) ? dst : src;
	sc = is_ptr(dst) ? src : dst;
	if (ptr->type == VT_MAP_VALUE_OR_NULL || ptr->type == VT_RINGBUF_MEM_OR_NULL)
		return verr(e, pc, VM_PTR_ARITH_NULL, regs, NULL);
	if (ptr->type == VT_MAP_PTR || ptr->type == VT_RINGBUF_RELEASED)
		return verr(e, pc, ptr->type == VT_RINGBUF_RELEASED ? VM_RB_USE_AFTER : VM_PTR_ARITH,
			    regs, "on %s", vtype_name(ptr->type));
	is_map = ptr->type == VT_MAP_VALUE;
	res = *ptr;
	res.taint |= sc->taint;
	if (reg_is_const(sc)) {
		int64_t c = (int64_t)sc->var_off.value, off;

		if (c < -MAX_VAR_OFF || c > MAX_VAR_OFF)
			return verr(e, pc, is_map ? VM_MAP_UNBOUNDED : VM_PTR_ARITH_UNBOUNDED, regs,
				    "constant %lld", (long long)c);
		off = op == NBPF_SUB ? (int64_t)res.off - c : (int64_t)res.off + c;
		if (off < -MAX_VAR_OFF || off > MAX_VAR_OFF)
			return verr(e, pc, is_map ? VM_MAP_UNBOUNDED : VM_PTR_ARITH_UNBOUNDED, regs,
				    "offset %lld", (long long)off);
		res.off = (int32_t)off;
		*dst = res;
		return 0;
	}
	if (sc->smin < -MAX_VAR_OFF || sc->smax > MAX_VAR_OFF)
		return verr(e, pc, is_map ? VM_MAP_UNBOUNDED : VM_PTR_ARITH_UNBOUNDED, regs, NULL);
	var = *ptr;
	var.type = VT_SCALAR;
	var.off = 0;
	scalar_alu(&var, sc, op, false, 0);
	if (var.smin < -MAX_VAR_OFF || var.smax > MAX_VAR_OFF)
		return verr(e, pc, is_map ? VM_MAP_UNBOUNDED : VM_PTR_ARITH_UNBOUNDED, regs,
			    "accumulated offset");
	res.var_off = var.var_off;
	res.smin = var.smin;
	res.smax = var.smax;
	res.umin = var.umin;
	res.umax = var.umax;
	*dst = res;
	return 0;
}

/*
 * Whether an extending move (mov32: off 0; movsx: off 8, 16 or 32, into
 * 64 or 32 bits) gives back its source's value for every value the source
 * may hold: only then may the copy keep the source's identity (id,
 * derivation, delta).
 */
static bool ext_unchanged(const struct vreg *r, int16_t off, bool is64)
{
	int64_t half;

	if (!off)
		return r->umax <= UINT32_MAX;
	half = (int64_t)1 << (off - 1);
	if (!is64) /* the sign-extended low half, zero-extended: non-negative values only */
		return r->umax < (uint64_t)half;
	return r->smin >= -half && r->smax < half;
}

/*
 * dst = from + k (or - k) with k constant: dst is from's linked value plus
 * a delta, so a check on either bounds the other (the kernel's
 * BPF_ADD_CONST links).  64-bit, or 32-bit when the addition wraps for no
 * value from may hold (then it is the 64-bit one).  Deltas stay within
 * int32 so that differences of two of them cannot overflow.
 */
static void link_delta(const struct vreg *from, struct vreg *dst, bool sub, uint64_t k, bool is64)
{
	int64_t d, delta;

	if (from->type != VT_SCALAR || !from->id || reg_is_const(from) || reg_is_const(dst))
		return;
	if (is64) {
		d = (int64_t)k;
	} else {
		d = (int64_t)(int32_t)(uint32_t)k;
		if (from->umax > UINT32_MAX)
			return;
	}
	if (d < INT32_MIN + 1 || d > INT32_MAX)
		return;
	if (sub)
		d = -d;
	if (!is64 && ((int64_t)from->umin + d < 0 || (int64_t)from->umax + d > (int64_t)UINT32_MAX))
		return; /* some value wraps: a 32-bit sum is not the 64-bit one */
	delta = (int64_t)from->off + d;
	if (delta < INT32_MIN + 1 || delta > INT32_MAX)
		return;
	dst->id = from->id;
	dst->off = (int32_t)delta;
}

static uint64_t bswap_const(uint64_t v, int32_t bits, bool to_be_or_swap)
{
	if (!to_be_or_swap)
		return bits == 64 ? v : v & ((1ull << bits) - 1);
	if (bits == 16)
		return __builtin_bswap16((uint16_t)v);
	if (bits == 32)
		return __builtin_bswap32((uint32_t)v);
	return __builtin_bswap64(v);
}

/*
 * The signed 32-bit range of a 32-bit sum or difference (neg32 included),
 * where it cannot wrap: the result is its zero extension, two pieces when
 * that range crosses zero (`w8 = w3 + 0` of a sign-extended byte is
 * [-128, 127], not [0, 2^32 - 1]), so it is kept as the classes of its
 * low half (links.c), as the kernel keeps signed 32-bit bounds.
 */
static void lo32_sum(struct venv *e, const struct vreg *a, const struct vreg *b, bool sub,
		     struct vreg *dst)
{
	struct vreg la[2], lb[2], lo[2];
	int64_t lo_s, hi_s;

	if (a->type != VT_SCALAR || b->type != VT_SCALAR || reg_is_const(dst))
		return;
	if (!links_lo32(e->cur, a, la))
		links_lo32_plain(a, la);
	if (!links_lo32(e->cur, b, lb))
		links_lo32_plain(b, lb);
	/* operands within s32, so neither bound overflows 64 bits */
	lo_s = sub ? la[1].smin - lb[1].smax : la[1].smin + lb[1].smin;
	hi_s = sub ? la[1].smax - lb[1].smin : la[1].smax + lb[1].smax;
	if (lo_s < INT32_MIN || hi_s > INT32_MAX)
		return;
	links_lo32_plain(dst, lo);
	lo[1].smin = lo_s > lo[1].smin ? lo_s : lo[1].smin;
	lo[1].smax = hi_s < lo[1].smax ? hi_s : lo[1].smax;
	reg_bounds_sync(&lo[1]);
	if (!scalar_feasible(&lo[1]))
		return;
	scalar_meet_views(lo);
	links_note32(e, e->cur, dst, lo);
}

static int do_alu(struct venv *e, uint32_t pc, const struct nbpf_insn *in)
{
	struct vframe *f = cur_frame(e);
	struct vreg *dst = &f->regs[in->dst], src;
	uint8_t op = NBPF_OP(in->code);
	bool is64 = NBPF_CLASS(in->code) == NBPF_ALU64, x = NBPF_SRC(in->code) == NBPF_X;
	uint8_t regs[3];

	/* a byte swap's source bit is its direction (to big endian), not a register */
	if (op == NBPF_END)
		x = false;
	regs[0] = in->dst;
	regs[1] = x ? in->src : 0xff;
	regs[2] = 0xff;
	if (x) {
		src = f->regs[in->src];
		if (src.type == VT_NOT_INIT)
			return verr(e, pc, VM_UNINIT_REG, regs + 1, NULL);
	} else {
		const_reg(&src, is64 ? (uint64_t)(int64_t)in->imm : (uint32_t)in->imm);
	}
	if (op == NBPF_MOV) {
		if (!x) {
			const_reg(dst, src.var_off.value);
			return 0;
		}
		if (in->off || !is64) {
			struct vreg from;

			if (is_ptr(&src))
				return verr(e, pc, VM_PTR_ARITH, regs, in->off ? "sign extension of a pointer"
									: "32-bit move of a pointer");
			if (ext_unchanged(&src, in->off, is64)) {
				/* the same value: a copy, linked as mov links */
				if (!src.id && !reg_is_const(&src))
					src.id = f->regs[in->src].id = ++e->next_id;
				*dst = src;
				return 0;
			}
			/* an id on the source lets later extensions of it join this one's class */
			if (!src.id && !src.pad && !reg_is_const(&src))
				src.id = f->regs[in->src].id = ++e->next_id;
			from = src;
			if (in->off && !is64) {
				/*
				 * w = (s8/s16)w: the signed 32-bit range, e.g.
				 * [-128, 127], is two pieces once zero-extended;
				 * keep it as the low half's sign-extended view.
				 */
				struct vreg lo[2];

				scalar_sext(&src, (uint32_t)in->off / 8, false);
				lo[1] = src;
				scalar_zext32(&src);
				lo[0] = src;
				reg_forget_links(&src);
				*dst = src;
				links_note32(e, e->cur, dst, lo);
				return 0;
			}
			if (in->off)
				scalar_sext(&src, (uint32_t)in->off / 8, !is64);
			else
				scalar_zext32(&src);
			reg_forget_links(&src);
			*dst = src;
			links_after_alu(e, in, &from, dst);
			return 0;
		}
		if (src.type == VT_SCALAR && !src.id && !reg_is_const(&src))
			src.id = f->regs[in->src].id = ++e->next_id;
		*dst = src;
		return 0;
	}
	if (dst->type == VT_NOT_INIT)
		return verr(e, pc, VM_UNINIT_REG, regs, NULL);
	if (op == NBPF_NEG || op == NBPF_END) {
		struct vreg z;

		if (is_ptr(dst))
			return verr(e, pc, VM_PTR_ARITH, regs, "%s of a pointer",
				    op == NBPF_NEG ? "negation" : "byte swap");
		if (op == NBPF_NEG) {
			struct vreg zero;

			const_reg(&z, 0);
			z.taint = dst->taint;
			zero = z;
			scalar_alu(&z, dst, NBPF_SUB, !is64, 0);
			if (!is64)
				lo32_sum(e, &zero, dst, true, &z);
			*dst = z;
			return 0;
		}
		{
			bool swap = is64 || NBPF_SRC(in->code) == NBPF_TO_BE;
			uint8_t taint = dst->taint;

			if (reg_is_const(dst)) {
				const_reg(dst, bswap_const(dst->var_off.value, in->imm, swap));
			} else if (!swap) {
				/* to little endian on a little-endian machine: a truncation */
				if (in->imm < 64)
					scalar_zext_bytes(dst, (uint32_t)in->imm / 8);
			} else {
				/*
				 * A swap moves known bits: swap the tnum's value and
				 * mask alike (the low imm bits, zero-extended) and take
				 * the bounds from it.
				 */
				struct tnum t = tnum_cast(dst->var_off, (uint8_t)(in->imm / 8));

				reg_mark_unknown(dst);
				dst->var_off = TNUM(bswap_const(t.value, in->imm, true),
						    bswap_const(t.mask, in->imm, true));
				reg_bounds_sync(dst);
			}
			dst->taint = taint;
			reg_forget_links(dst);
		}
		return 0;
	}
	if (op == NBPF_DIV || op == NBPF_MOD) {
		struct vreg d = src;

		if (is_ptr(dst) || is_ptr(&src))
			return verr(e, pc, VM_PTR_ARITH, regs, "division of a pointer");
		if (!is64)
			scalar_zext32(&d);
		if (d.umin == 0)
			return verr(e, pc, VM_DIV_ZERO, regs + (x ? 1 : 0), NULL);
	}
	if (is_ptr(dst) || is_ptr(&src))
		return ptr_arith(e, pc, in, dst, &src);
	if (op == NBPF_LSH || op == NBPF_RSH || op == NBPF_ARSH) {
		struct vreg from = *dst;

		scalar_alu(dst, &src, op, !is64, in->off);
		if (is64 && !x && (from.id || from.pad))
			links_after_alu(e, in, &from, dst);
		return 0;
	}
	{
		struct vreg from = *dst;

		scalar_alu(dst, &src, op, !is64, in->off);
		if ((op == NBPF_ADD || op == NBPF_SUB) && reg_is_const(&src))
			link_delta(&from, dst, op == NBPF_SUB, src.var_off.value, is64);
		if (!is64 && (op == NBPF_ADD || op == NBPF_SUB))
			lo32_sum(e, &from, &src, op == NBPF_SUB, dst);
	}
	if (op == NBPF_SUB && x) {
		uint64_t k = mod_idiom(e, pc, in);

		if (k) {
			reg_mark_unknown(dst); /* keeps the taint scalar_alu merged */
			dst->umax = k - 1;
			dst->smax = (int64_t)(k - 1);
			dst->umin = 0;
			dst->smin = 0;
			reg_bounds_sync(dst);
		}
	}
	return 0;
}

/* ---- jumps ---- */

struct nullarg {
	bool is_null;
	struct vstate *s;
};

static void mark_ptr_or_null(struct vreg *r, void *arg)
{
	struct nullarg *a = arg;

	if (r->type != VT_MAP_VALUE_OR_NULL && r->type != VT_RINGBUF_MEM_OR_NULL)
		return;
	if (a->is_null) {
		uint8_t t = r->taint;

		const_reg(r, 0);
		r->taint = t;
		return;
	}
	r->type = r->type == VT_MAP_VALUE_OR_NULL ? VT_MAP_VALUE : VT_RINGBUF_MEM;
}

static void refine_null(struct venv *e, uint32_t id, bool is_null)
{
	struct vstate *s = e->cur;
	struct nullarg a = { is_null, s };

	if (!id)
		return;
	for_each_reg_with_id(e, id, mark_ptr_or_null, &a);
	if (is_null) {
		for (uint32_t i = 0; i < s->nrefs; i++) {
			if (s->refs[i] == id) {
				s->refs[i] = s->refs[--s->nrefs];
				break;
			}
		}
	}
}

struct copyarg {
	const struct vreg *from;
};

static void copy_bounds(struct vreg *r, void *arg)
{
	if (r->type == VT_SCALAR)
		reg_linked_bounds(r, ((struct copyarg *)arg)->from);
}

/*
 * Refines the state s for the branch outcome taken: 1, or 0 when the
 * compared registers rule it out (s unchanged), -1 when the classes of
 * extended copies do (s changed: the path ends).  dry: only the first test.
 */
static int refine_state(struct venv *e, struct vstate *s, const struct nbpf_insn *in, bool taken,
			bool dry)
{
	struct vframe *f = &s->frames[s->nframes - 1];
	bool x = NBPF_SRC(in->code) == NBPF_X, is32 = NBPF_CLASS(in->code) == NBPF_JMP32;
	struct vreg a = f->regs[in->dst], b, alo[2], blo[2];
	bool la = false, lb = false;

	if (x)
		b = f->regs[in->src];
	else
		const_reg(&b, is32 ? (uint32_t)in->imm : (uint64_t)(int64_t)in->imm);
	if (is32) {
		/*
		 * The low halves as the path knows them (links.c), refined in
		 * place: where a class exists, or where the refinement may
		 * start one (one the intervals cannot hold: the upper half is
		 * unknown, or the low half's signed range crosses the unsigned
		 * one's wrap, as s32 in [S32_MIN, 0] does).
		 */
		la = links_lo32(s, &a, alo);
		if (!la && a.type == VT_SCALAR) {
			links_lo32_plain(&a, alo);
			la = true;
		}
		lb = x && links_lo32(s, &b, blo);
		if (x && !lb && b.type == VT_SCALAR) {
			links_lo32_plain(&b, blo);
			lb = true;
		}
	}
	scalar_refine(&a, &b, NBPF_OP(in->code), is32, taken, la ? alo : NULL, lb ? blo : NULL);
	if (!scalar_feasible(&a) || !scalar_feasible(&b))
		return 0;
	if (dry)
		return 1;
	/*
	 * The copies first, then the low halves' classes: a register that
	 * is itself an extension is one of them, and what they say of it
	 * (`if w8 s< 0` on r8 = (s32)r9) is more than its own bounds.
	 */
	f->regs[in->dst] = a;
	if (a.id) {
		struct copyarg c = { &a };

		for_each_reg_with_id(e, a.id, copy_bounds, &c);
	}
	if (la) {
		links_note32(e, s, &f->regs[in->dst], alo);
		a = f->regs[in->dst];
	}
	if (x && in->src != in->dst) {
		f->regs[in->src] = b;
		if (b.id) {
			struct copyarg c = { &b };

			for_each_reg_with_id(e, b.id, copy_bounds, &c);
		}
		if (lb) {
			links_note32(e, s, &f->regs[in->src], blo);
			b = f->regs[in->src];
		}
	}
	/* extended copies of the same value (links.c) */
	if (s->nlinks && (!links_refined(e, &a) || (x && !links_refined(e, &b))))
		return -1;
	return 1;
}

/*
 * The outcome of `in` when the path's last fork was on the same comparison
 * (same code, registers, immediate) and neither register changed since: the
 * concrete values are those that took that side, so this jump goes the same
 * way.  -1 when it says nothing.
 */
static int cmp_fact_outcome(const struct vcmp *c, const struct nbpf_insn *in)
{
	if (!c->code || c->code != in->code || c->dst != in->dst)
		return -1;
	if (NBPF_SRC(in->code) == NBPF_X ? c->src != in->src : c->imm != in->imm)
		return -1;
	return c->taken;
}

static void cmp_fact_set(struct vcmp *c, const struct nbpf_insn *in, bool taken)
{
	bool x = NBPF_SRC(in->code) == NBPF_X;

	c->code = in->code;
	c->dst = in->dst;
	c->src = x ? in->src : 0;
	c->imm = x ? 0 : in->imm;
	c->taken = taken;
}

/* Whether `in` may change a register the path's comparison fact is about. */
static bool cmp_fact_clobbered(const struct vcmp *c, const struct nbpf_insn *in)
{
	uint8_t cls = NBPF_CLASS(in->code);
	bool x = NBPF_SRC(c->code) == NBPF_X;

	switch (cls) {
	case NBPF_ALU:
	case NBPF_ALU64:
	case NBPF_LD:
	case NBPF_LDX:
		return in->dst == c->dst || (x && in->dst == c->src);
	case NBPF_ST:
		return false;
	case NBPF_STX:
		return NBPF_MODE(in->code) != NBPF_MEM; /* atomics may write a register */
	default:
		/* calls and exits change frames or clobber r0-r5; jumps write nothing */
		return in->code == NBPF_OP_CALL || in->code == NBPF_OP_EXIT;
	}
}

/* A fork on a rank-local value: both sides enter its control region. */
static void ctrl_enter_both(struct venv *e, struct vstate *other, uint32_t pc)
{
	struct vstate *save = e->cur;

	ctrl_enter(e, pc);
	e->cur = other;
	ctrl_enter(e, pc);
	e->cur = save;
}
static int do_cond_jmp(struct venv *e, uint32_t pc, const struct nbpf_insn *in, bool *path_done)
{
	struct vframe *f = cur_frame(e);
	bool x = NBPF_SRC(in->code) == NBPF_X, is32 = NBPF_CLASS(in->code) == NBPF_JMP32;
	uint8_t op = NBPF_OP(in->code);
	uint8_t regs[3] = { in->dst, x ? in->src : 0xff, 0xff };
	uint32_t target = (uint32_t)((int64_t)pc + 1 + in->off);
	struct vreg *a = &f->regs[in->dst], b;
	struct vstate *other = NULL;
	int outcome, err;
	bool tainted, taken;
	int fall;

	if (a->type == VT_NOT_INIT)
		return verr(e, pc, VM_UNINIT_REG, regs, NULL);
	if (x) {
		b = f->regs[in->src];
		if (b.type == VT_NOT_INIT)
			return verr(e, pc, VM_UNINIT_REG, regs + 1, NULL);
	} else {
		const_reg(&b, is32 ? (uint32_t)in->imm : (uint64_t)(int64_t)in->imm);
	}
	if (is_ptr(a) || is_ptr(&b)) {
		const struct vreg *p = is_ptr(a) ? a : &b, *z = is_ptr(a) ? &b : a;
		bool nullable = p->type == VT_MAP_VALUE_OR_NULL || p->type == VT_RINGBUF_MEM_OR_NULL;

		if (is32 || (op != NBPF_JEQ && op != NBPF_JNE) || is_ptr(z) ||
		    !tnum_equals_const(z->var_off, 0) || p->type == VT_RINGBUF_RELEASED)
			return verr(e, pc, VM_PTR_CMP, regs, NULL);
		tainted = p->taint & TAINT_LOCAL;
		if (!nullable) {
			/*
			 * A valid pointer is never null.  A rank-local one was
			 * null-checked before: this test repeats that rank-local
			 * condition, so what it guards depends on it too.
			 */
			if (tainted)
				ctrl_enter(e, pc);
			e->cur->pc = op == NBPF_JNE ? target : pc + 1;
			return 0;
		}
		if ((err = push_branch(e, target, &other)))
			return err;
		/* taken: JEQ means null (applied when the branch resumes) */
		other->defer = (struct vdefer){ .kind = VDEFER_NULL, .id = p->id, .flag = op == NBPF_JEQ };
		refine_null(e, p->id, op != NBPF_JEQ);
		if (tainted)
			ctrl_enter_both(e, other, pc);
		e->cur->pc = pc + 1;
		return 0;
	}
	{
		struct vreg alo[2], blo[2];
		bool ka = is32 && links_lo32(e->cur, a, alo);
		bool kb = is32 && links_lo32(e->cur, &b, blo);

		outcome = scalar_branch_outcome(a, &b, op, is32, ka ? alo : NULL, kb ? blo : NULL);
	}
	if (outcome < 0)
		outcome = cmp_fact_outcome(&e->cur->cmp, in);
	tainted = (a->taint | b.taint) & TAINT_LOCAL;
	if (outcome >= 0) {
		/*
		 * Decided on this path, but on a rank-local value: what decided
		 * it (bounds or the fact left by an earlier fork on the same
		 * value) may hold on this rank only, and another rank takes the
		 * other side.  The region it guards is rank-dependent (a flag
		 * set under a rank-local branch and tested later, or the second
		 * test of a compiler's select sequence).
		 */
		if (tainted)
			ctrl_enter(e, pc);
		e->cur->pc = outcome ? target : pc + 1;
		return 0;
	}
	/*
	 * The taken side is stored as it is, before the fall-through is
	 * refined, and refined when it resumes (a side the refinement rules
	 * out then ends at once).  Only a rank-local jump needs to know now
	 * (both sides enter its region only when both are possible).
	 */
	taken = !tainted || refine_state(e, e->cur, in, true, true) > 0;
	if (taken) {
		if ((err = push_branch(e, target, &other)))
			return err;
		other->defer = (struct vdefer){ .kind = VDEFER_JMP, .insn = pc };
		cmp_fact_set(&other->cmp, in, true);
	}
	fall = refine_state(e, e->cur, in, false, false);
	if (!fall) {
		/* the fall-through is impossible (cur unchanged): the taken side only */
		if (!taken) {
			e->cur->pc = pc + 1; /* neither cannot happen; keep exploring */
			return 0;
		}
		vstate_drop_top(e);
		if (!(fall = refine_state(e, e->cur, in, true, false))) {
			e->cur->pc = pc + 1; /* neither cannot happen; keep exploring */
			return 0;
		}
		cmp_fact_set(&e->cur->cmp, in, true);
		if (fall < 0)
			*path_done = true;
		e->cur->pc = target;
		return 0;
	}
	cmp_fact_set(&e->cur->cmp, in, false);
	if (fall < 0)
		*path_done = true; /* the classes of extended copies rule it out */
	else if (tainted && taken)
		ctrl_enter_both(e, other, pc);
	e->cur->pc = pc + 1;
	return 0;
}

/*
 * A popped pending branch learns what its side of the fork says (see
 * vstate_push).  False when that turns out impossible: the path ends.
 */
static bool branch_resume(struct venv *e)
{
	struct vdefer d = e->cur->defer;

	e->cur->defer.kind = VDEFER_NONE;
	if (d.kind == VDEFER_JMP)
		return refine_state(e, e->cur, &e->insns[d.insn], true, false) > 0;
	if (d.kind == VDEFER_NULL)
		refine_null(e, d.id, d.flag);
	return true;
}

/* ---- one instruction ---- */

static int do_insn(struct venv *e, bool *path_done)
{
	struct vstate *s = e->cur;
	uint32_t pc = s->pc;
	const struct nbpf_insn *in = &e->insns[pc];
	struct vframe *f = cur_frame(e);
	uint8_t cls = NBPF_CLASS(in->code);
	static const uint32_t sizes[4] = { 4, 2, 1, 8 };
	uint32_t size = sizes[NBPF_SIZE(in->code) >> 3];
	int err;

	*path_done = false;
	if (s->cmp.code && cmp_fact_clobbered(&s->cmp, in))
		s->cmp.code = 0;
	switch (cls) {
	case NBPF_ALU:
	case NBPF_ALU64:
		if ((err = do_alu(e, pc, in)))
			return err;
		ctrl_taint_write(s, &f->regs[in->dst]);
		s->pc = pc + 1;
		return 0;
	case NBPF_LD: {
		const struct nbpf_insn *hi = &e->insns[pc + 1];
		struct vreg *d = &f->regs[in->dst];

		switch (in->src) {
		case 0:
			const_reg(d, (uint32_t)in->imm | ((uint64_t)(uint32_t)hi->imm << 32));
			break;
		case NBPF_PSEUDO_MAP_FD:
		case NBPF_PSEUDO_MAP_IDX:
			const_reg(d, 0);
			d->type = VT_MAP_PTR;
			d->aux = (uint32_t)in->imm;
			break;
		default:
			const_reg(d, 0);
			d->type = VT_MAP_VALUE;
			d->aux = (uint32_t)in->imm;
			d->off = hi->imm;
			break;
		}
		ctrl_taint_write(s, d);
		s->pc = pc + 2;
		return 0;
	}
	case NBPF_LDX:
		if ((err = check_mem_access(e, pc, in->src, in->off, size, false, in->dst,
					    NBPF_MODE(in->code) == NBPF_MEMSX, NULL, false)))
			return err;
		ctrl_taint_write(s, &f->regs[in->dst]);
		s->pc = pc + 1;
		return 0;
	case NBPF_ST: {
		struct vreg v;

		const_reg(&v, (uint64_t)(int64_t)in->imm);
		ctrl_taint_write(s, &v);
		if ((err = check_mem_access(e, pc, in->dst, in->off, size, true, -1, false, &v, false)))
			return err;
		s->pc = pc + 1;
		return 0;
	}
	case NBPF_STX: {
		struct vreg v = f->regs[in->src];
		uint8_t regs[2] = { in->src, 0xff };
		bool atomic = NBPF_MODE(in->code) == NBPF_ATOMIC;
		int value_regno = -1;

		if (v.type == VT_NOT_INIT)
			return verr(e, pc, VM_UNINIT_REG, regs, NULL);
		/*
		 * A spill of an unknown scalar links the stack copy with the
		 * register (as mov does): a check on the value filled back
		 * refines the register, and the other way round.
		 */
		if (!atomic && f->regs[in->dst].type == VT_STACK && v.type == VT_SCALAR && !v.id &&
		    !v.pad && !reg_is_const(&v) && (size == 8 || !(v.umax >> (8 * size))))
			v.id = f->regs[in->src].id = ++e->next_id;
		/* the stored bytes (and an atomic's fetched value) are written here */
		ctrl_taint_write(s, &v);
		if (atomic) {
			const struct vreg *base = &f->regs[in->dst];

			if (is_ptr(&v))
				return verr(e, pc, base->type == VT_STACK ? VM_STACK_PTR_SPILL : VM_PTR_TO_MAP,
					    regs, "atomic operation with a pointer operand");
			/*
			 * Frames, map values and records are 8-byte aligned, so the
			 * address is aligned when base offset, insn offset and every
			 * possible variable offset are multiples of the width.
			 */
			if ((base->type == VT_STACK || base->type == VT_MAP_VALUE ||
			     base->type == VT_RINGBUF_MEM) &&
			    ((((uint64_t)(int64_t)base->off + (uint64_t)(int64_t)in->off) |
			      base->var_off.value | base->var_off.mask) & (size - 1))) {
				uint8_t dregs[2] = { in->dst, 0xff };

				return verr(e, pc, VM_ATOMIC_ALIGN, dregs, "%u-byte atomic at offset %d",
					    size, base->off + in->off);
			}
			if (in->imm == NBPF_CMPXCHG) {
				uint8_t r0[2] = { 0, 0xff };

				if (f->regs[0].type == VT_NOT_INIT)
					return verr(e, pc, VM_UNINIT_REG, r0, NULL);
				if (is_ptr(&f->regs[0]))
					return verr(e, pc, VM_PTR_TO_MAP, r0, "cmpxchg with a pointer");
				value_regno = 0;
			} else if (in->imm & NBPF_FETCH) {
				value_regno = in->src;
			}
		} else if (size < 8 && is_ptr(&v)) {
			const struct vreg *base = &f->regs[in->dst];

			if (base->type == VT_STACK)
				return verr(e, pc, VM_STACK_PTR_SPILL, regs, NULL);
			if (base->type == VT_CTX)
				return verr(e, pc, VM_PTR_TO_CTX, regs, NULL);
			if (base->type == VT_MAP_VALUE || base->type == VT_RINGBUF_MEM)
				return verr(e, pc, VM_PTR_TO_MAP, regs, NULL);
		}
		if ((err = check_mem_access(e, pc, in->dst, in->off, size, true, value_regno, false,
					    &v, atomic)))
			return err;
		if (value_regno >= 0 && f->regs[value_regno].type == VT_SCALAR)
			f->regs[value_regno].taint |= v.taint;
		s->pc = pc + 1;
		return 0;
	}
	default: /* JMP, JMP32 */
		if (in->code == NBPF_OP_JA) {
			s->pc = (uint32_t)((int64_t)pc + 1 + in->off);
			return 0;
		}
		if (in->code == NBPF_OP_GOTOL) {
			s->pc = (uint32_t)((int64_t)pc + 1 + in->imm);
			return 0;
		}
		if (in->code == NBPF_OP_CALL) {
			if (in->src == NBPF_PSEUDO_CALL) {
				if ((err = check_subprog_call(e, pc, in)))
					return err;
				vframe_touch(e, s->nframes - 2); /* the caller's frame, as of now */
				return 0;
			}
			if ((err = check_helper_call(e, pc, in)))
				return err;
			ctrl_taint_write(s, &f->regs[0]);
			s->pc = pc + 1;
			return 0;
		}
		if (in->code == NBPF_OP_EXIT)
			return check_exit(e, pc, path_done);
		return do_cond_jmp(e, pc, in, path_done);
	}
}

/* ---- driver ---- */

static void init_state(struct venv *e)
{
	struct vstate *s = e->cur;
	struct vframe *f;

	/*
	 * The header and the main frame; a call clears the frame it pushes,
	 * so the other 7 frames (37 KiB) need no clearing here.
	 */
	memset(s, 0, offsetof(struct vstate, frames) + sizeof(s->frames[0]));
	s->nframes = 1;
	f = &s->frames[0];
	f->callsite = UINT32_MAX;
	const_reg(&f->regs[1], 0);
	f->regs[1].type = VT_CTX;
	const_reg(&f->regs[NBPF_REG_FP], 0);
	f->regs[NBPF_REG_FP].type = VT_STACK;
}

/*
 * The clock the time guard reads: the verifying thread's CPU time, which
 * other processes competing for the CPUs do not advance (a training job's
 * ranks verify on busy machines).  Tests replace it (verifier.h).
 */
static uint64_t thread_cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

uint64_t (*nbpf_verify_clock)(void) = thread_cpu_ns;

/*
 * The time guard.  The work budget decides, the same way on every machine
 * and under any load (so that every rank of a job accepts or refuses a
 * policy alike); the guard only stops a verification that runs far past
 * what that budget costs on any machine near this one's speed (a bug in
 * the accounting, a machine many times slower).  Checked every
 * VWORK_CHECK work units.
 */
static int time_exhausted(struct venv *e, uint32_t pc)
{
	uint64_t now;

	e->next_check = e->work + VWORK_CHECK;
	if (!e->guard || !e->guard->budget_ns)
		return 0;
	now = nbpf_verify_clock();
	if (!e->guard->deadline_ns)
		e->guard->deadline_ns = now + e->guard->budget_ns;
	if (now < e->guard->deadline_ns)
		return 0;
	e->timed_out = true;
	return verr(e, pc, VM_BUDGET_TIME, NULL, "%u instructions processed, %u states, %llu work units",
		    e->insns_processed, e->states, (unsigned long long)e->work);
}

/*
 * A loop: its head, its body (the natural loop of the back edges to the
 * head), how many back edges there are and the last one, and its exit test
 * (the first conditional jump of the body with a way out; UINT32_MAX: none).
 */
struct vloop {
	uint32_t head, back, n_back, test;
	uint8_t *body;
};

/*
 * The innermost loop holding pos, in pos's function: of the jumps back
 * from at or after pos to a head at or before it, the shortest, then every
 * back edge to that head; the body is what reaches one of them without
 * passing the head (a backward walk, as for any natural loop).  Refusals
 * only: quadratic in the function's size at worst.
 */
static bool loop_at(const struct venv *e, uint32_t pos, struct vloop *l)
{
	const struct vsubprog *sp = &e->subs[vsubprog_of(e, pos)];
	uint32_t span = UINT32_MAX;
	bool grew = true;
	int64_t sc[2];

	l->head = UINT32_MAX;
	for (uint32_t j = pos; j < sp->end; j++) {
		int ns = (e->flags[j] & IF_LDDW2) ? 0 : vsuccessors(e, j, sc);

		for (int k = 0; k < ns; k++)
			if (sc[k] >= 0 && sc[k] <= (int64_t)pos && j - (uint32_t)sc[k] < span) {
				span = j - (uint32_t)sc[k];
				l->head = (uint32_t)sc[k];
			}
	}
	if (l->head == UINT32_MAX || !(l->body = calloc(e->n, 1)))
		return false;
	l->n_back = 0;
	for (uint32_t j = l->head; j < sp->end; j++) {
		int ns = (e->flags[j] & IF_LDDW2) ? 0 : vsuccessors(e, j, sc);

		for (int k = 0; k < ns; k++)
			if (sc[k] == (int64_t)l->head) {
				l->body[j] = 1;
				l->back = j;
				l->n_back++;
			}
	}
	/*
	 * The body: reached from the head (bit 1), reaching a back edge
	 * without passing the head (bit 0): the head's strongly connected part.
	 */
	l->body[l->head] |= 2;
	while (grew) {
		grew = false;
		for (uint32_t j = sp->start; j < sp->end; j++) {
			int ns = (e->flags[j] & IF_LDDW2) ? 0 : vsuccessors(e, j, sc);

			for (int k = 0; k < ns; k++) {
				uint8_t *t = sc[k] >= 0 ? &l->body[sc[k]] : NULL;

				if (t && (l->body[j] & 2) && !(*t & 2)) {
					*t |= 2;
					grew = true;
				}
				if (t && sc[k] != (int64_t)l->head && (*t & 1) && !(l->body[j] & 1)) {
					l->body[j] |= 1;
					grew = true;
				}
			}
		}
	}
	for (uint32_t j = sp->start; j < sp->end; j++)
		l->body[j] = l->body[j] == 3 || j == l->head;
	if (!l->body[pos]) { /* laid out inside, but not part of it (the code after an exit) */
		free(l->body);
		return false;
	}
	l->test = UINT32_MAX;
	for (uint32_t j = sp->start; j < sp->end && l->test == UINT32_MAX; j++) {
		const struct nbpf_insn *in = &e->insns[j];
		int ns;

		if (!l->body[j] || (e->flags[j] & IF_LDDW2) ||
		    (NBPF_CLASS(in->code) != NBPF_JMP && NBPF_CLASS(in->code) != NBPF_JMP32) ||
		    in->code == NBPF_OP_JA || in->code == NBPF_OP_GOTOL || in->code == NBPF_OP_CALL ||
		    in->code == NBPF_OP_EXIT)
			continue;
		ns = vsuccessors(e, j, sc);
		for (int k = 0; k < ns; k++)
			if (sc[k] < 0 || !l->body[sc[k]])
				l->test = j;
	}
	return true;
}

/*
 * A budget ran out at pc.  When exploration was inside a loop (of the
 * current frame, or around the call of one of its callers), the loop's
 * bound is what was not proven: the refusal names the loop, its back edge,
 * the times this path went round it and its exit test (where it is
 * reported: the source line of `while (n > 1)`).  Otherwise the program is
 * too complex.  what: the budget, e.g. "8192 pending branches".
 */
int vbudget_refuse(struct venv *e, uint32_t pc, enum vmsg in_loop, enum vmsg no_loop,
		   const char *what)
{
	const struct vstate *s = e->cur;
	struct vloop l = { 0 };
	uint32_t iters = 0, fi = s->nframes - 1;

	/*
	 * The current frame's loop, else the innermost caller's around its
	 * call, else (the path was just outside, say at the exit a fork led
	 * to) the loop whose head stored the most states.
	 */
	while (!loop_at(e, fi + 1 == s->nframes ? pc : s->frames[fi + 1].callsite, &l)) {
		if (fi--)
			continue;
		for (uint32_t i = 0, most = 0; i < e->n; i++)
			if ((e->flags[i] & IF_LOOP) && e->n_explored[i] > most) {
				most = e->n_explored[i];
				pc = i;
			}
		fi = UINT32_MAX; /* (any frame: counted by the head's pc alone) */
		if (!(e->flags[pc] & IF_LOOP) || !loop_at(e, pc, &l))
			return verr(e, pc, no_loop, NULL, "%s", what);
		break;
	}
	free(l.body);
	/* the path's checkpoints at the head (at most 64 are kept per instruction) */
	for (const struct vnode *n = s->parent; n; n = n->parent)
		iters += n->st->pc == l.head && (fi == UINT32_MAX || n->st->nframes == fi + 1);
	if (l.test == UINT32_MAX)
		return verr(e, l.back, in_loop, NULL,
			    "the loop with head insn %u and back edge insn %u%s has no exit; this path went round it at least %u times (%s)",
			    l.head, l.back, l.n_back > 1 ? " (the last of several)" : "", iters, what);
	return verr(e, l.test, in_loop, NULL,
		    "the loop with head insn %u and back edge insn %u%s went round at least %u times on this path, and its exit test (this insn) was never decided: its bound is not proven (%s)",
		    l.head, l.back, l.n_back > 1 ? " (the last of several)" : "", iters, what);
}

static int explore(struct venv *e)
{
	char what[64];
	int err = 0;

	init_state(e);
	for (;;) {
		bool done = false;
		uint32_t pc = e->cur->pc;

		if (e->oom)
			return -ENOMEM;
		if (++e->insns_processed > e->max_insns) {
			snprintf(what, sizeof(what), "%u instructions processed", e->max_insns);
			return vbudget_refuse(e, pc, VM_BUDGET_INSNS, VM_BUDGET_INSNS_PATHS, what);
		}
		if (++e->work > e->max_work) {
			snprintf(what, sizeof(what), "%llu work units", (unsigned long long)e->max_work);
			return vbudget_refuse(e, pc, VM_LOOP_WORK, VM_BUDGET_WORK, what);
		}
		if (e->work >= e->next_check && (err = time_exhausted(e, pc)))
			return err;
		e->flags[pc] |= IF_SEEN;
		if (e->cur->nctrl)
			ctrl_leave(e, pc);
		if (e->flags[pc] & IF_PRUNE) {
			err = vstate_visit(e);
			if (err < 0)
				return err;
			done = err == 1;
			err = 0;
		}
		if (!done) {
			if ((err = do_insn(e, &done)))
				return err;
			if (e->oom)
				return -ENOMEM;
		}
		if (!done)
			continue;
		do {
			vstate_path_done(e);
			if (!e->n_stack)
				return 0;
			vstate_pop(e);
		} while (!branch_resume(e));
		if (e->oom)
			return -ENOMEM;
	}
}

/*
 * Stack needed by the deepest call chain: sum of frame depths along it.
 * The call graph is acyclic and at most 8 deep here (checked before), and
 * each function's answer is memoized, so this is linear.
 */
static uint32_t chain_depth(const struct venv *e, uint32_t sp, uint32_t *memo)
{
	uint32_t best = 0;

	if (memo[sp] != UINT32_MAX)
		return memo[sp];
	for (uint32_t i = e->subs[sp].start; i < e->subs[sp].end; i++) {
		const struct nbpf_insn *in = &e->insns[i];

		if (in->code == NBPF_OP_CALL && in->src == NBPF_PSEUDO_CALL &&
		    !(e->flags[i] & IF_LDDW2)) {
			uint32_t d = chain_depth(e, vsubprog_of(e, (uint32_t)(i + 1 + in->imm)), memo);

			if (d > best)
				best = d;
		}
	}
	return memo[sp] = best + ((e->subs[sp].stack_depth + 7) & ~7u);
}

static void venv_free(struct venv *e)
{
	vstate_release_all(e);
	free(e->explored);
	free(e->n_explored);
	free(e->fail_hint);
	free(e->stack);
	free(e->stack_bytes);
	free(e->cur);
	free(e->flags);
	free(e->live);
	free(e->relevant);
	free(e->ipdom);
	free(e->subs);
}

/* Runs the whole analysis on e (already filled with the inputs). */
static int analyze(struct venv *e)
{
	int err;

	e->flags = calloc(e->n ? e->n : 1, 1);
	e->live = calloc(e->n ? e->n : 1, sizeof(*e->live));
	e->relevant = calloc(e->n ? e->n : 1, sizeof(*e->relevant));
	if (!e->flags || !e->live || !e->relevant)
		return venv_oom(e);
	if ((err = vcheck_ctx_type(e)))
		return err;
	if ((err = vcheck_structure(e)))
		return err;
	if ((err = vcompute_ipdom(e)))
		return err;
	e->explored = calloc(e->n, sizeof(*e->explored));
	e->n_explored = calloc(e->n, sizeof(*e->n_explored));
	e->fail_hint = malloc(e->n); /* only a heuristic: no hint if it cannot be had */
	if (e->fail_hint)
		memset(e->fail_hint, NBPF_REG_FP, e->n);
	e->cur = malloc(sizeof(*e->cur));
	if (!e->explored || !e->n_explored || !e->cur)
		return venv_oom(e);
	return explore(e);
}

/* max_time_ms arrived after the first release: read it only from callers that know it. */
static uint32_t opts_max_time_ms(const struct ncclbpf_verify_opts *opts)
{
	if (!opts || opts->sz < offsetof(struct ncclbpf_verify_opts, max_time_ms) +
				    sizeof(opts->max_time_ms) || !opts->max_time_ms)
		return NBPF_VERIFY_MAX_TIME_MS;
	return opts->max_time_ms;
}

static struct vguard guard_from(const struct ncclbpf_verify_opts *opts)
{
	return (struct vguard){ .budget_ns = (uint64_t)opts_max_time_ms(opts) * 1000000ull };
}

/* So did max_work. */
static uint64_t opts_max_work(const struct ncclbpf_verify_opts *opts)
{
	if (!opts || opts->sz < offsetof(struct ncclbpf_verify_opts, max_work) +
				    sizeof(opts->max_work) || !opts->max_work)
		return NBPF_VERIFY_MAX_WORK;
	return opts->max_work;
}

static void venv_setup(struct venv *e, const struct nbpf_verify_input *in,
		       const struct ncclbpf_hook_desc *hook, const struct ncclbpf_verify_opts *opts,
		       struct vguard *guard)
{
	memset(e, 0, sizeof(*e));
	e->insns = in->insns;
	e->n = in->n_insns;
	e->maps = in->maps;
	e->n_maps = in->n_maps;
	e->hook = hook;
	e->helper_find = in->helper_find ? in->helper_find : nbpf_helper_find;
	e->prog = in->prog;
	e->map_written = (uint8_t *)in->map_written;
	e->strict = opts && opts->strict_consistency;
	/* control dependence only matters where a decision can be stored */
	for (uint32_t i = 0; hook && i < hook->n_fields; i++)
		if (hook->fields[i].flags & NCCLBPF_FIELD_DECISION)
			e->track_ctrl = true;
	e->max_insns = opts && opts->max_insns_processed ? opts->max_insns_processed
							 : NBPF_VERIFY_MAX_INSNS;
	e->max_states = opts && opts->max_states ? opts->max_states : NBPF_VERIFY_MAX_STATES;
	e->max_work = opts_max_work(opts);
	e->guard = guard;
	e->next_check = VWORK_CHECK; /* a short program never reads the clock */
}

static int verify_insns(const struct nbpf_verify_input *in, const struct ncclbpf_hook_desc *hook,
			const struct ncclbpf_verify_opts *opts, struct ncclbpf_verify_result *res,
			struct vguard *guard)
{
	struct venv e;
	int err;

	if (!in || !hook || !res || (!in->insns && in->n_insns))
		return nbpf_err(-EINVAL, "verify: instructions, hook and result are required");
	memset(res, 0, sizeof(*res));
	venv_setup(&e, in, hook, opts, guard);
	e.map_writes = in->n_maps ? calloc(in->n_maps, 1) : NULL;
	err = analyze(&e);
	if (e.oom || err == -ENOMEM) {
		free(e.findings);
		free(e.map_writes);
		venv_free(&e);
		return nbpf_err(-ENOMEM, "verify: out of memory");
	}
	res->accepted = !e.rejected;
	res->insns_processed = e.insns_processed;
	res->work = e.work;
	res->states = e.states;
	res->peak_states = e.peak_states;
	if (res->accepted && e.subs) {
		uint32_t *memo = malloc(e.n_subs * sizeof(*memo));

		if (memo) {
			memset(memo, 0xff, e.n_subs * sizeof(*memo));
			res->stack_depth = chain_depth(&e, 0, memo);
			free(memo);
		}
		/* A map some program writes is no longer rank-invariant for anyone. */
		for (uint32_t i = 0; i < in->n_maps; i++)
			if (e.map_writes[i] && in->maps[i])
				in->maps[i]->writable_by_prog = true;
	}
	res->ctx_type_checked = e.ctx_checked;
	res->ret_min = e.have_ret ? e.ret_min : 0;
	res->ret_max = e.have_ret ? e.ret_max : 0;
	res->findings = e.findings;
	res->n_findings = e.n_findings;
	free(e.map_writes);
	venv_free(&e);
	if (!res->accepted)
		return nbpf_err(-EACCES, "verify: %s", res->n_findings ? res->findings[0].reason
								 : "rejected");
	return 0;
}

int nbpf_verify_insns(const struct nbpf_verify_input *in, const struct ncclbpf_hook_desc *hook,
		      const struct ncclbpf_verify_opts *opts, struct ncclbpf_verify_result *res)
{
	struct vguard g = guard_from(opts);

	return verify_insns(in, hook, opts, res, &g);
}

/*
 * Which maps any program of the object writes: each program is explored in
 * collect mode (no hook restrictions, no findings) and records the maps it
 * stores into or updates.  Collect mode is more permissive than any hook,
 * so a program it rejects is rejected for real too and never runs: the
 * writes seen before the rejection are kept (conservative), nothing more.
 */
/* false when an exploration ran out of time: the set may then miss writes. */
static bool object_map_writes(const struct ncclbpf_object *obj, uint8_t *written, bool fast,
			      struct vguard *guard)
{
	bool complete = true;

	static const struct ncclbpf_hook_desc any = {
		.name = "any", .section = "", .ctx_type = "context", .ctx_size = 0,
		.ret_min = INT64_MIN, .ret_max = INT64_MAX,
	};

	for (size_t p = 0; p < obj->n_progs; p++) {
		const struct ncclbpf_program *q = obj->progs[p];
		struct venv e;
		struct nbpf_verify_input in = {
			.insns = q->insns, .n_insns = q->n_insns, .maps = obj->maps,
			.n_maps = (uint32_t)obj->n_maps,
		};

		/* the provenance scan is linear; exploration only where it gives up */
		if (fast && !nbpf_writeset_scan(q->insns, (uint32_t)q->n_insns, obj->maps,
					(uint32_t)obj->n_maps, written))
			continue;
		venv_setup(&e, &in, &any, NULL, guard);
		e.collect = true;
		e.map_writes = written;
		analyze(&e);
		complete &= !e.timed_out;
		free(e.findings);
		venv_free(&e);
	}
	return complete;
}

void nbpf_object_map_writes(const struct ncclbpf_object *obj, uint8_t *written, bool fast)
{
	object_map_writes(obj, written, fast, NULL);
}

/*
 * The write set depends only on the object's content, so it is cached by
 * the object's content tag: verifying every program of an object runs the
 * discovery once, not once per program.
 */
#define WCACHE 16
static struct {
	char tag[17];
	uint32_t n_maps;
	uint8_t *written;
} wcache[WCACHE];
static unsigned wcache_next;
static pthread_mutex_t wcache_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * A discovery cut short by the deadline is not cached: its set may miss a
 * write.  The verification that follows shares the deadline and is refused
 * for time too, so the incomplete set decides nothing.
 */
static void object_writes(const struct ncclbpf_object *obj, uint8_t *written,
			  struct vguard *guard)
{
	bool cacheable = obj->tag[0] != 0;

	if (cacheable) {
		pthread_mutex_lock(&wcache_lock);
		for (unsigned i = 0; i < WCACHE; i++) {
			if (wcache[i].written && wcache[i].n_maps == obj->n_maps &&
			    !strcmp(wcache[i].tag, obj->tag)) {
				memcpy(written, wcache[i].written, obj->n_maps);
				pthread_mutex_unlock(&wcache_lock);
				return;
			}
		}
		pthread_mutex_unlock(&wcache_lock);
	}
	if (!object_map_writes(obj, written, true, guard))
		cacheable = false;
	if (cacheable) {
		uint8_t *copy = malloc(obj->n_maps);

		if (!copy)
			return;
		memcpy(copy, written, obj->n_maps);
		pthread_mutex_lock(&wcache_lock);
		free(wcache[wcache_next].written);
		memcpy(wcache[wcache_next].tag, obj->tag, sizeof(wcache[0].tag));
		wcache[wcache_next].n_maps = (uint32_t)obj->n_maps;
		wcache[wcache_next].written = copy;
		wcache_next = (wcache_next + 1) % WCACHE;
		pthread_mutex_unlock(&wcache_lock);
	}
}

void nbpf_verify_cache_flush(void)
{
	pthread_mutex_lock(&wcache_lock);
	for (unsigned i = 0; i < WCACHE; i++) {
		free(wcache[i].written);
		wcache[i].written = NULL;
		wcache[i].tag[0] = 0;
	}
	pthread_mutex_unlock(&wcache_lock);
	nbpf_vstate_chunk_flush();
}

int nbpf_verify(struct ncclbpf_program *prog, const struct ncclbpf_hook_desc *hook,
		const struct ncclbpf_verify_opts *opts, struct ncclbpf_verify_result *res)
{
	struct nbpf_verify_input in;
	uint8_t *written = NULL;
	struct vguard guard = guard_from(opts); /* one guard for discovery and verification */
	int err;

	if (!prog || !hook || !res)
		return nbpf_err(-EINVAL, "verify: program, hook and result are required");
	memset(&in, 0, sizeof(in));
	in.insns = prog->insns;
	in.n_insns = prog->n_insns;
	in.prog = prog;
	if (prog->obj && prog->obj->n_maps) {
		in.maps = prog->obj->maps;
		in.n_maps = (uint32_t)prog->obj->n_maps;
		written = calloc(in.n_maps, 1);
		if (!written)
			return nbpf_err(-ENOMEM, "verify: out of memory");
		object_writes(prog->obj, written, &guard);
		in.map_written = written;
	}
	err = verify_insns(&in, hook, opts, res, &guard);
	free(written);
	return err;
}
