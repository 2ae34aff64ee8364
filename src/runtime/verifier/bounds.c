/*
 * bounds.c - the scalar domain: a tnum plus signed and unsigned 64-bit
 * intervals, kept mutually consistent by reg_bounds_sync (the Linux
 * verifier's update/deduce/bound-offset steps).  32-bit views (ALU32,
 * JMP32) are derived from the 64-bit state on demand by truncation, and
 * refined 32-bit knowledge is written back where the upper half is known.
 * Every transfer function over-approximates the concrete result set.
 */
#include <string.h>

#include "vstate.h"

#define S64_MIN INT64_MIN
#define S64_MAX INT64_MAX
#define U64_MAX UINT64_MAX
#define U32_MAX UINT32_MAX

static inline uint64_t umax64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static inline uint64_t umin64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static inline int64_t smax64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t smin64(int64_t a, int64_t b) { return a < b ? a : b; }

static void mark_infeasible_(struct vreg *r)
{
	r->umin = 1;
	r->umax = 0;
}

static void mark_unbounded(struct vreg *r)
{
	r->smin = S64_MIN;
	r->smax = S64_MAX;
	r->umin = 0;
	r->umax = U64_MAX;
}

void reg_mark_unknown(struct vreg *r)
{
	uint8_t taint = r->taint;

	memset(r, 0, sizeof(*r));
	r->type = VT_SCALAR;
	r->taint = taint;
	r->var_off = tnum_unknown();
	mark_unbounded(r);
}

void reg_mark_const(struct vreg *r, uint64_t v)
{
	uint8_t taint = r->taint;

	memset(r, 0, sizeof(*r));
	r->type = VT_SCALAR;
	r->taint = taint;
	r->var_off = tnum_const(v);
	r->smin = r->smax = (int64_t)v;
	r->umin = r->umax = v;
}

bool reg_is_const(const struct vreg *r)
{
	return r->type == VT_SCALAR && tnum_is_const(r->var_off);
}

static void update_bounds(struct vreg *r)
{
	r->smin = smax64(r->smin, (int64_t)(r->var_off.value | (r->var_off.mask & (1ull << 63))));
	r->smax = smin64(r->smax, (int64_t)(r->var_off.value | (r->var_off.mask & ~(1ull << 63))));
	r->umin = umax64(r->umin, r->var_off.value);
	r->umax = umin64(r->umax, r->var_off.value | r->var_off.mask);
}

static void deduce_bounds(struct vreg *r)
{
	if (r->smin >= 0 || r->smax < 0) {
		r->smin = (int64_t)(r->umin = umax64((uint64_t)r->smin, r->umin));
		r->smax = (int64_t)(r->umax = umin64((uint64_t)r->smax, r->umax));
		return;
	}
	/*
	 * The signed range crosses zero: as unsigned values it is two pieces,
	 * [0, smax] and [(u64)smin, U64_MAX].  An unsigned range that misses
	 * one piece lies in the other (an empty meet stays infeasible), e.g.
	 * (s8)x below 0xff..ff00 unsigned is in [0, 127].
	 */
	if (r->umax < (uint64_t)r->smin) {
		r->umax = umin64(r->umax, (uint64_t)r->smax);
		r->smin = (int64_t)r->umin;
		r->smax = (int64_t)r->umax;
	} else if (r->umin > (uint64_t)r->smax) {
		r->umin = umax64(r->umin, (uint64_t)r->smin);
		r->smin = (int64_t)r->umin;
		r->smax = (int64_t)r->umax;
	}
}

/* Makes tnum and intervals agree; an infeasible input stays infeasible. */
void reg_bounds_sync(struct vreg *r)
{
	if (!scalar_feasible(r))
		return;
	update_bounds(r);
	deduce_bounds(r);
	r->var_off = tnum_intersect(r->var_off, tnum_range(r->umin, r->umax));
	update_bounds(r);
}

bool scalar_feasible(const struct vreg *r)
{
	if (r->smin > r->smax || r->umin > r->umax)
		return false;
	if (r->var_off.value & r->var_off.mask)
		return false;
	return r->var_off.value <= r->umax && (r->var_off.value | r->var_off.mask) >= r->umin;
}

