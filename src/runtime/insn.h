/*
 * insn.h - the eBPF instruction encoding (RFC 9669), the one place that
 * names opcodes.  Everything else in the project (assembler, disassembler,
 * loader, verifier, interpreter, JIT) includes this header and never
 * redefines an opcode, class or pseudo source.
 */
#ifndef NCCLBPF_INSN_H
#define NCCLBPF_INSN_H

#include <stdint.h>

/* One 64-bit instruction slot, in the byte order of the ELF and raw files. */
struct nbpf_insn {
	uint8_t code;
	uint8_t dst : 4;
	uint8_t src : 4;
	int16_t off;
	int32_t imm;
};

_Static_assert(sizeof(struct nbpf_insn) == 8, "instruction slot is 8 bytes");

/* Instruction classes (low 3 bits of code). */
#define NBPF_LD    0x00
#define NBPF_LDX   0x01
#define NBPF_ST    0x02
#define NBPF_STX   0x03
#define NBPF_ALU   0x04
#define NBPF_JMP   0x05
#define NBPF_JMP32 0x06
#define NBPF_ALU64 0x07
#define NBPF_CLASS(code) ((code) & 0x07)

/* Source operand bit for ALU/JMP. */
#define NBPF_K 0x00
#define NBPF_X 0x08
#define NBPF_SRC(code) ((code) & 0x08)

/* ALU operations (high 4 bits). */
#define NBPF_ADD  0x00
#define NBPF_SUB  0x10
#define NBPF_MUL  0x20
#define NBPF_DIV  0x30
#define NBPF_OR   0x40
#define NBPF_AND  0x50
#define NBPF_LSH  0x60
#define NBPF_RSH  0x70
#define NBPF_NEG  0x80
#define NBPF_MOD  0x90
#define NBPF_XOR  0xa0
#define NBPF_MOV  0xb0
#define NBPF_ARSH 0xc0
#define NBPF_END  0xd0
#define NBPF_OP(code) ((code) & 0xf0)

/* Byte-swap direction for NBPF_END in class ALU (the source bit);
 * NBPF_ALU64 | NBPF_END is the unconditional bswap (v4). */
#define NBPF_TO_LE 0x00
#define NBPF_TO_BE 0x08

/* Jump operations (high 4 bits). */
#define NBPF_JA   0x00
#define NBPF_JEQ  0x10
#define NBPF_JGT  0x20
#define NBPF_JGE  0x30
#define NBPF_JSET 0x40
#define NBPF_JNE  0x50
#define NBPF_JSGT 0x60
#define NBPF_JSGE 0x70
#define NBPF_CALL 0x80
#define NBPF_EXIT 0x90
#define NBPF_JLT  0xa0
#define NBPF_JLE  0xb0
#define NBPF_JSLT 0xc0
#define NBPF_JSLE 0xd0

/* Load/store size (bits 3-4) and mode (bits 5-7). */
#define NBPF_W  0x00
#define NBPF_H  0x08
#define NBPF_B  0x10
#define NBPF_DW 0x18
#define NBPF_SIZE(code) ((code) & 0x18)
#define NBPF_IMM    0x00
#define NBPF_ABS    0x20
#define NBPF_IND    0x40
#define NBPF_MEM    0x60
#define NBPF_MEMSX  0x80
#define NBPF_ATOMIC 0xc0
#define NBPF_MODE(code) ((code) & 0xe0)

/* Atomic operations (imm of NBPF_STX | NBPF_ATOMIC). */
#define NBPF_FETCH   0x01
#define NBPF_XCHG    (0xe0 | NBPF_FETCH)
#define NBPF_CMPXCHG (0xf0 | NBPF_FETCH)

/* lddw (NBPF_LD | NBPF_IMM | NBPF_DW) pseudo sources. */
#define NBPF_PSEUDO_MAP_FD        1 /* imm: map fd; we treat it as index */
#define NBPF_PSEUDO_MAP_VALUE     2 /* imm: map fd, next imm: value offset */
#define NBPF_PSEUDO_BTF_ID        3 /* unsupported */
#define NBPF_PSEUDO_FUNC          4 /* unsupported */
#define NBPF_PSEUDO_MAP_IDX       5 /* imm: index in the object's map table */
#define NBPF_PSEUDO_MAP_IDX_VALUE 6 /* imm: map index, next imm: value offset */

/* call pseudo sources. */
#define NBPF_PSEUDO_CALL        1 /* bpf-to-bpf: imm is a relative insn offset */
#define NBPF_PSEUDO_KFUNC_CALL  2 /* unsupported */

/* Composite opcodes used often enough to name. */
#define NBPF_OP_LDDW   (NBPF_LD | NBPF_IMM | NBPF_DW)   /* 0x18 */
#define NBPF_OP_CALL   (NBPF_JMP | NBPF_CALL)           /* 0x85 */
#define NBPF_OP_CALLX  (NBPF_JMP | NBPF_CALL | NBPF_X)  /* 0x8d */
#define NBPF_OP_EXIT   (NBPF_JMP | NBPF_EXIT)           /* 0x95 */
#define NBPF_OP_JA     (NBPF_JMP | NBPF_JA)             /* 0x05 */
#define NBPF_OP_GOTOL  (NBPF_JMP32 | NBPF_JA)           /* 0x06: imm is the offset */

/* Machine limits shared by every engine. */
#define NBPF_NREGS         11  /* r0..r10 */
#define NBPF_REG_FP        10
#define NBPF_STACK_SIZE    512 /* per frame */
#define NBPF_MAX_CALL_DEPTH 8  /* frames, main program included */

static inline int nbpf_insn_is_lddw(const struct nbpf_insn *in)
{
	return in->code == NBPF_OP_LDDW;
}

/*
 * Whether a conditional jump op is taken, 64-bit (is32 = 0) or 32-bit
 * compare: the interpreter's semantics, which the JIT also uses to count a
 * loop's trips.
 */
static inline __attribute__((always_inline)) int nbpf_jmp_taken(uint8_t op, uint64_t a, uint64_t b,
								  int is32)
{
	if (is32) {
		a = (uint32_t)a;
		b = (uint32_t)b;
	}
	int64_t sa = is32 ? (int64_t)(int32_t)a : (int64_t)a;
	int64_t sb = is32 ? (int64_t)(int32_t)b : (int64_t)b;

	switch (op) {
	case NBPF_JEQ:  return a == b;
	case NBPF_JNE:  return a != b;
	case NBPF_JGT:  return a > b;
	case NBPF_JGE:  return a >= b;
	case NBPF_JLT:  return a < b;
	case NBPF_JLE:  return a <= b;
	case NBPF_JSET: return (a & b) != 0;
	case NBPF_JSGT: return sa > sb;
	case NBPF_JSGE: return sa >= sb;
	case NBPF_JSLT: return sa < sb;
	default:        return sa <= sb; /* NBPF_JSLE; the verifier rejects the rest */
	}
}

#endif
