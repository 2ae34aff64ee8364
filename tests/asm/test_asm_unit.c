/*
 * test_asm_unit.c - assembler syntax variants, error messages, and the
 * disassembler's object-program forms and fallbacks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ncclbpf/runtime.h"
#include "text/asm.h"
#include "text/disasm.h"
#include "text/rawprog.h"

static uint64_t word1(const char *text)
{
	struct nbpf_insn *v = NULL;
	uint32_t n = 0;
	uint64_t w = ~0ull;

	if (!nbpf_asm(text, strlen(text), &v, &n) && n >= 1)
		w = nbpf_insn_to_word(&v[0]);
	else
		fprintf(stderr, "'%s': %s\n", text, ncclbpf_errmsg());
	free(v);
	return w;
}

static void expect_err(const char *text, const char *msg)
{
	struct nbpf_insn *v = NULL;
	uint32_t n = 0;

	CHECK_MSG(nbpf_asm(text, strlen(text), &v, &n) < 0, "'%s' assembled", text);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), msg);
	CHECK(v == NULL);
}

static void dis_is(const char *text, const char *want)
{
	struct nbpf_insn *v = NULL;
	uint32_t n = 0;
	char buf[128];

	if (nbpf_asm(text, strlen(text), &v, &n)) {
		CHECK_MSG(0, "'%s': %s", text, ncclbpf_errmsg());
		return;
	}
	nbpf_disasm_insn(v, n, 0, buf, sizeof(buf));
	CHECK_MSG(!strcmp(buf, want), "'%s' disassembles to '%s', want '%s'", text, buf, want);
	free(v);
}

static const char *name_of(void *user, uint32_t idx)
{
	(void)user;
	return idx == 3 ? "stats" : NULL;
}

int main(void)
{
	/* Spelling variants: bare registers, spaces in memory operands, case, 64 suffix. */
	CHECK_EQ_U64(word1("mov r1, -1"), 0xffffffff000001b7ull);
	CHECK_EQ_U64(word1("MOV %r1, -1"), 0xffffffff000001b7ull);
	CHECK_EQ_U64(word1("add64 %r1, 2"), 0x0000000200000107ull);
	CHECK_EQ_U64(word1("ldxw %r0, [ %r1 + 4 ]"), 0x0000000000041061ull);
	CHECK_EQ_U64(word1("ldxw %r0, [%r1-0x10]"), 0x00000000fff01061ull);
	CHECK_EQ_U64(word1("label: exit ; comment"), 0x0000000000000095ull);
	CHECK_EQ_U64(word1("gotol +3"), 0x0000000300000006ull);
	CHECK_EQ_U64(word1("lddw %r1, map[3]"), 0x0000000300005118ull);
	CHECK_EQ_U64(word1("lock fetch xchg [%r1], %r2"), 0x000000e1000021dbull);
	CHECK_EQ_U64(word1("mov32 %r0, 0xffffffff"), 0xffffffff000000b4ull);
	CHECK_EQ_U64(word1("jeq %r1, -0x80000000, -32768"), 0x8000000080000115ull);

	/* Errors name the line and the problem; nothing leaks on failure. */
	expect_err("mov %r0, 1\nfrob %r1", "line 2: unknown mnemonic 'frob'");
	expect_err("mov %r11, 1", "line 1: bad register '%r11'");
	expect_err("mov %r0, 0x100000000", "bad immediate '0x100000000'");
	expect_err("mov %r0, -0x80000001", "bad immediate");
	expect_err("ja +32768", "bad jump offset '+32768'");
	expect_err("ja nowhere\nexit", "line 1: undefined label 'nowhere'");
	expect_err("a: exit\na: exit", "line 2: label 'a' defined twice");
	expect_err("ldxw %r0, [%r1+70000]", "takes %rD, [%rS+off]");
	expect_err("add %r0", "'add' takes 2 operands, got 1");
	expect_err("exit %r0", "'exit' takes 0 operands");
	expect_err("lock nand [%r1], %r2", "unknown atomic operation 'nand'");
	expect_err("lddw %r0, map[x]", "bad map index");
	expect_err("lddw %r0, 0x10000000000000000", "bad 64-bit immediate");
	expect_err("mov %r0, 1,", "empty operand");
	expect_err("# only a comment\n", "no instructions");
	expect_err("lddw %r1, map_value[1]+x", "bad value offset");

	/* Disassembly of object-program forms and fallbacks. */
	dis_is("lddw %r1, map[3]", "lddw %r1, map[3]");
	dis_is("lddw %r2, map_value[2]+8", "lddw %r2, map_value[2]+8");
	dis_is("lddw %r2, map_fd_value[0]", "lddw %r2, map_fd_value[0]");
	dis_is("call local +4\nexit", "call local +4 # insn 5");
	dis_is("call %r3", "call %r3");
	dis_is("sdiv32 %r1, -3", "sdiv32 %r1, -3");
	dis_is("and %r1, 0x7fffffff", "and %r1, 0x7fffffff");
	dis_is("ja -1", "ja -1");
	dis_is(".insn 0x00000000000000ff", ".insn 0x00000000000000ff");
	/* A stray src field on an immediate ALU op cannot be spelt: raw fallback. */
	dis_is(".insn 0x00000001000010b7", ".insn 0x00000001000010b7");
	/* An lddw cut off at the end of the program. */
	dis_is(".insn 0x0000000100000018", ".insn 0x0000000100000018");
	{
		struct nbpf_insn *v = NULL;
		uint32_t n = 0;
		char buf[128];
		struct nbpf_disasm_opts o = { .map_name = name_of };

		if (!nbpf_asm("lddw %r1, map[3]\nexit", 20, &v, &n)) {
			CHECK_EQ_U64(nbpf_disasm_insn_opts(v, n, 0, buf, sizeof(buf), &o), 2);
			CHECK_STR_CONTAINS(buf, "lddw %r1, map[3] # stats");
			CHECK_EQ_U64(nbpf_disasm_insn(v, n, 1, buf, sizeof(buf)), 1);
			CHECK_STR_CONTAINS(buf, "lddw continuation");
			CHECK_EQ_U64(nbpf_disasm_insn(v, n, 2, buf, sizeof(buf)), 1);
			CHECK(!strcmp(buf, "exit"));
			CHECK_EQ_U64(nbpf_disasm_insn(v, n, 3, buf, sizeof(buf)), (uint64_t)-EINVAL);
			/* Truncation is safe and terminated. */
			CHECK_EQ_U64(nbpf_disasm_insn(v, n, 0, buf, 6), 2);
			CHECK_EQ_U64(strlen(buf), 5);
		}
		free(v);
	}
	return check_summary("asm_unit");
}
