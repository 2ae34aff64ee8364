/*
 * interp.h - the reference interpreter.
 *
 * Runs any instruction sequence the ISA defines, with exact RFC 9669
 * semantics.  It trusts its input (the verifier runs first) unless a
 * checker is given: then every memory access is first offered to the
 * checker, which may trap it (used by the soundness fuzzer).
 */
#ifndef NCCLBPF_INTERP_H
#define NCCLBPF_INTERP_H

#include <stddef.h>
#include <stdint.h>

#include "helpers.h"
#include "insn.h"

struct ncclbpf_map;

/* Where a program's map references and helper calls resolve. */
struct nbpf_env {
	struct ncclbpf_map *const *maps;  /* lddw map index -> map */
	uint32_t n_maps;
	const struct nbpf_helper *(*helper)(int32_t id);
};

/* Return nonzero to trap the access (the run then fails with -EFAULT). */
struct nbpf_checker {
	int (*mem)(void *user, uint64_t addr, uint32_t size, int is_write);
	/* Called after each helper call with r0 (may record new regions). */
	void (*helper_ret)(void *user, const struct nbpf_helper *h, const uint64_t args[5],
			   uint64_t r0);
	void *user;
};

/*
 * Runs insns[0..n) with r1 = ctx, r2 = ctx_len, r10 = top of a fresh
 * stack.  Stores r0 in *ret.  Returns 0, or a negative errno (with
 * ncclbpf_errmsg set) on a fault: unknown opcode, jump out of range, call
 * depth, unknown helper, checker trap, instruction budget (max_steps, 0 =
 * unlimited).
 */
int nbpf_interp_run(const struct nbpf_insn *insns, uint32_t n, const struct nbpf_env *env,
		    void *ctx, uint64_t ctx_len, const struct nbpf_checker *checker,
		    uint64_t max_steps, uint64_t *ret);

/*
 * The static checks nbpf_interp_run makes on every run (opcodes,
 * encodings, registers, jump targets, lddw pairs, no fall-through off the
 * end), once: 0 or -EINVAL with the instruction in ncclbpf_errmsg().
 */
int nbpf_interp_check(const struct nbpf_insn *insns, uint32_t n);

/*
 * nbpf_interp_run for a program that passed nbpf_interp_check and the
 * verifier (so it reads no register or stack byte before writing it):
 * no per-run validation, no clearing of registers or stack frames, no
 * checker, no step budget.
 */
int nbpf_interp_run_verified(const struct nbpf_insn *insns, uint32_t n,
			     const struct nbpf_env *env, void *ctx, uint64_t ctx_len, uint64_t *ret);

#endif
