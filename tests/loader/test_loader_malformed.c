/*
 * test_loader_malformed.c - every corruption the loader must name.
 *
 * usage: test_loader_malformed OBJDIR
 *
 * Each case copies a good clang-built object (loader_multi.bpf.o or
 * loader_legacy.bpf.o), damages one thing through the ELF structures, and
 * asserts that open_mem fails with a negative errno, leaves *obj alone and
 * reports the specific problem.  Cases that need shapes clang never emits
 * (hundreds of programs or maps, pc-relative calls out of a program) use a
 * tiny ELF writer below.  Run under ASan/LSan this is also the leak test
 * for every error path.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "insn.h"
#include "ncclbpf/runtime.h"

static char map_dir[256];
static uint8_t *good_multi, *good_legacy;
static size_t len_multi, len_legacy;

struct img {
	uint8_t *b;
	size_t len;
};

static uint8_t *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)n);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* ---- ELF access for the mutations (inputs are the good objects) ---- */

static Elf64_Ehdr *ehdr(struct img *m)
{
	return (Elf64_Ehdr *)m->b;
}

static Elf64_Shdr *shdr(struct img *m, int i)
{
	return (Elf64_Shdr *)(m->b + ehdr(m)->e_shoff) + i;
}

static int sec(struct img *m, const char *name)
{
	const char *names = (const char *)m->b + shdr(m, ehdr(m)->e_shstrndx)->sh_offset;

	for (int i = 1; i < ehdr(m)->e_shnum; i++)
		if (!strcmp(names + shdr(m, i)->sh_name, name))
			return i;
	fprintf(stderr, "test bug: no section %s\n", name);
	abort();
}

static uint8_t *data(struct img *m, const char *name)
{
	return m->b + shdr(m, sec(m, name))->sh_offset;
}

static int nsyms(struct img *m)
{
	return (int)(shdr(m, sec(m, ".symtab"))->sh_size / sizeof(Elf64_Sym));
}

static Elf64_Sym *sym(struct img *m, const char *name)
{
	Elf64_Shdr *st = shdr(m, sec(m, ".symtab"));
	const char *strs = (const char *)m->b + shdr(m, (int)st->sh_link)->sh_offset;
	Elf64_Sym *s = (Elf64_Sym *)(m->b + st->sh_offset);

	for (int i = 0; i < nsyms(m); i++)
		if (!strcmp(strs + s[i].st_name, name))
			return &s[i];
	fprintf(stderr, "test bug: no symbol %s\n", name);
	abort();
}

static int sym_idx(struct img *m, const char *name)
{
	return (int)(sym(m, name) - (Elf64_Sym *)(m->b + shdr(m, sec(m, ".symtab"))->sh_offset));
}

/* The relocation in section relname against symbol symname. */
static Elf64_Rel *rel(struct img *m, const char *relname, const char *symname)
{
	Elf64_Shdr *rs = shdr(m, sec(m, relname));
	Elf64_Rel *r = (Elf64_Rel *)(m->b + rs->sh_offset);
	int want = sym_idx(m, symname);

	for (size_t i = 0; i < rs->sh_size / sizeof(*r); i++)
		if ((int)ELF64_R_SYM(r[i].r_info) == want)
			return &r[i];
	fprintf(stderr, "test bug: no relocation against %s in %s\n", symname, relname);
	abort();
}

static struct nbpf_insn *insn_at(struct img *m, const char *secname, uint64_t off)
{
	return (struct nbpf_insn *)(data(m, secname) + off);
}

/* ---- the cases ---- */

#define M(name) static void name(struct img *m)

