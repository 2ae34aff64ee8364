// SPDX-License-Identifier: MIT
/*
 * links.c - values tied to a register's shifted and extended copies.
 *
 * Registers copied with mov share an id, and a check on one refines all.
 * Compilers also test a *narrowed* copy and use another: a __u32 quotient
 * is tested through one zero extension (`r1 = r7; r1 <<= 32; r1 >>= 32;
 * if r1 == 0`) and divides through another (`r7 <<= 32; r7 >>= 32`); an
 * int clamped on a sign-extended copy (`r3 = (x << 12) s>> 32`, i.e.
 * (s32)(x >> 20)) indexes through a zero extension of `x >> 20`.  The
 * intervals cannot relate a value to its extension when its upper half is
 * unknown, so each scalar may carry a derivation from the value of id X
 * (aux: X | j << 24, pad: the kind):
 *
 *   DV_RSH   value = X >> j (logical)                    j in 1..63
 *   DV_TOP   bits 63..32 of the value = low 32 bits of X >> j
 *   DV_ZEXT  value = (u32)(X >> j), zero-extended
 *   DV_SEXT  value = (s32)(X >> j), sign-extended
 *
 * Derivations follow the instructions compilers emit: mov32 and movsx32
 * extend, a left shift by up to 32 moves bits to the top half, a right
 * shift by 32 brings them back extended.  Two ZEXT (or two SEXT) values of
 * the same X and j are equal, so they share a class id; a ZEXT and a SEXT
 * of the same X and j have the same low 32 bits.  The state keeps a small
 * table (struct vlink) of the classes with their bounds, so a check on one
 * copy still refines a copy made after the first is overwritten.
 * Everything here is exact arithmetic on equal values: a derivation only
 * ever intersects bounds that hold for the same concrete value.
 */
#include <string.h>

#include "vstate.h"

#define DV_BASE_MAX (1u << 24)

static bool dv_get(const struct vreg *r, uint32_t *x, uint8_t *kind, uint32_t *j)
{
	/* a value plus a delta is not its id's value: no derivation from it */
	if (r->type != VT_SCALAR || r->off)
		return false;
	if (r->pad) {
		*x = r->aux & (DV_BASE_MAX - 1);
		*j = r->aux >> 24;
		*kind = r->pad;
		return true;
	}
	if (!r->id || r->id >= DV_BASE_MAX || tnum_is_const(r->var_off))
		return false;
	*x = r->id;
	*j = 0;
	*kind = DV_SELF;
	return true;
}

static struct vlink *link_find(struct vstate *s, uint32_t key, uint8_t kind)
{
	struct vlink *t = vstate_links(s);

	for (uint32_t i = 0; i < s->nlinks; i++)
		if (t[i].key == key && t[i].kind == kind)
			return &t[i];
	return NULL;
}

static void bounds_of(struct vreg *r, const struct vlink *l)
{
	r->var_off = l->var_off;
	r->umin = l->umin;
	r->umax = l->umax;
	r->smin = l->smin;
	r->smax = l->smax;
}

static void bounds_to(struct vlink *l, const struct vreg *r)
{
	l->var_off = r->var_off;
	l->umin = r->umin;
	l->umax = r->umax;
	l->smin = r->smin;
	l->smax = r->smax;
}

static void intersect(struct vreg *r, const struct vreg *b)
{
	scalar_meet(r, b);
}

/* What the low 32 bits of src say about a value of the other kind (ZEXT <-> SEXT). */
static void sibling_view(struct vreg *v, const struct vreg *src, uint8_t kind)
{
	*v = *src;
	scalar_zext32(v);
	if (kind == DV_SEXT)
		scalar_sext(v, 4, false);
}

/*
 * The derivation of `dst` after an instruction computed it from `from`
 * (the source value before the instruction): op is NBPF_MOV for mov32
 * (ext 0) and movsx32 (ext 1), else the 64-bit shift by k.
 */
