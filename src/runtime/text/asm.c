/*
 * asm.c - the text assembler (syntax in asm.h).
 *
 * Two passes: the first turns each line into instruction slots and records
 * labels and unresolved jump targets, the second patches the targets.
 * Input is untrusted text: every number is range-checked, identifiers are
 * bounded, and every error names its line.
 */
#include "asm.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#define MAX_NAME 64
#define MAX_OPS 3
#define MAX_SLOTS (1u << 20)

enum fix_kind { FIX_OFF, FIX_IMM };

struct fixup {
	uint32_t slot;
	unsigned line;
	enum fix_kind kind;
	char name[MAX_NAME];
};

struct label {
	uint32_t slot;
	char name[MAX_NAME];
};

struct as {
	struct nbpf_insn *v;
	uint32_t n, cap;
	struct fixup *fix;
	uint32_t n_fix, cap_fix;
	struct label *lab;
	uint32_t n_lab, cap_lab;
	unsigned line;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 3, 4)))
static int as_err(struct as *a, int err, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (a->err && a->errlen)
		snprintf(a->err, a->errlen, "line %u: %s", a->line, msg);
	return err;
}

static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t nc;
	void *np;

	if (need <= *cap)
		return 0;
	nc = *cap ? *cap * 2 : 32;
	while (nc < need)
		nc *= 2;
	np = realloc(*p, (size_t)nc * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = nc;
	return 0;
}

static int emit(struct as *a, uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	if (a->n >= MAX_SLOTS)
		return as_err(a, -E2BIG, "more than %u instructions", MAX_SLOTS);
	if (grow((void **)&a->v, &a->cap, a->n + 1, sizeof(*a->v)))
		return as_err(a, -ENOMEM, "out of memory");
	a->v[a->n].code = code;
	a->v[a->n].dst = dst & 0xf;
	a->v[a->n].src = src & 0xf;
	a->v[a->n].off = off;
	a->v[a->n].imm = imm;
	a->n++;
	return 0;
}

static void trim(const char **s, const char **e)
{
	while (*s < *e && isspace((unsigned char)**s))
		(*s)++;
	while (*e > *s && isspace((unsigned char)(*e)[-1]))
		(*e)--;
}

/* Operand text as a bounded, NUL-terminated copy. */
struct tok {
	char s[96];
};

static bool is_ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.';
}

/* Parses "%rN" or "rN" exactly. */
static int parse_reg(const char *s, uint8_t *reg)
{
	char *end;
	long v;

	if (*s == '%')
		s++;
	if (*s != 'r' || !isdigit((unsigned char)s[1]))
		return -1;
	v = strtol(s + 1, &end, 10);
	if (*end || v < 0 || v > 10)
		return -1;
	*reg = (uint8_t)v;
	return 0;
}

/*
 * Parses a signed integer ("-1", "+3", "0x10", "-0x8000").  Sets *neg and
 * the magnitude; returns -1 on junk or overflow of 64 bits.  Stops at
 * *endp when endp is given, otherwise the whole string must be a number.
 */
static int parse_num(const char *s, const char **endp, bool *neg, uint64_t *mag)
{
	uint64_t v = 0;
	int base = 10, digits = 0;

	*neg = false;
	if (*s == '-' || *s == '+') {
		*neg = *s == '-';
		s++;
	}
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	for (;; s++) {
		int d;

		if (isdigit((unsigned char)*s))
			d = *s - '0';
		else if (base == 16 && isxdigit((unsigned char)*s))
			d = tolower((unsigned char)*s) - 'a' + 10;
		else
			break;
		if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return -1;
		v = v * (uint64_t)base + (uint64_t)d;
		digits++;
	}
	if (!digits)
		return -1;
	if (endp)
		*endp = s;
	else if (*s)
		return -1;
	*mag = v;
	return 0;
}

/* A 32-bit immediate: -2^31 .. 2^32-1 (values above INT32_MAX wrap, as in the suite). */
static int parse_imm32(const char *s, int32_t *imm)
{
	uint64_t m;
	bool neg;

	if (parse_num(s, NULL, &neg, &m))
		return -1;
	if (neg ? m > 0x80000000ull : m > 0xffffffffull)
		return -1;
	*imm = neg ? (int32_t)(uint32_t)(0u - (uint32_t)m) : (int32_t)(uint32_t)m;
	return 0;
}