M(trunc_header) { m->len = 40; }
M(trunc_half) { m->len /= 2; }
M(bad_magic) { m->b[1] = 'X'; }
M(class32) { m->b[EI_CLASS] = ELFCLASS32; }
M(big_endian) { m->b[EI_DATA] = ELFDATA2MSB; }
M(machine) { ehdr(m)->e_machine = EM_X86_64; }
M(exec_type) { ehdr(m)->e_type = ET_EXEC; }
M(shoff_out) { ehdr(m)->e_shoff = m->len + 64; }
M(shnum_huge) { ehdr(m)->e_shnum = 5000; }
M(shnum_past_end) { ehdr(m)->e_shnum += 3; }
M(shstrndx_bad) { ehdr(m)->e_shstrndx = 0; }
M(text_outside) { shdr(m, sec(m, ".text"))->sh_offset = m->len - 8; }
M(btf_size_huge) { shdr(m, sec(m, ".BTF"))->sh_size = 1ull << 62; }
M(sections_overlap) { shdr(m, sec(m, "tuner"))->sh_offset = shdr(m, sec(m, ".text"))->sh_offset + 8; }
M(sec_name_bad) { shdr(m, sec(m, "profiler"))->sh_name = 0xffffff; }
M(prog_size_odd) { shdr(m, sec(m, "tuner"))->sh_size -= 4; }
M(dup_text) { shdr(m, sec(m, "tuner"))->sh_name = shdr(m, sec(m, ".text"))->sh_name; }
M(no_symtab) { shdr(m, sec(m, ".symtab"))->sh_type = SHT_PROGBITS; }
M(symtab_entsize) { shdr(m, sec(m, ".symtab"))->sh_entsize = 16; }
M(sym_shndx) { sym(m, "calc")->st_shndx = 500; }
M(sym_name) { sym(m, "prof")->st_name = 0xfffffff; }
M(func_outside) { sym(m, "prof")->st_size = 0x10000; }
M(func_misaligned) { sym(m, "pick")->st_value += 4; }
M(funcs_overlap) { sym(m, "calc")->st_size += 16; }
M(rel_target_bad) { shdr(m, sec(m, ".relprofiler"))->sh_info = 999; }
M(rel_twice) { shdr(m, sec(m, ".relprofiler"))->sh_info = (uint32_t)sec(m, "tuner"); }
M(rel_sym_range)
{
	Elf64_Rel *r = rel(m, ".reltuner", "top");

	r->r_info = ELF64_R_INFO(9999, ELF64_R_TYPE(r->r_info));
}
M(rel_outside) { rel(m, ".reltuner", "top")->r_offset = shdr(m, sec(m, "tuner"))->sh_size + 8; }
M(rel_misaligned) { rel(m, ".reltuner", "top")->r_offset += 4; }
M(rel_not_lddw) { insn_at(m, "tuner", rel(m, ".reltuner", "zeroed")->r_offset)->code = 0xb7; }
M(rel_not_call) { insn_at(m, "tuner", rel(m, ".reltuner", "top")->r_offset)->code = 0xb7; }
M(rel_lddw_hi) { rel(m, ".reltuner", "zeroed")->r_offset += 8; }
M(rel_type_abs)
{
	Elf64_Rel *r = rel(m, ".reltuner", "zeroed");

	r->r_info = ELF64_R_INFO(ELF64_R_SYM(r->r_info), 2);
}
M(rel_type_unknown)
{
	Elf64_Rel *r = rel(m, ".reltuner", "zeroed");

	r->r_info = ELF64_R_INFO(ELF64_R_SYM(r->r_info), 77);
}
M(call_other_section)
{
	Elf64_Rel *r = rel(m, ".reltuner", "top");

	r->r_info = ELF64_R_INFO(sym_idx(m, "prof"), ELF64_R_TYPE(r->r_info));
}
M(call_mid_function) { insn_at(m, "tuner", rel(m, ".reltuner", "top")->r_offset)->imm = 0; }
M(call_past_text) { insn_at(m, "tuner", rel(m, ".reltuner", "top")->r_offset)->imm = 100000; }
M(extern_sym) { sym(m, "zeroed")->st_shndx = SHN_UNDEF; }
M(lddw_split)
{
	/* End section profiler (and its program) right after an lddw's first half. */
	uint64_t off = rel(m, ".relprofiler", "arr")->r_offset + 8;

	shdr(m, sec(m, "profiler"))->sh_size = off;
	sym(m, "prof")->st_size = off;
}
M(no_btf) { shdr(m, sec(m, ".BTF"))->sh_type = SHT_NULL; }
M(btf_corrupt) { memset(data(m, ".BTF"), 0, 8); }
M(btf_ext_magic) { data(m, ".BTF.ext")[0] ^= 0xff; }
M(btf_ext_len)
{
	uint32_t v = 0x7fffff;

	memcpy(data(m, ".BTF.ext") + 20, &v, 4);
}
M(btf_ext_num)
{
	uint8_t *p = data(m, ".BTF.ext");
	uint32_t hdr, li_off, v = 0x10000000;

	memcpy(&hdr, p + 4, 4);
	memcpy(&li_off, p + 16, 4);
	/* rec_size, then the first section's name offset, then its record count. */
	memcpy(p + hdr + li_off + 8, &v, 4);
}
M(btf_ext_insn_off)
{
	uint8_t *p = data(m, ".BTF.ext");
	uint32_t hdr, li_off, v = 0x7ffffff8;

	memcpy(&hdr, p + 4, 4);
	memcpy(&li_off, p + 16, 4);
	memcpy(p + hdr + li_off + 12, &v, 4); /* first record's insn_off */
}
M(license_unterminated)
{
	Elf64_Shdr *s = shdr(m, sec(m, "license"));

	memset(m->b + s->sh_offset, 'A', s->sh_size);
}
M(map_attr_unknown)
{
	Elf64_Shdr *s = shdr(m, sec(m, ".BTF"));
	uint8_t *p = memmem(m->b + s->sh_offset, s->sh_size, "max_entries", 12);

	if (p)
		p[10] = 'Z';
}
M(map_no_symbol) { sym(m, "pcpu")->st_shndx = (uint16_t)sec(m, ".data"); }
M(legacy_def_short) { sym(m, "legacy_arr")->st_size = 8; }
M(legacy_def_extra)
{
	/* Grow legacy_hash's definition over legacy_arr's, whose fields are non-zero. */
	sym(m, "legacy_hash")->st_size = 40;
}
M(rodata_offset)
{
	/* A .rodata load whose addend points far beyond the section. */
	struct nbpf_insn *in = insn_at(m, "tuner", rel(m, ".reltuner", "table")->r_offset);

	in->imm = 0x100000;
}

