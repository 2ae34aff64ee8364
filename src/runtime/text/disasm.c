/*
 * disasm.c - instructions as assembler text (syntax in asm.h).
 *
 * Every line is checked by assembling it back: an instruction whose text
 * would not reproduce its exact slot (unknown opcode, stray bits in unused
 * fields, an lddw cut off at the end) prints as ".insn 0x<word>" instead,
 * so disassembly never lies and always round-trips.
 */
#include "disasm.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "rawprog.h"

static const char *const alu_names[16] = {
	[NBPF_ADD >> 4] = "add", [NBPF_SUB >> 4] = "sub", [NBPF_MUL >> 4] = "mul",
	[NBPF_DIV >> 4] = "div", [NBPF_OR >> 4] = "or",   [NBPF_AND >> 4] = "and",
	[NBPF_LSH >> 4] = "lsh", [NBPF_RSH >> 4] = "rsh", [NBPF_NEG >> 4] = "neg",
	[NBPF_MOD >> 4] = "mod", [NBPF_XOR >> 4] = "xor", [NBPF_MOV >> 4] = "mov",
	[NBPF_ARSH >> 4] = "arsh",
};

static const char *const jmp_names[16] = {
	[NBPF_JEQ >> 4] = "jeq",   [NBPF_JGT >> 4] = "jgt",   [NBPF_JGE >> 4] = "jge",
	[NBPF_JSET >> 4] = "jset", [NBPF_JNE >> 4] = "jne",   [NBPF_JSGT >> 4] = "jsgt",
	[NBPF_JSGE >> 4] = "jsge", [NBPF_JLT >> 4] = "jlt",   [NBPF_JLE >> 4] = "jle",
	[NBPF_JSLT >> 4] = "jslt", [NBPF_JSLE >> 4] = "jsle",
};

static const char *size_name(uint8_t code)
{
	switch (NBPF_SIZE(code)) {
	case NBPF_B: return "b";
	case NBPF_H: return "h";
	case NBPF_W: return "w";
	default: return "dw";
	}
}

/* Bounded appender: never overflows, remembers truncation implicitly. */
struct out {
	char *buf;
	size_t len, pos;
};

__attribute__((format(printf, 2, 3)))
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (!o->len || o->pos >= o->len - 1)
		return;
	va_start(ap, fmt);
	r = vsnprintf(o->buf + o->pos, o->len - o->pos, fmt, ap);
	va_end(ap);
	if (r > 0)
		o->pos += (size_t)r < o->len - o->pos ? (size_t)r : o->len - o->pos - 1;
}

/* Small immediates read best in decimal, masks and constants in hex. */
static void put_imm(struct out *o, int32_t imm)
{
	if (imm > -65536 && imm < 65536)
		put(o, "%d", imm);
	else
		put(o, "0x%" PRIx32, (uint32_t)imm);
}

static void put_mem(struct out *o, uint8_t reg, int16_t off)
{
	if (off > 0)
		put(o, "[%%r%u+%d]", reg, off);
	else if (off < 0)
		put(o, "[%%r%u-%d]", reg, -(int)off);
	else
		put(o, "[%%r%u]", reg);
}

static void put_rel(struct out *o, int64_t rel)
{
	put(o, "%s%" PRId64, rel >= 0 ? "+" : "", rel);
}

