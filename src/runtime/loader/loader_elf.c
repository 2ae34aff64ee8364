/*
 * loader_elf.c - ELF layer of the loader: header, sections, symbols.
 *
 * libelf does the parsing; we check everything it does not promise to check
 * before any byte is used: header fields, that every section lies inside
 * the file and no two overlap, symbol names and section indices.  Section
 * contents are used in place (the caller's buffer outlives the open call).
 * Objects are little-endian eBPF (EM_BPF, ELFCLASS64, ET_REL), which is what
 * `clang -target bpf` produces on the little-endian hosts NCCL runs on.
 */
#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"

#ifndef EM_BPF
#define EM_BPF 247
#endif


/* The machine a wrong object was built for, in the words a user compiled it with. */
static const char *machine_name(unsigned int m)
{
	switch (m) {
	case EM_X86_64: return "x86-64";
	case EM_386: return "i386";
	case EM_AARCH64: return "aarch64";
	case EM_ARM: return "arm";
	case EM_PPC64: return "ppc64";
	case EM_RISCV: return "riscv";
	case EM_S390: return "s390";
	case EM_NONE: return "machine-less (EM_NONE)";
	default: return "non-BPF (e_machine other)";
	}
}

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;
static int elf_ok;

static void elf_init(void)
{
	elf_ok = elf_version(EV_CURRENT) != EV_NONE;
}

static bool has_prefix(const char *s, const char *p)
{
	size_t n = strlen(p);

	return !strncmp(s, p, n) && (s[n] == '\0' || s[n] == '.');
}

struct range {
	uint64_t off, end;
	uint32_t idx; /* section index; UINT32_MAX: header, UINT32_MAX - 1: section table */
};

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static const char *range_name(const struct nbpf_loader *ld, const struct range *r)
{
	if (r->idx == UINT32_MAX)
		return "ELF header";
	if (r->idx == UINT32_MAX - 1)
		return "section header table";
	return ld->secs[r->idx].name;
}

/*
 * Rejects overlapping file ranges (header, section table, sections), which
 * stock objects never have and hand-crafted ones use to alias data.
 */
static int check_overlap(struct nbpf_loader *ld, uint64_t shoff, uint64_t shsize)
{
	struct range *r = calloc(ld->n_secs + 2, sizeof(*r));
	uint32_t n = 0;
	int err = 0;

	if (!r)
		return ld_err(ld, -ENOMEM, "out of memory");
	r[n++] = (struct range){ 0, sizeof(Elf64_Ehdr), UINT32_MAX };
	r[n++] = (struct range){ shoff, shoff + shsize, UINT32_MAX - 1 };
	for (uint32_t i = 1; i < ld->n_secs; i++) {
		const struct nbpf_sec *s = &ld->secs[i];

		if (s->type == SHT_NOBITS || s->type == SHT_NULL || !s->size)
			continue;
		r[n++] = (struct range){ s->off, s->off + s->size, i };
	}
	qsort(r, n, sizeof(*r), cmp_range);
	for (uint32_t i = 1; i < n; i++) {
		if (r[i].off < r[i - 1].end) {
			err = ld_err(ld, -EINVAL, "%s and %s overlap in the file (0x%llx < 0x%llx)",
				     range_name(ld, &r[i - 1]), range_name(ld, &r[i]),
				     (unsigned long long)r[i].off, (unsigned long long)r[i - 1].end);
			break;
		}
	}
	free(r);
	return err;
}