struct mcase {
	const char *name;
	void (*fn)(struct img *);
	int legacy; /* mutate loader_legacy.bpf.o instead */
	const char *want;
};

static const struct mcase cases[] = {
	{ "truncated header", trunc_header, 0, "t: truncated: 40 bytes is shorter than an ELF header" },
	{ "truncated file", trunc_half, 0, "lies outside the file (" },
	{ "truncated file (2)", trunc_half, 0, "): truncated or corrupt" },
	{ "bad magic", bad_magic, 0, "not an ELF file (bad magic)" },
	{ "32-bit", class32, 0, "not a 64-bit ELF object" },
	{ "big endian", big_endian, 0, "not a little-endian ELF object" },
	{ "machine", machine, 0, "x86-64 object, not BPF: compile with clang -target bpf" },
	{ "e_type", exec_type, 0, "not a relocatable object (e_type 2)" },
	{ "shoff outside", shoff_out, 0, "section header table at 0x" },
	{ "huge section count", shnum_huge, 0, "5000 sections (limit 4096)" },
	{ "section table past end", shnum_past_end, 0, "ends past the end of the file" },
	{ "shstrndx", shstrndx_bad, 0, "section name table index 0 out of range" },
	{ "section outside file", text_outside, 0, "section .text (2): offset" },
	{ "section size huge", btf_size_huge, 0, "size 0x4000000000000000 outside the file" },
	{ "overlapping sections", sections_overlap, 0, "overlap in the file" },
	{ "section name offset", sec_name_bad, 0, "name offset 16777215 outside the name table" },
	{ "program size not multiple of 8", prog_size_odd, 0, "section tuner: size" },
	{ "duplicate section", dup_text, 0, "duplicate section .text" },
	{ "no symbol table", no_symtab, 0, "no symbol table" },
	{ "symtab entry size", symtab_entsize, 0, "symbol table: bad entry size 16" },
	{ "symbol section index", sym_shndx, 0, "symbol calc: section index 500 out of range" },
	{ "symbol name offset", sym_name, 0, "name offset 268435455 outside the string table" },
	{ "function outside section", func_outside, 0, "function prof: offset 0 size 65536 outside section profiler" },
	{ "function misaligned", func_misaligned, 0, "function pick: offset" },
	{ "functions overlap", funcs_overlap, 0, "functions calc and pick overlap in section tuner" },
	{ "relocation target section", rel_target_bad, 0, "relocation section .relprofiler: target section 999 out of range" },
	{ "two relocation sections", rel_twice, 0, "section tuner has two relocation sections" },
	{ "relocation symbol index", rel_sym_range, 0, "section tuner: relocation 0 at offset 0x" },
	{ "relocation outside section", rel_outside, 0, "against top is outside the section" },
	{ "relocation misaligned", rel_misaligned, 0, "against top is not at an instruction boundary" },
	{ "relocation on non-lddw", rel_not_lddw, 0, "against zeroed is on a non-lddw instruction (code 0xb7)" },
	{ "relocation on non-call", rel_not_call, 0, "against top is not on a bpf-to-bpf call" },
	{ "relocation on lddw second half", rel_lddw_hi, 0, "against zeroed hits the second half of an lddw" },
	{ "unexpected relocation type", rel_type_abs, 0, "unexpected R_BPF_64_ABS64 relocation (type 2) at offset 0x" },
	{ "unknown relocation type", rel_type_unknown, 0, "unexpected unknown relocation (type 77)" },
	{ "call into another program section", call_other_section, 0, "calls prof, a call target outside .text" },
	{ "call into the middle of a function", call_mid_function, 0, "which is not the start of a function" },
	{ "call past .text", call_past_text, 0, "call target outside .text" },
	{ "unresolved extern", extern_sym, 0, "loads unresolved extern symbol zeroed" },
	{ "lddw split at end of section", lddw_split, 0, "is split at the end of the section" },
	{ "missing BTF with .maps", no_btf, 0, "section .maps needs BTF, but the object has no .BTF section" },
	{ "corrupt BTF", btf_corrupt, 0, "section .BTF is corrupt: libbpf: Invalid BTF magic" },
	{ "BTF.ext magic", btf_ext_magic, 0, "corrupt .BTF.ext: bad magic" },
	{ "BTF.ext line info length", btf_ext_len, 0, "corrupt .BTF.ext: line info (offset" },
	{ "BTF.ext record count", btf_ext_num, 0, "line info records for section" },
	{ "BTF.ext insn offset", btf_ext_insn_off, 0, "is outside the section or not on an instruction" },
	{ "license not terminated", license_unterminated, 0, "section license is not a NUL-terminated string" },
	{ "unknown map attribute", map_attr_unknown, 0, "map pairs: unknown attribute 'max_entrieZ'" },
	{ "map without symbol", map_no_symbol, 0, "map pcpu: no symbol in section .maps" },
	{ "global data offset", rodata_offset, 0, ", outside .rodata (" },
	{ "legacy map too short", legacy_def_short, 1, "legacy map legacy_arr: definition at offset 20 size 8" },
	{ "legacy map extra fields", legacy_def_extra, 1, "legacy map legacy_hash: unsupported non-zero fields" },
};