static bool derive(const struct vreg *from, uint8_t op, bool sext, uint32_t k, uint32_t *x,
		   uint8_t *kind, uint32_t *j)
{
	uint8_t fk;
	uint32_t fj;

	if (!dv_get(from, x, &fk, &fj))
		return false;
	switch (op) {
	case NBPF_MOV:
		if (fk == DV_TOP)
			return false;
		*kind = sext ? DV_SEXT : DV_ZEXT;
		*j = fj;
		return true;
	case NBPF_LSH:
		if (fk == DV_SELF && k >= 1 && k <= 32) {
			*kind = DV_TOP;
			*j = 32 - k;
			return true;
		}
		if (fk != DV_TOP && fk != DV_SELF && k == 32) {
			*kind = DV_TOP;
			*j = fj;
			return true;
		}
		return false;
	case NBPF_RSH:
		if ((fk == DV_SELF || fk == DV_RSH) && k >= 1 && fj + k < 64) {
			*kind = DV_RSH;
			*j = fj + k;
			return true;
		}
		if (fk == DV_TOP && k == 32) {
			*kind = DV_ZEXT;
			*j = fj;
			return true;
		}
		return false;
	case NBPF_ARSH:
		if (fk == DV_TOP && k == 32) {
			*kind = DV_SEXT;
			*j = fj;
			return true;
		}
		return false;
	}
	return false;
}

/*
 * Sets r's bounds (a member's: delta 0) on every register and spill of
 * class id, shifted for members plus a delta.
 */
static void class_set(struct venv *e, uint32_t id, const struct vreg *r)
{
	struct vstate *s = e->cur;
	struct vreg m = *r;

	m.off = 0;
	for (uint32_t f = 0; f < s->nframes; f++) {
		struct vframe *fr = &s->frames[f];
		bool hit = false;

		e->work += vwork_frame(fr);
		for (int i = 0; i < NBPF_NREGS; i++)
			if (fr->regs[i].type == VT_SCALAR && fr->regs[i].id == id) {
				reg_linked_bounds(&fr->regs[i], &m);
				hit = true;
			}
		for (uint32_t k = 0; k < fr->nslots; k++) {
			struct vreg *d = &fr->slots[k].spill;

			if (slot_spill_mask(&fr->slots[k]) && d->type == VT_SCALAR && d->id == id) {
				reg_linked_bounds(d, &m);
				hit = true;
			}
		}
		if (hit)
			fr->gen = 0; /* a caller's frame changed (see struct vframe) */
	}
}

void links_after_alu(struct venv *e, const struct nbpf_insn *in, const struct vreg *from,
		     struct vreg *dst)
{
	struct vstate *s = e->cur;
	uint8_t op = NBPF_OP(in->code), kind;
	bool is64 = NBPF_CLASS(in->code) == NBPF_ALU64, sext = false;
	uint32_t k = 0, x, j, key;
	struct vlink *l, *sib;