/* Header checks libelf does not make, with messages a user can act on. */
static int check_header(struct nbpf_loader *ld, Elf64_Ehdr *eh)
{
	if (ld->len < sizeof(*eh))
		return ld_err(ld, -EINVAL, "truncated: %zu bytes is shorter than an ELF header",
			      ld->len);
	memcpy(eh, ld->buf, sizeof(*eh));
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG))
		return ld_err(ld, -EINVAL, "not an ELF file (bad magic)");
	if (eh->e_ident[EI_CLASS] != ELFCLASS64)
		return ld_err(ld, -EINVAL, "not a 64-bit ELF object");
	if (eh->e_ident[EI_DATA] != ELFDATA2LSB)
		return ld_err(ld, -EINVAL, "not a little-endian ELF object (use -target bpf or bpfel)");
	if (eh->e_machine != EM_BPF)
		return ld_err(ld, -EINVAL, "%s object, not BPF: compile with clang -target bpf",
			      machine_name(eh->e_machine));
	if (eh->e_type != ET_REL)
		return ld_err(ld, -EINVAL, "not a relocatable object (e_type %u)", eh->e_type);
	if (eh->e_shentsize != sizeof(Elf64_Shdr))
		return ld_err(ld, -EINVAL, "bad section header size %u", eh->e_shentsize);
	if (!eh->e_shoff || eh->e_shoff > ld->len)
		return ld_err(ld, -EINVAL, "section header table at 0x%llx lies outside the file (%zu bytes): truncated or corrupt",
			      (unsigned long long)eh->e_shoff, ld->len);
	/* e_shnum 0 means extended numbering: checked after libelf resolves it. */
	if (eh->e_shnum > NBPF_LOADER_MAX_SECTIONS)
		return ld_err(ld, -E2BIG, "%u sections (limit %u)", eh->e_shnum,
			      NBPF_LOADER_MAX_SECTIONS);
	if ((uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > ld->len - eh->e_shoff)
		return ld_err(ld, -EINVAL, "truncated: section header table (%u entries at 0x%llx) ends past the end of the file (%zu bytes)",
			      eh->e_shnum, (unsigned long long)eh->e_shoff, ld->len);
	return 0;
}

static int classify(struct nbpf_loader *ld, struct nbpf_sec *s)
{
	uint32_t *slot = NULL;

	if (s->type == SHT_PROGBITS && (s->flags & SHF_EXECINSTR)) {
		if (s->size % sizeof(struct nbpf_insn))
			return ld_err(ld, -EINVAL, "section %s: size %llu is not a multiple of 8",
				      s->name, (unsigned long long)s->size);
		if (!strcmp(s->name, ".text")) {
			s->kind = NBPF_SEC_TEXT;
			slot = &ld->text_idx;
		} else {
			s->kind = NBPF_SEC_PROG;
		}
	} else if (s->type == SHT_PROGBITS) {
		if (!strcmp(s->name, ".maps")) {
			s->kind = NBPF_SEC_MAPS;
			slot = &ld->maps_idx;
		} else if (!strcmp(s->name, "maps")) {
			s->kind = NBPF_SEC_LEGACY_MAPS;
			slot = &ld->legacy_maps_idx;
		} else if (!strcmp(s->name, "license")) {
			s->kind = NBPF_SEC_LICENSE;
			slot = &ld->license_idx;
		} else if (!strcmp(s->name, ".BTF")) {
			s->kind = NBPF_SEC_BTF;
			slot = &ld->btf_idx;
		} else if (!strcmp(s->name, ".BTF.ext")) {
			s->kind = NBPF_SEC_BTF_EXT;
			slot = &ld->btf_ext_idx;
		} else if (has_prefix(s->name, ".data")) {
			s->kind = NBPF_SEC_DATA;
		} else if (has_prefix(s->name, ".rodata")) {
			s->kind = NBPF_SEC_RODATA;
		} else if (has_prefix(s->name, ".bss")) {
			s->kind = NBPF_SEC_BSS;
		}
	} else if (s->type == SHT_NOBITS) {
		if (has_prefix(s->name, ".bss"))
			s->kind = NBPF_SEC_BSS;
		else if (has_prefix(s->name, ".data") || has_prefix(s->name, ".rodata"))
			return ld_err(ld, -EINVAL, "section %s: global data without contents (NOBITS)",
				      s->name);
	} else if (s->type == SHT_SYMTAB) {
		s->kind = NBPF_SEC_SYMTAB;
		slot = &ld->symtab_idx;
	} else if (s->type == SHT_REL) {
		s->kind = NBPF_SEC_REL;
	}
	if (slot) {
		if (*slot)
			return ld_err(ld, -EINVAL, "duplicate section %s (sections %u and %u)",
				      s->name, *slot, s->idx);
		*slot = s->idx;
	}
	return 0;
}