/*
 * Keeps the low size bytes (zero-extended): the interval survives when all
 * values share their upper bits (unsigned or signed view).
 */
static void scalar_trunc(struct vreg *r, uint32_t size)
{
	uint32_t bits = size * 8;
	uint64_t lmask = (1ull << bits) - 1;
	uint64_t lo = 0, hi = lmask;

	if (size >= 8)
		return;
	if ((r->umin >> bits) == (r->umax >> bits)) {
		lo = r->umin & lmask;
		hi = r->umax & lmask;
	} else if (((uint64_t)r->smin >> bits) == ((uint64_t)r->smax >> bits)) {
		lo = (uint64_t)r->smin & lmask;
		hi = (uint64_t)r->smax & lmask;
	}
	r->var_off = tnum_cast(r->var_off, (uint8_t)size);
	r->umin = lo;
	r->umax = hi;
	r->smin = (int64_t)lo;
	r->smax = (int64_t)hi;
	reg_bounds_sync(r);
}

void scalar_zext32(struct vreg *r)
{
	scalar_trunc(r, 4);
}

void scalar_zext_bytes(struct vreg *r, uint32_t size)
{
	scalar_trunc(r, size);
}

/* Sign-extends the low size bytes to 64 bits (alu32: then zero-extends 32). */
void scalar_sext(struct vreg *r, uint32_t size, bool alu32)
{
	uint32_t bits = size * 8;
	uint64_t sign = 1ull << (bits - 1), ext = ~((1ull << bits) - 1);

	if (size >= 8)
		return;
	if (r->smin >= -(int64_t)sign && r->smax <= (int64_t)(sign - 1)) {
		/* the value fits the signed width: its low bytes, extended, are the value */
		if (alu32)
			scalar_trunc(r, 4);
		return;
	}
	scalar_trunc(r, size);
	if (r->umax < sign) {
		/* non-negative: already right */
	} else if (r->umin >= sign) {
		r->umin |= ext;
		r->umax |= ext;
		r->smin = (int64_t)r->umin;
		r->smax = (int64_t)r->umax;
		r->var_off = TNUM(r->var_off.value | ext, r->var_off.mask);
	} else {
		r->smin = -(int64_t)sign;
		r->smax = (int64_t)(sign - 1);
		r->umin = 0;
		r->umax = U64_MAX;
		r->var_off = (r->var_off.mask & sign) ? TNUM(r->var_off.value, r->var_off.mask | ext)
						       : r->var_off;
	}
	reg_bounds_sync(r);
	if (alu32)
		scalar_trunc(r, 4);
}

void scalar_from_load(struct vreg *r, uint32_t size, bool sign)
{
	reg_mark_unknown(r);
	if (size < 8) {
		r->var_off = tnum_cast(r->var_off, (uint8_t)size);
		r->umax = (1ull << (size * 8)) - 1;
		r->smin = 0;
		r->smax = (int64_t)r->umax;
		reg_bounds_sync(r);
		if (sign)
			scalar_sext(r, size, false);
	}
}

static bool add_overflows_s(int64_t a, int64_t b)
{
	int64_t res;

	return __builtin_add_overflow(a, b, &res);
}

static bool sub_overflows_s(int64_t a, int64_t b)
{
	int64_t res;

	return __builtin_sub_overflow(a, b, &res);
}

/*
 * Unsigned bounds of x OP y for x in [a, b], y in [c, d] (Hacker's
 * Delight, 4-3; exact).  The tnum alone loses what the ranges know:
 * (x << 5) | y with x in [0, 4], y in [0, 31] is (0; 0xff) as a tnum,
 * umax 255, but at most 128 | 31 = 159 by the ranges.  Each loop finds
 * the highest bit where one bound may be moved to trade a bit between
 * the operands.  No bound has a bit above b | d's highest, so no bit above
 * it can be traded: the loops start there (a few rounds for small values).
 */
static uint64_t top_bit(uint64_t x)
{
	return x ? 1ull << (63 - __builtin_clzll(x)) : 0;
}

static uint64_t min_or(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	for (uint64_t m = top_bit(b | d), t; m; m >>= 1) {
		if (~a & c & m) {
			t = (a | m) & -m;
			if (t <= b) {
				a = t;
				break;
			}
		} else if (a & ~c & m) {
			t = (c | m) & -m;
			if (t <= d) {
				c = t;
				break;
			}
		}
	}
	return a | c;
}

