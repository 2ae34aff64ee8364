/*
 * test_jit.c - targeted tests of the JIT's non-trivial translations.
 *
 * Every program runs on both engines: the result must equal the expected
 * value and the interpreter's.  The cases are the places where x86 and
 * eBPF disagree (division traps, shift counts in cl, 32-bit zero
 * extension, cmpxchg through rax), the calling conventions (helpers,
 * callx, unwind, bpf-to-bpf frames), inlined array lookups, jump
 * displacement sizing, W^X mappings and compile errors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "error.h"
#include "interp.h"
#include "jit/jit.h"
#include "maps/map.h"
#include "text/asm.h"

static const struct nbpf_env conf_env = { .helper = nbpf_helper_find_conformance };

/* Assembles, runs on both engines with mem, checks r0 == want on both. */
static void run_both_mem(const char *name, const char *src, const struct nbpf_env *env,
			 uint8_t *mem, size_t len, uint64_t want)
{
	struct nbpf_insn *insns = NULL;
	struct nbpf_jit_image *img = NULL;
	uint8_t *m1 = NULL, *m2 = NULL;
	uint64_t ri = 0, rj;
	uint32_t n = 0;
	int err;

	err = nbpf_asm(src, strlen(src), &insns, &n);
	CHECK_MSG(err == 0, "%s: asm: %s", name, ncclbpf_errmsg());
	if (err)
		return;
	m1 = malloc(len + 1);
	m2 = malloc(len + 1);
	if (len) {
		memcpy(m1, mem, len);
		memcpy(m2, mem, len);
	}
	err = nbpf_interp_run(insns, n, env, m1, len, NULL, 1u << 20, &ri);
	CHECK_MSG(err == 0, "%s: interp: %s", name, ncclbpf_errmsg());
	err = nbpf_jit_compile(insns, n, env, &img);
	CHECK_MSG(err == 0, "%s: jit: %s", name, ncclbpf_errmsg());
	if (!err) {
		rj = img->func(m2, len);
		CHECK_MSG(rj == want, "%s: jit r0 0x%llx, want 0x%llx", name, (unsigned long long)rj,
			  (unsigned long long)want);
		CHECK_MSG(ri == rj, "%s: interp r0 0x%llx != jit r0 0x%llx", name,
			  (unsigned long long)ri, (unsigned long long)rj);
		CHECK_MSG(!len || !memcmp(m1, m2, len), "%s: memory differs between engines", name);
		nbpf_jit_free(img);
	}
	free(m1);
	free(m2);
	free(insns);
}

static void run_both(const char *name, const char *src, uint64_t want)
{
	run_both_mem(name, src, &conf_env, NULL, 0, want);
}

/* Division and modulo where x86 would trap, with r0/r3 (rax/rdx) involved. */
static void test_divmod(void)
{
	run_both("div64 by zero reg", "mov %r0, 7\nmov %r1, 0\ndiv %r0, %r1\nexit", 0);
	run_both("mod64 by zero reg", "mov %r0, 7\nmov %r1, 0\nmod %r0, %r1\nexit", 7);
	run_both("div32 by zero imm", "lddw %r0, 0x1ffffffff\ndiv32 %r0, 0\nexit", 0);
	run_both("mod32 by zero zext", "lddw %r0, 0x100000007\nmov32 %r1, 0\nmod32 %r0, %r1\nexit", 7);
	run_both("mod32 by zero imm zext", "lddw %r0, 0x100000007\nmod32 %r0, 0\nexit", 7);
	run_both("mod64 by zero imm", "lddw %r0, 0x100000007\nmod %r0, 0\nexit", 0x100000007ull);
	run_both("div dst rdx", "mov %r3, 100\nmov %r0, 5\ndiv %r3, %r0\nmov %r0, %r3\nexit", 20);
	run_both("div src rdx keeps rax",
		 "mov %r0, 9\nmov %r3, 4\nmov %r5, 100\ndiv %r5, %r3\nadd %r0, %r5\nexit", 34);
	run_both("mod dst rax src rdx", "mov %r0, 100\nmov %r3, 7\nmod %r0, %r3\nadd %r0, %r3\nexit", 9);
	run_both("div rax by rax", "mov %r0, 77\ndiv %r0, %r0\nexit", 1);
	run_both("div64 high", "lddw %r0, 0xffffffffffffffff\nmov %r1, 3\ndiv %r0, %r1\nexit",
		 0x5555555555555555ull);
	run_both("div64 imm -1 unsigned", "mov %r0, -1\ndiv %r0, -1\nexit", 1);
	run_both("div32 imm high", "mov32 %r0, -1\ndiv32 %r0, -2\nexit", 1);
	run_both("sdiv64 intmin/-1 reg",
		 "lddw %r0, 0x8000000000000000\nmov %r1, -1\nsdiv %r0, %r1\nexit",
		 0x8000000000000000ull);
	run_both("smod64 intmin/-1 reg",
		 "lddw %r0, 0x8000000000000000\nmov %r1, -1\nsmod %r0, %r1\nexit", 0);
	run_both("sdiv64 intmin/-1 imm", "lddw %r0, 0x8000000000000000\nsdiv %r0, -1\nexit",
		 0x8000000000000000ull);
	run_both("sdiv32 intmin/-1 reg",
		 "lddw %r0, 0xffffffff80000000\nmov32 %r1, -1\nsdiv32 %r0, %r1\nexit", 0x80000000ull);
	run_both("smod32 intmin/-1 imm", "mov32 %r0, 0x80000000\nsmod32 %r0, -1\nexit", 0);
	run_both("sdiv32 by zero", "mov32 %r0, -5\nmov32 %r2, 0\nsdiv32 %r0, %r2\nexit", 0);
	run_both("smod32 by zero zext", "mov %r0, -5\nmov32 %r2, 0\nsmod32 %r0, %r2\nexit", 0xfffffffbull);
	run_both("smod64 by zero", "mov %r0, -5\nmov %r2, 0\nsmod %r0, %r2\nexit", (uint64_t)-5);
	run_both("sdiv64 neg", "mov %r0, -100\nmov %r4, 7\nsdiv %r0, %r4\nexit", (uint64_t)-14);
	run_both("smod64 neg", "mov %r0, -100\nsmod %r0, 7\nexit", (uint64_t)-2);
	run_both("smod32 neg by neg", "mov32 %r0, -100\nsmod32 %r0, -7\nexit", 0xfffffffeull);
}

/* Shift counts live in cl, which is BPF r4. */
static void test_shifts(void)
{
	run_both("lsh dst r4", "mov %r4, 3\nmov %r2, 4\nlsh %r4, %r2\nmov %r0, %r4\nexit", 48);
	run_both("lsh src r4", "mov %r4, 4\nmov %r2, 3\nlsh %r2, %r4\nmov %r0, %r2\nadd %r0, %r4\nexit", 52);
	run_both("lsh r4 by r4", "mov %r4, 4\nlsh %r4, %r4\nmov %r0, %r4\nexit", 64);
	run_both("rsh keeps r4", "mov %r4, 100\nmov %r0, 256\nmov %r1, 4\nrsh %r0, %r1\nadd %r0, %r4\nexit", 116);
	run_both("lsh64 masked", "mov %r0, 1\nmov %r1, 65\nlsh %r0, %r1\nexit", 2);
	run_both("lsh32 masked zext", "lddw %r0, 0xffffffff00000001\nmov %r1, 32\nlsh32 %r0, %r1\nexit", 1);
	run_both("rsh32 zero count zext", "lddw %r0, 0xffffffff00000005\nrsh32 %r0, 0\nexit", 5);
	run_both("arsh32", "mov32 %r0, 0x80000000\narsh32 %r0, 4\nexit", 0xf8000000ull);
	run_both("arsh64 reg r4 dst",
		 "lddw %r4, 0x8000000000000000\nmov %r3, 63\narsh %r4, %r3\nmov %r0, %r4\nexit",
		 (uint64_t)-1);
	run_both("arsh32 reg high", "mov32 %r0, 0x80000000\nmov %r5, 33\narsh32 %r0, %r5\nexit", 0xc0000000ull);
}

static size_t code_size_of(const char *src)
{
	struct nbpf_insn *insns = NULL;
	struct nbpf_jit_image *img = NULL;
	uint32_t n = 0;
	size_t sz = 0;

	if (nbpf_asm(src, strlen(src), &insns, &n) == 0 && nbpf_jit_compile(insns, n, &conf_env, &img) == 0) {
		sz = img->code_size;
		nbpf_jit_free(img);
	}
	free(insns);
	return sz;
}

static size_t shift_code_size(void)
{
	return code_size_of("mov %r0, %r1\nrsh %r0, %r2\nexit");
}

/*
 * mov r, a; shift r by a register: one shlx/shrx/sarx reading a (the mov
 * goes).  Every shift, both widths, with the count in another register, in
 * r itself (then it is a's value) and in a; then the bytes saved.
 */
