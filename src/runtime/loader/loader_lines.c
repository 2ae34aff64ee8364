/*
 * loader_lines.c - BTF line info (.BTF.ext) mapped onto linked programs.
 *
 * libbpf 1.1 parses .BTF.ext only into an opaque struct, so the line_info
 * subsection is read here, with every offset and count checked against
 * the section before it is used:
 *
 *   header { u16 magic 0xeb9f; u8 version; u8 flags; u32 hdr_len;
 *            u32 func_info_off, func_info_len, line_info_off, line_info_len; ... }
 *   line_info (at hdr_len + line_info_off):
 *            u32 rec_size;
 *            repeated { u32 sec_name_off; u32 num_info; rec[num_info] }
 *   rec      { u32 insn_off (bytes); u32 file_name_off; u32 line_off; u32 line_col }
 *
 * Strings live in the .BTF string table; the object keeps its struct btf,
 * so the program's line entries point straight into it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>

#include "loader.h"

#define BTF_EXT_MAGIC 0xeB9F
#define LINE_REC_MIN 16
#define LINE_REC_MAX 256

struct line_rec {
	uint32_t insn_off, file_name_off, line_off, line_col;
};

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static int find_exec_sec(const struct nbpf_loader *ld, const char *name)
{
	for (uint32_t i = 1; i < ld->n_secs; i++) {
		const struct nbpf_sec *s = &ld->secs[i];

		if ((s->kind == NBPF_SEC_PROG || s->kind == NBPF_SEC_TEXT) && !strcmp(s->name, name))
			return (int)i;
	}
	return -1;
}

/* Checks one record fully, so the per-program pass needs no checks. */
static int check_rec(struct nbpf_loader *ld, const struct nbpf_sec *s, const uint8_t *p)
{
	struct line_rec r;

	memcpy(&r, p, sizeof(r));
	if (r.insn_off % 8 || r.insn_off / 8 >= s->size / 8)
		return ld_err(ld, -EINVAL, "corrupt .BTF.ext: line info for section %s at byte offset %u is outside the section or not on an instruction",
			      s->name, r.insn_off);
	if (!btf__name_by_offset(ld->btf, r.file_name_off) ||
	    !btf__name_by_offset(ld->btf, r.line_off))
		return ld_err(ld, -EINVAL, "corrupt .BTF.ext: line info for section %s names a string outside .BTF",
			      s->name);
	return 0;
}

/* Parses and validates the line_info subsection once per object. */
int nbpf_ld_lines_prepare(struct nbpf_loader *ld)
{
	const struct nbpf_sec *ext;
	const uint8_t *p, *end;
	uint32_t hdr_len, li_off, li_len, cap = 0;
	int err;

	if (!ld->btf_ext_idx)
		return 0;
	ext = &ld->secs[ld->btf_ext_idx];
	if (!ld->btf)
		return ld_err(ld, -EINVAL, "section .BTF.ext without a .BTF section");
	if (!ext->data || ext->size < 24)
		return ld_err(ld, -EINVAL, "corrupt .BTF.ext: %llu bytes is shorter than its header",
			      (unsigned long long)ext->size);
	p = ext->data;
	if ((uint16_t)(p[0] | p[1] << 8) != BTF_EXT_MAGIC)
		return ld_err(ld, -EINVAL, "corrupt .BTF.ext: bad magic");
	if (p[2] != 1)
		return ld_err(ld, -EINVAL, "corrupt .BTF.ext: unsupported version %u", p[2]);
	hdr_len = rd32(p + 4);
	li_off = rd32(p + 16);
	li_len = rd32(p + 20);
	if (hdr_len < 24 || hdr_len > ext->size)
		return ld_err(ld, -EINVAL, "corrupt .BTF.ext: header length %u outside the section", hdr_len);
	if (!li_len)
		return 0;
	if (li_off > ext->size - hdr_len || li_len > ext->size - hdr_len - li_off)
		return ld_err(ld, -EINVAL, "corrupt .BTF.ext: line info (offset %u, %u bytes) outside the section",
			      li_off, li_len);
	if (li_len < 4)
		return ld_err(ld, -EINVAL, "corrupt .BTF.ext: line info too short");
	p = ext->data + hdr_len + li_off;
	end = p + li_len;
	ld->line_rec_size = rd32(p);
	if (ld->line_rec_size < LINE_REC_MIN || ld->line_rec_size > LINE_REC_MAX ||
	    ld->line_rec_size % 4)
		return ld_err(ld, -EINVAL, "corrupt .BTF.ext: line info record size %u", ld->line_rec_size);
	p += 4;
	while (p < end) {
		const char *sec_name;
		uint32_t num;
		int sec;

		if (end - p < 8)
			return ld_err(ld, -EINVAL, "corrupt .BTF.ext: truncated line info section header");
		sec_name = btf__name_by_offset(ld->btf, rd32(p));
		num = rd32(p + 4);
		p += 8;
		if (!sec_name)
			return ld_err(ld, -EINVAL, "corrupt .BTF.ext: line info section name outside .BTF strings");
		if ((uint64_t)num * ld->line_rec_size > (uint64_t)(end - p))
			return ld_err(ld, -EINVAL, "corrupt .BTF.ext: %u line info records for section %s run past the end",
				      num, sec_name);
		sec = find_exec_sec(ld, sec_name);
		if (sec < 0)
			return ld_err(ld, -EINVAL, "corrupt .BTF.ext: line info for unknown section '%s'", sec_name);
		for (uint32_t i = 0; i < num; i++) {
			err = check_rec(ld, &ld->secs[sec], p + (size_t)i * ld->line_rec_size);
			if (err)
				return err;
		}
		if (ld->n_lsecs == cap) {
			struct nbpf_line_sec *n;

			if (cap >= NBPF_LOADER_MAX_SECTIONS)
				return ld_err(ld, -E2BIG, "corrupt .BTF.ext: too many line info sections");
			cap = cap ? cap * 2 : 8;
			n = realloc(ld->lsecs, cap * sizeof(*n));
			if (!n)
				return ld_err(ld, -ENOMEM, "out of memory");
			ld->lsecs = n;
		}
		ld->lsecs[ld->n_lsecs++] = (struct nbpf_line_sec){ (uint32_t)sec, num, p };
		p += (size_t)num * ld->line_rec_size;
	}
	return 0;
}