static uint64_t max_or(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	for (uint64_t m = top_bit(b | d), t; m; m >>= 1) {
		if (b & d & m) {
			t = (b - m) | (m - 1);
			if (t >= a) {
				b = t;
				break;
			}
			t = (d - m) | (m - 1);
			if (t >= c) {
				d = t;
				break;
			}
		}
	}
	return b | d;
}

static uint64_t min_and(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	for (uint64_t m = top_bit(b | d), t; m; m >>= 1) {
		if (~a & ~c & m) {
			t = (a | m) & -m;
			if (t <= b) {
				a = t;
				break;
			}
			t = (c | m) & -m;
			if (t <= d) {
				c = t;
				break;
			}
		}
	}
	return a & c;
}

static uint64_t max_and(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	for (uint64_t m = top_bit(b | d), t; m; m >>= 1) {
		if (b & ~d & m) {
			t = (b & ~m) | (m - 1);
			if (t >= a) {
				b = t;
				break;
			}
		} else if (~b & d & m) {
			t = (d & ~m) | (m - 1);
			if (t >= c) {
				d = t;
				break;
			}
		}
	}
	return b & d;
}

static uint64_t min_xor(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	for (uint64_t m = top_bit(b | d), t; m; m >>= 1) {
		if (~a & c & m) {
			t = (a | m) & -m;
			if (t <= b)
				a = t;
		} else if (a & ~c & m) {
			t = (c | m) & -m;
			if (t <= d)
				c = t;
		}
	}
	return a ^ c;
}

static uint64_t max_xor(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	for (uint64_t m = top_bit(b | d), t; m; m >>= 1) {
		if (b & d & m) {
			t = (b - m) | (m - 1);
			if (t >= a) {
				b = t;
			} else {
				t = (d - m) | (m - 1);
				if (t >= c)
					d = t;
			}
		}
	}
	return b ^ d;
}

void scalar_bitwise_range(uint8_t op, uint64_t a, uint64_t b, uint64_t c, uint64_t d,
			  uint64_t *lo, uint64_t *hi)
{
	switch (op) {
	case NBPF_AND:
		*lo = min_and(a, b, c, d);
		*hi = max_and(a, b, c, d);
		break;
	case NBPF_OR:
		*lo = min_or(a, b, c, d);
		*hi = max_or(a, b, c, d);
		break;
	default:
		*lo = min_xor(a, b, c, d);
		*hi = max_xor(a, b, c, d);
		break;
	}
}

/*
 * dst = dst OP src for AND, OR, XOR: the tnum from the operands' tnums,
 * the unsigned range from their ranges; reg_bounds_sync then meets the
 * two (each bounds the other) and derives the signed range, which is the
 * unsigned one when both operands are non-negative.
 */
static void bitwise64(struct vreg *d, const struct vreg *s, uint8_t op)
{
	bool nonneg = d->smin >= 0 && s->smin >= 0;
	uint64_t lo, hi;

	if (op == NBPF_AND)
		d->var_off = tnum_and(d->var_off, s->var_off);
	else if (op == NBPF_OR)
		d->var_off = tnum_or(d->var_off, s->var_off);
	else
		d->var_off = tnum_xor(d->var_off, s->var_off);
	scalar_bitwise_range(op, d->umin, d->umax, s->umin, s->umax, &lo, &hi);
	d->umin = lo;
	d->umax = hi;
	d->smin = nonneg ? (int64_t)lo : S64_MIN;
	d->smax = nonneg ? (int64_t)hi : S64_MAX;
}

