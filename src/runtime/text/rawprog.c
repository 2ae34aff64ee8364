/*
 * rawprog.c - raw instruction words and conformance .data files.
 *
 * Everything here parses untrusted text: lengths are explicit (no reliance
 * on NUL terminators), every number is range-checked, and every error
 * names the line it came from.
 */
#include "rawprog.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "ncclbpf/runtime.h"

#define MAX_FILE_SIZE (64u << 20)
#define MAX_INSNS (1u << 20)

struct nbpf_insn nbpf_insn_from_word(uint64_t w)
{
	struct nbpf_insn in;

	in.code = (uint8_t)w;
	in.dst = (uint8_t)((w >> 8) & 0xf);
	in.src = (uint8_t)((w >> 12) & 0xf);
	in.off = (int16_t)(uint16_t)(w >> 16);
	in.imm = (int32_t)(uint32_t)(w >> 32);
	return in;
}

uint64_t nbpf_insn_to_word(const struct nbpf_insn *in)
{
	return (uint64_t)in->code | (uint64_t)in->dst << 8 | (uint64_t)in->src << 12 |
	       (uint64_t)(uint16_t)in->off << 16 | (uint64_t)(uint32_t)in->imm << 32;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* Next line of [*p, end): sets [*ls, *le) without the newline, with '#' comments cut. */
static int next_line(const char **p, const char *end, const char **ls, const char **le)
{
	const char *s = *p, *e;

	if (s >= end)
		return 0;
	e = memchr(s, '\n', (size_t)(end - s));
	*p = e ? e + 1 : end;
	if (!e)
		e = end;
	*ls = s;
	*le = e;
	return 1;
}

static void trim(const char **s, const char **e, int cut_comment)
{
	if (cut_comment) {
		const char *h = memchr(*s, '#', (size_t)(*e - *s));

		if (h)
			*e = h;
	}
	while (*s < *e && is_space(**s))
		(*s)++;
	while (*e > *s && is_space((*e)[-1]))
		(*e)--;
}

/*
 * Raw words from [text, text+len); line numbers in messages count from
 * first_line so .data sections report lines of the whole file.
 */
static int raw_parse_lines(const char *text, size_t len, unsigned first_line,
			   struct nbpf_insn **insns, uint32_t *n)
{
	const char *p = text, *end = text + len, *s, *e;
	struct nbpf_insn *v = NULL, *nv;
	uint32_t cnt = 0, cap = 0;
	unsigned line = first_line - 1;
	int err = 0;

	*insns = NULL;
	*n = 0;
	while (next_line(&p, end, &s, &e)) {
		uint64_t w = 0;

		line++;
		trim(&s, &e, 1);
		if (s == e)
			continue;
		if (e - s != 18 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) {
			err = nbpf_err(-EINVAL, "line %u: expected 0x followed by 16 hex digits, got '%.*s'",
				       line, (int)(e - s > 40 ? 40 : e - s), s);
			goto fail;
		}
		for (const char *q = s + 2; q < e; q++) {
			int d = hexval(*q);

			if (d < 0) {
				err = nbpf_err(-EINVAL, "line %u: '%c' is not a hex digit", line, *q);
				goto fail;
			}
			w = w << 4 | (uint64_t)d;
		}
		if (cnt == MAX_INSNS) {
			err = nbpf_err(-E2BIG, "line %u: more than %u instructions", line, MAX_INSNS);
			goto fail;
		}
		if (cnt == cap) {
			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				err = nbpf_err(-ENOMEM, "out of memory reading instructions");
				goto fail;
			}
			v = nv;
		}
		v[cnt++] = nbpf_insn_from_word(w);
	}
	if (!cnt) {
		err = nbpf_err(-EINVAL, "no instructions");
		goto fail;
	}
	*insns = v;
	*n = cnt;
	return 0;
fail:
	free(v);
	return err;
}

int nbpf_raw_parse(const char *text, size_t len, struct nbpf_insn **insns, uint32_t *n)
{
	if (!text || !insns || !n)
		return nbpf_err(-EINVAL, "raw program: missing argument");
	return raw_parse_lines(text, len, 1, insns, n);
}