/* The function of section sec containing insn, or NULL. */
static const struct nbpf_func *func_containing(const struct nbpf_loader *ld, uint32_t sec,
					       uint32_t insn)
{
	uint32_t lo = 0, hi = ld->n_funcs;

	/* Last function with (sec, start) <= (sec, insn). */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct nbpf_func *f = &ld->funcs[mid];

		if (f->sec < sec || (f->sec == sec && f->start <= insn))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	if (ld->funcs[lo - 1].sec != sec || insn - ld->funcs[lo - 1].start >= ld->funcs[lo - 1].len)
		return NULL;
	return &ld->funcs[lo - 1];
}

/* Output index of section instruction insn in this program, or -1. */
static int64_t out_index(const struct nbpf_loader *ld, const struct nbpf_func *fn,
			 const uint32_t *sub_starts, uint32_t sec, uint32_t insn)
{
	const struct nbpf_func *f;

	if (sec == fn->sec)
		return insn >= fn->start && insn - fn->start < fn->len ? (int64_t)(insn - fn->start) : -1;
	if (sec != ld->text_idx)
		return -1;
	f = func_containing(ld, sec, insn);
	if (!f || sub_starts[f - ld->funcs] == UINT32_MAX)
		return -1;
	return (int64_t)sub_starts[f - ld->funcs] + (insn - f->start);
}

static int cmp_line(const void *a, const void *b)
{
	const struct nbpf_line *x = a, *y = b;

	return x->insn < y->insn ? -1 : x->insn > y->insn;
}

/* Fills prog->lines (sorted by instruction) for the linked program fn. */
int nbpf_ld_lines(struct nbpf_loader *ld, const struct nbpf_func *fn, const uint32_t *sub_starts,
		  struct ncclbpf_program *prog)
{
	uint32_t n = 0;

	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t k = 0; k < ld->n_lsecs; k++) {
			const struct nbpf_line_sec *ls = &ld->lsecs[k];

			if (ls->sec != fn->sec && ls->sec != ld->text_idx)
				continue;
			for (uint32_t i = 0; i < ls->n; i++) {
				struct line_rec r;
				int64_t out;

				memcpy(&r, ls->recs + (size_t)i * ld->line_rec_size, sizeof(r));
				out = out_index(ld, fn, sub_starts, ls->sec, r.insn_off / 8);
				if (out < 0)
					continue;
				if (pass) {
					struct nbpf_line *l = &prog->lines[prog->n_lines++];

					l->insn = (uint32_t)out;
					l->line = r.line_col >> 10;
					l->col = r.line_col & 0x3ff;
					l->file = btf__name_by_offset(ld->btf, r.file_name_off);
					l->text = btf__name_by_offset(ld->btf, r.line_off);
				} else {
					n++;
				}
			}
		}
		if (!pass) {
			if (!n)
				return 0;
			prog->lines = calloc(n, sizeof(*prog->lines));
			if (!prog->lines)
				return ld_err(ld, -ENOMEM, "out of memory");
		}
	}
	qsort(prog->lines, prog->n_lines, sizeof(*prog->lines), cmp_line);
	return 0;
}
