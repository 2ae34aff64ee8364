/*
 * interp.c - the reference interpreter (RFC 9669, CPU v4).
 *
 * A threaded jump table (or one switch) on the full opcode byte per
 * instruction (interp_loop.h); registers live in a local array.  Every
 * frame of a bpf-to-bpf call chain gets its own NBPF_STACK_SIZE bytes
 * carved from one block on the C stack, zeroed when the frame is entered
 * so runs are deterministic -- except for verified programs, which never
 * read a byte they did not write (nbpf_interp_run_verified).  The interpreter trusts
 * its input for memory safety unless a checker is given; control flow
 * (jump targets, falling off the end, call depth, lddw pairs, unknown
 * opcodes) is always checked because that costs one compare per jump.
 */
#include "interp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "error.h"
#include "maps/map.h"

struct frame {
	uint64_t saved[4]; /* r6..r9 of the caller */
	uint64_t fp;       /* caller's r10 */
	uint32_t ret_pc;
};

#define STACK_TOTAL (NBPF_STACK_SIZE * NBPF_MAX_CALL_DEPTH)

struct run {
	const struct nbpf_checker *checker;
	uint8_t *stack;    /* STACK_TOTAL bytes */
	uint32_t depth;    /* 0 = main program */
};

/*
 * With a checker, accesses inside the live frames (the current frame and
 * its callers) are the interpreter's own business and always allowed;
 * anything touching the rest of the stack block is a trap; everything else
 * is offered to the checker.
 */
static int check_access(const struct run *rn, uint32_t pc, uint64_t addr, uint32_t size,
			int is_write)
{
	uint64_t lo = (uint64_t)(uintptr_t)rn->stack;
	uint64_t hi = lo + STACK_TOTAL;
	uint64_t live = hi - (uint64_t)(rn->depth + 1) * NBPF_STACK_SIZE;

	if (addr + size < addr)
		goto trap;
	if (addr < hi && addr + size > lo) {
		if (addr >= live && addr + size <= hi)
			return 0;
		goto trap;
	}
	if (!rn->checker->mem || !rn->checker->mem(rn->checker->user, addr, size, is_write))
		return 0;
trap:
	return nbpf_err(-EFAULT, "insn %u: %s of %u bytes at 0x%" PRIx64 " trapped", pc,
			is_write ? "write" : "read", size, addr);
}

static inline __attribute__((always_inline)) uint64_t load(uint64_t addr, uint32_t size)
{
	const void *p = (const void *)(uintptr_t)addr;
	uint8_t b;
	uint16_t h;
	uint32_t w;
	uint64_t d;

	switch (size) {
	case 1: memcpy(&b, p, 1); return b;
	case 2: memcpy(&h, p, 2); return h;
	case 4: memcpy(&w, p, 4); return w;
	default: memcpy(&d, p, 8); return d;
	}
}

static inline __attribute__((always_inline)) void store(uint64_t addr, uint32_t size, uint64_t v)
{
	void *p = (void *)(uintptr_t)addr;
	uint8_t b = (uint8_t)v;
	uint16_t h = (uint16_t)v;
	uint32_t w = (uint32_t)v;

	switch (size) {
	case 1: memcpy(p, &b, 1); break;
	case 2: memcpy(p, &h, 2); break;
	case 4: memcpy(p, &w, 4); break;
	default: memcpy(p, &v, 8); break;
	}
}