static int parse_imm64(const char *s, uint64_t *imm)
{
	uint64_t m;
	bool neg;

	if (parse_num(s, NULL, &neg, &m))
		return -1;
	if (neg && m > 0x8000000000000000ull)
		return -1;
	*imm = neg ? 0 - m : m;
	return 0;
}

static int parse_off16(const char *s, const char **endp, int16_t *off)
{
	uint64_t m;
	bool neg;

	if (parse_num(s, endp, &neg, &m))
		return -1;
	if (neg ? m > 32768 : m > 32767)
		return -1;
	*off = neg ? (int16_t)(0 - (int32_t)m) : (int16_t)m;
	return 0;
}

/* "[%rN]", "[%rN+off]", "[%rN-off]". */
static int parse_mem(const char *s, uint8_t *reg, int16_t *off)
{
	char buf[16];
	const char *p;
	size_t l = strlen(s);
	size_t i = 1;

	if (l < 3 || s[0] != '[' || s[l - 1] != ']')
		return -1;
	while (i < l - 1 && s[i] != '+' && s[i] != '-')
		i++;
	if (i - 1 >= sizeof(buf))
		return -1;
	memcpy(buf, s + 1, i - 1);
	buf[i - 1] = '\0';
	{
		const char *bs = buf, *be = buf + strlen(buf);

		trim(&bs, &be);
		memmove(buf, bs, (size_t)(be - bs));
		buf[be - bs] = '\0';
	}
	if (parse_reg(buf, reg))
		return -1;
	*off = 0;
	if (i == l - 1)
		return 0;
	{
		char ob[32];
		const char *os = s + i, *oe = s + l - 1;
		size_t k = 0;

		/* Allow spaces around the sign: "[%r1 + 4]". */
		for (; os < oe && k < sizeof(ob) - 1; os++)
			if (!isspace((unsigned char)*os))
				ob[k++] = *os;
		if (os != oe)
			return -1;
		ob[k] = '\0';
		if (parse_off16(ob, &p, off) || *p)
			return -1;
	}
	return 0;
}

static bool is_label(const char *s)
{
	if (!*s || isdigit((unsigned char)*s) || *s == '+' || *s == '-')
		return false;
	for (; *s; s++)
		if (!is_ident_char(*s))
			return false;
	return true;
}

static int add_fix(struct as *a, enum fix_kind kind, const char *name)
{
	struct fixup *f;

	if (strlen(name) >= MAX_NAME)
		return as_err(a, -EINVAL, "label '%.20s...' is too long", name);
	if (grow((void **)&a->fix, &a->cap_fix, a->n_fix + 1, sizeof(*a->fix)))
		return as_err(a, -ENOMEM, "out of memory");
	f = &a->fix[a->n_fix++];
	f->slot = a->n;
	f->line = a->line;
	f->kind = kind;
	snprintf(f->name, sizeof(f->name), "%s", name);
	return 0;
}

/*
 * A jump target: "+N"/"-N"/"N" (relative) or a label resolved later.  For
 * FIX_OFF the value lands in off (16 bits), for FIX_IMM in imm.
 */
static int parse_target(struct as *a, const char *s, enum fix_kind kind, int16_t *off,
			int32_t *imm)
{
	*off = 0;
	*imm = 0;
	if (is_label(s))
		return add_fix(a, kind, s);
	if (kind == FIX_OFF) {
		const char *e;

		if (parse_off16(s, &e, off) || *e)
			return as_err(a, -EINVAL, "bad jump offset '%s'", s);
		return 0;
	}
	if (parse_imm32(s, imm))
		return as_err(a, -EINVAL, "bad jump offset '%s'", s);
	return 0;
}

struct alu_name {
	const char *name;
	uint8_t op;
	int16_t off;
};

