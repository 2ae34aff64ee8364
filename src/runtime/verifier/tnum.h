/*
 * tnum.h - tracked numbers: a 64-bit value where each bit is known 0,
 * known 1 or unknown (mask bit set).  The same abstract domain as the
 * Linux verifier's, used for scalars and the variable part of pointers.
 */
#ifndef NCCLBPF_VERIFIER_TNUM_H
#define NCCLBPF_VERIFIER_TNUM_H

#include <stdbool.h>
#include <stdint.h>

struct tnum {
	uint64_t value;
	uint64_t mask;
};

#define TNUM(v, m) ((struct tnum){ .value = (v), .mask = (m) })

static inline struct tnum tnum_const(uint64_t v) { return TNUM(v, 0); }
static inline struct tnum tnum_unknown(void) { return TNUM(0, ~0ull); }
static inline bool tnum_is_const(struct tnum a) { return !a.mask; }
static inline bool tnum_is_unknown(struct tnum a) { return !~a.mask; }
static inline bool tnum_equals_const(struct tnum a, uint64_t b)
{
	return tnum_is_const(a) && a.value == b;
}

struct tnum tnum_range(uint64_t min, uint64_t max);
struct tnum tnum_lshift(struct tnum a, uint8_t shift);
struct tnum tnum_rshift(struct tnum a, uint8_t shift);
struct tnum tnum_arshift(struct tnum a, uint8_t shift, uint8_t insn_bitness);
struct tnum tnum_add(struct tnum a, struct tnum b);
struct tnum tnum_sub(struct tnum a, struct tnum b);
struct tnum tnum_and(struct tnum a, struct tnum b);
struct tnum tnum_or(struct tnum a, struct tnum b);
struct tnum tnum_xor(struct tnum a, struct tnum b);
struct tnum tnum_mul(struct tnum a, struct tnum b);
struct tnum tnum_intersect(struct tnum a, struct tnum b);
/* Keeps the low size bytes, the rest known zero. */
struct tnum tnum_cast(struct tnum a, uint8_t size);
/* Whether every value b may hold is one a may hold (b subset of a). */
bool tnum_in(struct tnum a, struct tnum b);
int tnum_sbin(char *buf, unsigned long size, struct tnum a);

#endif