/* Links each REL section to its target; only one per target. */
static int link_rels(struct nbpf_loader *ld)
{
	for (uint32_t i = 1; i < ld->n_secs; i++) {
		struct nbpf_sec *s = &ld->secs[i], *t;

		if (s->type == SHT_RELA) {
			if (s->info < ld->n_secs && ld->secs[s->info].kind != NBPF_SEC_OTHER)
				return ld_err(ld, -EINVAL, "section %s: RELA relocations are not used by BPF objects",
					      s->name);
			continue;
		}
		if (s->kind != NBPF_SEC_REL)
			continue;
		if (!s->info || s->info >= ld->n_secs)
			return ld_err(ld, -EINVAL, "relocation section %s: target section %u out of range",
				      s->name, s->info);
		t = &ld->secs[s->info];
		if (t->kind == NBPF_SEC_OTHER || t->kind == NBPF_SEC_BTF || t->kind == NBPF_SEC_BTF_EXT)
			continue; /* debug info and BTF: nothing for us to apply */
		if (s->link != ld->symtab_idx)
			return ld_err(ld, -EINVAL, "relocation section %s: links section %u, not the symbol table",
				      s->name, s->link);
		if (s->entsize != sizeof(Elf64_Rel) || s->size % sizeof(Elf64_Rel))
			return ld_err(ld, -EINVAL, "relocation section %s: bad entry size", s->name);
		if (t->rel_idx)
			return ld_err(ld, -EINVAL, "section %s has two relocation sections", t->name);
		t->rel_idx = i;
	}
	return 0;
}

static int read_symbols(struct nbpf_loader *ld)
{
	struct nbpf_sec *st;
	Elf_Data *d;
	Elf_Scn *scn;
	uint64_t n;

	if (!ld->symtab_idx)
		return ld_err(ld, -EINVAL, "no symbol table");
	st = &ld->secs[ld->symtab_idx];
	if (st->entsize != sizeof(Elf64_Sym) || st->size % sizeof(Elf64_Sym))
		return ld_err(ld, -EINVAL, "symbol table: bad entry size %llu",
			      (unsigned long long)st->entsize);
	n = st->size / sizeof(Elf64_Sym);
	if (n > NBPF_LOADER_MAX_SYMBOLS)
		return ld_err(ld, -E2BIG, "symbol table: %llu symbols (limit %u)",
			      (unsigned long long)n, NBPF_LOADER_MAX_SYMBOLS);
	if (!st->link || st->link >= ld->n_secs || ld->secs[st->link].type != SHT_STRTAB)
		return ld_err(ld, -EINVAL, "symbol table: string table section %u is invalid", st->link);
	ld->strtab_idx = st->link;
	scn = elf_getscn(ld->elf, ld->symtab_idx);
	d = scn ? elf_getdata(scn, NULL) : NULL;
	if (!d || d->d_size != st->size)
		return ld_err(ld, -EINVAL, "symbol table: cannot read (%s)", elf_errmsg(-1));
	ld->syms = calloc(n ? n : 1, sizeof(*ld->syms));
	if (!ld->syms)
		return ld_err(ld, -ENOMEM, "out of memory");
	ld->n_syms = (uint32_t)n;
	for (uint32_t i = 0; i < n; i++) {
		struct nbpf_sym *s = &ld->syms[i];
		GElf_Sym sym;

		if (!gelf_getsym(d, (int)i, &sym))
			return ld_err(ld, -EINVAL, "symbol %u: cannot read", i);
		s->name = elf_strptr(ld->elf, ld->strtab_idx, sym.st_name);
		if (!s->name)
			return ld_err(ld, -EINVAL, "symbol %u: name offset %u outside the string table",
				      i, sym.st_name);
		s->value = sym.st_value;
		s->size = sym.st_size;
		s->shndx = sym.st_shndx;
		s->type = GELF_ST_TYPE(sym.st_info);
		s->bind = GELF_ST_BIND(sym.st_info);
		if (s->shndx != SHN_UNDEF && s->shndx < SHN_LORESERVE && s->shndx >= ld->n_secs)
			return ld_err(ld, -EINVAL, "symbol %s: section index %u out of range (%u sections)",
				      s->name, s->shndx, ld->n_secs);
	}
	return 0;
}

/*
 * Opens the ELF image and fills ld->secs and ld->syms.  On failure the
 * partial state is released by nbpf_ld_elf_close().
 */
