/*
 * loader_reloc.c - relocations of executable sections and linking of
 * subprograms into self-contained programs.
 *
 * Relocation works on a private copy of each executable section: lddw of a
 * map symbol becomes NBPF_PSEUDO_MAP_IDX, lddw of global data becomes
 * NBPF_PSEUDO_MAP_IDX_VALUE, and a pseudo call's target is recorded as an
 * instruction index in .text.  Linking then copies a program's body and
 * appends every .text function it reaches, each once, fixing call offsets
 * (imm is relative to the instruction after the call), as libbpf does.
 */
#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"

static const char *rel_type_name(uint32_t t)
{
	switch (t) {
	case NBPF_R_BPF_NONE: return "R_BPF_NONE";
	case NBPF_R_BPF_64_64: return "R_BPF_64_64";
	case NBPF_R_BPF_64_ABS64: return "R_BPF_64_ABS64";
	case NBPF_R_BPF_64_ABS32: return "R_BPF_64_ABS32";
	case NBPF_R_BPF_64_NODYLD32: return "R_BPF_64_NODYLD32";
	case NBPF_R_BPF_64_32: return "R_BPF_64_32";
	default: return "unknown";
	}
}

static Elf_Data *rel_data(struct nbpf_loader *ld, const struct nbpf_sec *rs)
{
	Elf_Scn *scn = elf_getscn(ld->elf, rs->idx);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;

	return d && d->d_size == rs->size ? d : NULL;
}

/*
 * Relocations against global data or map definitions would have to store
 * an address into data (a pointer); the runtime has no such addresses to
 * give, so they are refused.  Relocations of debug and BTF sections are
 * never looked at.
 */
int nbpf_ld_check_data_relocs(struct nbpf_loader *ld)
{
	for (uint32_t i = 1; i < ld->n_secs; i++) {
		const struct nbpf_sec *s = &ld->secs[i], *rs;
		Elf_Data *d;

		if (!s->rel_idx || s->kind == NBPF_SEC_PROG || s->kind == NBPF_SEC_TEXT)
			continue;
		rs = &ld->secs[s->rel_idx];
		d = rel_data(ld, rs);
		if (!d)
			return ld_err(ld, -EINVAL, "relocation section %s: cannot read", rs->name);
		for (uint64_t j = 0; j < rs->size / sizeof(Elf64_Rel); j++) {
			uint32_t type, sym;
			GElf_Rel r;

			if (!gelf_getrel(d, (int)j, &r))
				return ld_err(ld, -EINVAL, "relocation section %s: entry %llu unreadable",
					      rs->name, (unsigned long long)j);
			type = (uint32_t)GELF_R_TYPE(r.r_info);
			sym = (uint32_t)GELF_R_SYM(r.r_info);
			if (type == NBPF_R_BPF_NONE)
				continue;
			if (s->kind == NBPF_SEC_MAPS)
				return ld_err(ld, -ENOTSUP, "section .maps: offset 0x%llx refers to %s (map-in-map and program arrays are not supported)",
					      (unsigned long long)r.r_offset, nbpf_ld_sym_desc(ld, sym));
			return ld_err(ld, -ENOTSUP, "section %s: %s relocation at offset 0x%llx against %s would need a pointer stored in data (not supported)",
				      s->name, rel_type_name(type), (unsigned long long)r.r_offset,
				      nbpf_ld_sym_desc(ld, sym));
		}
	}
	return 0;
}

