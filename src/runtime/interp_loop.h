/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * interp_loop.h - the interpreter's dispatch loop, included twice by
 * interp.c: INTERP_FN is the function's name, INTERP_VERIFIED 1 builds the
 * path for verified programs (no per-run validation, no clearing, no
 * checker, no step budget), 0 the general one.  Two copies rather than a
 * runtime flag so neither pays for the other's checks, and each has its
 * own dispatch table.
 *
 * Dispatch: with GCC or Clang, a threaded jump table (computed goto, one
 * indirect jump at the end of every handler, so the branch predictor
 * learns per-opcode successors); elsewhere one switch on the opcode byte.
 * The common ALU and conditional-jump opcodes have their own handlers with
 * the operation a constant, so the inlined helpers fold to one or two
 * machine instructions; plain loads and stores of each width have their
 * own too; the rest share per-class code.  validate() has proven
 * encodings, registers and jump targets, so the loop checks only what
 * depends on values: call depth, helpers, maps, the budget and, with a
 * checker, memory.
 */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(NBPF_INTERP_SWITCH)
#define IL_THREADED 1
#else
#define IL_THREADED 0
#endif

static int INTERP_FN(const struct nbpf_insn *insns, uint32_t n, const struct nbpf_env *env,
		     void *ctx, uint64_t ctx_len, const struct nbpf_checker *checker,
		     uint64_t max_steps, uint64_t *ret)
{
	uint8_t stack[STACK_TOTAL] __attribute__((aligned(16)));
	struct frame frames[NBPF_MAX_CALL_DEPTH];
	struct run rn = { .checker = checker, .stack = stack, .depth = 0 };
	uint64_t r[NBPF_NREGS];
	uint64_t steps = 0;
	const int host_le = is_host_le();
	const struct nbpf_insn *in;
	uint32_t pc = 0, cur;
	uint8_t code;
	int rc = 0;

	(void)steps;
	/*
	 * A verified program reads no register and no stack byte before
	 * writing it, and was validated when it was prepared: nothing to
	 * check or clear per run.  Anything else starts from zeroes, so runs
	 * are deterministic whatever the program reads.
	 */
#if !INTERP_VERIFIED
	rc = validate(insns, n);
	if (rc)
		return rc;
	memset(r, 0, sizeof(r));
	memset(stack + STACK_TOTAL - NBPF_STACK_SIZE, 0, NBPF_STACK_SIZE);
#endif
	r[1] = (uint64_t)(uintptr_t)ctx;
	r[2] = ctx_len;
	r[NBPF_REG_FP] = (uint64_t)(uintptr_t)(stack + STACK_TOTAL);

#if INTERP_VERIFIED
#define IL_BUDGET() do { } while (0)
#define IL_CHECK(addr, sz, w) do { } while (0)
#else
#define IL_BUDGET()									\
	do {										\
		if (max_steps && ++steps > max_steps)					\
			FAIL(-E2BIG, "insn %u: instruction budget of %" PRIu64 " exhausted", \
			     pc, max_steps);						\
	} while (0)
#define IL_CHECK(addr, sz, w)								\
	do {										\
		if (checker && (rc = check_access(&rn, cur, addr, sz, w)))		\
			goto out;							\
	} while (0)
#endif
#define IL_FETCH() do { IL_BUDGET(); cur = pc; in = &insns[pc++]; code = in->code; } while (0)

#if IL_THREADED
#define OP(label, c) label
#define NEXT() do { IL_FETCH(); goto *table[code]; } while (0)
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Winitializer-overrides"
#else
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
#endif
#define ALU_ENTRIES(OP_)								\
	[NBPF_ALU64 | OP_ | NBPF_K] = &&a64k_##OP_, [NBPF_ALU64 | OP_ | NBPF_X] = &&a64x_##OP_, \
	[NBPF_ALU | OP_ | NBPF_K] = &&a32k_##OP_, [NBPF_ALU | OP_ | NBPF_X] = &&a32x_##OP_,
#define JMP_ENTRIES(OP_)								\
	[NBPF_JMP | OP_ | NBPF_K] = &&j64k_##OP_, [NBPF_JMP | OP_ | NBPF_X] = &&j64x_##OP_, \
	[NBPF_JMP32 | OP_ | NBPF_K] = &&j32k_##OP_, [NBPF_JMP32 | OP_ | NBPF_X] = &&j32x_##OP_,
#define MEM_ENTRIES(SZ)									\
	[NBPF_LDX | NBPF_MEM | SZ] = &&ldx_##SZ, [NBPF_STX | NBPF_MEM | SZ] = &&stx_##SZ, \
	[NBPF_ST | NBPF_MEM | SZ] = &&st_##SZ,
	static const void *const table[256] = {
		[0 ... 255] = &&other,
		ALU_ENTRIES(NBPF_ADD) ALU_ENTRIES(NBPF_SUB) ALU_ENTRIES(NBPF_MUL)
		ALU_ENTRIES(NBPF_DIV) ALU_ENTRIES(NBPF_OR) ALU_ENTRIES(NBPF_AND)
		ALU_ENTRIES(NBPF_LSH) ALU_ENTRIES(NBPF_RSH) ALU_ENTRIES(NBPF_NEG)
		ALU_ENTRIES(NBPF_MOD) ALU_ENTRIES(NBPF_XOR) ALU_ENTRIES(NBPF_MOV)
		ALU_ENTRIES(NBPF_ARSH)
		JMP_ENTRIES(NBPF_JEQ) JMP_ENTRIES(NBPF_JGT) JMP_ENTRIES(NBPF_JGE)
		JMP_ENTRIES(NBPF_JSET) JMP_ENTRIES(NBPF_JNE) JMP_ENTRIES(NBPF_JSGT)
		JMP_ENTRIES(NBPF_JSGE) JMP_ENTRIES(NBPF_JLT) JMP_ENTRIES(NBPF_JLE)
		JMP_ENTRIES(NBPF_JSLT) JMP_ENTRIES(NBPF_JSLE)
		MEM_ENTRIES(NBPF_B) MEM_ENTRIES(NBPF_H) MEM_ENTRIES(NBPF_W) MEM_ENTRIES(NBPF_DW)
		[NBPF_OP_JA] = &&ja, [NBPF_OP_GOTOL] = &&gotol,
		[NBPF_ALU64 | NBPF_END] = &&end64,
		[NBPF_ALU | NBPF_END | NBPF_TO_LE] = &&end32, [NBPF_ALU | NBPF_END | NBPF_TO_BE] = &&end32,
		[NBPF_OP_EXIT] = &&exit_, [NBPF_OP_CALL] = &&call, [NBPF_OP_CALLX] = &&callx,
		[NBPF_OP_LDDW] = &&lddw,
	};
#undef ALU_ENTRIES
#undef JMP_ENTRIES
#undef MEM_ENTRIES
#if defined(__clang__)
#pragma clang diagnostic pop
#else
#pragma GCC diagnostic pop
#endif
#else
#define OP(label, c) case c
#define NEXT() continue
#endif

	for (;;) {
		IL_FETCH();
#if IL_THREADED
		goto *table[code];
#else
		switch (code) {
#endif
#define ALU_CASES(OP_)									\
		OP(a64k_##OP_, NBPF_ALU64 | OP_ | NBPF_K):				\
			(void)alu64(OP_, in->off, &r[in->dst], (uint64_t)(int64_t)in->imm); \
			NEXT();								\
		OP(a64x_##OP_, NBPF_ALU64 | OP_ | NBPF_X):				\
			(void)alu64(OP_, in->off, &r[in->dst], r[in->src]);		\
			NEXT();								\
		OP(a32k_##OP_, NBPF_ALU | OP_ | NBPF_K):				\
			(void)alu32(OP_, in->off, &r[in->dst], (uint32_t)in->imm);	\
			NEXT();								\
		OP(a32x_##OP_, NBPF_ALU | OP_ | NBPF_X):				\
			(void)alu32(OP_, in->off, &r[in->dst], (uint32_t)r[in->src]);	\
			NEXT();
		ALU_CASES(NBPF_ADD) ALU_CASES(NBPF_SUB) ALU_CASES(NBPF_MUL) ALU_CASES(NBPF_DIV)
		ALU_CASES(NBPF_OR) ALU_CASES(NBPF_AND) ALU_CASES(NBPF_LSH) ALU_CASES(NBPF_RSH)
		ALU_CASES(NBPF_NEG) ALU_CASES(NBPF_MOD) ALU_CASES(NBPF_XOR) ALU_CASES(NBPF_MOV)
		ALU_CASES(NBPF_ARSH)
#undef ALU_CASES
#define JMP_CASES(OP_)									\
		OP(j64k_##OP_, NBPF_JMP | OP_ | NBPF_K):				\
			if (nbpf_jmp_taken(OP_, r[in->dst], (uint64_t)(int64_t)in->imm, 0))	\
				pc += (uint32_t)(int32_t)in->off;			\
			NEXT();								\
		OP(j64x_##OP_, NBPF_JMP | OP_ | NBPF_X):				\
			if (nbpf_jmp_taken(OP_, r[in->dst], r[in->src], 0))			\
				pc += (uint32_t)(int32_t)in->off;			\
			NEXT();								\
		OP(j32k_##OP_, NBPF_JMP32 | OP_ | NBPF_K):				\
			if (nbpf_jmp_taken(OP_, r[in->dst], (uint64_t)(int64_t)in->imm, 1))	\
				pc += (uint32_t)(int32_t)in->off;			\
			NEXT();								\
		OP(j32x_##OP_, NBPF_JMP32 | OP_ | NBPF_X):				\
			if (nbpf_jmp_taken(OP_, r[in->dst], r[in->src], 1))			\
				pc += (uint32_t)(int32_t)in->off;			\
			NEXT();
		JMP_CASES(NBPF_JEQ) JMP_CASES(NBPF_JGT) JMP_CASES(NBPF_JGE) JMP_CASES(NBPF_JSET)
		JMP_CASES(NBPF_JNE) JMP_CASES(NBPF_JSGT) JMP_CASES(NBPF_JSGE) JMP_CASES(NBPF_JLT)
		JMP_CASES(NBPF_JLE) JMP_CASES(NBPF_JSLT) JMP_CASES(NBPF_JSLE)
#undef JMP_CASES
		/* Plain loads and stores, one handler per width. */
#define MEM_CASES(SZ, BYTES)								\
		OP(ldx_##SZ, NBPF_LDX | NBPF_MEM | SZ): {				\
			uint64_t addr = r[in->src] + (uint64_t)(int64_t)in->off;	\
			IL_CHECK(addr, BYTES, 0);					\
			r[in->dst] = load(addr, BYTES);					\
			NEXT();								\
		}									\
		OP(stx_##SZ, NBPF_STX | NBPF_MEM | SZ): {				\
			uint64_t addr = r[in->dst] + (uint64_t)(int64_t)in->off;	\
			IL_CHECK(addr, BYTES, 1);					\
			store(addr, BYTES, r[in->src]);					\
			NEXT();								\
		}									\
		OP(st_##SZ, NBPF_ST | NBPF_MEM | SZ): {					\
			uint64_t addr = r[in->dst] + (uint64_t)(int64_t)in->off;	\
			IL_CHECK(addr, BYTES, 1);					\
			store(addr, BYTES, (uint64_t)(int64_t)in->imm);			\
			NEXT();								\
		}
		MEM_CASES(NBPF_B, 1) MEM_CASES(NBPF_H, 2) MEM_CASES(NBPF_W, 4) MEM_CASES(NBPF_DW, 8)
#undef MEM_CASES
		OP(ja, NBPF_OP_JA):
			pc += (uint32_t)(int32_t)in->off;
			NEXT();
		OP(gotol, NBPF_OP_GOTOL):
			pc += (uint32_t)in->imm;
			NEXT();
		OP(end64, NBPF_ALU64 | NBPF_END):
			r[in->dst] = bswap(r[in->dst], in->imm);
			NEXT();
		OP(end32, NBPF_ALU | NBPF_END | NBPF_TO_LE):
#if !IL_THREADED
		case NBPF_ALU | NBPF_END | NBPF_TO_BE:
#endif
			/* to-le on a little-endian host only truncates, to-be swaps. */
			if ((NBPF_SRC(code) == NBPF_TO_BE) == host_le)
				r[in->dst] = bswap(r[in->dst], in->imm);
			else
				r[in->dst] = trunc_width(r[in->dst], in->imm);
			NEXT();
		OP(exit_, NBPF_OP_EXIT):
			if (rn.depth == 0) {
				*ret = r[0];
				goto out;
			}
			rn.depth--;
			memcpy(&r[6], frames[rn.depth].saved, sizeof(frames[0].saved));
			r[NBPF_REG_FP] = frames[rn.depth].fp;
			pc = frames[rn.depth].ret_pc;
			NEXT();
		OP(call, NBPF_OP_CALL):
			if (in->src == NBPF_PSEUDO_CALL) {
				if (rn.depth + 1 >= NBPF_MAX_CALL_DEPTH)
					FAIL(-ELOOP, "insn %u: call depth exceeds %d frames", cur,
					     NBPF_MAX_CALL_DEPTH);
				memcpy(frames[rn.depth].saved, &r[6], sizeof(frames[0].saved));
				frames[rn.depth].fp = r[NBPF_REG_FP];
				frames[rn.depth].ret_pc = pc;
				rn.depth++;
				r[NBPF_REG_FP] = (uint64_t)(uintptr_t)stack + STACK_TOTAL -
						 (uint64_t)rn.depth * NBPF_STACK_SIZE;
#if !INTERP_VERIFIED
				memset((void *)(uintptr_t)(r[NBPF_REG_FP] - NBPF_STACK_SIZE), 0,
				       NBPF_STACK_SIZE);
#endif
				pc += (uint32_t)in->imm;
				NEXT();
			}
			if (in->src != 0)
				FAIL(-ENOTSUP, "insn %u: call with pseudo source %u is not supported", cur,
				     in->src);
#if !IL_THREADED
			__attribute__((fallthrough)); /* a helper call: callx's code */
#endif
		OP(callx, NBPF_OP_CALLX): {
			int32_t id = code == NBPF_OP_CALLX ? (int32_t)r[in->dst] : in->imm;
			const struct nbpf_helper *h = env && env->helper ? env->helper(id) : NULL;
			uint64_t args[5] = { r[1], r[2], r[3], r[4], r[5] };

			if (!h || !h->fn)
				FAIL(-ENOENT, "insn %u: call to unknown helper %d", cur, id);
			r[0] = h->fn(args[0], args[1], args[2], args[3], args[4]);
			if (!INTERP_VERIFIED && checker && checker->helper_ret)
				checker->helper_ret(checker->user, h, args, r[0]);
			if ((h->flags & NBPF_HELPER_UNWIND) && args[0] == 0) {
				*ret = 0;
				goto out;
			}
			NEXT();
		}
		OP(lddw, NBPF_OP_LDDW):
			rc = do_lddw(insns, n, cur, env, &r[in->dst]);
			if (rc)
				goto out;
			pc++;
			NEXT();
#if IL_THREADED
other:
#else
		default:
			break;
		}
#endif

		/* Sign-extending loads and atomics (encodings already validated). */
		{
			uint32_t sz = size_bytes(code);

			if (NBPF_CLASS(code) == NBPF_LDX) {
				uint64_t addr = r[in->src] + (uint64_t)(int64_t)in->off;
				uint64_t v;

				IL_CHECK(addr, sz, 0);
				v = load(addr, sz);
				if (NBPF_MODE(code) == NBPF_MEMSX)
					v = sz == 1 ? (uint64_t)(int64_t)(int8_t)v :
					    sz == 2 ? (uint64_t)(int64_t)(int16_t)v :
						      (uint64_t)(int64_t)(int32_t)v;
				r[in->dst] = v;
				continue;
			}
			uint64_t addr = r[in->dst] + (uint64_t)(int64_t)in->off;

			IL_CHECK(addr, sz, 1);
			if (NBPF_MODE(code) == NBPF_ATOMIC) {
				uint64_t old = atomic_rmw(addr, sz == 8, in->imm, r[in->src], r[0]);

				if (in->imm == NBPF_CMPXCHG)
					r[0] = old;
				else if (in->imm & NBPF_FETCH)
					r[in->src] = old;
				continue;
			}
			store(addr, sz, NBPF_CLASS(code) == NBPF_STX ? r[in->src] :
					(uint64_t)(int64_t)in->imm);
		}
	}
out:
	return rc;
}

#undef IL_BUDGET
#undef IL_CHECK
#undef IL_FETCH
#undef OP
#undef NEXT
#undef IL_THREADED