int nbpf_ld_elf_open(struct nbpf_loader *ld)
{
	Elf64_Ehdr eh;
	size_t shnum, shstrndx;
	uint64_t shsize;
	int err;

	err = check_header(ld, &eh);
	if (err)
		return err;
	pthread_once(&elf_once, elf_init);
	if (!elf_ok)
		return ld_err(ld, -ENOSYS, "libelf version mismatch");
	/* libelf only reads the image when it has our byte order (checked above). */
	ld->elf = elf_memory((char *)ld->buf, ld->len);
	if (!ld->elf || elf_kind(ld->elf) != ELF_K_ELF)
		return ld_err(ld, -EINVAL, "not a valid ELF file (%s)", elf_errmsg(-1));
	if (elf_getshdrnum(ld->elf, &shnum) || elf_getshdrstrndx(ld->elf, &shstrndx))
		return ld_err(ld, -EINVAL, "bad section header table (%s)", elf_errmsg(-1));
	if (shnum < 2)
		return ld_err(ld, -EINVAL, "no sections");
	if (shnum > NBPF_LOADER_MAX_SECTIONS)
		return ld_err(ld, -E2BIG, "%zu sections (limit %u)", shnum, NBPF_LOADER_MAX_SECTIONS);
	shsize = (uint64_t)shnum * sizeof(Elf64_Shdr);
	if (eh.e_shoff > ld->len || shsize > ld->len - eh.e_shoff)
		return ld_err(ld, -EINVAL, "truncated: section header table (%zu entries at 0x%llx) ends past the end of the file (%zu bytes)",
			      shnum, (unsigned long long)eh.e_shoff, ld->len);
	if (!shstrndx || shstrndx >= shnum)
		return ld_err(ld, -EINVAL, "section name table index %zu out of range", shstrndx);
	ld->secs = calloc(shnum, sizeof(*ld->secs));
	if (!ld->secs)
		return ld_err(ld, -ENOMEM, "out of memory");
	ld->n_secs = (uint32_t)shnum;
	for (uint32_t i = 0; i < shnum; i++)
		ld->secs[i].map_idx = -1;
	ld->secs[0].name = "";
	for (uint32_t i = 1; i < shnum; i++) {
		struct nbpf_sec *s = &ld->secs[i];
		Elf_Scn *scn = elf_getscn(ld->elf, i);
		GElf_Shdr sh;

		if (!scn || !gelf_getshdr(scn, &sh))
			return ld_err(ld, -EINVAL, "section %u: cannot read header (%s)", i, elf_errmsg(-1));
		s->idx = i;
		s->name = elf_strptr(ld->elf, shstrndx, sh.sh_name);
		if (!s->name)
			return ld_err(ld, -EINVAL, "section %u: name offset %u outside the name table",
				      i, sh.sh_name);
		s->type = sh.sh_type;
		s->flags = sh.sh_flags;
		s->off = sh.sh_offset;
		s->size = sh.sh_size;
		s->link = sh.sh_link;
		s->info = sh.sh_info;
		s->entsize = sh.sh_entsize;
		if (s->type != SHT_NOBITS && s->type != SHT_NULL) {
			if (s->off > ld->len || s->size > ld->len - s->off)
				return ld_err(ld, -EINVAL, "section %s (%u): offset 0x%llx size 0x%llx outside the file (%zu bytes)",
					      s->name, i, (unsigned long long)s->off,
					      (unsigned long long)s->size, ld->len);
			if (s->size)
				s->data = ld->buf + s->off;
		}
		err = classify(ld, s);
		if (err)
			return err;
	}
	err = check_overlap(ld, eh.e_shoff, shsize);
	if (err)
		return err;
	err = read_symbols(ld);
	if (err)
		return err;
	return link_rels(ld);
}

void nbpf_ld_elf_close(struct nbpf_loader *ld)
{
	if (ld->elf)
		elf_end(ld->elf);
	ld->elf = NULL;
}

/* Symbol name for messages; "#N" when it has none (section symbols use the section's). */
const char *nbpf_ld_sym_desc(const struct nbpf_loader *ld, uint32_t sym_idx)
{
	static _Thread_local char buf[32];
	const struct nbpf_sym *s;

	if (sym_idx >= ld->n_syms)
		return "(invalid)";
	s = &ld->syms[sym_idx];
	if (s->name[0])
		return s->name;
	if (s->type == STT_SECTION && s->shndx && s->shndx < ld->n_secs)
		return ld->secs[s->shndx].name;
	snprintf(buf, sizeof(buf), "#%u", sym_idx);
	return buf;
}