	if (dst->type != VT_SCALAR || tnum_is_const(dst->var_off))
		return;
	if (op == NBPF_MOV && NBPF_SRC(in->code) == NBPF_X) {
		if (is64 && in->off != 32)
			return;
		if (!is64 && in->off)
			return;
		sext = is64;
	} else if ((op == NBPF_LSH || op == NBPF_RSH || op == NBPF_ARSH) && is64 &&
		   NBPF_SRC(in->code) == NBPF_K) {
		k = (uint32_t)in->imm & 63;
	} else {
		return;
	}
	/* (an extension that changes nothing is a plain copy: verifier.c, ext_unchanged) */
	if (!derive(from, op, sext, k, &x, &kind, &j))
		return;
	dst->aux = x | j << 24;
	dst->pad = kind;
	if (kind != DV_ZEXT && kind != DV_SEXT)
		return; /* intermediate forms: no class of their own */
	key = dst->aux;
	l = link_find(s, key, kind);
	if (l) {
		struct vreg b = *dst, t = *dst;

		bounds_of(&b, l);
		intersect(&t, &b);
		if (scalar_feasible(&t))
			*dst = t; /* (infeasible: a dead path; keep the plain bounds) */
		dst->id = l->id;
	} else {
		struct vlink *t = vstate_links(s);

		if (s->nlinks == MAX_LINKS)
			memmove(&t[0], &t[1], --s->nlinks * sizeof(t[0]));
		l = &t[s->nlinks++];
		memset(l, 0, sizeof(*l));
		l->key = key;
		l->kind = kind;
		l->id = ++e->next_id;
		dst->id = l->id;
	}
	sib = link_find(s, key, kind == DV_ZEXT ? DV_SEXT : DV_ZEXT);
	if (sib) {
		struct vreg b = *dst, v;

		bounds_of(&b, sib);
		sibling_view(&v, &b, kind);
		b = *dst;
		intersect(&b, &v);
		if (scalar_feasible(&b))
			*dst = b;
	}
	bounds_to(l, dst);
	class_set(e, dst->id, dst);
}

bool links_refined(struct venv *e, const struct vreg *r)
{
	struct vstate *s = e->cur;
	struct vlink *l, *sib;
	struct vreg v, o;

	if (r->type != VT_SCALAR || (r->pad != DV_ZEXT && r->pad != DV_SEXT))
		return true;
	l = link_find(s, r->aux, r->pad);
	if (!l || l->id != r->id)
		return true;
	bounds_to(l, r);
	sib = link_find(s, r->aux, r->pad == DV_ZEXT ? DV_SEXT : DV_ZEXT);
	if (!sib)
		return true;
	/* the sibling has the same low 32 bits */
	o = *r;
	bounds_of(&o, sib);
	sibling_view(&v, r, sib->kind);
	intersect(&o, &v);
	if (!scalar_feasible(&o))
		return false;
	bounds_to(sib, &o);
	class_set(e, sib->id, &o);
	return true;
}

/* Whether id x is the id or derivation base of a register the path can still use. */
static bool base_alive(const struct venv *e, const struct vstate *s, uint32_t x)
{
	for (uint32_t f = 0; f < s->nframes; f++) {
		const struct vframe *fr = &s->frames[f];
		uint16_t live = f + 1 == s->nframes ? e->live[s->pc]
						     : e->live[s->frames[f + 1].callsite + 1] & 0x3c0;

		for (int i = 0; i < NBPF_REG_FP; i++) {
			const struct vreg *r = &fr->regs[i];

			if ((live & (1u << i)) && r->type == VT_SCALAR &&
			    (r->id == x || (r->pad && (r->aux & (DV_BASE_MAX - 1)) == x)))
				return true;
		}
		for (uint32_t k = 0; k < fr->nslots; k++) {
			const struct vreg *r = &fr->slots[k].spill;

			if (slot_spill_mask(&fr->slots[k]) && r->type == VT_SCALAR &&
			    (r->id == x || (r->pad && (r->aux & (DV_BASE_MAX - 1)) == x)))
				return true;
		}
	}
	return false;
}

/*
 * Drops classes nothing can derive again (no live register holds their
 * base): they would only make states differ at prune points.
 */
void links_prune(const struct venv *e, struct vstate *s)
{
	struct vlink *t = vstate_links(s);
	uint32_t k = 0;

	for (uint32_t i = 0; i < s->nlinks; i++)
		if (base_alive(e, s, t[i].key & (DV_BASE_MAX - 1)))
			t[k++] = t[i];
	s->nlinks = (uint16_t)k;
}

