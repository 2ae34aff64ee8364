/*
 * test_kernel_diff.c - the interpreter against the Linux kernel's eBPF.
 *
 * Where the kernel lets us load socket filters and run them with
 * BPF_PROG_TEST_RUN (root, bpf() enabled), every register-and-stack case
 * of tests/interp/cases and a set of random ALU/JMP programs run on both;
 * r0 must agree.  The kernel's retval is 32 bits, so each program runs
 * twice there: as is (low half) and wrapped as "call; rsh r0, 32; exit"
 * (high half).  Programs the kernel's verifier refuses (division by an
 * immediate 0, out-of-range shift immediates, ...) are counted as skipped.
 * Without kernel BPF the test exits 77 (ctest SKIP_RETURN_CODE).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "interp.h"
#include "ncclbpf/runtime.h"
#include "text/asm.h"
#include "text/disasm.h"
#include "text/rawprog.h"

static char vlog[1 << 16];

/* Loads a socket filter; returns the fd or -errno.  verbose keeps the log. */
static int kload(const struct nbpf_insn *insns, uint32_t n, int verbose)
{
	union bpf_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	a.insns = (uint64_t)(uintptr_t)insns;
	a.insn_cnt = n;
	a.license = (uint64_t)(uintptr_t)"GPL";
	if (verbose) {
		a.log_buf = (uint64_t)(uintptr_t)vlog;
		a.log_size = sizeof(vlog);
		a.log_level = 1;
		vlog[0] = '\0';
	}
	fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof(a));
	return fd < 0 ? -errno : fd;
}

static int krun(int fd, uint32_t *ret)
{
	uint8_t pkt[64] = { 0 };
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.test.prog_fd = (uint32_t)fd;
	a.test.data_in = (uint64_t)(uintptr_t)pkt;
	a.test.data_size_in = sizeof(pkt);
	a.test.repeat = 1;
	if (syscall(SYS_bpf, BPF_PROG_TEST_RUN, &a, sizeof(a)))
		return -errno;
	*ret = a.test.retval;
	return 0;
}

/*
 * r0 of insns on the kernel, both halves.  Returns 0, or 1 when the
 * kernel refuses the program (a skip), or -errno on a run failure.
 */
static int kernel_r0(const struct nbpf_insn *insns, uint32_t n, uint64_t *r0)
{
	struct nbpf_insn *w = calloc(n + 3, sizeof(*w));
	uint32_t lo = 0, hi = 0;
	int fd, err = 1;

	if (!w)
		return -ENOMEM;
	fd = kload(insns, n, 0);
	if (fd < 0)
		goto out;
	err = krun(fd, &lo);
	close(fd);
	if (err)
		goto out;
	w[0] = (struct nbpf_insn){ .code = NBPF_OP_CALL, .src = NBPF_PSEUDO_CALL, .imm = 2 };
	w[1] = (struct nbpf_insn){ .code = NBPF_ALU64 | NBPF_RSH | NBPF_K, .imm = 32 };
	w[2] = (struct nbpf_insn){ .code = NBPF_OP_EXIT };
	memcpy(w + 3, insns, n * sizeof(*w));
	fd = kload(w, n + 3, 0);
	if (fd < 0) {
		err = 1;
		goto out;
	}
	err = krun(fd, &hi);
	close(fd);
	*r0 = (uint64_t)hi << 32 | lo;
out:
	free(w);
	return err;
}

static int compare(const struct nbpf_insn *insns, uint32_t n, const char *what, int *skipped)
{
	uint64_t mine = 0, theirs = 0;
	int err = nbpf_interp_run(insns, n, NULL, NULL, 0, NULL, 1u << 20, &mine);
	int k;

	if (err) {
		(*skipped)++;
		return 0;
	}
	k = kernel_r0(insns, n, &theirs);
	if (k == 1) {
		(*skipped)++;
		return 0;
	}
	CHECK_MSG(k == 0, "%s: kernel test run failed: %d", what, k);
	if (k == 0 && mine != theirs) {
		CHECK_MSG(0, "%s: interpreter 0x%" PRIx64 ", kernel 0x%" PRIx64, what, mine, theirs);
		nbpf_disasm_prog(stderr, insns, n, 1, NULL);
		return 0;
	}
	if (k == 0)
		CHECK(1);
	return k == 0;
}