static void test_mov_shift(void)
{
	static const char *const op[3] = { "lsh", "rsh", "arsh" };
	const uint64_t a = 0x8123456789abcdefull;
	char src[256], name[64];

	for (int o = 0; o < 3; o++) {
		for (int w = 0; w < 2; w++) {
			for (int c = 0; c < 3; c++) {
				/* r1 = a, r2 = 13; a count from r0 or r1 is a (low bits) */
				const char *cnt = c == 0 ? "%r2" : c == 1 ? "%r0" : "%r1";
				unsigned k = c == 0 ? 13 : (unsigned)a;
				uint64_t want;

				if (w) {
					k &= 63;
					want = o == 0 ? a << k : o == 1 ? a >> k : (uint64_t)((int64_t)a >> k);
				} else {
					uint32_t l = (uint32_t)a;

					k &= 31;
					want = o == 0 ? (uint32_t)(l << k) : o == 1 ? l >> k
						       : (uint32_t)((int32_t)l >> k);
				}
				snprintf(src, sizeof(src),
					 "lddw %%r1, 0x%llx\nmov %%r2, 13\nmov %%r0, %%r1\n%s%s %%r0, %s\nexit",
					 (unsigned long long)a, op[o], w ? "" : "32", cnt);
				snprintf(name, sizeof(name), "mov+%s%s by %s", op[o], w ? "" : "32", cnt);
				run_both(name, src, want);
			}
		}
	}
	__builtin_cpu_init();
	if (__builtin_cpu_supports("bmi2") && !getenv("NBPF_JIT_NO_BMI2")) {
		size_t fused = code_size_of("mov %r0, %r1\nrsh %r0, %r2\nexit");
		size_t apart = code_size_of("rsh %r1, %r2\nmov %r0, %r1\nexit");

		CHECK_MSG(fused + 3 == apart, "mov+shrx %zu bytes, shrx then mov %zu", fused, apart);
	}
}

/* NBPF_JIT_NO_BMI2 really selects the cl sequence (the *_nobmi2 tests rely on it). */
static void test_bmi2_switch(void)
{
	const char *old = getenv("NBPF_JIT_NO_BMI2");
	char *saved = old ? strdup(old) : NULL;
	size_t with, without;

	unsetenv("NBPF_JIT_NO_BMI2");
	with = shift_code_size();
	setenv("NBPF_JIT_NO_BMI2", "1", 1);
	without = shift_code_size();
	if (saved)
		setenv("NBPF_JIT_NO_BMI2", saved, 1);
	else
		unsetenv("NBPF_JIT_NO_BMI2");
	free(saved);
	CHECK(with > 0 && without > 0);
	__builtin_cpu_init();
	if (__builtin_cpu_supports("bmi2"))
		CHECK_MSG(with < without, "shrx %zu bytes, cl sequence %zu", with, without);
	else
		CHECK(with == without);
}

static void test_alu_misc(void)
{
	run_both("movsx8 64", "mov %r1, 0x80\nmovsx864 %r0, %r1\nexit", (uint64_t)-128);
	run_both("movsx16 32", "mov %r1, 0x8000\nmovsx1632 %r0, %r1\nexit", 0xffff8000ull);
	run_both("movsx32 64", "mov32 %r1, 0x80000000\nmovsx3264 %r0, %r1\nexit", 0xffffffff80000000ull);
	run_both("movsx8 sil", "mov %r2, 0x1ff\nmovsx864 %r0, %r2\nexit", (uint64_t)-1);
	run_both("be16", "lddw %r0, 0x1122334455667788\nbe16 %r0\nexit", 0x8877);
	run_both("be32", "lddw %r0, 0x1122334455667788\nbe32 %r0\nexit", 0x88776655ull);
	run_both("be64", "lddw %r0, 0x1122334455667788\nbe64 %r0\nexit", 0x8877665544332211ull);
	run_both("le16", "lddw %r0, 0x1122334455667788\nle16 %r0\nexit", 0x7788);
	run_both("le32", "lddw %r0, 0x1122334455667788\nle32 %r0\nexit", 0x55667788ull);
	run_both("bswap16 r9", "lddw %r9, 0x1122334455667788\nbswap16 %r9\nmov %r0, %r9\nexit", 0x8877);
	run_both("bswap32 r8", "lddw %r8, 0x1122334455667788\nbswap32 %r8\nmov %r0, %r8\nexit", 0x88776655ull);
	run_both("neg32 zext", "mov %r0, 1\nneg32 %r0\nexit", 0xffffffffull);
	run_both("mul32 zext", "mov %r0, -1\nmul32 %r0, 2\nexit", 0xfffffffeull);
	run_both("mul64 imm big", "mov %r0, 3\nmul %r0, 0x12345678\nexit", 0x369d0368ull);
	run_both("mul64 by 31", "lddw %r7, 0x123456789abcdef\nmul %r7, 31\nmov %r0, %r7\nexit",
		 0x123456789abcdefull * 31);
	run_both("mul32 by 33 zext", "lddw %r0, 0xffffffff89abcdef\nmul32 %r0, 33\nexit",
		 (uint32_t)(0x89abcdefu * 33u));
	run_both("mul64 by 8 r9", "mov %r9, -3\nmul %r9, 8\nmov %r0, %r9\nexit", (uint64_t)-24);
	run_both("mul32 by 0x7fffffff", "mov %r0, -1\nmul32 %r0, 0x7fffffff\nexit",
		 (uint32_t)(0xffffffffu * 0x7fffffffu));
	run_both("mul64 by 3 r3", "mov %r3, 5\nmul %r3, 3\nmov %r0, %r3\nexit", 15);
	run_both("and 0xff sil", "lddw %r2, 0xffffffffffff1ff\nand %r2, 0xff\nmov %r0, %r2\nexit", 0xff);
	run_both("and32 0xffff r8", "mov %r8, -2\nand32 %r8, 0xffff\nmov %r0, %r8\nexit", 0xfffe);
	run_both("rsh64 reg r13 by r14",
		 "lddw %r7, 0x8000000000000000\nmov %r8, 63\nrsh %r7, %r8\nmov %r0, %r7\nexit", 1);
	run_both("lsh32 reg r15 zext", "lddw %r9, 0xffffffff00000003\nmov %r1, 32\nlsh32 %r9, %r1\nmov %r0, %r9\nexit", 3);
	run_both("mov32 zext", "mov %r0, -1\nmov32 %r0, %r0\nexit", 0xffffffffull);
	run_both("and64 imm sext", "mov %r0, -1\nand %r0, -16\nexit", (uint64_t)-16);
	run_both("r10 as source", "mov %r1, %r10\nstb [%r1-1], 9\nldxb %r0, [%r10-1]\nexit", 9);
	run_both("jmp32 signed", "mov %r1, -1\nlddw %r2, 0x7fffffff00000000\njslt32 %r1, %r2, +1\nexit\nmov %r0, 5\nexit", 5);
	run_both("jset imm", "mov %r1, 0x100\nmov %r0, 0\njset %r1, 0x100, +1\nexit\nmov %r0, 1\nexit", 1);
	run_both("gotol", "mov %r0, 1\nja32 +1\nmov %r0, 2\nexit", 1);
}

