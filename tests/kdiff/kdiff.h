/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kdiff.h - kernel-differential fuzzing of the verifier (docs/verifier.md,
 * "Kernel-differential fuzzing").
 *
 * A generated program is verified by ours against kd_hook, a contract that
 * mirrors the part of the kernel's `struct __sk_buff` a socket filter may
 * touch, with the maps of kd_map_descs; the same program, its map
 * references rewritten to kernel map descriptors of the same shapes, is
 * loaded into the running kernel as a BPF_PROG_TYPE_SOCKET_FILTER (never
 * attached).  Every program ours accepts also runs on the checking
 * interpreter and on the JIT with the same inputs.  The verdicts are
 * classified (enum kd_class); a failure or gap is shrunk to a minimal
 * program and written as a case file (tests/kdiff/cases) whose expectation
 * is the kernel's verdict.
 *
 *   kdiff_gen.c, kdiff_frags.c   the program generator
 *   kdiff_kernel.c  the kernel side: maps, loads, the log's message
 *   kdiff_oracle.c  the contract, our verdict, the classification, the rows
 *   kdiff_run.c     the runs of accepted programs
 *   kdiff_twin.c    exactly equivalent rewrites (the kernel twin, gap causes)
 *   kdiff_shrink.c  program edits and the shrinker
 *   kdiff_case.c    case files
 */
#ifndef NCCLBPF_KDIFF_H
#define NCCLBPF_KDIFF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "insn.h"
#include "ncclbpf/runtime.h"

#define KD_MAX_INSNS 1024
#define KD_CTX_SIZE  72   /* the part of struct __sk_buff kd_hook declares */

/* The map set every program may name (lddw map index). */
enum {
	KD_MAP_ARR,    /* array, key 4, value 16, 4 entries */
	KD_MAP_DATA,   /* array, key 4, value 64, 1 entry: global data (lddw map_value) */
	KD_MAP_RODATA, /* the same shape, 32 bytes, read-only for programs */
	KD_MAP_HASH,   /* hash, key 8, value 16, 16 entries */
	KD_MAP_RB,     /* ring buffer, 4096 bytes */
	KD_NMAPS,
};

struct kd_map_desc {
	const char *name;
	enum ncclbpf_map_type type;
	uint32_t key_size, value_size, max_entries;
	bool readonly_prog;
};

extern const struct kd_map_desc kd_map_descs[KD_NMAPS];
/* The contract the generated programs are verified against (a socket filter's __sk_buff). */
extern const struct ncclbpf_hook_desc kd_hook;

struct kd_prog {
	struct nbpf_insn insns[KD_MAX_INSNS];
	uint32_t n;
};

/* ---- the generator (kdiff_gen.c) ---- */

/* Fragment kinds, counted per run so a summary shows what was generated. */
enum kd_frag {
	KD_F_ALU, KD_F_INDEX, KD_F_SPILL, KD_F_LINK, KD_F_PTR, KD_F_LOOKUP, KD_F_RINGBUF,
	KD_F_LOOP, KD_F_CALL, KD_F_BRANCH, KD_F_GLOBAL, KD_F_CTX, KD_F_DIV, KD_F_JOIN,
	KD_F_HELPER, KD_F_CALLER_STACK, KD_NFRAGS,
};

extern const char *const kd_frag_names[KD_NFRAGS];

/* Writes the program for seed into p; frags (may be NULL) counts fragments by kind. */
void kd_generate(uint64_t seed, struct kd_prog *p, uint64_t frags[KD_NFRAGS]);

/* ---- the kernel (kdiff_kernel.c) ---- */

struct kd_kernel {
	int fd[KD_NMAPS];
	char *log;         /* verifier log buffer */
	uint32_t log_size;
};

enum kd_kmode {
	KD_K_PRIV,   /* root: the most permissive kernel verdict */
	KD_K_STRICT, /* CAP_BPF without CAP_PERFMON/CAP_SYS_ADMIN: no pointer leaks, no uninit stack */
};

/*
 * Creates the kernel maps.  Returns 0, or a negative errno when this
 * process cannot use the kernel's BPF (not root, bpf() disabled): callers
 * skip then.
 */