static const struct alu_name alu_ops[] = {
	{ "add", NBPF_ADD, 0 }, { "sub", NBPF_SUB, 0 }, { "mul", NBPF_MUL, 0 },
	{ "div", NBPF_DIV, 0 }, { "sdiv", NBPF_DIV, 1 }, { "or", NBPF_OR, 0 },
	{ "and", NBPF_AND, 0 }, { "lsh", NBPF_LSH, 0 }, { "rsh", NBPF_RSH, 0 },
	{ "neg", NBPF_NEG, 0 }, { "mod", NBPF_MOD, 0 }, { "smod", NBPF_MOD, 1 },
	{ "xor", NBPF_XOR, 0 }, { "mov", NBPF_MOV, 0 }, { "arsh", NBPF_ARSH, 0 },
};

static const struct { const char *name; uint8_t op; } jmp_ops[] = {
	{ "jeq", NBPF_JEQ }, { "jgt", NBPF_JGT }, { "jge", NBPF_JGE }, { "jset", NBPF_JSET },
	{ "jne", NBPF_JNE }, { "jsgt", NBPF_JSGT }, { "jsge", NBPF_JSGE }, { "jlt", NBPF_JLT },
	{ "jle", NBPF_JLE }, { "jslt", NBPF_JSLT }, { "jsle", NBPF_JSLE },
};

static const struct { const char *name; uint8_t size; } sizes[] = {
	{ "b", NBPF_B }, { "h", NBPF_H }, { "w", NBPF_W }, { "dw", NBPF_DW },
};

/* Splits mnemonic "base" + optional "32"/"64" width suffix. */
static int width_suffix(const char *mn, const char *base, int *w)
{
	size_t bl = strlen(base);

	if (strncmp(mn, base, bl))
		return -1;
	if (!mn[bl]) {
		*w = 64;
		return 0;
	}
	if (!strcmp(mn + bl, "32")) {
		*w = 32;
		return 0;
	}
	if (!strcmp(mn + bl, "64")) {
		*w = 64;
		return 0;
	}
	return -1;
}

static int need_ops(struct as *a, const char *mn, int nops, int want)
{
	if (nops != want)
		return as_err(a, -EINVAL, "'%s' takes %d operand%s, got %d", mn, want,
			      want == 1 ? "" : "s", nops);
	return 0;
}

/* lddw's second operand: a number or one of the map reference forms. */
static int asm_lddw(struct as *a, uint8_t dst, const char *s)
{
	static const struct { const char *pfx; uint8_t src; bool value; } forms[] = {
		{ "map_fd_value[", NBPF_PSEUDO_MAP_VALUE, true },
		{ "map_value[", NBPF_PSEUDO_MAP_IDX_VALUE, true },
		{ "map_fd[", NBPF_PSEUDO_MAP_FD, false },
		{ "map[", NBPF_PSEUDO_MAP_IDX, false },
	};
	uint64_t v;
	int err;

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		size_t pl = strlen(forms[i].pfx);
		const char *p;
		uint64_t idx, voff = 0;
		bool neg;

		if (strncmp(s, forms[i].pfx, pl))
			continue;
		if (parse_num(s + pl, &p, &neg, &idx) || neg || idx > INT32_MAX || *p != ']')
			return as_err(a, -EINVAL, "bad map index in '%s'", s);
		p++;
		if (forms[i].value) {
			if (*p) {
				if (*p != '+' || parse_num(p + 1, NULL, &neg, &voff) || neg ||
				    voff > UINT32_MAX)
					return as_err(a, -EINVAL, "bad value offset in '%s'", s);
			}
		} else if (*p) {
			return as_err(a, -EINVAL, "junk after map reference '%s'", s);
		}
		err = emit(a, NBPF_OP_LDDW, dst, forms[i].src, 0, (int32_t)idx);
		return err ? err : emit(a, 0, 0, 0, 0, (int32_t)(uint32_t)voff);
	}
	if (parse_imm64(s, &v))
		return as_err(a, -EINVAL, "bad 64-bit immediate '%s'", s);
	err = emit(a, NBPF_OP_LDDW, dst, 0, 0, (int32_t)(uint32_t)v);
	return err ? err : emit(a, 0, 0, 0, 0, (int32_t)(uint32_t)(v >> 32));
}