static int reloc_lddw(struct nbpf_loader *ld, struct nbpf_sec *s, uint32_t idx, uint32_t symi)
{
	const struct nbpf_sym *sym = &ld->syms[symi];
	struct nbpf_insn *in = &s->insns[idx];
	uint64_t value_off;
	bool is_value;
	int map;

	if (!nbpf_insn_is_lddw(in))
		return ld_err(ld, -EINVAL, "section %s: R_BPF_64_64 relocation at offset 0x%x (insn %u) against %s is on a non-lddw instruction (code 0x%02x)",
			      s->name, idx * 8, idx, nbpf_ld_sym_desc(ld, symi), in->code);
	if (sym->shndx == SHN_UNDEF)
		return ld_err(ld, -EINVAL, "section %s: insn %u loads unresolved extern symbol %s",
			      s->name, idx, nbpf_ld_sym_desc(ld, symi));
	if (sym->shndx >= ld->n_secs)
		return ld_err(ld, -EINVAL, "section %s: insn %u loads symbol %s that has no section",
			      s->name, idx, nbpf_ld_sym_desc(ld, symi));
	if (ld->secs[sym->shndx].kind == NBPF_SEC_TEXT || ld->secs[sym->shndx].kind == NBPF_SEC_PROG)
		return ld_err(ld, -ENOTSUP, "section %s: insn %u takes the address of function %s (callbacks are not supported)",
			      s->name, idx, nbpf_ld_sym_desc(ld, symi));
	map = nbpf_ld_map_by_sym(ld, symi, &value_off, &is_value);
	if (map < 0)
		return ld_err(ld, -EINVAL, "section %s: insn %u loads %s in section %s, which is neither a map nor global data",
			      s->name, idx, nbpf_ld_sym_desc(ld, symi), ld->secs[sym->shndx].name);
	if (!is_value) {
		in->src = NBPF_PSEUDO_MAP_IDX;
		in->imm = map;
		in[1].imm = 0;
		return 0;
	}
	/* clang puts the addend of a section-relative load in the first imm. */
	value_off += (uint64_t)(int64_t)in->imm;
	if (value_off > ld->maps[map].value_size)
		return ld_err(ld, -EINVAL, "section %s: insn %u loads %s at offset %lld, outside %s (%u bytes)",
			      s->name, idx, nbpf_ld_sym_desc(ld, symi), (long long)value_off,
			      ld->maps[map].name, ld->maps[map].value_size);
	in->src = NBPF_PSEUDO_MAP_IDX_VALUE;
	in->imm = map;
	in[1].imm = (int32_t)value_off;
	return 0;
}

static int reloc_call(struct nbpf_loader *ld, struct nbpf_sec *s, uint32_t idx, uint32_t symi)
{
	const struct nbpf_sym *sym = &ld->syms[symi];
	struct nbpf_insn *in = &s->insns[idx];
	const struct nbpf_sec *text;
	int64_t tgt;

	if (in->code != NBPF_OP_CALL || in->src != NBPF_PSEUDO_CALL)
		return ld_err(ld, -EINVAL, "section %s: R_BPF_64_32 relocation at offset 0x%x (insn %u) against %s is not on a bpf-to-bpf call (code 0x%02x src %u)",
			      s->name, idx * 8, idx, nbpf_ld_sym_desc(ld, symi), in->code, in->src);
	if (sym->shndx == SHN_UNDEF)
		return ld_err(ld, -EINVAL, "section %s: insn %u calls unresolved extern function %s",
			      s->name, idx, nbpf_ld_sym_desc(ld, symi));
	if (!ld->text_idx || sym->shndx != ld->text_idx)
		return ld_err(ld, -EINVAL, "section %s: insn %u calls %s, a call target outside .text",
			      s->name, idx, nbpf_ld_sym_desc(ld, symi));
	if (sym->value % 8)
		return ld_err(ld, -EINVAL, "section %s: insn %u calls %s at unaligned offset %llu",
			      s->name, idx, nbpf_ld_sym_desc(ld, symi), (unsigned long long)sym->value);
	text = &ld->secs[ld->text_idx];
	tgt = (int64_t)(sym->value / 8) + in->imm + 1;
	if (tgt < 0 || tgt >= (int64_t)(text->size / 8))
		return ld_err(ld, -EINVAL, "section %s: insn %u calls %s%+d: call target outside .text",
			      s->name, idx, nbpf_ld_sym_desc(ld, symi), in->imm + 1);
	s->call_tgt[idx] = (int32_t)tgt;
	return 0;
}

