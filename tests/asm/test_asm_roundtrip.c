/*
 * test_asm_roundtrip.c - the assembler and disassembler against the whole
 * ISA conformance suite.
 *
 * For every .data file: "-- asm" must assemble to exactly the "-- raw"
 * words, and the disassembly of "-- raw" must assemble back to the same
 * words without falling back to ".insn" for any slot.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ncclbpf/runtime.h"
#include "text/asm.h"
#include "text/disasm.h"
#include "text/rawprog.h"

#ifndef NCCLBPF_CONFORMANCE_DIR
#define NCCLBPF_CONFORMANCE_DIR "tests/conformance/bpf_conformance/tests"
#endif

static int same(const struct nbpf_insn *a, uint32_t na, const struct nbpf_insn *b, uint32_t nb,
		const char *what, const char *file)
{
	if (na != nb) {
		fprintf(stderr, "%s: %s: %u slots, expected %u\n", file, what, na, nb);
		return 0;
	}
	for (uint32_t i = 0; i < na; i++)
		if (nbpf_insn_to_word(&a[i]) != nbpf_insn_to_word(&b[i])) {
			fprintf(stderr, "%s: %s: slot %u is 0x%016" PRIx64 ", expected 0x%016" PRIx64 "\n",
				file, what, i, nbpf_insn_to_word(&a[i]), nbpf_insn_to_word(&b[i]));
			return 0;
		}
	return 1;
}

/* Disassembles the program into one text and checks it assembles back. */
static int disasm_roundtrip(const struct nbpf_insn *insns, uint32_t n, const char *file)
{
	char *text = NULL;
	size_t tlen = 0;
	FILE *f = open_memstream(&text, &tlen);
	struct nbpf_insn *back = NULL;
	uint32_t nb = 0;
	int ok = 0;

	if (!f)
		return 0;
	if (nbpf_disasm_prog(f, insns, n, 0, NULL)) {
		fclose(f);
		goto out;
	}
	fclose(f);
	if (strstr(text, ".insn")) {
		fprintf(stderr, "%s: disassembly fell back to .insn:\n%s", file, text);
		goto out;
	}
	if (nbpf_asm(text, tlen, &back, &nb)) {
		fprintf(stderr, "%s: disassembly does not assemble: %s\n%s", file, ncclbpf_errmsg(),
			text);
		goto out;
	}
	ok = same(back, nb, insns, n, "disasm->asm", file);
out:
	free(back);
	free(text);
	return ok;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : NCCLBPF_CONFORMANCE_DIR;
	struct dirent **ents = NULL;
	int nent = scandir(dir, &ents, NULL, alphasort);
	int files = 0, asm_ok = 0, dis_ok = 0;

	CHECK_MSG(nent > 0, "cannot read %s", dir);
	for (int i = 0; i < nent; i++) {
		const char *nm = ents[i]->d_name;
		size_t l = strlen(nm);
		struct nbpf_conf_test t;
		struct nbpf_insn *v = NULL;
		uint32_t n = 0;
		char path[4096];

		if (l < 6 || strcmp(nm + l - 5, ".data"))
			goto next;
		snprintf(path, sizeof(path), "%s/%s", dir, nm);
		files++;
		if (nbpf_conf_load(path, &t)) {
			CHECK_MSG(0, "%s", ncclbpf_errmsg());
			goto next;
		}
		CHECK_MSG(t.asm_text && t.has_raw, "%s: asm and raw sections", nm);
		if (t.asm_text && t.has_raw) {
			if (nbpf_asm(t.asm_text, strlen(t.asm_text), &v, &n))
				fprintf(stderr, "%s: %s\n", nm, ncclbpf_errmsg());
			else if (same(v, n, t.insns, t.n_insns, "asm", nm))
				asm_ok++;
			free(v);
			dis_ok += disasm_roundtrip(t.insns, t.n_insns, nm);
		}
		nbpf_conf_free(&t);
next:
		free(ents[i]);
	}
	free(ents);
	printf("asm: %d/%d files assemble to their raw words\n", asm_ok, files);
	printf("disasm: %d/%d files round-trip\n", dis_ok, files);
	CHECK(files > 0);
	CHECK_EQ_U64(asm_ok, files);
	CHECK_EQ_U64(dis_ok, files);
	return check_summary("asm_roundtrip");
}