/* "lock [fetch] OP[32] [%rD+off], %rS" with ops[0] the rest after "lock". */
static int asm_lock(struct as *a, char *rest)
{
	static const struct { const char *name; int32_t imm; } aops[] = {
		{ "add", NBPF_ADD }, { "or", NBPF_OR }, { "and", NBPF_AND }, { "xor", NBPF_XOR },
		{ "xchg", NBPF_XCHG }, { "cmpxchg", NBPF_CMPXCHG },
	};
	char word[32], mem[96];
	char *p = rest;
	bool fetch = false;
	uint8_t dst, src;
	int16_t off;
	int w;

	for (int pass = 0; pass < 2; pass++) {
		size_t k = 0;

		while (isspace((unsigned char)*p))
			p++;
		while (*p && !isspace((unsigned char)*p) && k < sizeof(word) - 1)
			word[k++] = *p++;
		word[k] = '\0';
		if (pass == 0 && !strcmp(word, "fetch")) {
			fetch = true;
			continue;
		}
		break;
	}
	for (size_t i = 0; i < sizeof(aops) / sizeof(aops[0]); i++) {
		char *comma;
		const char *ms, *me, *ss, *se;
		char rs[16];
		int32_t imm;

		if (width_suffix(word, aops[i].name, &w))
			continue;
		imm = aops[i].imm | (fetch ? NBPF_FETCH : 0);
		comma = strchr(p, ',');
		if (!comma)
			return as_err(a, -EINVAL, "lock: expected '[%%rD+off], %%rS'");
		ms = p;
		me = comma;
		trim(&ms, &me);
		ss = comma + 1;
		se = ss + strlen(ss);
		trim(&ss, &se);
		if ((size_t)(me - ms) >= sizeof(mem) || (size_t)(se - ss) >= sizeof(rs))
			return as_err(a, -EINVAL, "lock: operand too long");
		memcpy(mem, ms, (size_t)(me - ms));
		mem[me - ms] = '\0';
		memcpy(rs, ss, (size_t)(se - ss));
		rs[se - ss] = '\0';
		if (parse_mem(mem, &dst, &off))
			return as_err(a, -EINVAL, "lock: bad memory operand '%s'", mem);
		if (parse_reg(rs, &src))
			return as_err(a, -EINVAL, "lock: bad register '%s'", rs);
		return emit(a, NBPF_STX | NBPF_ATOMIC | (w == 32 ? NBPF_W : NBPF_DW), dst, src, off,
			    imm);
	}
	return as_err(a, -EINVAL, "lock: unknown atomic operation '%s'", word);
}