static void alu64(struct vreg *d, const struct vreg *s, uint8_t op, int16_t off)
{
	bool sconst = tnum_is_const(s->var_off);
	uint64_t k = s->var_off.value;

	switch (op) {
	case NBPF_ADD:
		if (add_overflows_s(d->smin, s->smin) || add_overflows_s(d->smax, s->smax)) {
			d->smin = S64_MIN;
			d->smax = S64_MAX;
		} else {
			d->smin += s->smin;
			d->smax += s->smax;
		}
		if (d->umin + s->umin < d->umin || d->umax + s->umax < d->umax) {
			d->umin = 0;
			d->umax = U64_MAX;
		} else {
			d->umin += s->umin;
			d->umax += s->umax;
		}
		d->var_off = tnum_add(d->var_off, s->var_off);
		break;
	case NBPF_SUB:
		if (sub_overflows_s(d->smin, s->smax) || sub_overflows_s(d->smax, s->smin)) {
			d->smin = S64_MIN;
			d->smax = S64_MAX;
		} else {
			int64_t lo = d->smin - s->smax, hi = d->smax - s->smin;

			d->smin = lo;
			d->smax = hi;
		}
		if (d->umin < s->umax) {
			d->umin = 0;
			d->umax = U64_MAX;
		} else {
			uint64_t lo = d->umin - s->umax, hi = d->umax - s->umin;

			d->umin = lo;
			d->umax = hi;
		}
		d->var_off = tnum_sub(d->var_off, s->var_off);
		break;
	case NBPF_MUL: {
		/* each view from its own interval: exact products where none overflows */
		uint64_t ulo = 0, uhi = U64_MAX;
		int64_t p[4], lo = S64_MIN, hi = S64_MAX;

		d->var_off = tnum_mul(d->var_off, s->var_off);
		if (!__builtin_mul_overflow(d->umax, s->umax, &uhi))
			ulo = d->umin * s->umin;
		else
			uhi = U64_MAX;
		if (!__builtin_mul_overflow(d->smin, s->smin, &p[0]) &&
		    !__builtin_mul_overflow(d->smin, s->smax, &p[1]) &&
		    !__builtin_mul_overflow(d->smax, s->smin, &p[2]) &&
		    !__builtin_mul_overflow(d->smax, s->smax, &p[3])) {
			lo = hi = p[0];
			for (int i = 1; i < 4; i++) {
				lo = smin64(lo, p[i]);
				hi = smax64(hi, p[i]);
			}
		}
		d->umin = ulo;
		d->umax = uhi;
		d->smin = lo;
		d->smax = hi;
		break;
	}
	case NBPF_DIV:
	case NBPF_MOD:
		if (off == 1) { /* signed: only the divisor check matters */
			d->var_off = tnum_unknown();
			mark_unbounded(d);
			break;
		}
		if (op == NBPF_DIV) {
			/* divisor proven nonzero by the caller (s->umin >= 1) */
			uint64_t lo = s->umax ? d->umin / s->umax : 0;
			uint64_t hi = s->umin ? d->umax / s->umin : d->umax;

			mark_unbounded(d);
			d->umin = lo;
			d->umax = hi;
		} else {
			uint64_t hi = umin64(d->umax, s->umax ? s->umax - 1 : 0);

			mark_unbounded(d);
			d->umin = 0;
			d->umax = hi;
		}
		d->var_off = tnum_range(d->umin, d->umax);
		break;
	case NBPF_AND:
	case NBPF_OR:
	case NBPF_XOR:
		bitwise64(d, s, op);
		break;
	case NBPF_LSH:
		if (!sconst) {
			d->var_off = tnum_unknown();
			mark_unbounded(d);
			break;
		}
		k &= 63;
		if (d->umax > (U64_MAX >> k)) {
			d->umin = 0;
			d->umax = U64_MAX;
		} else {
			d->umin <<= k;
			d->umax <<= k;
		}
		/* a signed range that does not overflow keeps its sign: [-4, 3] << 2 is [-16, 12] */
		if (d->smin >= (S64_MIN >> k) && d->smax <= (S64_MAX >> k)) {
			d->smin = (int64_t)((uint64_t)d->smin << k);
			d->smax = (int64_t)((uint64_t)d->smax << k);
		} else {
			d->smin = S64_MIN;
			d->smax = S64_MAX;
		}
		d->var_off = tnum_lshift(d->var_off, (uint8_t)k);
		break;
	case NBPF_RSH:
		if (!sconst) {
			d->var_off = tnum_unknown();
			mark_unbounded(d);
			break;
		}
		k &= 63;
		d->var_off = tnum_rshift(d->var_off, (uint8_t)k);
		d->umin >>= k;
		d->umax >>= k;
		d->smin = S64_MIN;
		d->smax = S64_MAX;
		break;
	case NBPF_ARSH:
		if (!sconst) {
			d->var_off = tnum_unknown();
			mark_unbounded(d);
			break;
		}
		k &= 63;
		d->var_off = tnum_arshift(d->var_off, (uint8_t)k, 64);
		d->smin >>= k;
		d->smax >>= k;
		d->umin = 0;
		d->umax = U64_MAX;
		break;
	default:
		d->var_off = tnum_unknown();
		mark_unbounded(d);
		break;
	}
	reg_bounds_sync(d);
}

