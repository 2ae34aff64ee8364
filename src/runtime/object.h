/*
 * object.h - the in-memory form of a loaded BPF object and its programs.
 *
 * The loader fills these; the verifier, engines and host API read them.
 * A program's instructions are self-contained: subprograms it calls are
 * appended after its main body and calls use relative offsets.  lddw
 * instructions referring to maps use NBPF_PSEUDO_MAP_IDX (imm = index in
 * obj->maps) or NBPF_PSEUDO_MAP_IDX_VALUE (imm = index, next imm = offset).
 */
#ifndef NCCLBPF_OBJECT_H
#define NCCLBPF_OBJECT_H

#include <stddef.h>
#include <stdint.h>

#include "insn.h"
#include "ncclbpf/runtime.h"

/* Source position of one instruction, from BTF .BTF.ext line info. */
struct nbpf_line {
	uint32_t insn;        /* index in the program's insns */
	uint32_t line;
	uint32_t col;
	const char *file;     /* owned by the object */
	const char *text;     /* owned by the object */
};

struct ncclbpf_program {
	struct ncclbpf_object *obj;
	char *name;
	char *section;
	struct nbpf_insn *insns;
	uint32_t n_insns;
	struct nbpf_line *lines;   /* sorted by insn */
	uint32_t n_lines;

	/* Filled by prepare. */
	const struct ncclbpf_hook_desc *hook;
	int engine;                /* enum ncclbpf_engine actually used */
	ncclbpf_func_t func;       /* JIT entry, NULL when interpreted */
	void *jit;                 /* struct nbpf_jit_image * */
	struct ncclbpf_verify_result vres;
	struct ncclbpf_finding *findings;  /* owned */
};

struct ncclbpf_object {
	char *name;
	char *license;
	char tag[17];
	struct ncclbpf_program **progs;
	size_t n_progs;
	struct ncclbpf_map **maps;
	size_t n_maps;
	char **strings;            /* owned strings referenced by lines */
	size_t n_strings;
	void *btf;                 /* struct btf * of .BTF, owned; NULL without BTF.
				    * Line info file names and source text point into it. */
};

/* Frees what prepare/verify attached to prog (prog.c); object close calls it. */
void nbpf_program_release(struct ncclbpf_program *prog);

#endif
