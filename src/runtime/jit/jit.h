/*
 * jit.h - the x86-64 template JIT.
 */
#ifndef NCCLBPF_JIT_H
#define NCCLBPF_JIT_H

#include <stddef.h>
#include <stdint.h>

#include "interp.h"
#include "ncclbpf/runtime.h"

struct nbpf_jit_image {
	ncclbpf_func_t func;
	void *mem;       /* mmap'd, read+exec after compile */
	size_t mem_size;
	size_t code_size;
};

/* Compiles insns; *out is freed with nbpf_jit_free.  -ENOTSUP off x86-64. */
int nbpf_jit_compile(const struct nbpf_insn *insns, uint32_t n, const struct nbpf_env *env,
		     struct nbpf_jit_image **out);
void nbpf_jit_free(struct nbpf_jit_image *img);

#endif