/*
 * dst = dst OP src for scalars (MOV, NEG and END are handled by the
 * caller).  ALU32 works on zero-extended (ARSH: sign-extended) low halves
 * and truncates the result, which is exactly the ISA's semantics.
 */
static void meet_if_feasible(struct vreg *v, const struct vreg *b);

/*
 * A 32-bit product's signed view: the operands' low halves as signed
 * values multiply without overflow in 64 bits; where the product fits in
 * 32 signed bits, its zero extension is the result (one piece when the
 * product cannot cross zero).
 */
static void mul32_signed(struct vreg *dst, const struct vreg *a, const struct vreg *b)
{
	struct vreg x = *a, y = *b, r;
	int64_t p[4], lo, hi;

	scalar_sext(&x, 4, false);
	scalar_sext(&y, 4, false);
	p[0] = x.smin * y.smin;
	p[1] = x.smin * y.smax;
	p[2] = x.smax * y.smin;
	p[3] = x.smax * y.smax;
	lo = hi = p[0];
	for (int i = 1; i < 4; i++) {
		lo = smin64(lo, p[i]);
		hi = smax64(hi, p[i]);
	}
	if (lo < INT32_MIN || hi > INT32_MAX)
		return;
	reg_mark_unknown(&r);
	r.smin = lo;
	r.smax = hi;
	reg_bounds_sync(&r);
	scalar_trunc(&r, 4);
	meet_if_feasible(dst, &r);
}

void scalar_alu(struct vreg *dst, const struct vreg *src, uint8_t op, bool alu32, int16_t off)
{
	struct vreg s = *src, d0 = *dst;
	uint8_t taint = dst->taint | src->taint;

	reg_forget_links(dst);
	if (alu32) {
		if (op == NBPF_ARSH)
			scalar_sext(dst, 4, false);
		else
			scalar_trunc(dst, 4);
		scalar_trunc(&s, 4);
		if (op == NBPF_LSH || op == NBPF_RSH || op == NBPF_ARSH) {
			if (tnum_is_const(s.var_off))
				reg_mark_const(&s, s.var_off.value & 31);
		}
		if ((op == NBPF_DIV || op == NBPF_MOD) && off == 1)
			scalar_sext(dst, 4, false);
	}
	alu64(dst, &s, op, off);
	if (alu32)
		scalar_trunc(dst, 4);
	if (alu32 && op == NBPF_MUL)
		mul32_signed(dst, &d0, src);
	dst->taint = taint;
}

/* ---- branches ---- */

static int outcome64(const struct vreg *a, const struct vreg *b, uint8_t op)
{
	switch (op) {
	case NBPF_JEQ:
	case NBPF_JNE: {
		int eq = -1;

		if (tnum_is_const(a->var_off) && tnum_is_const(b->var_off))
			eq = a->var_off.value == b->var_off.value;
		else if (a->umax < b->umin || a->umin > b->umax || a->smax < b->smin ||
			 a->smin > b->smax ||
			 ((a->var_off.value ^ b->var_off.value) & ~(a->var_off.mask | b->var_off.mask)))
			eq = 0;
		if (eq < 0)
			return -1;
		return op == NBPF_JEQ ? eq : !eq;
	}
	case NBPF_JGT:
		return a->umin > b->umax ? 1 : a->umax <= b->umin ? 0 : -1;
	case NBPF_JGE:
		return a->umin >= b->umax ? 1 : a->umax < b->umin ? 0 : -1;
	case NBPF_JLT:
		return outcome64(b, a, NBPF_JGT);
	case NBPF_JLE:
		return outcome64(b, a, NBPF_JGE);
	case NBPF_JSGT:
		return a->smin > b->smax ? 1 : a->smax <= b->smin ? 0 : -1;
	case NBPF_JSGE:
		return a->smin >= b->smax ? 1 : a->smax < b->smin ? 0 : -1;
	case NBPF_JSLT:
		return outcome64(b, a, NBPF_JSGT);
	case NBPF_JSLE:
		return outcome64(b, a, NBPF_JSGE);
	case NBPF_JSET:
		if (a->var_off.value & b->var_off.value)
			return 1;
		if (!((a->var_off.value | a->var_off.mask) & (b->var_off.value | b->var_off.mask)))
			return 0;
		return -1;
	}
	return -1;
}

