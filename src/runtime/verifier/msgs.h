/*
 * msgs.h - every verifier message, in one table (msgs.c) so that the code,
 * the findings and docs/verifier.md agree.  A test checks the doc lists
 * each reason string.
 */
#ifndef NCCLBPF_VERIFIER_MSGS_H
#define NCCLBPF_VERIFIER_MSGS_H

enum vmsg {
	/* structure */
	VM_EMPTY, VM_TOO_LARGE, VM_BAD_OPCODE, VM_BAD_REG, VM_RESERVED, VM_WRITE_FP,
	VM_LDDW_SPLIT, VM_LDDW_PSEUDO, VM_BAD_MAP, VM_JUMP_RANGE, VM_JUMP_LDDW,
	VM_JUMP_SUBPROG, VM_UNREACHABLE, VM_FALL_OFF, VM_BAD_CALL, VM_RECURSION,
	VM_CALL_DEPTH, VM_BAD_SHIFT, VM_UNSUPPORTED,
	/* registers and pointers */
	VM_UNINIT_REG, VM_PTR_ARITH_NULL, VM_PTR_ARITH, VM_PTR_ARITH_UNBOUNDED, VM_PTR_CMP,
	VM_PTR_TO_MAP, VM_PTR_TO_CTX, VM_PTR_RET, VM_PTR_ARG, VM_STACK_ESCAPE,
	/* memory */
	VM_DEREF_SCALAR, VM_NULL_DEREF, VM_DEREF_MAP_PTR, VM_CTX_OOB, VM_CTX_FIELD,
	VM_CTX_RO, VM_CTX_WIDTH, VM_CTX_VAROFF, VM_CTX_ATOMIC, VM_CTX_TYPE, VM_CTX_UNTYPED, VM_MAP_OOB, VM_MAP_UNBOUNDED,
	VM_RODATA_WRITE, VM_STACK_OOB, VM_STACK_UNINIT, VM_STACK_PTR_SPILL, VM_STACK_PTR_FILL,
	VM_STACK_PTR_REST,
	VM_RB_OOB, VM_ATOMIC_ALIGN,
	/* ring buffer references */
	VM_RB_USE_AFTER, VM_RB_LEAK, VM_RB_DOUBLE, VM_RB_NULL, VM_RB_TOO_MANY,
	/* arithmetic */
	VM_DIV_ZERO,
	/* helpers */
	VM_HELPER_UNKNOWN, VM_HELPER_DENIED, VM_HELPER_ARG, VM_HELPER_SIZE, VM_HELPER_MAP_TYPE,
	VM_PRINTK_FMT, VM_PRINTK_CONV, VM_PRINTK_ARGS,
	/* exit */
	VM_R0_UNINIT, VM_RET_RANGE, VM_RET_STACK,
	/* termination and budgets */
	VM_LOOP_INFINITE, VM_BUDGET_INSNS, VM_LOOP_STATES, VM_LOOP_BRANCHES, VM_LOOP_WORK,
	VM_BUDGET_INSNS_PATHS, VM_BUDGET_STATES, VM_BUDGET_BRANCHES, VM_BUDGET_WORK, VM_BUDGET_TIME,
	VM_OOM,
	/* consistency */
	VM_CONSISTENCY,
	VM_COUNT
};

struct vmsg_desc {
	const char *reason;  /* the finding's reason, stable: tests and docs match it */
	const char *meaning; /* one line for docs/verifier.md */
	const char *hint;    /* how to fix it */
};

extern const struct vmsg_desc nbpf_vmsgs[VM_COUNT];

#endif