/* One instruction: mnemonic mn with nops operands op[]. */
static int asm_insn(struct as *a, const char *mn, struct tok *op, int nops, char *rest)
{
	uint8_t dst = 0, src = 0;
	int16_t off = 0;
	int32_t imm = 0;
	int w, err;

	if (!strcmp(mn, "exit")) {
		if ((err = need_ops(a, mn, nops, 0)))
			return err;
		return emit(a, NBPF_OP_EXIT, 0, 0, 0, 0);
	}
	if (!strcmp(mn, "lock"))
		return asm_lock(a, rest);
	if (!strcmp(mn, ".insn")) {
		uint64_t wv;

		if ((err = need_ops(a, mn, nops, 1)))
			return err;
		if (parse_imm64(op[0].s, &wv))
			return as_err(a, -EINVAL, "bad instruction word '%s'", op[0].s);
		return emit(a, (uint8_t)wv, (uint8_t)(wv >> 8), (uint8_t)(wv >> 12),
			    (int16_t)(uint16_t)(wv >> 16), (int32_t)(uint32_t)(wv >> 32));
	}
	if (!strcmp(mn, "lddw")) {
		if ((err = need_ops(a, mn, nops, 2)))
			return err;
		if (parse_reg(op[0].s, &dst))
			return as_err(a, -EINVAL, "bad register '%s'", op[0].s);
		return asm_lddw(a, dst, op[1].s);
	}
	if (!strcmp(mn, "call")) {
		if (nops != 1)
			return as_err(a, -EINVAL, "'call' takes one operand");
		if (!strncmp(op[0].s, "local", 5) && isspace((unsigned char)op[0].s[5])) {
			const char *t = op[0].s + 6;

			while (isspace((unsigned char)*t))
				t++;
			if ((err = parse_target(a, t, FIX_IMM, &off, &imm)))
				return err;
			return emit(a, NBPF_OP_CALL, 0, NBPF_PSEUDO_CALL, 0, imm);
		}
		if (!parse_reg(op[0].s, &dst))
			return emit(a, NBPF_OP_CALLX, dst, 0, 0, 0);
		if (parse_imm32(op[0].s, &imm))
			return as_err(a, -EINVAL, "bad helper number '%s'", op[0].s);
		return emit(a, NBPF_OP_CALL, 0, 0, 0, imm);
	}
	if (!strcmp(mn, "ja") || !strcmp(mn, "ja32") || !strcmp(mn, "gotol")) {
		bool l = strcmp(mn, "ja") != 0;

		if ((err = need_ops(a, mn, nops, 1)) ||
		    (err = parse_target(a, op[0].s, l ? FIX_IMM : FIX_OFF, &off, &imm)))
			return err;
		return emit(a, l ? NBPF_OP_GOTOL : NBPF_OP_JA, 0, 0, off, imm);
	}
	for (size_t i = 0; i < sizeof(jmp_ops) / sizeof(jmp_ops[0]); i++) {
		uint8_t cls;

		if (width_suffix(mn, jmp_ops[i].name, &w))
			continue;
		cls = w == 32 ? NBPF_JMP32 : NBPF_JMP;
		if ((err = need_ops(a, mn, nops, 3)))
			return err;
		if (parse_reg(op[0].s, &dst))
			return as_err(a, -EINVAL, "bad register '%s'", op[0].s);
		if ((err = parse_target(a, op[2].s, FIX_OFF, &off, &imm)))
			return err;
		if (!parse_reg(op[1].s, &src))
			return emit(a, cls | jmp_ops[i].op | NBPF_X, dst, src, off, 0);
		if (parse_imm32(op[1].s, &imm))
			return as_err(a, -EINVAL, "bad immediate '%s'", op[1].s);
		return emit(a, cls | jmp_ops[i].op | NBPF_K, dst, 0, off, imm);
	}
	/* Byte swaps. */
	{
		static const struct { const char *pfx; uint8_t code; } ends[] = {
			{ "be", NBPF_ALU | NBPF_END | NBPF_TO_BE },
			{ "le", NBPF_ALU | NBPF_END | NBPF_TO_LE },
			{ "bswap", NBPF_ALU64 | NBPF_END },
			{ "swap", NBPF_ALU64 | NBPF_END },
		};

		for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
			size_t pl = strlen(ends[i].pfx);

			if (strncmp(mn, ends[i].pfx, pl) ||
			    (strcmp(mn + pl, "16") && strcmp(mn + pl, "32") && strcmp(mn + pl, "64")))
				continue;
			if ((err = need_ops(a, mn, nops, 1)))
				return err;
			if (parse_reg(op[0].s, &dst))
				return as_err(a, -EINVAL, "bad register '%s'", op[0].s);
			return emit(a, ends[i].code, dst, 0, 0, atoi(mn + pl));
		}
	}
	/* movsx{8,16,32}{32,64}. */
	if (!strncmp(mn, "movsx", 5)) {
		static const struct { const char *sfx; int16_t off; uint8_t cls; } mx[] = {
			{ "832", 8, NBPF_ALU }, { "1632", 16, NBPF_ALU }, { "864", 8, NBPF_ALU64 },
			{ "1664", 16, NBPF_ALU64 }, { "3264", 32, NBPF_ALU64 },
		};

		for (size_t i = 0; i < sizeof(mx) / sizeof(mx[0]); i++) {
			if (strcmp(mn + 5, mx[i].sfx))
				continue;
			if ((err = need_ops(a, mn, nops, 2)))
				return err;
			if (parse_reg(op[0].s, &dst) || parse_reg(op[1].s, &src))
				return as_err(a, -EINVAL, "'%s' takes two registers", mn);
			return emit(a, mx[i].cls | NBPF_MOV | NBPF_X, dst, src, mx[i].off, 0);
		}
		return as_err(a, -EINVAL, "unknown mnemonic '%s'", mn);
	}
	/* Loads and stores. */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char name[16];

		snprintf(name, sizeof(name), "ldx%s", sizes[i].name);
		if (!strcmp(mn, name) || (sizes[i].size != NBPF_DW &&
					  (snprintf(name, sizeof(name), "ldxs%s", sizes[i].name),
					   !strcmp(mn, name)))) {
			uint8_t mode = mn[3] == 's' ? NBPF_MEMSX : NBPF_MEM;

			if ((err = need_ops(a, mn, nops, 2)))
				return err;
			if (parse_reg(op[0].s, &dst) || parse_mem(op[1].s, &src, &off))
				return as_err(a, -EINVAL, "'%s' takes %%rD, [%%rS+off]", mn);
			return emit(a, NBPF_LDX | mode | sizes[i].size, dst, src, off, 0);
		}
		snprintf(name, sizeof(name), "st%s", sizes[i].name);
		if (!strcmp(mn, name)) {
			if ((err = need_ops(a, mn, nops, 2)))
				return err;
			if (parse_mem(op[0].s, &dst, &off) || parse_imm32(op[1].s, &imm))
				return as_err(a, -EINVAL, "'%s' takes [%%rD+off], imm", mn);
			return emit(a, NBPF_ST | NBPF_MEM | sizes[i].size, dst, 0, off, imm);
		}
		snprintf(name, sizeof(name), "stx%s", sizes[i].name);
		if (!strcmp(mn, name)) {
			if ((err = need_ops(a, mn, nops, 2)))
				return err;
			if (parse_mem(op[0].s, &dst, &off) || parse_reg(op[1].s, &src))
				return as_err(a, -EINVAL, "'%s' takes [%%rD+off], %%rS", mn);
			return emit(a, NBPF_STX | NBPF_MEM | sizes[i].size, dst, src, off, 0);
		}
	}
	/* ALU. */
	for (size_t i = 0; i < sizeof(alu_ops) / sizeof(alu_ops[0]); i++) {
		uint8_t cls;

		if (width_suffix(mn, alu_ops[i].name, &w))
			continue;
		cls = w == 32 ? NBPF_ALU : NBPF_ALU64;
		if (alu_ops[i].op == NBPF_NEG) {
			if ((err = need_ops(a, mn, nops, 1)))
				return err;
			if (parse_reg(op[0].s, &dst))
				return as_err(a, -EINVAL, "bad register '%s'", op[0].s);
			return emit(a, cls | NBPF_NEG, dst, 0, 0, 0);
		}
		if ((err = need_ops(a, mn, nops, 2)))
			return err;
		if (parse_reg(op[0].s, &dst))
			return as_err(a, -EINVAL, "bad register '%s'", op[0].s);
		if (!parse_reg(op[1].s, &src))
			return emit(a, cls | alu_ops[i].op | NBPF_X, dst, src, alu_ops[i].off, 0);
		if (parse_imm32(op[1].s, &imm))
			return as_err(a, -EINVAL, "bad immediate '%s'", op[1].s);
		return emit(a, cls | alu_ops[i].op | NBPF_K, dst, 0, alu_ops[i].off, imm);
	}
	return as_err(a, -EINVAL, "unknown mnemonic '%s'", mn);
}

