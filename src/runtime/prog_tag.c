// SPDX-License-Identifier: MIT
/*
 * prog_tag.c - a program's tag, computed as the kernel computes its prog
 * tag (bpf_prog_calc_tag): SHA-256 over the instructions with the map
 * references of lddw zeroed, first 8 bytes in hex.  (Kernels before the
 * move to SHA-256 hashed the same bytes with SHA-1; tests/cli/test_prog_tag
 * compares with the running kernel either way.)
 *
 * Two programs of one object get two tags, and the same code reloaded from
 * a rebuilt object (other maps, other sections around it) keeps its tag.
 * Our loader marks map loads with its own pseudo sources (a map index, not
 * an fd); the hashed copy carries the kernel's (BPF_PSEUDO_MAP_FD and
 * _VALUE) so the tag equals the one `bpftool prog show` prints for the same
 * instructions loaded into the kernel.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "insn.h"
#include "ncclbpf/runtime.h"
#include "sha256.h"

static void kernel_form(struct nbpf_insn *in, size_t n)
{
	bool was_ld_map = false;

	for (size_t i = 0; i < n; i++) {
		if (!was_ld_map && in[i].code == NBPF_OP_LDDW &&
		    (in[i].src == NBPF_PSEUDO_MAP_IDX || in[i].src == NBPF_PSEUDO_MAP_IDX_VALUE ||
		     in[i].src == NBPF_PSEUDO_MAP_FD || in[i].src == NBPF_PSEUDO_MAP_VALUE)) {
			if (in[i].src == NBPF_PSEUDO_MAP_IDX)
				in[i].src = NBPF_PSEUDO_MAP_FD;
			else if (in[i].src == NBPF_PSEUDO_MAP_IDX_VALUE)
				in[i].src = NBPF_PSEUDO_MAP_VALUE;
			in[i].imm = 0;
			was_ld_map = true;
		} else if (was_ld_map && !in[i].code && !in[i].dst && !in[i].src && !in[i].off) {
			in[i].imm = 0; /* the value offset too, as the kernel does */
			was_ld_map = false;
		} else {
			was_ld_map = false;
		}
	}
}

int ncclbpf_program__tag(const struct ncclbpf_program *prog, char tag[17])
{
	static const char hex[] = "0123456789abcdef";
	size_t n = prog ? ncclbpf_program__insn_count(prog) : 0;
	const void *src = prog ? ncclbpf_program__insns(prog) : NULL;
	uint8_t d[32];
	struct nbpf_insn *copy;

	tag[0] = 0;
	if (!src || !n)
		return nbpf_err(-EINVAL, "program has no instructions");
	copy = malloc(n * sizeof(*copy));
	if (!copy)
		return nbpf_err(-ENOMEM, "out of memory");
	memcpy(copy, src, n * sizeof(*copy));
	kernel_form(copy, n);
	nbpf_sha256(copy, n * sizeof(*copy), d);
	free(copy);
	for (int i = 0; i < 8; i++) {
		tag[2 * i] = hex[d[i] >> 4];
		tag[2 * i + 1] = hex[d[i] & 15];
	}
	tag[16] = 0;
	return 0;
}
