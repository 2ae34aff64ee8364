/*
 * asm.h - a text assembler for eBPF, in the ISA conformance suite's syntax.
 *
 *   mov %r1, -1            mov32 %r0, 0x10        movsx1664 %r0, %r1
 *   ldxw %r0, [%r1+4]      ldxsb %r0, [%r10-1]    stxdw [%r10-8], %r1
 *   stb [%r10-1], 0x80     lock fetch add32 [%r10-4], %r1
 *   jeq %r1, 0x2, +3       jne32 %r0, %r1, label  ja -2     ja32 label
 *   call 5                 call %r2               call local func
 *   be16 %r0  le32 %r0  bswap64 %r0 (also swap64)  exit
 *   lddw %r0, 0x1122334455667788
 *
 * Object-program forms the disassembler prints are accepted too:
 * "lddw %r1, map[3]" (pseudo map index), "lddw %r1, map_value[2]+8",
 * "map_fd[N]", "map_fd_value[N]+off", and ".insn 0x<16 hex digits>" for a
 * raw slot.  Labels are "name:"; a jump to "exit" when no such label exists
 * goes to the program's first exit instruction (the suite's convention).  '#' and ';'
 * start comments.
 */
#ifndef NCCLBPF_ASM_H
#define NCCLBPF_ASM_H

#include <stddef.h>
#include <stdint.h>

#include "insn.h"

/*
 * Assembles text (len bytes) into a malloc'd array.  Returns 0, or a
 * negative errno with a message naming the line (ncclbpf_errmsg()).
 */
int nbpf_asm(const char *text, size_t len, struct nbpf_insn **insns, uint32_t *n);

/*
 * Same, but the message goes to errbuf (if non-NULL) and the thread's last
 * error is left alone: for callers that assemble speculatively.
 */
int nbpf_asm_quiet(const char *text, size_t len, struct nbpf_insn **insns, uint32_t *n,
		   char *errbuf, size_t errlen);

#endif