static int add_label(struct as *a, const char *s, const char *e)
{
	struct label *l;

	if (s == e || (size_t)(e - s) >= MAX_NAME)
		return as_err(a, -EINVAL, "bad label");
	for (const char *p = s; p < e; p++)
		if (!is_ident_char(*p))
			return as_err(a, -EINVAL, "bad label '%.*s'", (int)(e - s), s);
	for (uint32_t i = 0; i < a->n_lab; i++)
		if (strlen(a->lab[i].name) == (size_t)(e - s) && !memcmp(a->lab[i].name, s, (size_t)(e - s)))
			return as_err(a, -EINVAL, "label '%.*s' defined twice", (int)(e - s), s);
	if (grow((void **)&a->lab, &a->cap_lab, a->n_lab + 1, sizeof(*a->lab)))
		return as_err(a, -ENOMEM, "out of memory");
	l = &a->lab[a->n_lab++];
	l->slot = a->n;
	memcpy(l->name, s, (size_t)(e - s));
	l->name[e - s] = '\0';
	return 0;
}

/* One source line [s, e): optional "label:", then an optional instruction. */
static int asm_line(struct as *a, const char *s, const char *e)
{
	char mn[32], rest[256];
	struct tok op[MAX_OPS];
	const char *p, *c;
	int nops = 0, err;
	size_t k = 0;

	for (p = s; p < e; p++)
		if (*p == '#' || *p == ';')
			break;
	e = p;
	trim(&s, &e);
	if (s == e)
		return 0;
	/* Labels: "name:" (the only place a ':' appears). */
	c = memchr(s, ':', (size_t)(e - s));
	if (c) {
		const char *ls = s, *le = c;

		trim(&ls, &le);
		if ((err = add_label(a, ls, le)))
			return err;
		s = c + 1;
		trim(&s, &e);
		if (s == e)
			return 0;
	}
	for (p = s; p < e && !isspace((unsigned char)*p); p++) {
		if (k >= sizeof(mn) - 1)
			return as_err(a, -EINVAL, "mnemonic too long");
		mn[k++] = (char)tolower((unsigned char)*p);
	}
	mn[k] = '\0';
	trim(&p, &e);
	if ((size_t)(e - p) >= sizeof(rest))
		return as_err(a, -EINVAL, "line too long");
	memcpy(rest, p, (size_t)(e - p));
	rest[e - p] = '\0';
	/* Operands are comma-separated; none contains a comma itself. */
	for (const char *os = p; os < e;) {
		const char *oe = memchr(os, ',', (size_t)(e - os));
		const char *ts = os, *te;

		if (!oe)
			oe = e;
		te = oe;
		trim(&ts, &te);
		if (nops == MAX_OPS)
			return as_err(a, -EINVAL, "too many operands");
		if (ts == te)
			return as_err(a, -EINVAL, "empty operand");
		if ((size_t)(te - ts) >= sizeof(op[0].s))
			return as_err(a, -EINVAL, "operand too long");
		memcpy(op[nops].s, ts, (size_t)(te - ts));
		op[nops].s[te - ts] = '\0';
		nops++;
		os = oe == e ? e : oe + 1;
		if (oe != e && os == e)
			return as_err(a, -EINVAL, "empty operand");
	}
	return asm_insn(a, mn, op, nops, rest);
}

