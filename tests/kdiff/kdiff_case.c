// SPDX-License-Identifier: Apache-2.0
/*
 * kdiff_case.c - reproducers as assembler text the test reads back:
 *
 *   # kdiff case: TITLE
 *   # seed: 0xSEED
 *   # kernel: accept                     (or: refuse: MESSAGE)
 *   # row: ROW                           (a contract difference: ours accepts)
 *   # kernel-mode: strict                (the verdict is the kernel's without
 *                                          CAP_PERFMON/CAP_SYS_ADMIN)
 *   mov %r6, %r1                         # 0
 *   ...
 *
 * Each instruction is written as the disassembler prints it when that
 * re-assembles to the same slots, else as ".insn 0x<word>", so the file
 * is exactly the program.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kdiff.h"
#include "text/asm.h"
#include "text/disasm.h"

static uint64_t word(const struct nbpf_insn *in)
{
	return (uint64_t)in->code | (uint64_t)in->dst << 8 | (uint64_t)in->src << 12 |
	       (uint64_t)(uint16_t)in->off << 16 | (uint64_t)(uint32_t)in->imm << 32;
}

/* Whether text assembles to exactly slots [i, i + k). */
static bool round_trips(const char *text, const struct nbpf_insn *slots, uint32_t k)
{
	struct nbpf_insn *out = NULL;
	uint32_t n = 0;
	bool ok;

	if (nbpf_asm_quiet(text, strlen(text), &out, &n, NULL, 0))
		return false;
	ok = n == k && !memcmp(out, slots, k * sizeof(*out));
	free(out);
	return ok;
}

int kd_case_write(FILE *f, const struct kd_case *c)
{
	const struct kd_prog *p = &c->prog;

	fprintf(f, "# kdiff case: %s\n# seed: 0x%016" PRIx64 "\n", c->title, c->seed);
	if (c->kernel_accepts)
		fprintf(f, "# kernel: accept\n");
	else
		fprintf(f, "# kernel: refuse: %s\n", c->kernel_msg);
	if (c->row[0])
		fprintf(f, "# row: %s\n", c->row);
	if (c->strict)
		fprintf(f, "# kernel-mode: strict\n");
	for (uint32_t i = 0; i < p->n;) {
		char text[160];
		int k = 1;

		if (p->insns[i].code == NBPF_OP_CALL && p->insns[i].src == NBPF_PSEUDO_CALL)
			snprintf(text, sizeof(text), "call local %+d", p->insns[i].imm);
		else if ((k = nbpf_disasm_insn(p->insns, p->n, i, text, sizeof(text))) < 1)
			return -EINVAL;
		if (i + (uint32_t)k > p->n || !round_trips(text, &p->insns[i], (uint32_t)k)) {
			for (int s = 0; s < k && i + (uint32_t)s < p->n; s++)
				fprintf(f, ".insn 0x%016" PRIx64 "%s# %u\n", word(&p->insns[i + s]),
					"                    ", i + s);
			i += (uint32_t)k;
			continue;
		}
		fprintf(f, "%-40s# %u\n", text, i);
		i += (uint32_t)k;
	}
	return ferror(f) ? -EIO : 0;
}

static void header_value(const char *line, const char *name, char *out, size_t len)
{
	size_t n = strlen(name);
	const char *v;

	if (strncmp(line, name, n))
		return;
	v = line + n;
	while (*v == ' ')
		v++;
	snprintf(out, len, "%.*s", (int)strcspn(v, "\n"), v);
}

int kd_case_read(const char *path, struct kd_case *c)
{
	FILE *f = fopen(path, "r");
	char *text = NULL, line[512], kernel[300] = "", seed[40] = "", mode[16] = "";
	size_t len = 0;
	struct nbpf_insn *insns = NULL;
	uint32_t n = 0;
	int err = 0;

	memset(c, 0, sizeof(*c));
	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		size_t l = strlen(line);
		char *t = realloc(text, len + l + 1);

		if (!t) {
			err = -ENOMEM;
			goto out;
		}
		text = t;
		memcpy(text + len, line, l + 1);
		len += l;
		header_value(line, "# kdiff case:", c->title, sizeof(c->title));
		header_value(line, "# seed:", seed, sizeof(seed));
		header_value(line, "# kernel:", kernel, sizeof(kernel));
		header_value(line, "# row:", c->row, sizeof(c->row));
		header_value(line, "# kernel-mode:", mode, sizeof(mode));
	}
	c->strict = !strcmp(mode, "strict");
	c->seed = strtoull(seed, NULL, 0);
	if (!strcmp(kernel, "accept")) {
		c->kernel_accepts = true;
	} else if (!strncmp(kernel, "refuse", 6)) {
		header_value(kernel, "refuse:", c->kernel_msg, sizeof(c->kernel_msg));
	} else {
		fprintf(stderr, "%s: no '# kernel: accept' or '# kernel: refuse: MSG' line\n", path);
		err = -EINVAL;
		goto out;
	}
	if (!text || nbpf_asm(text, len, &insns, &n)) {
		fprintf(stderr, "%s: %s\n", path, text ? ncclbpf_errmsg() : "empty");
		err = -EINVAL;
		goto out;
	}
	if (n > KD_MAX_INSNS) {
		fprintf(stderr, "%s: %u instructions, at most %u\n", path, n, KD_MAX_INSNS);
		err = -E2BIG;
		goto out;
	}
	memcpy(c->prog.insns, insns, n * sizeof(*insns));
	c->prog.n = n;
out:
	free(insns);
	free(text);
	fclose(f);
	return err;
}