/* Atomic read-modify-write; returns the old value (zero-extended for 32 bits). */
static uint64_t atomic_rmw(uint64_t addr, int dw, int32_t op, uint64_t src, uint64_t r0)
{
	if (dw) {
		uint64_t *p = (uint64_t *)(uintptr_t)addr;

		switch (op & ~NBPF_FETCH) {
		case NBPF_ADD: return __atomic_fetch_add(p, src, __ATOMIC_SEQ_CST);
		case NBPF_OR:  return __atomic_fetch_or(p, src, __ATOMIC_SEQ_CST);
		case NBPF_AND: return __atomic_fetch_and(p, src, __ATOMIC_SEQ_CST);
		case NBPF_XOR: return __atomic_fetch_xor(p, src, __ATOMIC_SEQ_CST);
		case NBPF_XCHG & ~NBPF_FETCH: return __atomic_exchange_n(p, src, __ATOMIC_SEQ_CST);
		default: /* cmpxchg */
			__atomic_compare_exchange_n(p, &r0, src, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
			return r0;
		}
	} else {
		uint32_t *p = (uint32_t *)(uintptr_t)addr;
		uint32_t s = (uint32_t)src, old = (uint32_t)r0;

		switch (op & ~NBPF_FETCH) {
		case NBPF_ADD: return __atomic_fetch_add(p, s, __ATOMIC_SEQ_CST);
		case NBPF_OR:  return __atomic_fetch_or(p, s, __ATOMIC_SEQ_CST);
		case NBPF_AND: return __atomic_fetch_and(p, s, __ATOMIC_SEQ_CST);
		case NBPF_XOR: return __atomic_fetch_xor(p, s, __ATOMIC_SEQ_CST);
		case NBPF_XCHG & ~NBPF_FETCH: return __atomic_exchange_n(p, s, __ATOMIC_SEQ_CST);
		default:
			__atomic_compare_exchange_n(p, &old, s, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
			return old;
		}
	}
}

static int atomic_op_valid(int32_t op)
{
	switch (op) {
	case NBPF_ADD: case NBPF_OR: case NBPF_AND: case NBPF_XOR:
	case NBPF_ADD | NBPF_FETCH: case NBPF_OR | NBPF_FETCH:
	case NBPF_AND | NBPF_FETCH: case NBPF_XOR | NBPF_FETCH:
	case NBPF_XCHG: case NBPF_CMPXCHG:
		return 1;
	default:
		return 0;
	}
}

/* Signed division without C's traps: x / 0 handled by callers, INT_MIN / -1 wraps. */
static int64_t sdiv64(int64_t a, int64_t b)
{
	if (b == -1)
		return (int64_t)(0 - (uint64_t)a);
	return a / b;
}

static int64_t smod64(int64_t a, int64_t b)
{
	if (b == -1)
		return 0;
	return a % b;
}

static int32_t sdiv32(int32_t a, int32_t b)
{
	if (b == -1)
		return (int32_t)(0 - (uint32_t)a);
	return a / b;
}

static int32_t smod32(int32_t a, int32_t b)
{
	if (b == -1)
		return 0;
	return a % b;
}

/*
 * 64-bit ALU operation op on dst with operand s (already sign-extended imm
 * or a register).  off selects sdiv/smod (1) and movsx widths.  Returns 0,
 * or -EINVAL for an encoding the ISA does not define.
 */
static inline __attribute__((always_inline)) int alu64(uint8_t op, int16_t off, uint64_t *dst, uint64_t s)
{
	uint64_t d = *dst;

	switch (op) {
	case NBPF_ADD: d += s; break;
	case NBPF_SUB: d -= s; break;
	case NBPF_MUL: d *= s; break;
	case NBPF_DIV:
		if (off == 1)
			d = s ? (uint64_t)sdiv64((int64_t)d, (int64_t)s) : 0;
		else
			d = s ? d / s : 0;
		break;
	case NBPF_MOD:
		if (off == 1)
			d = s ? (uint64_t)smod64((int64_t)d, (int64_t)s) : d;
		else
			d = s ? d % s : d;
		break;
	case NBPF_OR:  d |= s; break;
	case NBPF_AND: d &= s; break;
	case NBPF_XOR: d ^= s; break;
	case NBPF_LSH: d <<= (s & 63); break;
	case NBPF_RSH: d >>= (s & 63); break;
	case NBPF_ARSH:
		/* Arithmetic shift spelt without implementation-defined >> on negatives. */
		s &= 63;
		d = (d >> s) | ((d >> 63) && s ? ~(UINT64_MAX >> s) : 0);
		break;
	case NBPF_NEG: d = 0 - d; break;
	case NBPF_MOV:
		switch (off) {
		case 0: d = s; break;
		case 8: d = (uint64_t)(int64_t)(int8_t)s; break;
		case 16: d = (uint64_t)(int64_t)(int16_t)s; break;
		case 32: d = (uint64_t)(int64_t)(int32_t)s; break;
		default: return -EINVAL;
		}
		break;
	default:
		return -EINVAL;
	}
	*dst = d;
	return 0;
}

/* 32-bit ALU operation; the result is zero-extended into *dst. */
static inline __attribute__((always_inline)) int alu32(uint8_t op, int16_t off, uint64_t *dst, uint32_t s)
{
	uint32_t d = (uint32_t)*dst;

	switch (op) {
	case NBPF_ADD: d += s; break;
	case NBPF_SUB: d -= s; break;
	case NBPF_MUL: d *= s; break;
	case NBPF_DIV:
		if (off == 1)
			d = s ? (uint32_t)sdiv32((int32_t)d, (int32_t)s) : 0;
		else
			d = s ? d / s : 0;
		break;
	case NBPF_MOD:
		if (off == 1)
			d = s ? (uint32_t)smod32((int32_t)d, (int32_t)s) : d;
		else
			d = s ? d % s : d;
		break;
	case NBPF_OR:  d |= s; break;
	case NBPF_AND: d &= s; break;
	case NBPF_XOR: d ^= s; break;
	case NBPF_LSH: d <<= (s & 31); break;
	case NBPF_RSH: d >>= (s & 31); break;
	case NBPF_ARSH:
		s &= 31;
		d = (d >> s) | ((d >> 31) && s ? ~(UINT32_MAX >> s) : 0);
		break;
	case NBPF_NEG: d = 0 - d; break;
	case NBPF_MOV:
		switch (off) {
		case 0: d = s; break;
		case 8: d = (uint32_t)(int32_t)(int8_t)s; break;
		case 16: d = (uint32_t)(int32_t)(int16_t)s; break;
		default: return -EINVAL;
		}
		break;
	default:
		return -EINVAL;
	}
	*dst = d;
	return 0;
}

/*
 * Offsets are only meaningful for sdiv/smod (1) and movsx (8/16/32, register
 * source); NEG takes no source register.  Widths are checked by alu64/alu32.
 */
static int alu_encoding_ok(uint8_t code, int16_t off)
{
	switch (NBPF_OP(code)) {
	case NBPF_DIV:
	case NBPF_MOD:
		return off == 0 || off == 1;
	case NBPF_MOV:
		return off == 0 || NBPF_SRC(code) == NBPF_X;
	case NBPF_NEG:
		return off == 0 && NBPF_SRC(code) == NBPF_K;
	default:
		return off == 0;
	}
}

static inline __attribute__((always_inline)) uint64_t bswap(uint64_t v, int32_t width)
{
	switch (width) {
	case 16: return __builtin_bswap16((uint16_t)v);
	case 32: return __builtin_bswap32((uint32_t)v);
	default: return __builtin_bswap64(v);
	}
}

static uint64_t trunc_width(uint64_t v, int32_t width)
{
	switch (width) {
	case 16: return (uint16_t)v;
	case 32: return (uint32_t)v;
	default: return v;
	}
}

static int is_host_le(void)
{
	const uint16_t one = 1;
	uint8_t b;

	memcpy(&b, &one, 1);
	return b == 1;
}

/* Resolves lddw at pc (both slots) into *out. */
static int do_lddw(const struct nbpf_insn *insns, uint32_t n, uint32_t pc,
		   const struct nbpf_env *env, uint64_t *out)
{
	const struct nbpf_insn *in = &insns[pc];
	const struct nbpf_insn *nx;
	struct ncclbpf_map *map;

	if (pc + 1 >= n)
		return nbpf_err(-EINVAL, "insn %u: lddw is missing its second slot", pc);
	nx = &insns[pc + 1];
	if (nx->code || nx->dst || nx->src || nx->off)
		return nbpf_err(-EINVAL, "insn %u: malformed lddw second slot", pc);
	switch (in->src) {
	case 0:
		*out = (uint64_t)(uint32_t)in->imm | ((uint64_t)(uint32_t)nx->imm << 32);
		return 0;
	case NBPF_PSEUDO_MAP_FD:
	case NBPF_PSEUDO_MAP_IDX:
	case NBPF_PSEUDO_MAP_VALUE:
	case NBPF_PSEUDO_MAP_IDX_VALUE:
		break;
	default:
		return nbpf_err(-ENOTSUP, "insn %u: lddw pseudo source %u is not supported", pc,
				in->src);
	}
	if (!env || !env->maps || in->imm < 0 || (uint32_t)in->imm >= env->n_maps ||
	    !env->maps[in->imm])
		return nbpf_err(-EINVAL, "insn %u: lddw refers to map %d, which does not exist", pc,
				in->imm);
	map = env->maps[in->imm];
	if (in->src == NBPF_PSEUDO_MAP_FD || in->src == NBPF_PSEUDO_MAP_IDX) {
		*out = (uint64_t)(uintptr_t)map;
		return 0;
	}
	void *p = nbpf_map_value_addr(map, (uint32_t)nx->imm);

	if (!p)
		return nbpf_err(-EINVAL, "insn %u: lddw map %d value offset %u is not addressable",
				pc, in->imm, (uint32_t)nx->imm);
	*out = (uint64_t)(uintptr_t)p;
	return 0;
}

/* Size in bytes of a load/store size field. */
static uint32_t size_bytes(uint8_t code)
{
	switch (NBPF_SIZE(code)) {
	case NBPF_B: return 1;
	case NBPF_H: return 2;
	case NBPF_W: return 4;
	default: return 8;
	}
}

/* Whether a jump from pc (already advanced) by rel lands inside the program. */
static int target_ok(uint32_t pc, int64_t rel, uint32_t n, int64_t *target)
{
	*target = (int64_t)pc + rel;
	return *target >= 0 && *target < n;
}

/*
 * Static checks of every slot before anything runs, so the dispatch loop
 * needs none: known opcodes and encodings, registers r0..r10 with r10
 * never written, complete lddw pairs, jump and call targets inside the
 * program, and no instruction that can fall off the end.  Like the
 * kernel, a bad instruction is an error even where it is unreachable.
 */
static int validate(const struct nbpf_insn *insns, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct nbpf_insn *in = &insns[i];
		uint8_t code = in->code, op = NBPF_OP(code);
		int terminal = 0, writes_dst = 0;
		uint32_t next = i + 1;
		int64_t t;

		if (in->dst >= NBPF_NREGS || in->src >= NBPF_NREGS)
			return nbpf_err(-EINVAL, "insn %u: invalid register r%u", i,
					in->dst >= NBPF_NREGS ? in->dst : in->src);
		switch (NBPF_CLASS(code)) {
		case NBPF_ALU:
		case NBPF_ALU64:
			writes_dst = 1;
			if (op == NBPF_END) {
				if ((NBPF_CLASS(code) == NBPF_ALU64 && NBPF_SRC(code)) ||
				    (in->imm != 16 && in->imm != 32 && in->imm != 64) || in->off)
					goto bad;
				break;
			}
			if (!alu_encoding_ok(code, in->off))
				goto bad;
			if (op == NBPF_MOV && in->off &&
			    !(in->off == 8 || in->off == 16 || (in->off == 32 && NBPF_CLASS(code) == NBPF_ALU64)))
				goto bad;
			if (op > NBPF_ARSH)
				goto bad;
			break;
		case NBPF_JMP:
		case NBPF_JMP32:
			switch (op) {
			case NBPF_JA:
				if (NBPF_SRC(code))
					goto bad;
				if (!target_ok(i + 1, NBPF_CLASS(code) == NBPF_JMP32 ? in->imm : in->off, n, &t))
					goto range;
				terminal = 1;
				break;
			case NBPF_EXIT:
				if (NBPF_CLASS(code) == NBPF_JMP32 || NBPF_SRC(code))
					goto bad;
				terminal = 1;
				break;
			case NBPF_CALL:
				if (NBPF_CLASS(code) == NBPF_JMP32)
					goto bad;
				if (!NBPF_SRC(code) && in->src == NBPF_PSEUDO_CALL &&
				    !target_ok(i + 1, in->imm, n, &t))
					return nbpf_err(-EINVAL, "insn %u: call target %" PRId64
							" is out of range", i, t);
				break;
			case NBPF_JEQ: case NBPF_JGT: case NBPF_JGE: case NBPF_JSET:
			case NBPF_JNE: case NBPF_JSGT: case NBPF_JSGE: case NBPF_JLT:
			case NBPF_JLE: case NBPF_JSLT: case NBPF_JSLE:
				if (!target_ok(i + 1, in->off, n, &t))
					goto range;
				break;
			default:
				goto bad;
			}
			break;
		case NBPF_LD:
			if (code != NBPF_OP_LDDW)
				goto bad; /* legacy ABS/IND packet loads are not supported */
			if (i + 1 >= n)
				return nbpf_err(-EINVAL, "insn %u: lddw is missing its second slot", i);
			if (insns[i + 1].code || insns[i + 1].dst || insns[i + 1].src || insns[i + 1].off)
				return nbpf_err(-EINVAL, "insn %u: malformed lddw second slot", i);
			writes_dst = 1;
			next = i + 2;
			break;
		case NBPF_LDX:
			if (NBPF_MODE(code) != NBPF_MEM &&
			    (NBPF_MODE(code) != NBPF_MEMSX || NBPF_SIZE(code) == NBPF_DW))
				goto bad;
			writes_dst = 1;
			break;
		case NBPF_ST:
			if (NBPF_MODE(code) != NBPF_MEM)
				goto bad;
			break;
		case NBPF_STX:
			if (NBPF_MODE(code) == NBPF_ATOMIC) {
				if ((NBPF_SIZE(code) != NBPF_W && NBPF_SIZE(code) != NBPF_DW) ||
				    !atomic_op_valid(in->imm) ||
				    ((in->imm & NBPF_FETCH) && in->imm != NBPF_CMPXCHG &&
				     in->src == NBPF_REG_FP))
					goto bad;
			} else if (NBPF_MODE(code) != NBPF_MEM) {
				goto bad;
			}
			break;
		}
		if (writes_dst && in->dst == NBPF_REG_FP)
			goto bad;
		if (!terminal && next >= n)
			return nbpf_err(-EINVAL, "insn %u: execution can run past the end of the program "
					"(%u insns)", i, n);
		i = next - 1;
		continue;
bad:
		return nbpf_err(-EINVAL, "insn %u: invalid instruction (code 0x%02x dst r%u src r%u off %d imm %d)",
				i, code, in->dst, in->src, in->off, in->imm);
range:
		return nbpf_err(-EINVAL, "insn %u: jump target %" PRId64 " is out of range (%u insns)",
				i, t, n);
	}
	return 0;
}

#define FAIL(err, ...) do { rc = nbpf_err(err, __VA_ARGS__); goto out; } while (0)

/* The dispatch loop (interp_loop.h), general and for verified programs. */
#define INTERP_FN interp_general
#define INTERP_VERIFIED 0
#include "interp_loop.h"
#undef INTERP_FN
#undef INTERP_VERIFIED
#define INTERP_FN interp_verified
#define INTERP_VERIFIED 1
#include "interp_loop.h"
#undef INTERP_FN
#undef INTERP_VERIFIED

int nbpf_interp_run(const struct nbpf_insn *insns, uint32_t n, const struct nbpf_env *env,
		    void *ctx, uint64_t ctx_len, const struct nbpf_checker *checker,
		    uint64_t max_steps, uint64_t *ret)
{
	if (!insns || !ret)
		return nbpf_err(-EINVAL, "interp: no program or no result pointer");
	if (!n)
		return nbpf_err(-EINVAL, "interp: empty program");
	return interp_general(insns, n, env, ctx, ctx_len, checker, max_steps, ret);
}

int nbpf_interp_check(const struct nbpf_insn *insns, uint32_t n)
{
	if (!insns || !n)
		return nbpf_err(-EINVAL, "interp: empty program");
	return validate(insns, n);
}

int nbpf_interp_run_verified(const struct nbpf_insn *insns, uint32_t n,
			     const struct nbpf_env *env, void *ctx, uint64_t ctx_len, uint64_t *ret)
{
	return interp_verified(insns, n, env, ctx, ctx_len, NULL, 0, ret);
}