int kd_kernel_open(struct kd_kernel *k);
void kd_kernel_close(struct kd_kernel *k);

/*
 * Loads p as a socket filter (and closes it): 1 accepted, 0 refused (msg,
 * msg_len > 0: the verifier's message), negative errno on a failure that
 * is no verdict.
 */
int kd_kernel_verdict(struct kd_kernel *k, const struct kd_prog *p, enum kd_kmode mode, char *msg,
		      size_t msg_len);

/* ---- our side and classification (kdiff_oracle.c) ---- */

enum kd_class {
	KD_C_BOTH_ACCEPT,
	KD_C_BOTH_REFUSE,
	KD_C_EXPLAINED,   /* we accept, the kernel refuses, a contract-difference row says why */
	KD_C_GAP,         /* the kernel (even without pointer leaks) accepts, we refuse */
	KD_C_GAP_PRIV,    /* only the privileged kernel accepts (leaks, uninitialised stack) */
	KD_C_FAIL_ACCEPT, /* we accept, the kernel refuses, nothing explains it */
	KD_C_FAIL_STRICT, /* we accept what the kernel refuses only as a leak or uninit read */
	KD_C_FAIL_RUN,    /* accepted, and the checking interpreter trapped or r0 left its range */
	KD_C_FAIL_JIT,    /* accepted, and the interpreter and the JIT disagree */
	KD_NCLASSES,
};

extern const char *const kd_class_names[KD_NCLASSES];

static inline bool kd_class_is_failure(enum kd_class c)
{
	return c >= KD_C_FAIL_ACCEPT;
}

/* A difference between our contract and the kernel's that makes a refusal of ours safe to accept. */
struct kd_row {
	const char *id;      /* the row's name in docs/verifier.md */
	const char *kmsg;    /* a substring of the kernel's message */
	const char *summary;
};

extern const struct kd_row kd_rows[];
extern const uint32_t kd_n_rows;

struct kd_env {
	struct ncclbpf_map *maps[KD_NMAPS];
	struct kd_kernel kern;
	bool have_kernel;
	uint32_t runs;      /* input sets each accepted program runs on */
};

struct kd_verdict {
	bool ours;                 /* accepted */
	char ours_reason[256];
	uint32_t ours_insn;
	int64_t ret_min, ret_max;  /* r0 range ours proved */
	int kern;                  /* 1 accepted, 0 refused, -1 not asked */
	char kern_msg[256];
	int strict;                /* the strict kernel: 1, 0, -1 not asked */
	char strict_msg[256];
	char run_msg[256];         /* what a failed run did */
	const struct kd_row *row;  /* KD_C_EXPLAINED: which row */
	const char *gap_cause;     /* KD_C_GAP*: the rewrite whose twin we accept, or NULL */
	enum kd_class cls;
};

/* Our maps (and the kernel's when want_kernel and available). */
int kd_env_open(struct kd_env *e, bool want_kernel);
void kd_env_close(struct kd_env *e);
/* A fresh map i (a ring buffer after a trapped run may hold a record reserved forever). */
int kd_env_map_renew(struct kd_env *e, int i);

/* Our verdict on p into v (ours, ours_reason, ours_insn, ret_min, ret_max). */
void kd_verify_ours(struct kd_env *e, const struct kd_prog *p, struct kd_verdict *v);
/*
 * Runs an accepted program on e->runs input sets: the checking interpreter
 * (a trap or r0 outside [ret_min, ret_max] fails), then, with jit, the
 * interpreter and the JIT from the same inputs (r0, the context, the array
 * and hash maps and the ring buffer's records must agree).  0 or
 * KD_C_FAIL_RUN / KD_C_FAIL_JIT with v->run_msg set.  The JIT runs natively:
 * only programs the kernel accepts (or a row explains) may meet it, since
 * an unsafe one the checker misses (a callee writing into a live caller's
 * frame) could overwrite this process's own stack.
 */
int kd_run_checks(struct kd_env *e, const struct kd_prog *p, uint64_t seed, bool jit,
		  struct kd_verdict *v);

/*
 * The row explaining the kernel's refusal (in mode, with message kmsg) of
 * a program we accept: a row whose message it carries, or the kernel
 * twin's row when the kernel accepts the twin (or the row of the twin's
 * refusal).
 */