static void run_case(const struct mcase *c)
{
	struct ncclbpf_open_opts opts = NCCLBPF_OPTS_INIT(ncclbpf_open_opts, .object_name = "t",
							  .map_dir = map_dir);
	struct ncclbpf_object *obj = (struct ncclbpf_object *)(uintptr_t)0x1;
	struct img m;
	int err;

	m.len = c->legacy ? len_legacy : len_multi;
	m.b = malloc(m.len);
	memcpy(m.b, c->legacy ? good_legacy : good_multi, m.len);
	c->fn(&m);
	err = ncclbpf_object__open_mem(m.b, m.len, &opts, &obj);
	CHECK_MSG(err < 0, "%s: opened", c->name);
	CHECK_MSG(err == ncclbpf_errno(), "%s: errno %d vs %d", c->name, err, ncclbpf_errno());
	CHECK_MSG(obj == (struct ncclbpf_object *)(uintptr_t)0x1, "%s: *obj changed", c->name);
	CHECK_MSG(strstr(ncclbpf_errmsg(), c->want) != NULL, "%s: message \"%s\" lacks \"%s\"",
		  c->name, ncclbpf_errmsg(), c->want);
	if (getenv("LOADER_TEST_VERBOSE"))
		printf("%-36s %4d  %s\n", c->name, err, ncclbpf_errmsg());
	if (err >= 0 && obj != (struct ncclbpf_object *)(uintptr_t)0x1)
		ncclbpf_object__close(obj);
	free(m.b);
}

/* ---- hand-built objects --------------------------------------------- */