/* The text of one instruction (no self-check); returns slots used. */
static int format_insn(struct out *o, const struct nbpf_insn *insns, uint32_t n, uint32_t idx)
{
	const struct nbpf_insn *in = &insns[idx];
	uint8_t code = in->code, cls = NBPF_CLASS(code), op = NBPF_OP(code);
	const char *w32;

	switch (cls) {
	case NBPF_ALU:
	case NBPF_ALU64:
		w32 = cls == NBPF_ALU ? "32" : "";
		if (op == NBPF_END) {
			if (cls == NBPF_ALU64)
				put(o, "bswap%d %%r%u", in->imm, in->dst);
			else
				put(o, "%s%d %%r%u", NBPF_SRC(code) ? "be" : "le", in->imm, in->dst);
			return 1;
		}
		if (!alu_names[op >> 4])
			break;
		if (op == NBPF_NEG) {
			put(o, "neg%s %%r%u", w32, in->dst);
			return 1;
		}
		if (op == NBPF_MOV && in->off && NBPF_SRC(code)) {
			put(o, "movsx%d%s %%r%u, %%r%u", in->off, cls == NBPF_ALU ? "32" : "64",
			    in->dst, in->src);
			return 1;
		}
		put(o, "%s%s%s %%r%u, ", (op == NBPF_DIV || op == NBPF_MOD) && in->off == 1 ? "s" : "",
		    alu_names[op >> 4], w32, in->dst);
		if (NBPF_SRC(code))
			put(o, "%%r%u", in->src);
		else
			put_imm(o, in->imm);
		return 1;
	case NBPF_JMP:
	case NBPF_JMP32:
		w32 = cls == NBPF_JMP32 ? "32" : "";
		switch (op) {
		case NBPF_JA:
			put(o, "ja%s ", w32);
			put_rel(o, cls == NBPF_JMP32 ? in->imm : in->off);
			return 1;
		case NBPF_EXIT:
			put(o, "exit");
			return 1;
		case NBPF_CALL:
			if (NBPF_SRC(code)) {
				put(o, "call %%r%u", in->dst);
			} else if (in->src == NBPF_PSEUDO_CALL) {
				put(o, "call local ");
				put_rel(o, in->imm);
			} else {
				put(o, "call %d", in->imm);
			}
			return 1;
		default:
			if (!jmp_names[op >> 4])
				break;
			put(o, "%s%s %%r%u, ", jmp_names[op >> 4], w32, in->dst);
			if (NBPF_SRC(code))
				put(o, "%%r%u", in->src);
			else
				put_imm(o, in->imm);
			put(o, ", ");
			put_rel(o, in->off);
			return 1;
		}
		break;
	case NBPF_LD:
		if (code != NBPF_OP_LDDW || idx + 1 >= n)
			break;
		put(o, "lddw %%r%u, ", in->dst);
		switch (in->src) {
		case 0:
			put(o, "0x%" PRIx64, (uint64_t)(uint32_t)in->imm |
			    (uint64_t)(uint32_t)insns[idx + 1].imm << 32);
			break;
		case NBPF_PSEUDO_MAP_FD:
			put(o, "map_fd[%d]", in->imm);
			break;
		case NBPF_PSEUDO_MAP_IDX:
			put(o, "map[%d]", in->imm);
			break;
		case NBPF_PSEUDO_MAP_VALUE:
		case NBPF_PSEUDO_MAP_IDX_VALUE:
			put(o, "%s[%d]", in->src == NBPF_PSEUDO_MAP_VALUE ? "map_fd_value" : "map_value",
			    in->imm);
			if (insns[idx + 1].imm)
				put(o, "+%" PRIu32, (uint32_t)insns[idx + 1].imm);
			break;
		default:
			return 0;
		}
		return 2;
	case NBPF_LDX:
		if (NBPF_MODE(code) != NBPF_MEM && NBPF_MODE(code) != NBPF_MEMSX)
			break;
		put(o, "ldx%s%s %%r%u, ", NBPF_MODE(code) == NBPF_MEMSX ? "s" : "", size_name(code),
		    in->dst);
		put_mem(o, in->src, in->off);
		return 1;
	case NBPF_ST:
		if (NBPF_MODE(code) != NBPF_MEM)
			break;
		put(o, "st%s ", size_name(code));
		put_mem(o, in->dst, in->off);
		put(o, ", ");
		put_imm(o, in->imm);
		return 1;
	case NBPF_STX:
		if (NBPF_MODE(code) == NBPF_ATOMIC) {
			const char *name;
			const char *fetch = "";

			switch (in->imm) {
			case NBPF_XCHG: name = "xchg"; break;
			case NBPF_CMPXCHG: name = "cmpxchg"; break;
			default:
				if (in->imm & NBPF_FETCH)
					fetch = "fetch ";
				switch (in->imm & ~NBPF_FETCH) {
				case NBPF_ADD: name = "add"; break;
				case NBPF_OR: name = "or"; break;
				case NBPF_AND: name = "and"; break;
				case NBPF_XOR: name = "xor"; break;
				default: return 0;
				}
			}
			put(o, "lock %s%s%s ", fetch, name, NBPF_SIZE(code) == NBPF_W ? "32" : "");
			put_mem(o, in->dst, in->off);
			put(o, ", %%r%u", in->src);
			return 1;
		}
		if (NBPF_MODE(code) != NBPF_MEM)
			break;
		put(o, "stx%s ", size_name(code));
		put_mem(o, in->dst, in->off);
		put(o, ", %%r%u", in->src);
		return 1;
	}
	return 0;
}