int nbpf_hex_parse(const char *text, size_t len, uint8_t **out, size_t *out_len)
{
	uint8_t *buf = NULL;
	size_t nd = 0, nb = 0;
	int hi = -1;

	*out = NULL;
	*out_len = 0;
	if (!text)
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (hexval(text[i]) >= 0)
			nd++;
		else if (!is_space(text[i]))
			return nbpf_err(-EINVAL, "hex bytes: '%c' at position %zu is not a hex digit",
					text[i], i + 1);
		else if (nd % 2)
			return nbpf_err(-EINVAL, "hex bytes: a byte is split by whitespace at position %zu",
					i + 1);
	}
	if (nd % 2)
		return nbpf_err(-EINVAL, "hex bytes: odd number of digits (%zu)", nd);
	if (!nd)
		return 0;
	buf = malloc(nd / 2);
	if (!buf)
		return nbpf_err(-ENOMEM, "hex bytes: out of memory");
	for (size_t i = 0; i < len; i++) {
		int d = hexval(text[i]);

		if (d < 0)
			continue;
		if (hi < 0) {
			hi = d;
		} else {
			buf[nb++] = (uint8_t)(hi << 4 | d);
			hi = -1;
		}
	}
	*out = buf;
	*out_len = nb;
	return 0;
}

static char *dup_range(const char *s, const char *e)
{
	char *r = malloc((size_t)(e - s) + 1);

	if (r) {
		memcpy(r, s, (size_t)(e - s));
		r[e - s] = '\0';
	}
	return r;
}

/* Section bodies found in a .data file, as ranges of the input. */
struct sect {
	const char *s, *e;
	unsigned first_line;
	bool present;
};

enum { S_ASM, S_RAW, S_MEM, S_RESULT, S_ERROR, S_NOTE, S_COUNT };

static int sect_kind(const char *s, const char *e)
{
	static const char *const names[] = { "asm", "raw", "mem", "result", "error" };

	for (int i = 0; i < S_NOTE; i++)
		if ((size_t)(e - s) == strlen(names[i]) && !memcmp(s, names[i], (size_t)(e - s)))
			return i;
	return S_NOTE;
}

static int parse_result(const struct sect *sc, uint64_t *out)
{
	const char *p = sc->s, *s, *e;
	unsigned line = sc->first_line - 1;
	int found = 0;

	while (next_line(&p, sc->e, &s, &e)) {
		char buf[64], *endp;

		line++;
		trim(&s, &e, 1);
		if (s == e)
			continue;
		if (found || (size_t)(e - s) >= sizeof(buf))
			return nbpf_err(-EINVAL, "line %u: result must be one number", line);
		memcpy(buf, s, (size_t)(e - s));
		buf[e - s] = '\0';
		errno = 0;
		if (buf[0] == '-')
			*out = (uint64_t)strtoll(buf, &endp, 0);
		else
			*out = strtoull(buf, &endp, 0);
		if (errno || *endp)
			return nbpf_err(-EINVAL, "line %u: bad result '%s'", line, buf);
		found = 1;
	}
	if (!found)
		return nbpf_err(-EINVAL, "line %u: empty result section", sc->first_line);
	return 0;
}

bool nbpf_text_is_conf(const char *text, size_t len)
{
	const char *p = text, *end = text + len, *s, *e;

	while (next_line(&p, end, &s, &e))
		if (e - s >= 3 && !memcmp(s, "-- ", 3))
			return true;
	return false;
}