static int cmp_func(const void *a, const void *b)
{
	const struct nbpf_func *x = a, *y = b;

	if (x->sec != y->sec)
		return x->sec < y->sec ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * Every STT_FUNC symbol of an executable section is a function: a program
 * in a program section, a subprogram in .text.  A zero st_size (hand-made
 * objects) extends to the next function or the section end.  Functions may
 * not overlap, and a program section with code must name its functions.
 */
int nbpf_ld_collect_funcs(struct nbpf_loader *ld)
{
	uint32_t n = 0, n_progs = 0;

	for (uint32_t i = 0; i < ld->n_syms; i++) {
		const struct nbpf_sym *s = &ld->syms[i];

		if (s->type == STT_FUNC && s->shndx && s->shndx < ld->n_secs)
			n++;
	}
	ld->funcs = calloc(n ? n : 1, sizeof(*ld->funcs));
	if (!ld->funcs)
		return ld_err(ld, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < ld->n_syms; i++) {
		const struct nbpf_sym *s = &ld->syms[i];
		const struct nbpf_sec *sec;
		struct nbpf_func *f;
		uint64_t sec_insns;

		if (s->type != STT_FUNC || !s->shndx || s->shndx >= ld->n_secs)
			continue;
		sec = &ld->secs[s->shndx];
		if (sec->kind != NBPF_SEC_PROG && sec->kind != NBPF_SEC_TEXT)
			return ld_err(ld, -EINVAL, "function %s is in non-executable section %s",
				      s->name, sec->name);
		if (s->value % 8 || s->size % 8)
			return ld_err(ld, -EINVAL, "function %s: offset %llu or size %llu is not a multiple of 8",
				      s->name, (unsigned long long)s->value, (unsigned long long)s->size);
		sec_insns = sec->size / 8;
		if (s->value / 8 > sec_insns || s->size / 8 > sec_insns - s->value / 8)
			return ld_err(ld, -EINVAL, "function %s: offset %llu size %llu outside section %s (%llu bytes)",
				      s->name, (unsigned long long)s->value, (unsigned long long)s->size,
				      sec->name, (unsigned long long)sec->size);
		if (!s->name[0])
			return ld_err(ld, -EINVAL, "function symbol %u in section %s has no name", i, sec->name);
		f = &ld->funcs[ld->n_funcs++];
		f->name = s->name;
		f->sec = s->shndx;
		f->start = (uint32_t)(s->value / 8);
		f->len = (uint32_t)(s->size / 8);
		f->is_prog = sec->kind == NBPF_SEC_PROG;
		if (f->is_prog && ++n_progs > NBPF_LOADER_MAX_PROGS)
			return ld_err(ld, -E2BIG, "more than %u programs", NBPF_LOADER_MAX_PROGS);
	}
	qsort(ld->funcs, ld->n_funcs, sizeof(*ld->funcs), cmp_func);
	for (uint32_t i = 0; i < ld->n_funcs; i++) {
		struct nbpf_func *f = &ld->funcs[i];
		const struct nbpf_func *next = i + 1 < ld->n_funcs && ld->funcs[i + 1].sec == f->sec ?
					       &ld->funcs[i + 1] : NULL;
		uint32_t limit = next ? next->start : (uint32_t)(ld->secs[f->sec].size / 8);

		if (!f->len)
			f->len = limit - f->start;
		if (f->start + f->len > limit)
			return ld_err(ld, -EINVAL, "functions %s and %s overlap in section %s",
				      f->name, next->name, ld->secs[f->sec].name);
		if (!f->len)
			return ld_err(ld, -EINVAL, "function %s in section %s is empty",
				      f->name, ld->secs[f->sec].name);
	}
	/* funcs is sorted by section: walk both in step. */
	for (uint32_t i = 1, j = 0; i < ld->n_secs; i++) {
		const struct nbpf_sec *s = &ld->secs[i];

		while (j < ld->n_funcs && ld->funcs[j].sec < i)
			j++;
		if (s->kind == NBPF_SEC_PROG && s->size && (j == ld->n_funcs || ld->funcs[j].sec != i))
			return ld_err(ld, -EINVAL, "section %s holds code but no function symbol", s->name);
	}
	return 0;
}