/* Loads, stores and atomics, including the cmpxchg loop that borrows rax. */
static void test_memory(void)
{
	uint8_t mem[32];

	for (size_t i = 0; i < sizeof(mem); i++)
		mem[i] = (uint8_t)(0x80 + i);
	run_both_mem("ldxsb", "ldxsb %r0, [%r1+1]\nexit", &conf_env, mem, sizeof(mem), (uint64_t)(int8_t)0x81);
	run_both_mem("ldxsh", "ldxsh %r0, [%r1+2]\nexit", &conf_env, mem, sizeof(mem), (uint64_t)(int16_t)0x8382);
	run_both_mem("ldxsw", "ldxsw %r0, [%r1+4]\nexit", &conf_env, mem, sizeof(mem),
		     (uint64_t)(int32_t)0x87868584);
	run_both_mem("stb from sil", "mov %r2, 0x1234\nstxb [%r1+3], %r2\nldxw %r0, [%r1+0]\nexit",
		     &conf_env, mem, sizeof(mem), 0x34828180ull);
	run_both_mem("sth imm", "sth [%r1+6], 0x5566\nldxh %r0, [%r1+6]\nexit", &conf_env, mem, sizeof(mem), 0x5566);
	run_both_mem("stdw imm sext", "stdw [%r1+8], -2\nldxdw %r0, [%r1+8]\nexit", &conf_env, mem,
		     sizeof(mem), (uint64_t)-2);
	run_both("stack r7 base",
		 "mov %r7, %r10\nstdw [%r7-8], 11\nmov %r8, %r10\nldxdw %r0, [%r8-8]\nexit", 11);
	run_both("lock fetch or src r0",
		 "stdw [%r10-8], 0x0f\nmov %r0, 0xf0\nlock fetch or [%r10-8], %r0\nldxdw %r1, [%r10-8]\n"
		 "lsh %r0, 16\nor %r0, %r1\nexit", 0x0f00ffull);
	run_both("lock fetch and32 keeps r0",
		 "stw [%r10-4], 0x0ff\nmov %r0, 7\nmov %r2, 0x0f0\nlock fetch and32 [%r10-4], %r2\n"
		 "ldxw %r1, [%r10-4]\nlsh %r2, 8\nor %r2, %r1\nlsh %r0, 32\nor %r0, %r2\nexit",
		 0x70000fff0ull);
	run_both("lock fetch xor dst r0",
		 "mov %r0, %r10\nadd %r0, -8\nstdw [%r0+0], 6\nmov %r3, 3\nlock fetch xor [%r0+0], %r3\n"
		 "ldxdw %r0, [%r10-8]\nlsh %r0, 8\nor %r0, %r3\nexit", 0x506ull);
	run_both("lock fetch add32 zext",
		 "stw [%r10-4], 5\nlddw %r1, 0xffffffff00000001\nlock fetch add32 [%r10-4], %r1\n"
		 "ldxw %r0, [%r10-4]\nlsh %r0, 32\nor %r0, %r1\nexit", 0x600000005ull);
	run_both("xchg32",
		 "stw [%r10-4], 5\nlddw %r1, 0xffffffff00000009\nlock xchg32 [%r10-4], %r1\n"
		 "ldxw %r0, [%r10-4]\nlsh %r0, 32\nor %r0, %r1\nexit", 0x900000005ull);
	run_both("cmpxchg32 zext on success",
		 "stw [%r10-4], 5\nlddw %r0, 0xffffffff00000005\nmov %r1, 8\nlock cmpxchg32 [%r10-4], %r1\n"
		 "ldxw %r2, [%r10-4]\nlsh %r2, 32\nor %r0, %r2\nexit", 0x800000005ull);
	run_both("cmpxchg64 fail",
		 "stdw [%r10-8], 5\nmov %r0, 4\nmov %r1, 8\nlock cmpxchg [%r10-8], %r1\n"
		 "ldxdw %r2, [%r10-8]\nlsh %r2, 8\nor %r0, %r2\nexit", 0x505ull);
	run_both("lock add/or/and/xor",
		 "stdw [%r10-8], 1\nmov %r1, 6\nlock add [%r10-8], %r1\nlock or [%r10-8], %r1\n"
		 "mov %r1, 5\nlock and [%r10-8], %r1\nmov %r1, 0x30\nlock xor32 [%r10-8], %r1\n"
		 "ldxdw %r0, [%r10-8]\nexit", 0x35);
}

/* Helpers, callx, unwind, and bpf-to-bpf frames. */
static void test_calls(void)
{
	run_both("unwind zero stops", "mov %r0, 3\nmov %r1, 0\ncall 5\nmov %r0, 2\nexit", 0);
	run_both("unwind nonzero continues", "mov %r1, 9\ncall 5\nadd %r0, 1\nexit", 10);
	run_both("callx", "mov %r1, 7\nmov %r4, 5\ncall %r4\nexit", 7);
	run_both("callx unwind", "mov %r1, 0\nmov %r9, 5\ncall %r9\nmov %r0, 2\nexit", 0);
	run_both("helper keeps r6-r9",
		 "mov %r6, 1\nmov %r7, 2\nmov %r8, 3\nmov %r9, 4\nmov %r1, 1\ncall 5\n"
		 "mov %r0, %r6\nadd %r0, %r7\nadd %r0, %r8\nadd %r0, %r9\nexit", 10);
	run_both("local call frames",
		 "stdw [%r10-8], 100\nmov %r6, 1\nmov %r1, 5\ncall local f\nldxdw %r1, [%r10-8]\n"
		 "add %r0, %r1\nadd %r0, %r6\nexit\n"
		 "f:\nstdw [%r10-8], 1000\nmov %r6, 77\nmov %r0, %r1\nldxdw %r2, [%r10-8]\nadd %r0, %r2\nexit",
		 1106);
	run_both("nested local calls",
		 "mov %r1, 1\ncall local a\nadd %r0, 1\nexit\n"
		 "a:\nmov %r6, %r1\nadd %r1, 10\ncall local b\nadd %r0, %r6\nexit\n"
		 "b:\nmov %r0, %r1\nmul %r0, 2\nmov %r6, 0\nexit", 24);
	run_both("unwind from subprogram",
		 "mov %r6, 5\ncall local f\nmov %r0, 1\nexit\nf:\nmov %r1, 0\ncall 5\nmov %r0, 9\nexit", 0);
	{
		/* Unbounded recursion: the interpreter faults, the JIT stops with 0. */
		struct nbpf_insn *insns = NULL;
		struct nbpf_jit_image *img = NULL;
		const char *src = "call local f\nexit\nf:\nstdw [%r10-8], 1\ncall local f\nexit";
		uint32_t n = 0;

		CHECK(nbpf_asm(src, strlen(src), &insns, &n) == 0);
		CHECK(nbpf_jit_compile(insns, n, &conf_env, &img) == 0);
		if (img)
			CHECK_EQ_U64(img->func(NULL, 0), 0);
		nbpf_jit_free(img);
		free(insns);
	}
}

/* ---- array lookups: a local array map double ------------------------------ */

struct fake_array {
	struct ncclbpf_map map;
	uint8_t data[5 * 24];
};

static void *fake_lookup(struct ncclbpf_map *map, const void *key)
{
	uint32_t k;

	memcpy(&k, key, 4);
	return k < map->max_entries ? map->array_base + (size_t)k * map->value_stride : NULL;
}

static const struct nbpf_map_ops fake_ops = { .lookup_elem = fake_lookup };

static uint64_t fake_lookup_helper(uint64_t map, uint64_t key, uint64_t a, uint64_t b, uint64_t c)
{
	struct ncclbpf_map *m = (struct ncclbpf_map *)(uintptr_t)map;

	return (uintptr_t)m->ops->lookup_elem(m, (const void *)(uintptr_t)key);
}

static const struct nbpf_helper fake_helpers[] = {
	{ .id = 1, .name = "map_lookup_elem", .fn = fake_lookup_helper,
	  .ret = NBPF_RET_PTR_TO_MAP_VALUE_OR_NULL },
};

static const struct nbpf_helper *fake_find(int32_t id)
{
	if (id == 1)
		return &fake_helpers[0];
	return nbpf_helper_find_conformance(id);
}

static void test_array_inline(void)
{
	static struct fake_array fa;
	struct ncclbpf_map *maps[1] = { &fa.map };
	struct nbpf_env env = { .maps = maps, .n_maps = 1, .helper = fake_find };
	char src[512];

	fa.map.ops = &fake_ops;
	fa.map.type = NCCLBPF_MAP_ARRAY;
	fa.map.key_size = 4;
	fa.map.value_size = 20;
	fa.map.value_stride = 24; /* not a power of two: the imul path */
	fa.map.max_entries = 5;
	fa.map.array_base = fa.data;
	for (size_t i = 0; i < sizeof(fa.data); i++)
		fa.data[i] = (uint8_t)i;
	for (int key = 0; key <= 6; key++) {
		uint64_t want = key < 5 ? (uint64_t)(key * 24 + 4) : 0xdead;

		/* Inlined: lddw r1 and the call in one basic block. */
		snprintf(src, sizeof(src),
			 "stw [%%r10-4], %d\nlddw %%r1, map[0]\nmov %%r2, %%r10\nadd %%r2, -4\ncall 1\n"
			 "jeq %%r0, 0, +2\nldxb %%r0, [%%r0+4]\nexit\nmov %%r0, 0xdead\nexit", key);
		run_both_mem("array lookup inlined", src, &env, NULL, 0, want);
		/* Not inlined: a jump target between the lddw and the call. */
		snprintf(src, sizeof(src),
			 "stw [%%r10-4], %d\nlddw %%r1, map[0]\nja +0\nmov %%r2, %%r10\nadd %%r2, -4\ncall 1\n"
			 "jeq %%r0, 0, +2\nldxb %%r0, [%%r0+4]\nexit\nmov %%r0, 0xdead\nexit", key);
		run_both_mem("array lookup via helper", src, &env, NULL, 0, want);
	}
	/* Power-of-two stride: the shift path; a huge key must not wrap. */
	fa.map.value_stride = 8;
	fa.map.max_entries = 15;
	run_both_mem("array lookup shift", "stw [%r10-4], 3\nlddw %r1, map[0]\nmov %r2, %r10\nadd %r2, -4\n"
		     "call 1\nldxb %r0, [%r0+1]\nexit", &env, NULL, 0, 25);
	run_both_mem("array lookup huge key", "stw [%r10-4], -1\nlddw %r1, map[0]\nmov %r2, %r10\n"
		     "add %r2, -4\ncall 1\nexit", &env, NULL, 0, 0);
}