/* Whether text assembles to exactly the slots insns[0..slots). */
static int reassembles(const char *text, const struct nbpf_insn *insns, int slots)
{
	struct nbpf_insn *v = NULL;
	uint32_t n = 0;
	int ok;

	if (nbpf_asm_quiet(text, strlen(text), &v, &n, NULL, 0))
		return 0;
	ok = n == (uint32_t)slots;
	for (uint32_t i = 0; ok && i < n; i++)
		ok = nbpf_insn_to_word(&v[i]) == nbpf_insn_to_word(&insns[i]);
	free(v);
	return ok;
}

static int is_continuation(const struct nbpf_insn *insns, uint32_t n, uint32_t idx)
{
	uint32_t i = 0;

	while (i < idx)
		i += insns[i].code == NBPF_OP_LDDW && i + 1 < n ? 2 : 1;
	return i > idx;
}

int nbpf_disasm_insn_opts(const struct nbpf_insn *insns, uint32_t n, uint32_t idx, char *buf,
			  size_t len, const struct nbpf_disasm_opts *opts)
{
	char text[160];
	struct out o = { .buf = text, .len = sizeof(text) };
	struct out ob = { .buf = buf, .len = len };
	const struct nbpf_insn *in;
	int slots;

	if (len)
		buf[0] = '\0';
	if (!insns || idx >= n)
		return -EINVAL;
	in = &insns[idx];
	text[0] = '\0';
	/* A second lddw slot: only a walk from the start tells slot boundaries apart. */
	if (is_continuation(insns, n, idx)) {
		put(&ob, "; lddw continuation (imm 0x%" PRIx32 ")", (uint32_t)in->imm);
		return 1;
	}
	slots = format_insn(&o, insns, n, idx);
	if (slots <= 0 || !reassembles(text, in, slots)) {
		put(&ob, ".insn 0x%016" PRIx64, nbpf_insn_to_word(in));
		return 1;
	}
	put(&ob, "%s", text);
	if (opts && in->code == NBPF_OP_LDDW && opts->map_name &&
	    in->src != 0 && in->imm >= 0) {
		const char *nm = opts->map_name(opts->user, (uint32_t)in->imm);

		if (nm)
			put(&ob, " # %s", nm);
	}
	if (opts && in->code == NBPF_OP_CALL && in->src == 0 && opts->helper_name) {
		const char *nm = opts->helper_name(opts->user, in->imm);

		if (nm)
			put(&ob, " # %s", nm);
	}
	if (in->code == NBPF_OP_CALL && in->src == NBPF_PSEUDO_CALL)
		put(&ob, " # insn %" PRId64, (int64_t)idx + 1 + in->imm);
	return slots;
}

int nbpf_disasm_insn(const struct nbpf_insn *insns, uint32_t n, uint32_t idx, char *buf,
		     size_t len)
{
	return nbpf_disasm_insn_opts(insns, n, idx, buf, len, NULL);
}

int nbpf_disasm_prog(FILE *f, const struct nbpf_insn *insns, uint32_t n, int with_index,
		     const struct nbpf_disasm_opts *opts)
{
	char line[256];

	for (uint32_t i = 0; i < n;) {
		int slots = nbpf_disasm_insn_opts(insns, n, i, line, sizeof(line), opts);

		if (slots < 0)
			return slots;
		if (with_index)
			fprintf(f, "%4u: %s\n", i, line);
		else
			fprintf(f, "%s\n", line);
		i += (uint32_t)slots;
	}
	return ferror(f) ? -EIO : 0;
}