/* 32-bit view of a: low half zero-extended, or sign-extended for signed ops. */
void scalar_meet(struct vreg *r, const struct vreg *b)
{
	r->umin = umax64(r->umin, b->umin);
	r->umax = umin64(r->umax, b->umax);
	r->smin = smax64(r->smin, b->smin);
	r->smax = smin64(r->smax, b->smax);
	if ((r->var_off.value ^ b->var_off.value) & ~(r->var_off.mask | b->var_off.mask)) {
		mark_infeasible_(r);
		return;
	}
	r->var_off = tnum_intersect(r->var_off, b->var_off);
	reg_bounds_sync(r);
}

static void meet_if_feasible(struct vreg *v, const struct vreg *b)
{
	struct vreg t = *v;

	scalar_meet(&t, b);
	if (scalar_feasible(&t))
		*v = t;
}

void reg_linked_bounds(struct vreg *r, const struct vreg *from)
{
	struct vreg t = *from, d;

	if (r->off == from->off) {
		/* the same value: from's bounds are the refined ones (the common case, kept fast) */
		r->var_off = from->var_off;
		r->smin = from->smin;
		r->smax = from->smax;
		r->umin = from->umin;
		r->umax = from->umax;
		return;
	}
	memset(&d, 0, sizeof(d));
	reg_mark_const(&d, (uint64_t)((int64_t)r->off - from->off));
	alu64(&t, &d, NBPF_ADD, 0);
	/* (an empty meet: the path is dead, and either side is sound) */
	meet_if_feasible(r, &t);
}

/*
 * Makes the two views of one low half agree: lo[0] zero-extended, lo[1]
 * sign-extended.  The unsigned 32-bit range of lo[0], sign-extended, is
 * one unsigned 64-bit interval ([umin, 0x7fffffff] and [0xff..ff80000000,
 * sext(umax)] lie in [umin, sext(umax)]), which lo[1]'s signed range may
 * meet on one side of zero only (the cross-sign deduction in
 * deduce_bounds): (s8)w is [-128, 127], and below 0xffffff00 unsigned it
 * is [0, 127].  lo[0] then takes what lo[1] implies.
 */
void scalar_meet_views(struct vreg lo[2])
{
	struct vreg s = lo[1], z;
	uint64_t ext = ~(uint64_t)U32_MAX;
	uint64_t zmin = lo[0].umin, zmax = lo[0].umax;

	if (zmax > U32_MAX)
		return;
	s.umin = umax64(s.umin, zmin & 0x80000000u ? zmin | ext : zmin);
	s.umax = umin64(s.umax, zmax & 0x80000000u ? zmax | ext : zmax);
	reg_bounds_sync(&s);
	if (!scalar_feasible(&s))
		return;
	lo[1] = s;
	z = s;
	scalar_trunc(&z, 4);
	meet_if_feasible(&lo[0], &z);
}

/*
 * 32-bit view of a: the low half zero-extended, or sign-extended for
 * signed comparisons, narrowed by what the path knows of the low half
 * beyond a's own bounds (lo, links.c; may be NULL).
 */
static struct vreg view32(const struct vreg *a, const struct vreg *lo, bool sign)
{
	struct vreg v = *a, l[2];

	scalar_trunc(&v, 4);
	if (lo) {
		l[0] = lo[0];
		l[1] = lo[1];
		meet_if_feasible(&l[0], &v);
		scalar_meet_views(l);
		meet_if_feasible(&v, &l[0]);
	}
	if (sign) {
		scalar_sext(&v, 4, false);
		if (lo)
			meet_if_feasible(&v, &l[1]);
	}
	return v;
}