/* Compiles src and counts the callee-saved registers its prologue pushes. */
static int count_pushes(const char *src, const struct nbpf_env *env)
{
	struct nbpf_insn *insns = NULL;
	struct nbpf_jit_image *img = NULL;
	uint32_t n = 0;
	int ret = -1;

	if (nbpf_asm(src, strlen(src), &insns, &n) == 0 && nbpf_jit_compile(insns, n, env, &img) == 0) {
		const uint8_t *c = img->mem;
		size_t k = 0;

		ret = 0;
		/* push rbx (53), push r12-r15 (41 54..57) */
		while (k < img->code_size && (c[k] == 0x53 || (c[k] == 0x41 && k + 1 < img->code_size &&
							       c[k + 1] >= 0x54 && c[k + 1] <= 0x57))) {
			k += c[k] == 0x53 ? 1 : 2;
			ret++;
		}
		nbpf_jit_free(img);
	}
	free(insns);
	return ret;
}

/*
 * r6-r9 in caller-saved registers when the program makes no real call,
 * and the lookup's lddw and null test folded away: each shape against the
 * interpreter, on keys inside and outside the map, with the context in r6.
 */
static void test_inline_regs(void)
{
	static struct fake_array fa;
	struct ncclbpf_map *maps[1] = { &fa.map };
	struct nbpf_env env = { .maps = maps, .n_maps = 1, .helper = fake_find };
	static const char *const shapes[] = {
		/* jeq fused, register key forwarded, ctx kept in r6 */
		"mov %r6, %r1\nldxw %r2, [%r6+0]\nstxw [%r10-4], %r2\nlddw %r1, map[0]\n"
		"mov %r2, %r10\nadd %r2, -4\ncall 1\njeq %r0, 0, +3\nldxw %r1, [%r0+4]\n"
		"stxw [%r6+8], %r1\nmov %r0, 1\nexit",
		/* jne fused: the non-null side jumps */
		"mov %r6, %r1\nldxw %r2, [%r6+0]\nstxw [%r10-4], %r2\nlddw %r1, map[0]\n"
		"mov %r2, %r10\nadd %r2, -4\ncall 1\njne %r0, 0, +2\nmov %r0, 7\nexit\n"
		"ldxw %r1, [%r0+4]\nstxw [%r6+8], %r1\nmov %r0, 1\nexit",
		/* key read back through r2 (not forwarded), r6-r9 and r3-r5 all live */
		"mov %r6, %r1\nmov %r7, 3\nmov %r8, 4\nmov %r9, 5\nmov %r3, 1\nmov %r4, 2\n"
		"mov %r5, 6\nldxw %r2, [%r6+0]\nstxw [%r10-4], %r2\nlddw %r1, map[0]\n"
		"mov %r2, %r10\nadd %r2, -4\nldxw %r0, [%r2+0]\nstxw [%r6+12], %r0\ncall 1\n"
		"jeq %r0, 0, +2\nldxw %r1, [%r0+4]\nstxw [%r6+8], %r1\nmov %r0, %r7\nadd %r0, %r8\n"
		"add %r0, %r9\nexit",
		/* r1 read between the lddw and the call: the lddw stays */
		"mov %r6, %r1\nldxw %r2, [%r6+0]\nstxw [%r10-4], %r2\nlddw %r1, map[0]\n"
		"mov %r7, %r1\nmov %r2, %r10\nadd %r2, -4\ncall 1\njeq %r0, 0, +3\n"
		"ldxw %r1, [%r0+4]\nstxw [%r6+8], %r1\nmov %r0, 1\nexit",
		/* a real helper call (a jump target splits lddw and call): r6 in rbx */
		"mov %r6, %r1\nldxw %r2, [%r6+0]\nstxw [%r10-4], %r2\nlddw %r1, map[0]\nja +0\n"
		"mov %r2, %r10\nadd %r2, -4\ncall 1\njeq %r0, 0, +3\nldxw %r1, [%r0+4]\n"
		"stxw [%r6+8], %r1\nmov %r0, 1\nexit",
	};
	char name[64];

	fa.map.ops = &fake_ops;
	fa.map.type = NCCLBPF_MAP_ARRAY;
	fa.map.key_size = 4;
	fa.map.value_size = 20;
	fa.map.value_stride = 24;
	fa.map.max_entries = 5;
	fa.map.array_base = fa.data;
	for (size_t i = 0; i < sizeof(fa.data); i++)
		fa.data[i] = (uint8_t)(i * 7);
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		for (uint32_t key = 0; key <= 6; key++) {
			uint8_t ctx[16] = { 0 };
			uint64_t want = s == 2 ? 12 : key < 5 ? 1 : s == 1 ? 7 : 0;

			memcpy(ctx, &key, 4);
			snprintf(name, sizeof(name), "inline shape %zu key %u", s, key);
			run_both_mem(name, shapes[s], &env, ctx, sizeof(ctx), want);
		}
	}
	/* Only registers that must survive a real call, or find no spare, are saved. */
	CHECK_EQ_U64(count_pushes(shapes[0], &env), 0);
	CHECK_EQ_U64(count_pushes(shapes[1], &env), 0);
	CHECK_EQ_U64(count_pushes(shapes[2], &env), 3); /* r2-r5 named: r6 in x86 r10 only */
	CHECK_EQ_U64(count_pushes(shapes[4], &env), 1); /* a real call: r6 in rbx */
	/* A division needs x86 r10 as scratch: with r2-r5 named, r6 goes back to rbx. */
	{
		static const char div[] = "mov %r6, %r1\nmov %r2, 1\nmov %r3, 2\nmov %r4, 3\n"
					  "mov %r5, 4\nmov %r0, 100\ndiv %r0, %r3\nadd %r0, %r6\n"
					  "sub %r0, %r6\nadd %r0, %r2\nadd %r0, %r4\nadd %r0, %r5\nexit";

		CHECK_EQ_U64(count_pushes(div, &env), 1);
		run_both_mem("r6 with division", div, &env, NULL, 0, 58);
		static const char r10[] = "mov %r6, %r1\nmov %r2, 1\nmov %r3, 2\nmov %r4, 3\n"
					  "mov %r5, 4\nmov %r0, %r6\nsub %r0, %r1\nadd %r0, %r2\n"
					  "add %r0, %r3\nadd %r0, %r4\nadd %r0, %r5\nexit";

		CHECK_EQ_U64(count_pushes(r10, &env), 0);
		run_both_mem("r6 in r10", r10, &env, NULL, 0, 10);
	}
	/* A constant key folds the null test both ways. */
	run_both_mem("inline const in", "stw [%r10-4], 2\nlddw %r1, map[0]\nmov %r2, %r10\n"
		     "add %r2, -4\ncall 1\njeq %r0, 0, +2\nldxb %r0, [%r0+4]\nexit\nmov %r0, 0xdead\nexit",
		     &env, NULL, 0, (2 * 24 + 4) * 7 & 0xff);
	run_both_mem("inline const out", "stw [%r10-4], 9\nlddw %r1, map[0]\nmov %r2, %r10\n"
		     "add %r2, -4\ncall 1\njeq %r0, 0, +2\nldxb %r0, [%r0+4]\nexit\nmov %r0, 0xdead\nexit",
		     &env, NULL, 0, 0xdead);
	run_both_mem("inline const jne in", "stw [%r10-4], 1\nlddw %r1, map[0]\nmov %r2, %r10\n"
		     "add %r2, -4\ncall 1\njne %r0, 0, +2\nmov %r0, 0xdead\nexit\nldxb %r0, [%r0+4]\nexit",
		     &env, NULL, 0, (24 + 4) * 7 & 0xff);
	run_both_mem("inline const jne out", "stw [%r10-4], 5\nlddw %r1, map[0]\nmov %r2, %r10\n"
		     "add %r2, -4\ncall 1\njne %r0, 0, +2\nmov %r0, 0xdead\nexit\nldxb %r0, [%r0+4]\nexit",
		     &env, NULL, 0, 0xdead);
}

/* mul by 2^k -+ 1 folded with the add after it (emit_mul_add), both widths. */
static void test_mul_add(void)
{
	static const int32_t mults[] = { 3, 5, 7, 9, 31, 33, 255, 257, 65535, 0x7fffffff };
	char src[256], name[64];

	for (size_t m = 0; m < sizeof(mults) / sizeof(mults[0]); m++) {
		uint64_t h = 0x9e3779b97f4a7c15ull, x = 0xfffffffffffffff9ull; /* x = -7 */
		uint64_t want64 = h * (uint64_t)mults[m] + x;
		uint64_t want32 = (uint32_t)((uint32_t)h * (uint32_t)mults[m] + (uint32_t)x);

		snprintf(src, sizeof(src), "lddw %%r0, 0x%llx\nmov %%r4, -7\nmul %%r0, %d\n"
			 "add %%r0, %%r4\nexit", (unsigned long long)h, mults[m]);
		snprintf(name, sizeof(name), "mul-add64 %d", mults[m]);
		run_both(name, src, want64);
		snprintf(src, sizeof(src), "lddw %%r0, 0x%llx\nmov %%r4, -7\nmul32 %%r0, %d\n"
			 "add32 %%r0, %%r4\nexit", (unsigned long long)h, mults[m]);
		snprintf(name, sizeof(name), "mul-add32 %d", mults[m]);
		run_both(name, src, want32);
		/* The add is a jump target: not folded, same answer. */
		snprintf(src, sizeof(src), "lddw %%r0, 0x%llx\nmov %%r4, -7\nmul %%r0, %d\n"
			 "ja +0\nadd %%r0, %%r4\nexit", (unsigned long long)h, mults[m]);
		snprintf(name, sizeof(name), "mul-ja-add64 %d", mults[m]);
		run_both(name, src, want64);
	}
	/* Adding the register itself, and r6 (in a spare register) as the addend. */
	run_both("mul-add self", "mov %r0, 11\nmul %r0, 31\nadd %r0, %r0\nexit", 11 * 31 * 2);
	run_both("mul-add r6", "mov %r6, 5\nmov %r0, 11\nmul %r0, 33\nadd %r0, %r6\nexit",
		 11 * 33 + 5);
}