/* Whether a case runs the same on the kernel: no helpers, no ctx or memory block. */
static int portable(const struct nbpf_conf_test *t, const struct nbpf_insn *v, uint32_t n)
{
	if (!t->has_result || t->mem_len)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		if ((v[i].code == NBPF_OP_CALL && v[i].src != NBPF_PSEUDO_CALL) ||
		    v[i].code == NBPF_OP_CALLX)
			return 0;
		/* r1 is the kernel's skb; cases that read it as a number do not port. */
		if ((NBPF_CLASS(v[i].code) == NBPF_LDX && v[i].src == 1) ||
		    ((NBPF_CLASS(v[i].code) == NBPF_ST || NBPF_CLASS(v[i].code) == NBPF_STX) &&
		     v[i].dst == 1))
			return 0;
	}
	return 1;
}

static int run_cases(const char *dir, int *skipped)
{
	struct dirent **ents = NULL;
	int n = scandir(dir, &ents, NULL, alphasort), agreed = 0;

	for (int i = 0; i < n; i++) {
		const char *nm = ents[i]->d_name;
		size_t l = strlen(nm);
		char path[4096];
		struct nbpf_conf_test t;
		struct nbpf_insn *v = NULL;
		uint32_t cnt = 0;

		if (l > 5 && !strcmp(nm + l - 5, ".data")) {
			snprintf(path, sizeof(path), "%s/%s", dir, nm);
			if (!nbpf_conf_load(path, &t)) {
				if (t.asm_text && !nbpf_asm(t.asm_text, strlen(t.asm_text), &v, &cnt) &&
				    portable(&t, v, cnt))
					agreed += compare(v, cnt, nm, skipped);
				free(v);
				nbpf_conf_free(&t);
			}
		}
		free(ents[i]);
	}
	free(ents);
	return agreed;
}

/* ---- random programs ----------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static int32_t rnd_imm(void)
{
	static const int32_t special[] = { 0, 1, -1, 2, 31, 32, 63, INT32_MIN, INT32_MAX, 0xff,
					   0x8000, -0x8000 };

	return rnd() % 3 ? special[rnd() % (sizeof(special) / sizeof(special[0]))] :
			   (int32_t)(uint32_t)rnd();
}

/*
 * A straight-line-ish program over r0..r9: random lddw seeds, then ALU,
 * ALU32, movsx, byte swaps, sign-extending stack reloads and forward
 * conditional jumps, then every register folded into r0.
 */