/*
 * What a 32-bit comparison learnt about a register's low half, kept where
 * the register's bounds cannot hold it (its upper half is unknown, so the
 * intervals cannot say "the low half is below 8"; or the low half's signed
 * range crosses the unsigned one's wrap, as `if w1 s> 0` leaves [S32_MIN,
 * 0], which the zero extension cannot say): as the classes of its zero and
 * sign extensions, which a later 32-bit comparison (links_lo32) or
 * mov32/movsx32 (links_after_alu) of the same value reads back.  A
 * register that is itself such an extension is one of its classes.
 */
void links_lo32_plain(const struct vreg *r, struct vreg lo[2])
{
	lo[0] = *r;
	scalar_zext32(&lo[0]);
	lo[1] = *r;
	scalar_sext(&lo[1], 4, false);
}

/*
 * The key of the classes of r's low half: its own value's id, or, for a
 * zero or sign extension of the low half of X >> j, the classes it is one
 * of (its low half is that of X >> j).  False where there is none: a
 * value plus a delta, the other derivations.
 */
static bool lo_key(const struct vreg *r, uint32_t *key)
{
	if (r->type != VT_SCALAR || r->off)
		return false;
	if (r->pad) {
		*key = r->aux;
		return r->pad == DV_ZEXT || r->pad == DV_SEXT;
	}
	*key = r->id;
	return r->id && r->id < DV_BASE_MAX;
}

bool links_lo32(struct vstate *s, const struct vreg *r, struct vreg lo[2])
{
	const struct vlink *l;
	bool more = false;
	uint32_t key;

	/* fast path: no class of this value (lo is then left alone) */
	if (!s->nlinks || !lo_key(r, &key) ||
	    (!link_find(s, key, DV_ZEXT) && !link_find(s, key, DV_SEXT)))
		return false;
	links_lo32_plain(r, lo);
	for (int k = 0; k < 2; k++) {
		struct vreg t = lo[k];

		l = link_find(s, key, k ? DV_SEXT : DV_ZEXT);
		if (!l)
			continue;
		bounds_of(&t, l);
		intersect(&t, &lo[k]);
		if (scalar_feasible(&t)) {
			lo[k] = t;
			more = true;
		}
	}
	return more;
}

/* Whether lo says more than r's own bounds do about its low half. */
static bool lo_informative(const struct vreg *r, const struct vreg lo[2])
{
	struct vreg z = *r, s = *r;

	scalar_zext32(&z);
	scalar_sext(&s, 4, false);
	return lo[0].umin > z.umin || lo[0].umax < z.umax || lo[0].var_off.mask != z.var_off.mask ||
	       lo[1].smin > s.smin || lo[1].smax < s.smax;
}

void links_note32(struct venv *e, struct vstate *s, struct vreg *r, const struct vreg lo[2])
{
	uint32_t key;

	/* only what says something r's own bounds cannot (of its id's value: no delta) */
	if (r->type != VT_SCALAR || r->off || reg_is_const(r) || !lo_informative(r, lo))
		return;
	if (!r->id && !r->pad) {
		if (e->next_id + 1 >= DV_BASE_MAX)
			return;
		r->id = ++e->next_id;
	}
	if (!lo_key(r, &key))
		return;
	for (int k = 0; k < 2; k++) {
		uint8_t kind = k ? DV_SEXT : DV_ZEXT;
		struct vlink *l = link_find(s, key, kind);
		struct vreg v = lo[k];

		if (!l) {
			struct vlink *t = vstate_links(s);

			if (s->nlinks == MAX_LINKS)
				memmove(&t[0], &t[1], --s->nlinks * sizeof(t[0]));
			l = &t[s->nlinks++];
			memset(l, 0, sizeof(*l));
			l->key = key;
			l->kind = kind;
			/* r's own class (an extension is one of the two) keeps r's id */
			l->id = kind == r->pad ? r->id : ++e->next_id;
		} else {
			struct vreg t = v;

			bounds_of(&t, l);
			intersect(&v, &t);
			if (!scalar_feasible(&v))
				continue;
		}
		bounds_to(l, &v);
		class_set(e, l->id, &v);
	}
}