/* Runs src on the interpreter and checks the JIT agrees (no fixed expectation). */
static void run_same(const char *name, const char *src)
{
	struct nbpf_insn *insns = NULL;
	uint64_t ri = 0;
	uint32_t n = 0;

	if (nbpf_asm(src, strlen(src), &insns, &n) || nbpf_interp_run(insns, n, &conf_env, NULL, 0,
								 NULL, 1u << 20, &ri)) {
		CHECK_MSG(0, "%s: %s", name, ncclbpf_errmsg());
		free(insns);
		return;
	}
	free(insns);
	run_both(name, src, ri);
}

/*
 * Flag-reusing jumps (mark_no_test) and the lsh/rsh 32 pair (zext_pair):
 * every op, both ALU and jump widths, values whose low 32 bits are zero
 * while the high ones are not (where reusing a 64-bit op's ZF for a
 * 32-bit compare would be wrong), and and 0xff (movzx, no flags).
 */
static void test_flag_reuse(void)
{
	static const char *const ops[] = { "add", "sub", "and", "or", "xor" };
	static const char *const operands[] = { "0", "-1", "0x100", "%r3", "%r4" };
	char src[512], name[96];

	for (int o = 0; o < 5; o++)
		for (int a32 = 0; a32 < 2; a32++)
			for (int j32 = 0; j32 < 2; j32++)
				for (int q = 0; q < 5; q++)
					for (int ne = 0; ne < 2; ne++) {
						snprintf(src, sizeof(src),
							 "lddw %%r2, 0x100000000\nlddw %%r3, 0x100000000\n"
							 "mov %%r4, 0\nmov %%r0, 7\n%s%s %%r2, %s\n"
							 "%s%s %%r2, 0, +1\nmov %%r0, 9\nexit",
							 ops[o], a32 ? "32" : "", operands[q],
							 ne ? "jne" : "jeq", j32 ? "32" : "");
						snprintf(name, sizeof(name), "flags %s%s %s j%s%s",
							 ops[o], a32 ? "32" : "", operands[q],
							 ne ? "ne" : "eq", j32 ? "32" : "");
						run_same(name, src);
					}
	run_same("flags and 0xff", "lddw %r2, 0x100\nmov %r0, 7\nmov %r5, 0\nadd %r5, 0\n"
		 "and %r2, 0xff\njeq %r2, 0, +1\nmov %r0, 9\nexit");
	run_same("flags and 0xffff", "lddw %r2, 0x10000\nmov %r0, 7\nmov %r5, 1\nadd %r5, 0\n"
		 "and %r2, 0xffff\njne %r2, 0, +1\nmov %r0, 9\nexit");
	run_same("zext", "lddw %r2, 0xdeadbeef87654321\nlsh %r2, 32\nrsh %r2, 32\nmov %r0, %r2\nexit");
	run_same("zext split", "lddw %r2, 0xdeadbeef87654321\nlsh %r2, 32\nja +0\nrsh %r2, 32\n"
		 "mov %r0, %r2\nexit");
	run_same("zext other reg", "lddw %r2, 0xdeadbeef87654321\nmov %r3, %r2\nlsh %r2, 32\n"
		 "rsh %r3, 32\nmov %r0, %r2\nadd %r0, %r3\nexit");
}

/* `if cc goto +1; r = v` as cmov (cmov_pair): every condition, both widths, both operands. */
static void test_cmov(void)
{
	static const char *const jops[] = { "jeq", "jne", "jgt", "jge", "jlt", "jle", "jset",
					    "jsgt", "jsge", "jslt", "jsle" };
	static const char *const lhs[] = { "0", "8", "-8", "0x100000008" };
	static const char *const movs[] = { "mov %r0, 16", "mov %r0, -1", "mov %r0, %r5",
					    "mov32 %r0, 16", "mov %r2, 3" };
	char src[512], name[96];

	for (int o = 0; o < 11; o++)
		for (int l = 0; l < 4; l++)
			for (int w = 0; w < 2; w++)
				for (int m = 0; m < 5; m++) {
					snprintf(src, sizeof(src),
						 "lddw %%r2, %s\nlddw %%r5, 0x123456789\nlddw %%r0, 0xfeed00000007\n"
						 "%s%s %%r2, 8, +1\n%s\nadd %%r0, %%r2\nexit",
						 lhs[l], jops[o], w ? "32" : "", movs[m]);
					snprintf(name, sizeof(name), "cmov %s%s %s / %s", jops[o],
						 w ? "32" : "", lhs[l], movs[m]);
					run_same(name, src);
				}
	/* Register compare, and the skipped mov also a jump target: no cmov. */
	run_same("cmov reg", "mov %r2, 5\nmov %r3, 9\nmov %r0, 1\njgt %r3, %r2, +1\nmov %r0, 2\nexit");
	run_same("cmov target", "mov %r2, 5\nmov %r0, 1\njgt %r2, 4, +2\njgt %r2, 9, +1\n"
		 "mov %r0, 2\nexit");
}

/*
 * clang's BPF ladder for ncclbpf_log2() (find_log2 in the JIT): registers
 * X T B K0 R K C as in its comment, the input loaded into X by `pre`,
 * `post` run right after, then r0 = a checksum of R, K, K0 and C (what the
 * fused form must leave in them).  bit16 lets a test break one constant.
 */
static void log2_src(char *buf, size_t len, const int *rg, const char *pre, const char *post,
		     int bit16)
{
	int x = rg[0], t = rg[1], b = rg[2], k0 = rg[3], r = rg[4], k = rg[5], c = rg[6];

	snprintf(buf, len,
		 "%s\n"
		 "lddw %%r%d, 0x100000000\nmov %%r%d, %%r%d\njgt %%r%d, %%r%d, +2\n"
		 "mov %%r%d, %%r%d\nrsh %%r%d, 32\nmov %%r%d, 1\nlddw %%r%d, 0xffffffff\n"
		 "mov %%r%d, 1\njgt %%r%d, %%r%d, +1\nmov %%r%d, 0\nlsh %%r%d, 5\n"
		 "mov %%r%d, 65536\njgt %%r%d, %%r%d, +1\nor %%r%d, %d\njgt %%r%d, %%r%d, +1\nrsh %%r%d, 16\n"
		 "mov %%r%d, 256\njgt %%r%d, %%r%d, +1\nor %%r%d, 8\njgt %%r%d, %%r%d, +1\nrsh %%r%d, 8\n"
		 "mov %%r%d, 16\njgt %%r%d, %%r%d, +1\nor %%r%d, 4\njgt %%r%d, %%r%d, +1\nrsh %%r%d, 4\n"
		 "mov %%r%d, 4\njgt %%r%d, %%r%d, +1\nadd %%r%d, 2\njgt %%r%d, %%r%d, +1\nrsh %%r%d, 2\n"
		 "jgt %%r%d, 1, +1\nmov %%r%d, 0\nadd %%r%d, %%r%d\n"
		 "%s\n"
		 "mov %%r9, %%r%d\nlsh %%r9, 8\nadd %%r9, %%r%d\nlsh %%r9, 8\nxor %%r9, %%r%d\n"
		 "lsh %%r9, 1\nxor %%r9, %%r%d\nmov %%r0, %%r9\nexit",
		 pre, c, t, x, c, x, t, x, t, b, k0, r, x, k0, r, r,
		 k, k, t, r, bit16, k, t, t,
		 k, k, t, r, k, t, t,
		 k, k, t, r, k, t, t,
		 k, k, t, r, k, t, t,
		 t, b, r, b, post, r, k, k0, c);
}

/*
 * The log2 ladder as bsr: the interpreter's answer for 0, 1, powers of two
 * and their neighbours and pseudo-random values, in the register shapes
 * clang produces (K reusing X, C reusing R) and one with all distinct; and
 * the ladders that must stay branches (a jump into the middle, T or B read
 * afterwards, a changed constant): still equal to the interpreter, and
 * compiled to the long code.
 */