/*
 * Writes a minimal BPF ELF: .shstrtab, .strtab, .symtab, section "tuner"
 * with n_progs copies of (mov r0, 0; exit) and one FUNC symbol each (or
 * the raw code given), and section "maps" with n_maps legacy definitions.
 */
static struct img build(uint32_t n_progs, uint32_t n_maps, const struct nbpf_insn *code,
			uint32_t n_code)
{
	static const char shstr[] = "\0.shstrtab\0.strtab\0.symtab\0tuner\0maps";
	enum { S_NULL, S_SHSTR, S_STR, S_SYM, S_TUNER, S_MAPS, S_N };
	uint32_t name_off[S_N] = { 0, 1, 11, 19, 27, 33 };
	uint32_t nsym = 1 + n_progs + n_maps, code_n = code ? n_code : 2 * n_progs;
	size_t str_sz = 1 + (size_t)(n_progs + n_maps) * 8;
	size_t off[S_N], sz[S_N], pos = sizeof(Elf64_Ehdr);
	struct img m;
	char *strs;
	Elf64_Sym *syms;
	struct nbpf_insn *ins;
	Elf64_Shdr *sh;

	sz[S_NULL] = 0;
	sz[S_SHSTR] = sizeof(shstr);
	sz[S_STR] = str_sz;
	sz[S_SYM] = nsym * sizeof(Elf64_Sym);
	sz[S_TUNER] = code_n * 8;
	sz[S_MAPS] = n_maps * 20;
	for (int i = 1; i < S_N; i++) {
		pos = (pos + 7) & ~(size_t)7;
		off[i] = pos;
		pos += sz[i];
	}
	pos = (pos + 7) & ~(size_t)7;
	m.len = pos + S_N * sizeof(Elf64_Shdr);
	m.b = calloc(1, m.len);
	memcpy(m.b, ELFMAG, SELFMAG);
	m.b[EI_CLASS] = ELFCLASS64;
	m.b[EI_DATA] = ELFDATA2LSB;
	m.b[EI_VERSION] = EV_CURRENT;
	ehdr(&m)->e_type = ET_REL;
	ehdr(&m)->e_machine = 247;
	ehdr(&m)->e_version = EV_CURRENT;
	ehdr(&m)->e_ehsize = sizeof(Elf64_Ehdr);
	ehdr(&m)->e_shentsize = sizeof(Elf64_Shdr);
	ehdr(&m)->e_shoff = pos;
	ehdr(&m)->e_shnum = S_N;
	ehdr(&m)->e_shstrndx = S_SHSTR;
	memcpy(m.b + off[S_SHSTR], shstr, sizeof(shstr));
	strs = (char *)m.b + off[S_STR];
	syms = (Elf64_Sym *)(m.b + off[S_SYM]);
	ins = (struct nbpf_insn *)(m.b + off[S_TUNER]);
	for (uint32_t i = 0; i < n_progs; i++) {
		Elf64_Sym *s = &syms[1 + i];

		sprintf(strs + 1 + i * 8, "p%u", i);
		s->st_name = 1 + i * 8;
		s->st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		s->st_shndx = S_TUNER;
		s->st_value = code ? 0 : (uint64_t)i * 16;
		s->st_size = code ? n_code * 8 : 16;
		if (!code) {
			ins[2 * i] = (struct nbpf_insn){ .code = NBPF_ALU64 | NBPF_MOV | NBPF_K };
			ins[2 * i + 1] = (struct nbpf_insn){ .code = NBPF_OP_EXIT };
		}
	}
	if (code)
		memcpy(ins, code, n_code * 8);
	for (uint32_t i = 0; i < n_maps; i++) {
		Elf64_Sym *s = &syms[1 + n_progs + i];
		uint32_t def[5] = { 2, 4, 8, 1, 0 };

		sprintf(strs + 1 + (n_progs + i) * 8, "m%u", i);
		s->st_name = 1 + (n_progs + i) * 8;
		s->st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
		s->st_shndx = S_MAPS;
		s->st_value = (uint64_t)i * 20;
		s->st_size = 20;
		memcpy(m.b + off[S_MAPS] + i * 20, def, 20);
	}
	sh = (Elf64_Shdr *)(m.b + pos);
	for (int i = 1; i < S_N; i++) {
		sh[i].sh_name = name_off[i];
		sh[i].sh_offset = off[i];
		sh[i].sh_size = sz[i];
		sh[i].sh_addralign = 8;
	}
	sh[S_SHSTR].sh_type = SHT_STRTAB;
	sh[S_STR].sh_type = SHT_STRTAB;
	sh[S_SYM].sh_type = SHT_SYMTAB;
	sh[S_SYM].sh_link = S_STR;
	sh[S_SYM].sh_info = 1;
	sh[S_SYM].sh_entsize = sizeof(Elf64_Sym);
	sh[S_TUNER].sh_type = SHT_PROGBITS;
	sh[S_TUNER].sh_flags = SHF_ALLOC | SHF_EXECINSTR;
	sh[S_MAPS].sh_type = SHT_PROGBITS;
	sh[S_MAPS].sh_flags = SHF_ALLOC | SHF_WRITE;
	return m;
}

