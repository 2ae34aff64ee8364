/*
 * loader.h - internal state of one ELF object being opened.
 *
 * ncclbpf_object__open_mem() runs the stages below in order over one
 * struct nbpf_loader; each stage validates what it reads and fails with
 * nbpf_err() naming the object, section, offset or symbol at fault:
 *
 *   loader_elf.c    ELF header, sections, symbols (libelf + own bounds checks)
 *   loader_maps.c   map definitions (.maps via BTF, legacy "maps", global data)
 *   loader_reloc.c  relocations of program sections, subprogram linking
 *   loader_lines.c  .BTF.ext line info per program instruction
 *   loader.c        the driver, limits, map creation and object assembly
 *
 * Nothing here outlives the open call except what is moved into the
 * struct ncclbpf_object (programs, maps, BTF, license).
 */
#ifndef NCCLBPF_LOADER_H
#define NCCLBPF_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "insn.h"
#include "object.h"

/* Sane limits: far above any real policy, low enough to bound work on hostile input. */
#define NBPF_LOADER_MAX_SECTIONS 4096
#define NBPF_LOADER_MAX_SYMBOLS  (1u << 18)
#define NBPF_LOADER_MAX_PROGS    256
#define NBPF_LOADER_MAX_MAPS     256
#define NBPF_LOADER_MAX_INSNS    (1u << 20) /* per linked program, subprograms included */
#define NBPF_LOADER_MAX_TOTAL_INSNS (1u << 22) /* all linked programs of an object */
#define NBPF_LOADER_MAX_FILE     (256u << 20)
#define NBPF_LOADER_MAX_DATA     (64u << 20) /* bytes of one global data section */

/* BPF relocation types (elf.h names only some of them). */
#define NBPF_R_BPF_NONE        0
#define NBPF_R_BPF_64_64       1
#define NBPF_R_BPF_64_ABS64    2
#define NBPF_R_BPF_64_ABS32    3
#define NBPF_R_BPF_64_NODYLD32 4
#define NBPF_R_BPF_64_32       10

enum nbpf_sec_kind {
	NBPF_SEC_OTHER = 0,   /* ignored (debug info, string tables, ...) */
	NBPF_SEC_PROG,        /* executable, not .text: holds programs */
	NBPF_SEC_TEXT,        /* .text: subprograms */
	NBPF_SEC_MAPS,        /* .maps: BTF-defined maps */
	NBPF_SEC_LEGACY_MAPS, /* maps: struct bpf_map_def array */
	NBPF_SEC_DATA,        /* .data, .data.*: writable global data */
	NBPF_SEC_RODATA,      /* .rodata, .rodata.*: read-only global data */
	NBPF_SEC_BSS,         /* .bss, .bss.*: zeroed global data */
	NBPF_SEC_LICENSE,
	NBPF_SEC_BTF,
	NBPF_SEC_BTF_EXT,
	NBPF_SEC_SYMTAB,
	NBPF_SEC_REL,         /* relocations of another section */
};

struct nbpf_sec {
	const char *name;
	uint32_t idx;
	uint32_t type;        /* sh_type */
	uint64_t flags;       /* sh_flags */
	uint64_t off, size;   /* in the file; off meaningless for NOBITS */
	uint32_t link, info;
	uint64_t entsize;
	const uint8_t *data;  /* points into the caller's buffer; NULL for NOBITS/empty */
	int kind;             /* enum nbpf_sec_kind */
	int map_idx;          /* global data: index in ld->maps, else -1 */
	uint32_t rel_idx;     /* the REL section applying to this one, 0 if none */

	/* Executable sections, after relocation. */
	struct nbpf_insn *insns;
	uint32_t n_insns;
	int32_t *call_tgt;    /* per insn: target index in .text of a pseudo call, or -1 */
	uint8_t *is_hi;       /* per insn: 1 if it is the second half of an lddw */
};

struct nbpf_sym {
	const char *name;
	uint64_t value, size;
	uint32_t shndx;       /* raw st_shndx */
	uint8_t type, bind;
};

/* A function: a program (in a program section) or a subprogram (in .text). */
struct nbpf_func {
	const char *name;
	uint32_t sec;         /* section index */
	uint32_t start, len;  /* in instructions, within the section */
	bool is_prog;
};

/* A map as the object defines it, before it is created. */
struct nbpf_mapdef {
	char name[64];
	uint32_t sec;         /* section that defines it */
	uint64_t off, sz;     /* where in that section (global data: the whole section) */
	uint32_t type, key_size, value_size, max_entries, map_flags;
	bool readonly_prog;
	bool global_data;
	const uint8_t *init;  /* initial value (global data), NULL: zero */
	uint64_t init_size;
};

struct nbpf_loader {
	const char *name;            /* object name for messages */
	const uint8_t *buf;
	size_t len;
	const struct ncclbpf_open_opts *opts;
	void *elf;                   /* Elf * */

	struct nbpf_sec *secs;
	uint32_t n_secs;
	uint32_t symtab_idx, strtab_idx;
	uint32_t text_idx, maps_idx, legacy_maps_idx, btf_idx, btf_ext_idx, license_idx;

	struct nbpf_sym *syms;
	uint32_t n_syms;

	struct nbpf_func *funcs;     /* sorted by (sec, start) */
	uint32_t n_funcs;

	struct nbpf_mapdef *maps;
	uint32_t n_maps, maps_cap;

	struct btf *btf;             /* NULL when the object has no .BTF */

	/* .BTF.ext line info, per ELF section that has any. */
	struct nbpf_line_sec {
		uint32_t sec;
		uint32_t n;
		const uint8_t *recs;
	} *lsecs;
	uint32_t n_lsecs;
	uint32_t line_rec_size;
};

/* Records "obj: message" and returns err. */
#define ld_err(ld, err, fmt, ...) nbpf_err((err), "%s: " fmt, (ld)->name, ##__VA_ARGS__)

/* loader_elf.c */
int nbpf_ld_elf_open(struct nbpf_loader *ld);
void nbpf_ld_elf_close(struct nbpf_loader *ld);
int nbpf_ld_collect_funcs(struct nbpf_loader *ld);
const char *nbpf_ld_sym_desc(const struct nbpf_loader *ld, uint32_t sym_idx);

/* loader_maps.c */
int nbpf_ld_btf_open(struct nbpf_loader *ld);
int nbpf_ld_collect_maps(struct nbpf_loader *ld);
int nbpf_ld_create_maps(struct nbpf_loader *ld, struct ncclbpf_object *obj);
int nbpf_ld_map_by_sym(const struct nbpf_loader *ld, uint32_t sym_idx, uint64_t *value_off,
		       bool *is_value);

/* loader_reloc.c */
int nbpf_ld_check_data_relocs(struct nbpf_loader *ld);
int nbpf_ld_relocate(struct nbpf_loader *ld);
int nbpf_ld_link_program(struct nbpf_loader *ld, const struct nbpf_func *fn,
			 struct ncclbpf_program *prog, uint32_t **sub_starts);

/* loader_lines.c */
int nbpf_ld_lines_prepare(struct nbpf_loader *ld);
int nbpf_ld_lines(struct nbpf_loader *ld, const struct nbpf_func *fn, const uint32_t *sub_starts,
		  struct ncclbpf_program *prog);

#endif