static bool op_signed(uint8_t op)
{
	return op == NBPF_JSGT || op == NBPF_JSGE || op == NBPF_JSLT || op == NBPF_JSLE;
}

int scalar_branch_outcome(const struct vreg *a, const struct vreg *b, uint8_t op, bool is32,
			  const struct vreg *alo, const struct vreg *blo)
{
	if (is32) {
		struct vreg a32 = view32(a, alo, op_signed(op)), b32 = view32(b, blo, op_signed(op));
		int r = outcome64(&a32, &b32, op);

		/*
		 * Equality of low halves is equality of their sign extensions
		 * too: a low half known in [-128, 127] is never 32768, which
		 * its zero extension, two pieces, cannot say.
		 */
		if (r < 0 && (op == NBPF_JEQ || op == NBPF_JNE)) {
			a32 = view32(a, alo, true);
			b32 = view32(b, blo, true);
			r = outcome64(&a32, &b32, op);
		}
		return r;
	}
	return outcome64(a, b, op);
}

/* Sets impossible bounds so the caller sees the path as infeasible. */
static void mark_infeasible(struct vreg *r)
{
	r->umin = 1;
	r->umax = 0;
}

/* r != k: only a constant at an interval edge can be cut off. */
static void ne_cut(struct vreg *r, uint64_t k)
{
	if (r->umin == k && r->umin != r->umax)
		r->umin++;
	else if (r->umax == k && r->umin != r->umax)
		r->umax--;
	else if (r->umin == k)
		mark_infeasible(r);
	if (r->smin == (int64_t)k && r->smin != r->smax)
		r->smin++;
	else if (r->smax == (int64_t)k && r->smin != r->smax)
		r->smax--;
}

static void refine64(struct vreg *a, struct vreg *b, uint8_t op, bool taken)
{
	if (!taken) {
		static const uint8_t inv[16] = {
			[NBPF_JEQ >> 4] = NBPF_JNE, [NBPF_JNE >> 4] = NBPF_JEQ,
			[NBPF_JGT >> 4] = NBPF_JLE, [NBPF_JGE >> 4] = NBPF_JLT,
			[NBPF_JLT >> 4] = NBPF_JGE, [NBPF_JLE >> 4] = NBPF_JGT,
			[NBPF_JSGT >> 4] = NBPF_JSLE, [NBPF_JSGE >> 4] = NBPF_JSLT,
			[NBPF_JSLT >> 4] = NBPF_JSGE, [NBPF_JSLE >> 4] = NBPF_JSGT,
		};

		if (op == NBPF_JSET) {
			/* no bit of the constant side is set in the other */
			if (tnum_is_const(b->var_off))
				a->var_off = tnum_and(a->var_off, tnum_const(~b->var_off.value));
			if (tnum_is_const(a->var_off))
				b->var_off = tnum_and(b->var_off, tnum_const(~a->var_off.value));
			return;
		}
		op = inv[op >> 4];
	}
	switch (op) {
	case NBPF_JEQ: {
		struct vreg m = *a;

		m.umin = umax64(a->umin, b->umin);
		m.umax = umin64(a->umax, b->umax);
		m.smin = smax64(a->smin, b->smin);
		m.smax = smin64(a->smax, b->smax);
		if ((a->var_off.value ^ b->var_off.value) & ~(a->var_off.mask | b->var_off.mask))
			mark_infeasible(&m);
		else
			m.var_off = tnum_intersect(a->var_off, b->var_off);
		a->umin = b->umin = m.umin;
		a->umax = b->umax = m.umax;
		a->smin = b->smin = m.smin;
		a->smax = b->smax = m.smax;
		a->var_off = b->var_off = m.var_off;
		break;
	}
	case NBPF_JNE:
		/* whichever side is the constant (either order compares alike) */
		if (tnum_is_const(a->var_off) && tnum_is_const(b->var_off)) {
			if (a->var_off.value == b->var_off.value)
				mark_infeasible(a);
		} else if (tnum_is_const(b->var_off)) {
			ne_cut(a, b->var_off.value);
		} else if (tnum_is_const(a->var_off)) {
			ne_cut(b, a->var_off.value);
		}
		break;
	case NBPF_JGT:
		if (b->umin == U64_MAX)
			mark_infeasible(a);
		else
			a->umin = umax64(a->umin, b->umin + 1);
		if (a->umax == 0)
			mark_infeasible(b);
		else
			b->umax = umin64(b->umax, a->umax - 1);
		break;
	case NBPF_JGE:
		a->umin = umax64(a->umin, b->umin);
		b->umax = umin64(b->umax, a->umax);
		break;
	case NBPF_JLT:
		refine64(b, a, NBPF_JGT, true);
		break;
	case NBPF_JLE:
		refine64(b, a, NBPF_JGE, true);
		break;
	case NBPF_JSGT:
		if (b->smin == S64_MAX)
			mark_infeasible(a);
		else
			a->smin = smax64(a->smin, b->smin + 1);
		if (a->smax == S64_MIN)
			mark_infeasible(b);
		else
			b->smax = smin64(b->smax, a->smax - 1);
		break;
	case NBPF_JSGE:
		a->smin = smax64(a->smin, b->smin);
		b->smax = smin64(b->smax, a->smax);
		break;
	case NBPF_JSLT:
		refine64(b, a, NBPF_JSGT, true);
		break;
	case NBPF_JSLE:
		refine64(b, a, NBPF_JSGE, true);
		break;
	case NBPF_JSET: {
		/* set with a one-bit constant: that bit is set in the other side */
		const struct tnum *k = tnum_is_const(b->var_off) ? &b->var_off
				       : tnum_is_const(a->var_off) ? &a->var_off : NULL;
		struct vreg *r = k == &b->var_off ? a : b;

		if (!k || !k->value || (k->value & (k->value - 1)))
			break;
		if (!((r->var_off.value | r->var_off.mask) & k->value))
			mark_infeasible(r);
		else
			r->var_off = tnum_or(r->var_off, *k);
		break;
	}
	}
}