static void test_log2(void)
{
	static const int shapes[][7] = {
		{ 5, 3, 4, 0, 2, 5, 2 }, /* adaptive_channels */
		{ 7, 3, 4, 5, 2, 5, 2 }, /* slo_enforcer */
		{ 1, 2, 3, 4, 5, 6, 7 },
		{ 8, 6, 7, 1, 0, 2, 3 },
	};
	uint64_t vals[4 + 64 * 3 + 200], rnd = 0x9e3779b97f4a7c15ull;
	char src[4096], pre[64], name[96];
	size_t nv = 0, fused, unfused;

	vals[nv++] = 0;
	vals[nv++] = 3;
	vals[nv++] = UINT64_MAX;
	vals[nv++] = (uint64_t)INT64_MAX;
	for (int k = 0; k < 64; k++) {
		vals[nv++] = 1ull << k;
		vals[nv++] = (1ull << k) - 1;
		vals[nv++] = (1ull << k) + 1;
	}
	while (nv < sizeof(vals) / sizeof(vals[0])) {
		rnd ^= rnd << 13;
		rnd ^= rnd >> 7;
		rnd ^= rnd << 17;
		vals[nv++] = rnd >> (rnd & 63); /* every magnitude */
	}
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		const char *post = s == 3 ? "mov %r6, 0\nmov %r7, 0" : s == 2 ? "mov %r2, 0\nmov %r3, 0" :
					    "mov %r3, 0\nmov %r4, 0";

		for (size_t v = 0; v < nv; v++) {
			snprintf(pre, sizeof(pre), "lddw %%r%d, 0x%llx", shapes[s][0],
				 (unsigned long long)vals[v]);
			log2_src(src, sizeof(src), shapes[s], pre, post, 16);
			snprintf(name, sizeof(name), "log2 shape %zu x=0x%llx", s,
				 (unsigned long long)vals[v]);
			run_same(name, src);
		}
	}
	/* Fused: far shorter than the ladder. */
	log2_src(src, sizeof(src), shapes[0], "lddw %r5, 1000", "mov %r3, 0\nmov %r4, 0", 16);
	fused = code_size_of(src);
	run_same("log2 fused", src);
	/* A jump from outside into the middle (to the second step; T, B, R initialised). */
	log2_src(src, sizeof(src), shapes[0], "mov %r0, 0\nmov %r2, 0\nmov %r3, 0\nmov %r4, 0\n"
		 "lddw %r5, 1000\njgt %r5, 7, +13",
		 "mov %r3, 0\nmov %r4, 0", 16);
	unfused = code_size_of(src);
	CHECK_MSG(fused && unfused > fused + 60, "log2 jump into middle: %zu vs fused %zu", unfused, fused);
	run_same("log2 jump into middle", src);
	/* T, then B, read after the ladder: their values are not computed, no fusion. */
	log2_src(src, sizeof(src), shapes[0], "lddw %r5, 1000", "mov %r8, %r3\nmov %r3, 0\nmov %r4, 0\n"
		 "add %r2, %r8", 16);
	unfused = code_size_of(src);
	CHECK_MSG(unfused > fused + 60, "log2 T live: %zu vs fused %zu", unfused, fused);
	run_same("log2 T live", src);
	log2_src(src, sizeof(src), shapes[0], "lddw %r5, 1000", "add %r2, %r4\nmov %r3, 0", 16);
	unfused = code_size_of(src);
	CHECK_MSG(unfused > fused + 60, "log2 B live: %zu vs fused %zu", unfused, fused);
	run_same("log2 B live", src);
	/* One constant off: not log2, so not bsr. */
	log2_src(src, sizeof(src), shapes[0], "lddw %r5, 0x12345", "mov %r3, 0\nmov %r4, 0", 17);
	unfused = code_size_of(src);
	CHECK_MSG(unfused > fused + 60, "log2 other constant: %zu vs fused %zu", unfused, fused);
	run_same("log2 other constant", src);
}

/* Runs src on both engines over a 64-byte block at r1; interpreter's r0 is the expectation. */
static void run_same_mem(const char *name, const char *src)
{
	struct nbpf_insn *insns = NULL;
	uint8_t mem[64] = { 0 }, m0[64] = { 0 };
	uint64_t ri = 0;
	uint32_t n = 0;

	if (nbpf_asm(src, strlen(src), &insns, &n) ||
	    nbpf_interp_run(insns, n, &conf_env, m0, sizeof(m0), NULL, 1u << 20, &ri)) {
		CHECK_MSG(0, "%s: %s", name, ncclbpf_errmsg());
		free(insns);
		return;
	}
	free(insns);
	run_both_mem(name, src, &conf_env, mem, sizeof(mem), ri);
}

/*
 * `r = imm; *(p) = r` as one store of the immediate when r is dead after
 * it (store_imm_pair): r0 at exit, a subprogram's r1-r5 at its exit, reads
 * and branches after the store keep the mov; every width, and a negative
 * 32-bit value into 8 bytes.
 */
static void test_store_imm(void)
{
	static const char *const sizes[] = { "b", "h", "w", "dw" };
	char src[512], name[96];

	for (int z = 0; z < 4; z++)
		for (int w = 0; w < 2; w++) {
			snprintf(src, sizeof(src), "mov%s %%r2, -5\nstx%s [%%r1+8], %%r2\nldxdw %%r0, [%%r1+8]\n"
				 "exit", w ? "32" : "", sizes[z]);
			snprintf(name, sizeof(name), "store-imm read back %s %s", sizes[z], w ? "32" : "64");
			run_same_mem(name, src);
			snprintf(src, sizeof(src), "mov%s %%r2, -5\nstx%s [%%r1+8], %%r2\nmov %%r2, 1\n"
				 "ldxdw %%r0, [%%r1+8]\nexit", w ? "32" : "", sizes[z]);
			snprintf(name, sizeof(name), "store-imm dead %s %s", sizes[z], w ? "32" : "64");
			run_same_mem(name, src);
		}
	run_same_mem("store-imm r0 at exit", "mov %r0, 5\nstxw [%r1+0], %r0\nexit");
	run_same_mem("store-imm read after", "mov %r3, 7\nstxw [%r1+0], %r3\nmov %r0, %r3\nexit");
	run_same_mem("store-imm branch after", "mov %r3, 7\nstxw [%r1+0], %r3\nja +0\nmov %r0, %r3\n"
		     "exit");
	run_same_mem("store-imm base is value", "mov %r3, 0\nadd %r3, %r1\nmov %r4, 9\n"
		     "stxw [%r3+4], %r4\nldxw %r0, [%r1+4]\nexit");
	/* A subprogram's r1 reaches its caller (the fuzzer's convention; the verifier forbids it). */
	run_same_mem("store-imm subprogram", "mov %r6, %r1\ncall local +2\nmov %r0, %r2\nexit\n"
		     "mov %r2, 11\nstxw [%r6+0], %r2\nmov %r0, 0\nexit");
}

/* How many times the byte sequence pat occurs in the code src compiles to (-1: no code). */
static int code_count(const char *src, const uint8_t *pat, size_t len)
{
	struct nbpf_insn *insns = NULL;
	struct nbpf_jit_image *img = NULL;
	uint32_t n = 0;
	int c = -1;

	if (nbpf_asm(src, strlen(src), &insns, &n) == 0 && nbpf_jit_compile(insns, n, &conf_env, &img) == 0) {
		const uint8_t *code = img->mem;

		c = 0;
		for (size_t k = 0; k + len <= img->code_size; k++)
			c += !memcmp(code + k, pat, len);
		nbpf_jit_free(img);
	}
	free(insns);
	return c;
}

/*
 * A goto to a short run ending in exit is a copy of that run (exit_tail):
 * bench/cpu's threshold shape (with an add in the middle arm, so that
 * it is no if/else of stores: test_diamond), three arms each ending in its own
 * `xor eax, eax; ret` instead of a jmp to one shared return.  A run longer
 * than the copy limit, one with a fold in it, and gotol stay jumps; all
 * agree with the interpreter for every arm.
 */
/*
 * Counted loops (v = K0; body; v += S; if v OP K goto body): unrolled when
 * the trip count is small and the body straight-line, kept otherwise; the
 * result is the interpreter's either way.
 */