static int apply_relocs(struct nbpf_loader *ld, struct nbpf_sec *s)
{
	const struct nbpf_sec *rs = &ld->secs[s->rel_idx];
	Elf_Data *d = rel_data(ld, rs);
	int err;

	if (!d)
		return ld_err(ld, -EINVAL, "relocation section %s: cannot read", rs->name);
	for (uint64_t j = 0; j < rs->size / sizeof(Elf64_Rel); j++) {
		uint32_t type, symi, idx;
		GElf_Rel r;

		if (!gelf_getrel(d, (int)j, &r))
			return ld_err(ld, -EINVAL, "relocation section %s: entry %llu unreadable",
				      rs->name, (unsigned long long)j);
		type = (uint32_t)GELF_R_TYPE(r.r_info);
		symi = (uint32_t)GELF_R_SYM(r.r_info);
		if (type == NBPF_R_BPF_NONE)
			continue;
		if (symi >= ld->n_syms)
			return ld_err(ld, -EINVAL, "section %s: relocation %llu at offset 0x%llx: symbol index %u out of range (%u symbols)",
				      s->name, (unsigned long long)j, (unsigned long long)r.r_offset,
				      symi, ld->n_syms);
		if (r.r_offset >= s->size)
			return ld_err(ld, -EINVAL, "section %s: relocation %llu at offset 0x%llx against %s is outside the section (%llu bytes)",
				      s->name, (unsigned long long)j, (unsigned long long)r.r_offset,
				      nbpf_ld_sym_desc(ld, symi), (unsigned long long)s->size);
		if (r.r_offset % 8)
			return ld_err(ld, -EINVAL, "section %s: relocation %llu at offset 0x%llx against %s is not at an instruction boundary",
				      s->name, (unsigned long long)j, (unsigned long long)r.r_offset,
				      nbpf_ld_sym_desc(ld, symi));
		idx = (uint32_t)(r.r_offset / 8);
		if (s->is_hi[idx])
			return ld_err(ld, -EINVAL, "section %s: relocation at offset 0x%llx against %s hits the second half of an lddw",
				      s->name, (unsigned long long)r.r_offset, nbpf_ld_sym_desc(ld, symi));
		switch (type) {
		case NBPF_R_BPF_64_64:
			err = reloc_lddw(ld, s, idx, symi);
			break;
		case NBPF_R_BPF_64_32:
			err = reloc_call(ld, s, idx, symi);
			break;
		default:
			err = ld_err(ld, -EINVAL, "section %s: unexpected %s relocation (type %u) at offset 0x%llx against %s",
				     s->name, rel_type_name(type), type,
				     (unsigned long long)r.r_offset, nbpf_ld_sym_desc(ld, symi));
			break;
		}
		if (err)
			return err;
	}
	return 0;
}

/*
 * Copies and relocates every executable section.  Pseudo calls without a
 * relocation are pc-relative within their own section, which is only
 * meaningful inside .text (a program section's functions are entry
 * points, not call targets).
 */
int nbpf_ld_relocate(struct nbpf_loader *ld)
{
	for (uint32_t i = 1; i < ld->n_secs; i++) {
		struct nbpf_sec *s = &ld->secs[i];
		uint32_t n;
		int err;

		if (s->kind != NBPF_SEC_PROG && s->kind != NBPF_SEC_TEXT)
			continue;
		if (s->size / 8 > NBPF_LOADER_MAX_INSNS)
			return ld_err(ld, -E2BIG, "section %s: %llu instructions (limit %u)",
				      s->name, (unsigned long long)(s->size / 8), NBPF_LOADER_MAX_INSNS);
		n = (uint32_t)(s->size / 8);
		s->n_insns = n;
		s->insns = malloc((n ? n : 1) * sizeof(*s->insns));
		s->call_tgt = malloc((n ? n : 1) * sizeof(*s->call_tgt));
		s->is_hi = calloc(n ? n : 1, 1);
		if (!s->insns || !s->call_tgt || !s->is_hi)
			return ld_err(ld, -ENOMEM, "out of memory");
		if (n)
			memcpy(s->insns, s->data, (size_t)n * sizeof(*s->insns));
		for (uint32_t j = 0; j < n; j++) {
			s->call_tgt[j] = -1;
			if (nbpf_insn_is_lddw(&s->insns[j])) {
				if (j + 1 >= n)
					return ld_err(ld, -EINVAL, "section %s: lddw at insn %u is split at the end of the section",
						      s->name, j);
				s->is_hi[++j] = 1;
				s->call_tgt[j] = -1;
			}
		}
		if (s->rel_idx) {
			err = apply_relocs(ld, s);
			if (err)
				return err;
		}
		for (uint32_t j = 0; j < n; j++) {
			const struct nbpf_insn *in = &s->insns[j];
			int64_t tgt;

			if (s->is_hi[j] || in->code != NBPF_OP_CALL || in->src != NBPF_PSEUDO_CALL ||
			    s->call_tgt[j] >= 0)
				continue;
			tgt = (int64_t)j + in->imm + 1;
			if (s->kind != NBPF_SEC_TEXT)
				return ld_err(ld, -EINVAL, "section %s: insn %u is a bpf-to-bpf call without relocation (call target outside .text)",
					      s->name, j);
			if (tgt < 0 || tgt >= n)
				return ld_err(ld, -EINVAL, "section .text: insn %u calls insn %lld, a call target outside .text",
					      j, (long long)tgt);
			s->call_tgt[j] = (int32_t)tgt;
		}
	}
	return 0;
}

