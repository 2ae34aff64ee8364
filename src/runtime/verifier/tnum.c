/*
 * tnum.c - tracked-number arithmetic.  Each operation returns a tnum that
 * contains every concrete result of the operation applied to members of
 * its operands (soundness); the formulas are the Linux verifier's.
 */
#include "tnum.h"

#include <stdio.h>

/* Smallest tnum containing [min, max]: the common prefix is known. */
struct tnum tnum_range(uint64_t min, uint64_t max)
{
	uint64_t chi = min ^ max, delta;
	uint8_t bits = chi ? (uint8_t)(64 - __builtin_clzll(chi)) : 0;

	if (bits > 63)
		return tnum_unknown();
	delta = (1ull << bits) - 1;
	return TNUM(min & ~delta, delta);
}

struct tnum tnum_lshift(struct tnum a, uint8_t shift)
{
	return TNUM(a.value << shift, a.mask << shift);
}

struct tnum tnum_rshift(struct tnum a, uint8_t shift)
{
	return TNUM(a.value >> shift, a.mask >> shift);
}

struct tnum tnum_arshift(struct tnum a, uint8_t shift, uint8_t insn_bitness)
{
	if (insn_bitness == 32)
		return TNUM((uint32_t)(((int32_t)a.value) >> shift),
			    (uint32_t)(((int32_t)a.mask) >> shift));
	return TNUM((uint64_t)(((int64_t)a.value) >> shift),
		    (uint64_t)(((int64_t)a.mask) >> shift));
}

struct tnum tnum_add(struct tnum a, struct tnum b)
{
	uint64_t sm = a.mask + b.mask, sv = a.value + b.value;
	uint64_t sigma = sm + sv, chi = sigma ^ sv;
	uint64_t mu = chi | a.mask | b.mask;

	return TNUM(sv & ~mu, mu);
}

struct tnum tnum_sub(struct tnum a, struct tnum b)
{
	uint64_t dv = a.value - b.value;
	uint64_t alpha = dv + a.mask, beta = dv - b.mask;
	uint64_t chi = alpha ^ beta, mu = chi | a.mask | b.mask;

	return TNUM(dv & ~mu, mu);
}

struct tnum tnum_and(struct tnum a, struct tnum b)
{
	uint64_t alpha = a.value | a.mask, beta = b.value | b.mask;
	uint64_t v = a.value & b.value;

	return TNUM(v, alpha & beta & ~v);
}

struct tnum tnum_or(struct tnum a, struct tnum b)
{
	uint64_t v = a.value | b.value, mu = a.mask | b.mask;

	return TNUM(v, mu & ~v);
}

struct tnum tnum_xor(struct tnum a, struct tnum b)
{
	uint64_t v = a.value ^ b.value, mu = a.mask | b.mask;

	return TNUM(v & ~mu, mu);
}

/* Shift-and-add multiplication (kernel's tnum_mul). */
struct tnum tnum_mul(struct tnum a, struct tnum b)
{
	uint64_t acc_v = a.value * b.value;
	struct tnum acc_m = TNUM(0, 0);

	while (a.value || a.mask) {
		if (a.value & 1)
			acc_m = tnum_add(acc_m, TNUM(0, b.mask));
		else if (a.mask & 1)
			acc_m = tnum_add(acc_m, TNUM(0, b.value | b.mask));
		a = tnum_rshift(a, 1);
		b = tnum_lshift(b, 1);
	}
	return tnum_add(TNUM(acc_v, 0), acc_m);
}

/* Both a and b describe the value: keep what either knows. */
struct tnum tnum_intersect(struct tnum a, struct tnum b)
{
	uint64_t v = a.value | b.value, mu = a.mask & b.mask;

	return TNUM(v & ~mu, mu);
}

struct tnum tnum_cast(struct tnum a, uint8_t size)
{
	if (size >= 8)
		return a;
	a.value &= (1ull << (size * 8)) - 1;
	a.mask &= (1ull << (size * 8)) - 1;
	return a;
}

bool tnum_in(struct tnum a, struct tnum b)
{
	if (b.mask & ~a.mask)
		return false;
	b.value &= ~a.mask;
	return a.value == b.value;
}

int tnum_sbin(char *buf, unsigned long size, struct tnum a)
{
	return snprintf(buf, size, "(0x%llx; 0x%llx)", (unsigned long long)a.value,
			(unsigned long long)a.mask);
}