static int open_built(struct img m, struct ncclbpf_object **obj)
{
	struct ncclbpf_open_opts opts = NCCLBPF_OPTS_INIT(ncclbpf_open_opts, .object_name = "built",
							  .map_dir = map_dir);
	int err = ncclbpf_object__open_mem(m.b, m.len, &opts, obj);

	free(m.b);
	return err;
}

static void test_built(void)
{
	struct ncclbpf_object *obj = NULL;
	const struct nbpf_insn self_call[] = {
		{ .code = NBPF_OP_CALL, .src = NBPF_PSEUDO_CALL, .imm = 0 },
		{ .code = NBPF_OP_EXIT },
	};
	int err;

	/* The writer itself makes good objects: 256 programs and 256 maps open. */
	err = open_built(build(256, 256, NULL, 0), &obj);
	CHECK_MSG(err == 0, "256/256: %s", ncclbpf_errmsg());
	if (!err) {
		CHECK_EQ_U64(ncclbpf_object__prog_count(obj), 256);
		CHECK_EQ_U64(ncclbpf_object__map_count(obj), 256);
		CHECK_EQ_U64(ncclbpf_program__insn_count(ncclbpf_object__prog(obj, 255)), 2);
		CHECK(!strcmp(ncclbpf_object__license(obj), ""));
		ncclbpf_object__close(obj);
	}
	obj = NULL;
	err = open_built(build(257, 0, NULL, 0), &obj);
	CHECK(err == -E2BIG && !obj);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "built: more than 256 programs");
	err = open_built(build(1, 257, NULL, 0), &obj);
	CHECK(err == -E2BIG && !obj);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "built: more than 256 maps");
	err = open_built(build(1, 0, self_call, 2), &obj);
	CHECK(err == -EINVAL && !obj);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "section tuner: insn 0 is a bpf-to-bpf call without relocation (call target outside .text)");
	err = open_built(build(0, 0, self_call, 2), &obj);
	CHECK(err == -EINVAL && !obj);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "section tuner holds code but no function symbol");
}

int main(int argc, char **argv)
{
	char path[512];

	if (argc < 2) {
		fprintf(stderr, "usage: %s OBJDIR\n", argv[0]);
		return 2;
	}
	snprintf(path, sizeof(path), "%s/loader_multi.bpf.o", argv[1]);
	good_multi = read_all(path, &len_multi);
	snprintf(path, sizeof(path), "%s/loader_legacy.bpf.o", argv[1]);
	good_legacy = read_all(path, &len_legacy);
	if (!good_multi || !good_legacy) {
		fprintf(stderr, "cannot read the objects in %s\n", argv[1]);
		return 2;
	}
	snprintf(map_dir, sizeof(map_dir), "/tmp/ncclbpf-test-malformed-%d", (int)getpid());

	/* The unmodified objects open (so each failure below is the mutation's doing). */
	{
		struct ncclbpf_open_opts opts = NCCLBPF_OPTS_INIT(ncclbpf_open_opts, .map_dir = map_dir);
		struct ncclbpf_object *obj = NULL;

		CHECK(ncclbpf_object__open_mem(good_multi, len_multi, &opts, &obj) == 0);
		ncclbpf_object__close(obj);
		obj = NULL;
		CHECK(ncclbpf_object__open_mem(good_legacy, len_legacy, &opts, &obj) == 0);
		ncclbpf_object__close(obj);
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i]);
	test_built();
	free(good_multi);
	free(good_legacy);
	rmdir(map_dir);
	return check_summary("test_loader_malformed");
}