/* The .text function starting exactly at insn tgt, or NULL. */
static const struct nbpf_func *text_func_at(const struct nbpf_loader *ld, uint32_t tgt)
{
	uint32_t lo = 0, hi = ld->n_funcs;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct nbpf_func *f = &ld->funcs[mid];

		if (f->sec < ld->text_idx || (f->sec == ld->text_idx && f->start < tgt))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < ld->n_funcs && ld->funcs[lo].sec == ld->text_idx && ld->funcs[lo].start == tgt)
		return &ld->funcs[lo];
	return NULL;
}

static int append(struct nbpf_loader *ld, const struct nbpf_func *f, struct nbpf_insn **out,
		  int32_t **tgt, uint32_t *n, uint32_t *cap)
{
	const struct nbpf_sec *s = &ld->secs[f->sec];

	if (f->start + f->len < s->n_insns && s->is_hi[f->start + f->len])
		return ld_err(ld, -EINVAL, "function %s ends inside an lddw", f->name);
	if (s->is_hi[f->start])
		return ld_err(ld, -EINVAL, "function %s starts inside an lddw", f->name);
	if (f->len > NBPF_LOADER_MAX_INSNS - *n)
		return ld_err(ld, -E2BIG, "program grows past %u instructions with %s",
			      NBPF_LOADER_MAX_INSNS, f->name);
	if (*n + f->len > *cap) {
		uint32_t ncap = *cap * 2 > *n + f->len ? *cap * 2 : *n + f->len;
		struct nbpf_insn *ni = realloc(*out, (size_t)ncap * sizeof(**out));
		int32_t *nt;

		if (!ni)
			return ld_err(ld, -ENOMEM, "out of memory");
		*out = ni;
		nt = realloc(*tgt, (size_t)ncap * sizeof(**tgt));
		if (!nt)
			return ld_err(ld, -ENOMEM, "out of memory");
		*tgt = nt;
		*cap = ncap;
	}
	memcpy(*out + *n, s->insns + f->start, (size_t)f->len * sizeof(**out));
	memcpy(*tgt + *n, s->call_tgt + f->start, (size_t)f->len * sizeof(**tgt));
	*n += f->len;
	return 0;
}

/*
 * Builds prog->insns for program fn: its body, then each reachable .text
 * function once, in first-call order.  *sub_starts (allocated, one slot
 * per ld->funcs entry, UINT32_MAX if not linked in) tells the line-info
 * stage where each subprogram landed; the caller frees it.
 */
int nbpf_ld_link_program(struct nbpf_loader *ld, const struct nbpf_func *fn,
			 struct ncclbpf_program *prog, uint32_t **sub_starts)
{
	struct nbpf_insn *out = NULL;
	int32_t *tgt = NULL;
	uint32_t n = 0, cap = fn->len, *starts;
	int err = 0;

	starts = malloc((ld->n_funcs ? ld->n_funcs : 1) * sizeof(*starts));
	if (!starts)
		return ld_err(ld, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < ld->n_funcs; i++)
		starts[i] = UINT32_MAX;
	out = malloc((size_t)cap * sizeof(*out));
	tgt = malloc((size_t)cap * sizeof(*tgt));
	if (!out || !tgt) {
		err = ld_err(ld, -ENOMEM, "out of memory");
		goto out;
	}
	err = append(ld, fn, &out, &tgt, &n, &cap);
	if (err)
		goto out;
	for (uint32_t i = 0; i < n; i++) {
		const struct nbpf_func *f;
		uint32_t fi;

		if (tgt[i] < 0)
			continue;
		f = text_func_at(ld, (uint32_t)tgt[i]);
		if (!f) {
			err = ld_err(ld, -EINVAL, "program %s: insn %u calls .text insn %d, which is not the start of a function",
				     fn->name, i, tgt[i]);
			goto out;
		}
		fi = (uint32_t)(f - ld->funcs);
		if (starts[fi] == UINT32_MAX) {
			starts[fi] = n;
			err = append(ld, f, &out, &tgt, &n, &cap);
			if (err)
				goto out;
		}
		out[i].imm = (int32_t)((int64_t)starts[fi] - (int64_t)i - 1);
	}
	prog->insns = out;
	prog->n_insns = n;
	out = NULL;
	*sub_starts = starts;
	starts = NULL;
out:
	free(out);
	free(tgt);
	free(starts);
	return err;
}