static uint32_t gen(struct nbpf_insn *p, uint32_t body)
{
	static const uint8_t ops[] = { NBPF_ADD, NBPF_SUB, NBPF_MUL, NBPF_DIV, NBPF_OR, NBPF_AND,
				       NBPF_LSH, NBPF_RSH, NBPF_NEG, NBPF_MOD, NBPF_XOR, NBPF_MOV,
				       NBPF_ARSH };
	static const uint8_t jops[] = { NBPF_JEQ, NBPF_JGT, NBPF_JGE, NBPF_JSET, NBPF_JNE,
					NBPF_JSGT, NBPF_JSGE, NBPF_JLT, NBPF_JLE, NBPF_JSLT,
					NBPF_JSLE };
	uint32_t n = 0;

	for (uint8_t r = 0; r < 10; r++) {
		uint64_t v = rnd();

		if (r == 1)
			continue; /* r1 stays the kernel's ctx until overwritten below */
		p[n++] = (struct nbpf_insn){ .code = NBPF_OP_LDDW, .dst = r, .imm = (int32_t)(uint32_t)v };
		p[n++] = (struct nbpf_insn){ .imm = (int32_t)(uint32_t)(v >> 32) };
	}
	p[n++] = (struct nbpf_insn){ .code = NBPF_ALU64 | NBPF_MOV | NBPF_K, .dst = 1,
				     .imm = rnd_imm() };
	/*
	 * The kernel lets privileged programs read uninitialised stack (its
	 * bytes are whatever was there); a jump over a spill must not expose that.
	 */
	p[n++] = (struct nbpf_insn){ .code = NBPF_STX | NBPF_MEM | NBPF_DW, .dst = NBPF_REG_FP,
				     .src = 9, .off = -8 };
	uint32_t end = n + body;

	while (n < end) {
		uint8_t dst = (uint8_t)(rnd() % 10), src = (uint8_t)(rnd() % 10);
		uint32_t kind = (uint32_t)(rnd() % 16);

		if (kind < 9) {
			uint8_t op = ops[rnd() % sizeof(ops)];
			int is32 = rnd() & 1, x = rnd() & 1;
			int16_t off = 0;
			int32_t imm = x ? 0 : rnd_imm();

			if ((op == NBPF_DIV || op == NBPF_MOD) && (rnd() & 1))
				off = 1;
			if (op == NBPF_MOV && x && (rnd() % 3 == 0))
				off = is32 ? (rnd() & 1 ? 8 : 16) : (int16_t[]){ 8, 16, 32 }[rnd() % 3];
			if (op == NBPF_NEG)
				x = 0, imm = 0;
			/* The kernel refuses what the ISA defines anyway; keep to its subset. */
			if (!x && (op == NBPF_DIV || op == NBPF_MOD) && imm == 0)
				imm = 7;
			if (!x && (op == NBPF_LSH || op == NBPF_RSH || op == NBPF_ARSH))
				imm = (int32_t)((uint32_t)imm % (is32 ? 32 : 64));
			p[n++] = (struct nbpf_insn){ .code = (uint8_t)((is32 ? NBPF_ALU : NBPF_ALU64) |
								       op | (x ? NBPF_X : NBPF_K)),
						     .dst = dst, .src = x ? src : 0, .off = off,
						     .imm = imm };
		} else if (kind < 11) {
			static const int32_t w[] = { 16, 32, 64 };
			static const uint8_t c[] = { NBPF_ALU | NBPF_END | NBPF_TO_LE,
						     NBPF_ALU | NBPF_END | NBPF_TO_BE,
						     NBPF_ALU64 | NBPF_END };

			p[n++] = (struct nbpf_insn){ .code = c[rnd() % 3], .dst = dst,
						     .imm = w[rnd() % 3] };
		} else if (kind < 13 && n + 2 <= end) {
			static const uint8_t sz[] = { NBPF_B, NBPF_H, NBPF_W };
			uint8_t s = sz[rnd() % 3];

			p[n++] = (struct nbpf_insn){ .code = NBPF_STX | NBPF_MEM | NBPF_DW,
						     .dst = NBPF_REG_FP, .src = src, .off = -8 };
			p[n++] = (struct nbpf_insn){ .code = (uint8_t)(NBPF_LDX |
								       (rnd() & 1 ? NBPF_MEMSX : NBPF_MEM) | s),
						     .dst = dst, .src = NBPF_REG_FP,
						     .off = -8 };
		} else if (n + 2 <= end) {
			int is32 = rnd() & 1, x = rnd() & 1;
			uint32_t room = end - n - 1;

			p[n++] = (struct nbpf_insn){ .code = (uint8_t)((is32 ? NBPF_JMP32 : NBPF_JMP) |
								       jops[rnd() % sizeof(jops)] |
								       (x ? NBPF_X : NBPF_K)),
						     .dst = dst, .src = x ? src : 0,
						     .off = (int16_t)(rnd() % (room < 4 ? room + 1 : 4)),
						     .imm = x ? 0 : rnd_imm() };
		}
	}
	/* Fold r1..r9 into r0 so every register's value counts. */
	for (uint8_t r = 1; r < 10; r++) {
		p[n++] = (struct nbpf_insn){ .code = NBPF_ALU64 | NBPF_LSH | NBPF_K, .dst = 0, .imm = 7 };
		p[n++] = (struct nbpf_insn){ .code = NBPF_ALU64 | NBPF_XOR | NBPF_X, .dst = 0, .src = r };
	}
	p[n++] = (struct nbpf_insn){ .code = NBPF_OP_EXIT };
	return n;
}

int main(int argc, char **argv)
{
	struct nbpf_insn probe[2] = { { .code = NBPF_ALU64 | NBPF_MOV | NBPF_K, .imm = 7 },
				      { .code = NBPF_OP_EXIT } };
	const char *scale_env = getenv("NCCLBPF_TEST_SCALE");
	double scale = scale_env ? atof(scale_env) : 1.0;
	int n_random = (int)(300 * (scale > 0 ? scale : 1.0)), skipped = 0, agreed, rnd_agreed = 0;
	uint32_t ret = 0;
	int fd;

	fd = kload(probe, 2, 0);
	if (fd < 0 || krun(fd, &ret) || ret != 7) {
		printf("kernel_diff: kernel BPF unavailable (%s); skipping\n", strerror(fd < 0 ? -fd : EPERM));
		if (fd >= 0)
			close(fd);
		return 77;
	}
	close(fd);

	agreed = run_cases(argc > 1 ? argv[1] : "cases", &skipped);
	printf("kernel_diff: %d interp cases agree with the kernel (%d skipped)\n", agreed, skipped);
	CHECK(agreed >= 30);

	skipped = 0;
	for (int i = 0; i < n_random; i++) {
		struct nbpf_insn p[160];
		uint32_t n = gen(p, 24 + (uint32_t)(rnd() % 40));
		char what[32];

		snprintf(what, sizeof(what), "random program %d", i);
		rnd_agreed += compare(p, n, what, &skipped);
	}
	printf("kernel_diff: %d/%d random programs agree with the kernel (%d refused by it)\n",
	       rnd_agreed, n_random, skipped);
	CHECK(rnd_agreed >= n_random / 2);
	return check_summary("kernel_diff");
}