/*
 * Writes a refined 32-bit view back into r: exactly when r's upper half is
 * known, otherwise only the low bits of the tnum.
 */
static void writeback32(struct vreg *r, const struct vreg *v32)
{
	struct tnum lo = tnum_cast(v32->var_off, 4);

	if (!scalar_feasible(v32)) {
		mark_infeasible(r);
		return;
	}
	if (!(r->var_off.mask >> 32) && v32->umax <= U32_MAX) {
		uint64_t hi = r->var_off.value & ~(uint64_t)U32_MAX;

		r->umin = umax64(r->umin, hi | v32->umin);
		r->umax = umin64(r->umax, hi | v32->umax);
	}
	r->var_off = tnum_intersect(r->var_off, TNUM(lo.value, lo.mask | ~(uint64_t)U32_MAX));
}

void scalar_refine(struct vreg *a, struct vreg *b, uint8_t op, bool is32, bool taken,
		   struct vreg *alo, struct vreg *blo)
{
	if (is32) {
		bool sg = op_signed(op);
		struct vreg a32 = view32(a, alo, sg), b32 = view32(b, blo, sg), as, bs;

		refine64(&a32, &b32, op, taken);
		reg_bounds_sync(&a32);
		reg_bounds_sync(&b32);
		if (!scalar_feasible(&a32) || !scalar_feasible(&b32)) {
			mark_infeasible(a);
			return;
		}
		as = a32;
		bs = b32;
		if (sg) {
			/* back to the zero-extended view */
			scalar_trunc(&a32, 4);
			scalar_trunc(&b32, 4);
		} else {
			scalar_sext(&as, 4, false);
			scalar_sext(&bs, 4, false);
		}
		writeback32(a, &a32);
		writeback32(b, &b32);
		/* the refined low halves, both views, for the caller to keep (links.c) */
		if (alo) {
			meet_if_feasible(&alo[0], &a32);
			meet_if_feasible(&alo[1], &as);
			scalar_meet_views(alo);
			writeback32(a, &alo[0]);
		}
		if (blo) {
			meet_if_feasible(&blo[0], &b32);
			meet_if_feasible(&blo[1], &bs);
			scalar_meet_views(blo);
			writeback32(b, &blo[0]);
		}
	} else {
		refine64(a, b, op, taken);
	}
	reg_bounds_sync(a);
	reg_bounds_sync(b);
}
