/*
 * rawprog.h - programs as text: raw instruction words and the ISA
 * conformance suite's .data files.
 *
 * A raw program is one instruction word per line, "0x" + 16 hex digits,
 * the slot's 8 bytes read as a little-endian integer (opcode in the low
 * byte).  '#' starts a comment; blank lines are ignored.
 *
 * A .data file is a sequence of sections that each start with "-- NAME":
 * asm, raw, mem (hex bytes of the block passed in r1), result (expected r0)
 * and error (the program must be refused); other sections are notes and
 * are kept only by name.  Shared by the conformance runner, the CLI, and
 * the JIT's and verifier's tests.
 */
#ifndef NCCLBPF_RAWPROG_H
#define NCCLBPF_RAWPROG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "insn.h"

/* Instruction slot <-> raw word (byte order independent of the host). */
struct nbpf_insn nbpf_insn_from_word(uint64_t word);
uint64_t nbpf_insn_to_word(const struct nbpf_insn *in);

/*
 * Parses raw program text (len bytes, need not be NUL-terminated) into a
 * malloc'd array (*insns, *n).  Errors name the line.  An empty program is
 * an error (-EINVAL).
 */
int nbpf_raw_parse(const char *text, size_t len, struct nbpf_insn **insns, uint32_t *n);

/*
 * Parses hex bytes: digits with optional whitespace between bytes, an
 * optional "0x" prefix per group is not accepted (plain digits only), so
 * "00 01 02" and "000102" are the same three bytes.  An odd digit count or
 * a non-hex character is -EINVAL.  *out is malloc'd (NULL when *len == 0).
 */
int nbpf_hex_parse(const char *text, size_t len, uint8_t **out, size_t *out_len);

/* One conformance test. Strings are NUL-terminated and malloc'd (or NULL). */
struct nbpf_conf_test {
	char *asm_text;          /* "-- asm" section, NULL if absent */
	struct nbpf_insn *insns; /* "-- raw" section */
	uint32_t n_insns;
	bool has_raw;
	uint8_t *mem;            /* "-- mem" bytes, NULL if none */
	size_t mem_len;
	bool has_result;
	uint64_t result;
	bool has_error;
	char *error;             /* "-- error" section text (may be "") */
};

/* Parses a .data file's text. On failure *t is left empty (nothing to free). */
int nbpf_conf_parse(const char *text, size_t len, struct nbpf_conf_test *t);
/* Reads and parses path; errors name the file. */
int nbpf_conf_load(const char *path, struct nbpf_conf_test *t);
void nbpf_conf_free(struct nbpf_conf_test *t);

/*
 * Reads a whole file into a malloc'd, NUL-terminated buffer (*len excludes
 * the NUL).  Refuses files over 64 MiB.
 */
int nbpf_read_file(const char *path, char **buf, size_t *len);

/* Whether text looks like a .data file (has a line starting with "-- "). */
bool nbpf_text_is_conf(const char *text, size_t len);

#endif
