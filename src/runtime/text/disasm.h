/*
 * disasm.h - eBPF instructions as text, in the conformance suite's
 * assembler syntax (what asm.h reads back).
 *
 * Object programs print their map references readably ("lddw %r1,
 * map[3]", "lddw %r2, map_value[2]+8") and bpf-to-bpf calls with their
 * absolute target ("call pc+4 <12>"); such lines are for people and do not
 * re-assemble to the same words, everything else does.
 */
#ifndef NCCLBPF_DISASM_H
#define NCCLBPF_DISASM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "insn.h"

/* Optional naming hooks; any member may be NULL. */
struct nbpf_disasm_opts {
	/* Name of map index idx (lddw pseudo map), or NULL to print "map[idx]". */
	const char *(*map_name)(void *user, uint32_t idx);
	/* Name of helper id, or NULL to print the number. */
	const char *(*helper_name)(void *user, int32_t id);
	void *user;
};

/*
 * Writes instruction idx of insns[0..n) into buf (always NUL-terminated,
 * truncated to len).  lddw reads its second slot when idx + 1 < n; the
 * second slot itself prints as "; lddw continuation".  Returns the number
 * of slots the instruction occupies (1 or 2), or a negative errno if idx
 * is out of range.  Unknown opcodes print as ".insn 0x<word>" (still 1).
 */
int nbpf_disasm_insn(const struct nbpf_insn *insns, uint32_t n, uint32_t idx, char *buf,
		     size_t len);

/* Same, with naming hooks (opts may be NULL). */
int nbpf_disasm_insn_opts(const struct nbpf_insn *insns, uint32_t n, uint32_t idx, char *buf,
			  size_t len, const struct nbpf_disasm_opts *opts);

/*
 * Prints the whole program, one instruction per line as "%4u: text"
 * (with_index) or just "text".  Returns 0 or a negative errno.
 */
int nbpf_disasm_prog(FILE *f, const struct nbpf_insn *insns, uint32_t n, int with_index,
		     const struct nbpf_disasm_opts *opts);

#endif