/* Patches label references; "exit" without a label means the first exit instruction. */
static int resolve(struct as *a)
{
	for (uint32_t i = 0; i < a->n_fix; i++) {
		struct fixup *f = &a->fix[i];
		int64_t target = -1, rel;

		a->line = f->line;
		for (uint32_t j = 0; j < a->n_lab; j++)
			if (!strcmp(a->lab[j].name, f->name))
				target = a->lab[j].slot;
		if (target < 0 && !strcmp(f->name, "exit"))
			for (uint32_t j = 0; j < a->n && target < 0; j++)
				if (a->v[j].code == NBPF_OP_EXIT)
					target = j;
		if (target < 0)
			return as_err(a, -EINVAL, "undefined label '%s'", f->name);
		rel = target - ((int64_t)f->slot + 1);
		if (f->kind == FIX_OFF) {
			if (rel < INT16_MIN || rel > INT16_MAX)
				return as_err(a, -ERANGE, "jump to '%s' is out of 16-bit range", f->name);
			a->v[f->slot].off = (int16_t)rel;
		} else {
			a->v[f->slot].imm = (int32_t)rel;
		}
	}
	return 0;
}

int nbpf_asm_quiet(const char *text, size_t len, struct nbpf_insn **insns, uint32_t *n,
		   char *errbuf, size_t errlen)
{
	struct as a = { .err = errbuf, .errlen = errlen };
	const char *p = text, *end = text + len;
	int err = 0;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	*insns = NULL;
	*n = 0;
	if (!text)
		return as_err(&a, -EINVAL, "no text");
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		a.line++;
		if ((err = asm_line(&a, p, le)))
			goto out;
		p = nl ? nl + 1 : end;
	}
	if ((err = resolve(&a)))
		goto out;
	if (!a.n) {
		err = as_err(&a, -EINVAL, "no instructions");
		goto out;
	}
	*insns = a.v;
	*n = a.n;
	a.v = NULL;
out:
	free(a.v);
	free(a.fix);
	free(a.lab);
	return err;
}

int nbpf_asm(const char *text, size_t len, struct nbpf_insn **insns, uint32_t *n)
{
	char msg[320];
	int err = nbpf_asm_quiet(text, len, insns, n, msg, sizeof(msg));

	if (err)
		return nbpf_err(err, "asm: %s", msg);
	return 0;
}