static void test_counted_loops(void)
{
	char src[512];
	uint64_t h;

	/* bench/cpu's loop16: h = h * 31 + byte i of 0x1122334455667788, 16 trips */
	h = 0;
	for (int i = 0; i < 16; i++)
		h = h * 31 + ((0x1122334455667788ull >> i) & 0xff);
	run_both("loop16", "lddw %r2, 0x1122334455667788\nmov %r0, 0\nmov %r3, 0\n"
		 "mov %r4, %r2\nrsh %r4, %r3\nand %r4, 0xff\nmul %r0, 31\nadd %r0, %r4\n"
		 "add %r3, 1\njlt %r3, 16, -7\nexit", h);
	/* down to zero, a store and a load in the body (the fuzzer's shape) */
	run_both("down jne", "mov %r0, 1\nmov %r9, 5\nstxdw [%r10-8], %r0\nldxdw %r1, [%r10-8]\n"
		 "add %r0, %r1\nsub %r9, 1\njne %r9, 0, -5\nexit", 32);
	/* step 3 to 20 inclusive: 0 3 6 ... 18, then 21 > 20: 7 trips */
	run_both("step 3 jle", "mov %r0, 0\nmov %r9, 0\nadd %r0, 2\nadd %r9, 3\njle %r9, 20, -3\nexit", 14);
	/* signed, from -4 */
	run_both("signed", "mov %r0, 0\nmov %r9, -4\nadd %r0, 1\nadd %r9, 1\njslt %r9, 4, -3\nexit", 8);
	/* the counter written in the body: 5 trips, not the 10 its increment alone gives */
	run_both("counter in body", "mov %r0, 0\nmov %r9, 0\nadd %r9, 1\nadd %r0, 1\nadd %r9, 1\n"
		 "jlt %r9, 10, -4\nexit", 5);
	/* a jump into the body past the counter's start: not a counted loop, one trip left */
	run_both("jump into body", "mov %r0, 0\nmov %r9, 2\nja +2\nmov %r9, 0\nadd %r0, 1\n"
		 "add %r0, 10\nadd %r9, 1\njlt %r9, 3, -4\nexit", 10);
	/* the counter stored and loaded in the body: it stays in its register, increments kept */
	run_both("counter in memory", "mov %r0, 0\nmov %r9, 3\nstxdw [%r10-8], %r9\n"
		 "ldxdw %r1, [%r10-8]\nadd %r0, %r1\nadd %r9, 2\njlt %r9, 12, -5\nexit", 3 + 5 + 7 + 9 + 11);
	/* the counter read by 32- and 64-bit ALU ops: immediates; its final value after */
	run_both("counter as imm", "mov %r0, 0\nmov %r9, -2\nadd32 %r0, %r9\nmov %r1, %r9\n"
		 "mul %r1, %r9\nadd %r0, %r1\nadd %r9, 1\njsle %r9, 3, -6\nadd %r0, %r9\nexit",
		 (uint32_t)(-2 - 1 + 0 + 1 + 2 + 3) + (4 + 1 + 0 + 1 + 4 + 9) + 4);
	/* r0 counts; a byte swap's BE bit is not a register source (it stays a swap) */
	run_both("swap in body", "mov %r1, 0x1234\nmov %r0, 0\nbe16 %r1\nadd %r0, 1\njlt %r0, 3, -3\n"
		 "mov %r0, %r1\nexit", 0x3412);
	/* a one-trip do-while */
	run_both("one trip", "mov %r0, 7\nmov %r9, 9\nadd %r0, 1\nadd %r9, 1\njlt %r9, 5, -3\nexit", 8);
	/*
	 * 1000 loops of 16 trips: unrolled until their copies add 65536
	 * instructions (UNROLL_BUDGET), the rest stay loops; the code stays
	 * within what the budget allows (each copy is 7 four-byte adds).
	 */
	{
		enum { LOOPS = 1000 };
		char *big = malloc(LOOPS * 128 + 64), *p = big;
		size_t sz;

		if (big) {
			p += sprintf(p, "mov %%r0, 0\n");
			for (int l = 0; l < LOOPS; l++)
				p += sprintf(p, "mov %%r9, 0\nadd %%r0, 1\nadd %%r0, 1\nadd %%r0, 1\nadd %%r0, 1\n"
					     "add %%r0, 1\nadd %%r0, 1\nadd %%r0, 1\nadd %%r9, 1\njlt %%r9, 16, -9\n");
			sprintf(p, "exit");
			run_both("unroll budget", big, LOOPS * 16 * 7);
			sz = code_size_of(big);
			CHECK_MSG(sz > 0 && sz <= 65536 * 4 + LOOPS * 40, "%d loops: %zu bytes of code", LOOPS, sz);
			free(big);
		}
	}
	/* UNROLL_TRIPS (16) trips are unrolled, 17 are not: more code, no loop */
	for (int k = 16; k <= 17; k++) {
		snprintf(src, sizeof(src), "mov %%r0, 0\nmov %%r9, 0\nadd %%r0, %%r9\nadd %%r9, 1\n"
			 "jlt %%r9, %d, -3\nexit", k);
		run_both(k == 16 ? "16 trips" : "17 trips", src, (uint64_t)(k * (k - 1) / 2));
	}
	{
		size_t s16 = code_size_of("mov %r0, 0\nmov %r9, 0\nadd %r0, %r9\nadd %r9, 1\njlt %r9, 16, -3\nexit");
		size_t s17 = code_size_of("mov %r0, 0\nmov %r9, 0\nadd %r0, %r9\nadd %r9, 1\njlt %r9, 17, -3\nexit");

		CHECK_MSG(s16 > 2 * s17, "16 trips: %zu bytes, 17 trips (a loop): %zu", s16, s17);
	}
}

static void test_exit_tail(void)
{
	static const uint8_t ret0[] = { 0x31, 0xc0, 0xc3 }; /* xor eax, eax; ret */
	static const char *const sizes[] = { "0x100", "0x20000", "0x800000" };
	static const char body[] =
		"ldxdw %%r2, [%%r1+8]\n"
		"jge %%r2, 65536, mid\n"
		"stw [%%r1+24], 1\nstw [%%r1+28], 0\n%s out\n"
		"mid:\njge %%r2, 4194304, big\n"
		"stw [%%r1+24], 1\nstw [%%r1+28], 1\nadd %%r4, 1\n%s out\n"
		"big:\nstw [%%r1+24], 0\nstw [%%r1+28], 2\n"
		"out:\n%smov %%r0, 0\nexit";
	char src[1024], name[96];

	for (int g = 0; g < 2; g++)
		for (int extra = 0; extra < 5; extra++) {
			char pre[128] = "";

			for (int x = 0; x < extra; x++)
				strcat(pre, "add %r3, 1\n");
			snprintf(src, sizeof(src), body, g ? "ja32" : "ja", g ? "ja32" : "ja", pre);
			for (int s = 0; s < 3; s++) {
				char full[1200];

				snprintf(full, sizeof(full), "lddw %%r2, %s\nstxdw [%%r1+8], %%r2\n%s", sizes[s],
					 src);
				snprintf(name, sizeof(name), "exit tail %s+%d %s", g ? "ja32" : "ja", extra,
					 sizes[s]);
				run_same_mem(name, full);
			}
			/* `mov r0, 0; exit` plus up to two more: copied; three more: the limit */
			CHECK_MSG(code_count(src, ret0, sizeof(ret0)) == (extra <= 2 ? 3 : 1),
				  "exit tail %s+%d: %d returns", g ? "ja32" : "ja", extra,
				  code_count(src, ret0, sizeof(ret0)));
		}
	/* A tail in a subprogram, and one holding a folded pair (`r = imm; *p = r`): still right. */
	run_same_mem("exit tail subprogram", "mov %r6, %r1\ncall local +2\nldxw %r0, [%r6+0]\nexit\n"
		     "jgt %r1, 5, +2\nstw [%r6+0], 3\nja +1\nstw [%r6+0], 4\nmov %r0, 1\nexit");
	run_same_mem("exit tail folded", "ldxw %r2, [%r1+0]\njgt %r2, 5, +2\nstw [%r1+0], 3\nja +1\n"
		     "stw [%r1+0], 4\nmov %r3, 7\nstxw [%r1+4], %r3\nmov %r0, 0\nexit");
}

/* cmovs in the code: a REX.W prefix, then 0f 40..4f (the programs keep such bytes out of immediates). */
static int cmov_count(const char *src)
{
	int c = 0;

	for (uint8_t rex = 0x48; rex <= 0x4f; rex++)
		for (uint8_t cc = 0x40; cc <= 0x4f; cc++)
			c += code_count(src, (const uint8_t[]){ rex, 0x0f, cc }, 3);
	return c;
}

/*
 * An if/else whose arms write the same places (diamond): no branch, one
 * cmov per place, for bench/cpu's two stores of immediates, clang's
 * `r = 1; *p = r` against `r = 0; *p = r; r = 2` (bench/peers' threshold),
 * register values, 32-bit movs and the stack; each on both sides of the
 * compare against the interpreter.  The shapes that must stay branches
 * (another jump into an arm, different places, stores in another order,
 * a written base, a register left holding another written one's old
 * value, an arm past the limit) keep no cmov and still agree.
 */