const struct kd_row *kd_row_for(struct kd_env *e, const struct kd_prog *p, enum kd_kmode mode,
			       const char *kmsg);

/* Everything for one program; the class is v->cls. */
void kd_classify(struct kd_env *e, const struct kd_prog *p, uint64_t seed, struct kd_verdict *v);

/*
 * A class and the message that names what differs ("key"): the kernel's
 * message for a refusal of the kernel, our reason for a gap, the run's
 * message for a failed run, each with numbers and registers blanked so
 * that one cause is one key.
 */
void kd_verdict_key(const struct kd_verdict *v, char *key, size_t len);

/* ---- program edits and the shrinker (kdiff_shrink.c) ---- */

/*
 * Removes cnt slots at idx, re-aiming every jump and call across them
 * (a jump into the removed range lands where it ended).  -EINVAL when a
 * removal would split an lddw or leave a jump out of the program.
 */
int kd_prog_delete(struct kd_prog *p, uint32_t idx, uint32_t cnt);

/* Replaces slot idx (not an lddw) by cnt slots, re-aiming every jump and call across it. */
int kd_prog_replace(struct kd_prog *p, uint32_t idx, const struct nbpf_insn *seq, uint32_t cnt);

/* Exact rewrites (kdiff_twin.c), by what they show a verifier. */
enum kd_rewrite {
	KD_RW_SIGN_EXT = 1u << 0, /* sign extensions as shift pairs; copies where the value fits */
	KD_RW_FILL     = 1u << 1, /* a fill of a narrow spill as the spilled register */
	KD_RW_NEG      = 1u << 2, /* NEG as a multiplication by -1 */
	KD_RW_ZEXT     = 1u << 3, /* 32-bit results the kernel loses, zero-extended again */
	KD_RW_CONST    = 1u << 4, /* a comparison with a constant register, with the immediate */
	KD_RW_JSET     = 1u << 5, /* JSET of the bits from k up, as x > 2^k - 1 */
	KD_RW_MUL      = 1u << 6, /* a multiplication by a negative constant, as by -K then NEG */
	KD_RW_COPY     = 1u << 7, /* extensions of one value tied together again */
	KD_RW_IDENT    = 1u << 8, /* x ^= 0, x |= 0, x += 0, x -= 0 as a copy of x into itself */
	/* what the kernel's verifier models less precisely than ours */
	KD_RW_KERNEL   = KD_RW_SIGN_EXT | KD_RW_FILL | KD_RW_NEG | KD_RW_ZEXT | KD_RW_CONST | KD_RW_JSET |
			 KD_RW_COPY | KD_RW_IDENT,
};

/*
 * The twin of p under rewrites (and with shift != 0, every x += v as
 * (x - shift) + (v + shift), so that a pointer's variable part looks
 * non-negative): an exactly equivalent program.  Returns the number of
 * instructions rewritten (0: t is p).
 */
uint32_t kd_twin(const struct kd_prog *p, unsigned rewrites, int32_t shift, struct kd_prog *t);

/*
 * Shrinks p while kd_classify keeps the same class and key; returns the
 * number of classifications spent (at most budget, within about seconds).
 */
uint32_t kd_shrink(struct kd_env *e, struct kd_prog *p, uint64_t seed, const struct kd_verdict *v,
		   uint32_t budget, double seconds);

/* ---- case files (kdiff_case.c) ---- */

struct kd_case {
	struct kd_prog prog;
	uint64_t seed;
	bool kernel_accepts;       /* the expectation */
	char kernel_msg[256];
	char row[64];              /* a contract-difference row: we accept by design */
	bool strict;               /* the verdict is the kernel's without CAP_PERFMON (KD_K_STRICT) */
	char title[600];
};

/* Writes c as assembler text with its header (every slot re-assembles to itself). */
int kd_case_write(FILE *f, const struct kd_case *c);
/* Reads a case file; 0 or a negative errno with a message on stderr. */
int kd_case_read(const char *path, struct kd_case *c);

/* ---- a deterministic random source ---- */

static inline uint64_t kd_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

#endif