int nbpf_conf_parse(const char *text, size_t len, struct nbpf_conf_test *t)
{
	struct sect sc[S_COUNT] = { { 0 } };
	const char *p = text, *end = text + len, *s, *e;
	int cur = -1, err = 0;
	unsigned line = 0;

	memset(t, 0, sizeof(*t));
	if (!text)
		return nbpf_err(-EINVAL, "conformance file: no text");
	while (next_line(&p, end, &s, &e)) {
		line++;
		if (e - s >= 2 && !memcmp(s, "--", 2) && (e - s == 2 || is_space(s[2]))) {
			const char *ns = s + 2, *ne = e;

			trim(&ns, &ne, 0);
			cur = sect_kind(ns, ne);
			if (cur != S_NOTE && sc[cur].present)
				return nbpf_err(-EINVAL, "line %u: section '-- %.*s' appears twice", line,
						(int)(ne - ns), ns);
			sc[cur].present = true;
			sc[cur].s = sc[cur].e = p;
			sc[cur].first_line = line + 1;
			continue;
		}
		if (cur >= 0)
			sc[cur].e = p;
	}

	if (sc[S_ASM].present && !(t->asm_text = dup_range(sc[S_ASM].s, sc[S_ASM].e)))
		goto nomem;
	if (sc[S_ERROR].present) {
		const char *es = sc[S_ERROR].s, *ee = sc[S_ERROR].e;

		trim(&es, &ee, 0);
		t->has_error = true;
		if (!(t->error = dup_range(es, ee)))
			goto nomem;
	}
	if (sc[S_RAW].present) {
		err = raw_parse_lines(sc[S_RAW].s, (size_t)(sc[S_RAW].e - sc[S_RAW].s),
				      sc[S_RAW].first_line, &t->insns, &t->n_insns);
		if (err)
			goto fail;
		t->has_raw = true;
	}
	if (sc[S_MEM].present) {
		/* Comments are allowed between the byte lines. */
		const char *mp = sc[S_MEM].s, *ms, *me;
		char *clean = malloc((size_t)(sc[S_MEM].e - sc[S_MEM].s) + 1);
		size_t cl = 0;

		if (!clean)
			goto nomem;
		while (next_line(&mp, sc[S_MEM].e, &ms, &me)) {
			trim(&ms, &me, 1);
			memcpy(clean + cl, ms, (size_t)(me - ms));
			cl += (size_t)(me - ms);
			clean[cl++] = ' ';
		}
		err = nbpf_hex_parse(clean, cl, &t->mem, &t->mem_len);
		free(clean);
		if (err) {
			char msg[512];

			snprintf(msg, sizeof(msg), "%s", ncclbpf_errmsg());
			err = nbpf_err(err, "line %u: mem section: %s", sc[S_MEM].first_line, msg);
			goto fail;
		}
	}
	if (sc[S_RESULT].present) {
		err = parse_result(&sc[S_RESULT], &t->result);
		if (err)
			goto fail;
		t->has_result = true;
	}
	return 0;
nomem:
	err = nbpf_err(-ENOMEM, "conformance file: out of memory");
fail:
	nbpf_conf_free(t);
	return err;
}

void nbpf_conf_free(struct nbpf_conf_test *t)
{
	if (!t)
		return;
	free(t->asm_text);
	free(t->insns);
	free(t->mem);
	free(t->error);
	memset(t, 0, sizeof(*t));
}

int nbpf_read_file(const char *path, char **buf, size_t *len)
{
	FILE *f = NULL;
	struct stat st;
	char *b = NULL;
	size_t got;
	int err;

	*buf = NULL;
	*len = 0;
	f = fopen(path, "rb");
	if (!f)
		return nbpf_err(-errno, "%s: %s", path, strerror(errno));
	if (fstat(fileno(f), &st)) {
		err = nbpf_err(-errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		err = nbpf_err(-EINVAL, "%s: not a regular file", path);
		goto out;
	}
	if ((uint64_t)st.st_size > MAX_FILE_SIZE) {
		err = nbpf_err(-EFBIG, "%s: larger than %u MiB", path, MAX_FILE_SIZE >> 20);
		goto out;
	}
	b = malloc((size_t)st.st_size + 1);
	if (!b) {
		err = nbpf_err(-ENOMEM, "%s: out of memory", path);
		goto out;
	}
	got = fread(b, 1, (size_t)st.st_size, f);
	if (ferror(f)) {
		err = nbpf_err(-EIO, "%s: read error", path);
		goto out;
	}
	b[got] = '\0';
	*buf = b;
	*len = got;
	b = NULL;
	err = 0;
out:
	free(b);
	fclose(f);
	return err;
}

int nbpf_conf_load(const char *path, struct nbpf_conf_test *t)
{
	char *text;
	size_t len;
	int err;

	memset(t, 0, sizeof(*t));
	err = nbpf_read_file(path, &text, &len);
	if (err)
		return err;
	err = nbpf_conf_parse(text, len, t);
	if (err) {
		char msg[768];

		snprintf(msg, sizeof(msg), "%s", ncclbpf_errmsg());
		err = nbpf_err(err, "%s: %s", path, msg);
	}
	free(text);
	return err;
}