static void test_diamond(void)
{
	static const struct {
		const char *name, *body;
		int cmovs;
	} cases[] = {
		{ "stores", "jge %r2, 4194304, +3\nstw [%r1+24], 1\nstw [%r1+28], 1\nja +2\n"
			    "stw [%r1+24], 0\nstw [%r1+28], 2\n", 2 },
		{ "clang", "jgt %r2, 4194303, +3\nmov %r3, 1\nstxw [%r1+24], %r3\nja +3\n"
			   "mov %r3, 0\nstxw [%r1+24], %r3\nmov %r3, 2\nstxw [%r1+28], %r3\n", 2 },
		{ "regs", "jset32 %r2, 1, +3\nmov32 %r3, %r5\nmov %r4, -1\nja +2\nmov %r4, %r5\n"
			  "mov32 %r3, 7\nstxdw [%r1+8], %r3\nstxdw [%r1+16], %r4\n", 2 },
		{ "same value", "jlt %r2, 5, +3\nstdw [%r1+24], -3\nmov %r3, 4\nja +2\nmov %r3, 6\n"
				"stdw [%r1+24], -3\nstxdw [%r1+16], %r3\n", 1 },
		{ "stack", "jsgt %r2, 5, +2\nsth [%r10-8], 3\nja +1\nsth [%r10-8], 9\n"
			   "ldxh %r3, [%r10-8]\nstxh [%r1+40], %r3\n", 1 },
		{ "swap", "jgt %r2, 5, +3\nmov %r3, %r4\nmov %r4, %r3\nja +2\nmov %r3, 1\nmov %r4, 2\n"
			  "stxdw [%r1+8], %r3\nstxdw [%r1+16], %r4\n", 0 },
		{ "other places", "jgt %r2, 5, +2\nstw [%r1+24], 1\nja +1\nstw [%r1+28], 1\n", 0 },
		{ "store order", "jgt %r2, 5, +3\nstw [%r1+24], 1\nstw [%r1+28], 1\nja +2\n"
				 "stw [%r1+28], 2\nstw [%r1+24], 2\n", 0 },
		{ "written base", "jgt %r2, 5, +3\nmov %r3, %r1\nstw [%r3+24], 1\nja +2\nmov %r3, %r1\n"
				  "stw [%r3+24], 2\n", 0 },
		{ "entered", "jeq %r2, 10, +3\njgt %r2, 5, +2\nstw [%r1+24], 1\nja +1\n"
			     "stw [%r1+24], 2\n", 0 },
		{ "entered arm", "jeq %r2, 10, +2\njgt %r2, 5, +3\nstw [%r1+24], 1\nstw [%r1+28], 1\n"
				 "ja +2\nstw [%r1+24], 2\nstw [%r1+28], 2\n", 0 },
		{ "long", "jgt %r2, 5, +5\nstb [%r1+24], 1\nstb [%r1+25], 1\nstb [%r1+26], 1\n"
			  "stb [%r1+27], 1\nstb [%r1+28], 1\nja +5\nstb [%r1+24], 2\nstb [%r1+25], 2\n"
			  "stb [%r1+26], 2\nstb [%r1+27], 2\nstb [%r1+28], 2\n", 0 },
	};
	static const char *const r2s[] = { "0", "1", "6", "10", "0x400000", "0xffffffff00000002" };
	char src[1024], name[96];

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		snprintf(src, sizeof(src), "mov %%r4, 3\nmov %%r5, 0x55\n%smov %%r0, 0\nexit", cases[c].body);
		CHECK_MSG(cmov_count(src) == cases[c].cmovs, "diamond %s: %d cmovs, want %d", cases[c].name,
			  cmov_count(src), cases[c].cmovs);
		for (size_t v = 0; v < sizeof(r2s) / sizeof(r2s[0]); v++) {
			snprintf(src, sizeof(src), "lddw %%r2, %s\nmov %%r4, 3\nmov %%r5, 0x55\n%s"
				 "ldxdw %%r0, [%%r1+24]\nexit", r2s[v], cases[c].body);
			snprintf(name, sizeof(name), "diamond %s r2=%s", cases[c].name, r2s[v]);
			run_same_mem(name, src);
		}
	}
}

/* Jumps of every reach: short, long, and ones that shrink across passes. */
static void test_jump_sizes(void)
{
	size_t cap = 64 * 1024, len = 0;
	char *src = malloc(cap);

	/* A forward conditional over 200 adds, then a backward loop over them. */
	len += (size_t)snprintf(src + len, cap - len, "mov %%r0, 0\nmov %%r1, 3\nloop:\njeq %%r1, 0, done\n");
	for (int i = 0; i < 200; i++)
		len += (size_t)snprintf(src + len, cap - len, "add %%r0, 1\n");
	len += (size_t)snprintf(src + len, cap - len, "sub %%r1, 1\nja loop\ndone:\nexit\n");
	run_both("long jumps both ways", src, 600);
	/* Chains of jumps each just around the rel8 limit. */
	len = 0;
	len += (size_t)snprintf(src + len, cap - len, "mov %%r0, 0\n");
	for (int k = 0; k < 20; k++) {
		len += (size_t)snprintf(src + len, cap - len, "jeq %%r0, 1000, +%d\n", 30 + k);
		for (int i = 0; i < 30 + k; i++)
			len += (size_t)snprintf(src + len, cap - len, "add %%r0, 1\n");
	}
	len += (size_t)snprintf(src + len, cap - len, "exit\n");
	run_both("jumps near rel8 limit", src, 20 * 30 + 190);
	free(src);
}

static int image_is_rx(const void *addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int ok = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && (uintptr_t)addr >= lo &&
		    (uintptr_t)addr < hi)
			ok = !strcmp(perms, "r-xp");
	}
	fclose(f);
	return ok;
}

static void test_image_and_errors(void)
{
	struct nbpf_insn noop[2] = {
		{ .code = NBPF_ALU64 | NBPF_MOV | NBPF_K, .dst = 0, .imm = 0 },
		{ .code = NBPF_OP_EXIT },
	};
	struct nbpf_insn bad_jump[2] = {
		{ .code = NBPF_JMP | NBPF_JEQ | NBPF_K, .dst = 0, .off = 5 },
		{ .code = NBPF_OP_EXIT },
	};
	struct nbpf_insn bad_op[2] = { { .code = 0xff }, { .code = NBPF_OP_EXIT } };
	struct nbpf_insn half_lddw[1] = { { .code = NBPF_OP_LDDW, .imm = 1 } };
	struct nbpf_insn bad_helper[2] = { { .code = NBPF_OP_CALL, .imm = 99999 }, { .code = NBPF_OP_EXIT } };
	struct nbpf_insn bad_map[3] = {
		{ .code = NBPF_OP_LDDW, .dst = 1, .src = NBPF_PSEUDO_MAP_IDX, .imm = 3 }, { 0 },
		{ .code = NBPF_OP_EXIT },
	};
	struct nbpf_jit_image *img = NULL;

	CHECK(nbpf_jit_compile(noop, 2, &conf_env, &img) == 0);
	if (img) {
		CHECK(img->code_size > 0 && img->code_size <= img->mem_size);
		CHECK(image_is_rx(img->mem));
		CHECK_EQ_U64(img->func(NULL, 0), 0);
		/* mov r0, 0; exit needs no frame: xor eax, eax; ret */
		CHECK(img->code_size <= 8);
	}
	nbpf_jit_free(img);
	nbpf_jit_free(NULL);
	img = (void *)1;
	CHECK(nbpf_jit_compile(bad_jump, 2, &conf_env, &img) == -EINVAL && img == NULL);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "out of range");
	CHECK(nbpf_jit_compile(bad_op, 2, &conf_env, &img) == -EINVAL);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "unknown");
	CHECK(nbpf_jit_compile(half_lddw, 1, &conf_env, &img) == -EINVAL);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "lddw");
	CHECK(nbpf_jit_compile(bad_helper, 2, &conf_env, &img) == -EINVAL);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "helper 99999");
	CHECK(nbpf_jit_compile(bad_map, 3, &conf_env, &img) == -EINVAL);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "map 3");
	CHECK(nbpf_jit_compile(noop, 0, &conf_env, &img) == -EINVAL);
}

/*
 * Every program's code lands near the runtime's text, not only the first:
 * a fixed placement hint sent the second and later programs gigabytes away
 * (slower indirect calls from the host, helpers through movabs).
 */
static void test_placement(void)
{
	enum { N = 40 };
	static const char src[] = "mov r0, 7\nexit\n";
	struct nbpf_jit_image *img[N] = { 0 };
	uintptr_t text = (uintptr_t)&nbpf_jit_compile;
	struct nbpf_insn *insns = NULL;
	uint32_t n = 0;
	int far = 0;

	CHECK(nbpf_asm(src, strlen(src), &insns, &n) == 0);
	for (int i = 0; i < N && insns; i++) {
		uintptr_t at;

		CHECK(nbpf_jit_compile(insns, n, &conf_env, &img[i]) == 0);
		if (!img[i])
			continue;
		at = (uintptr_t)img[i]->func;
		far += (at > text ? at - text : text - at) > (UINT64_C(2) << 30);
		CHECK(img[i]->func(NULL, 0) == 7);
	}
	CHECK_MSG(far == 0, "%d of %d programs placed beyond rel32 reach of the runtime", far, N);
	for (int i = 0; i < N; i++)
		nbpf_jit_free(img[i]);
	free(insns);
}

int main(void)
{
	test_divmod();
	test_shifts();
	test_bmi2_switch();
	test_mov_shift();
	test_alu_misc();
	test_memory();
	test_calls();
	test_array_inline();
	test_inline_regs();
	test_mul_add();
	test_flag_reuse();
	test_cmov();
	test_log2();
	test_store_imm();
	test_exit_tail();
	test_counted_loops();
	test_diamond();
	test_jump_sizes();
	test_image_and_errors();
	test_placement();
	return check_summary("test_jit");
}
