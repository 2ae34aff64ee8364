/*
 * helpers.h - helper functions programs may call, with their prototypes.
 *
 * Numbers are the kernel's.  The table (helpers.c) is the only definition:
 * the verifier checks calls against .ret/.args, the interpreter calls .fn,
 * the JIT emits a direct call to .fn.  No helper reads or writes memory the
 * verifier has not proven: every pointer argument has a typed prototype.
 */
#ifndef NCCLBPF_HELPERS_H
#define NCCLBPF_HELPERS_H

#include <stddef.h>
#include <stdint.h>

typedef uint64_t (*nbpf_helper_fn)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

enum nbpf_arg_type {
	NBPF_ARG_NONE = 0,         /* unused argument slot */
	NBPF_ARG_ANYTHING,         /* any initialised scalar */
	NBPF_ARG_CONST_MAP_PTR,    /* a map from lddw */
	NBPF_ARG_PTR_TO_MAP_KEY,   /* readable, initialised, key_size bytes */
	NBPF_ARG_PTR_TO_MAP_VALUE, /* readable, initialised, value_size bytes */
	NBPF_ARG_PTR_TO_MEM,       /* readable, initialised; size in the next arg */
	NBPF_ARG_PTR_TO_RO_STR,    /* like PTR_TO_MEM (format strings) */
	NBPF_ARG_CONST_SIZE,       /* bounded scalar > 0, size of the previous arg */
	NBPF_ARG_CONST_SIZE_OR_ZERO,
	NBPF_ARG_CONST_ALLOC_SIZE, /* constant > 0: ring buffer reservation size */
	NBPF_ARG_PTR_TO_RINGBUF_MEM, /* a live, non-null ring buffer reservation (released) */
};

enum nbpf_ret_type {
	NBPF_RET_INTEGER = 0,
	NBPF_RET_VOID,
	NBPF_RET_PTR_TO_MAP_VALUE_OR_NULL,
	NBPF_RET_PTR_TO_RINGBUF_MEM_OR_NULL, /* size = the CONST_ALLOC_SIZE argument */
};

enum nbpf_helper_flags {
	NBPF_HELPER_RANK_LOCAL = 1u << 0, /* result differs between ranks (time, random, slot) */
	NBPF_HELPER_UNWIND     = 1u << 1, /* conformance helper 5: r1 == 0 stops the program */
};

struct nbpf_helper {
	int32_t id;
	const char *name;
	nbpf_helper_fn fn;
	enum nbpf_ret_type ret;
	enum nbpf_arg_type args[5];
	uint32_t flags;
};

#define NBPF_HELPER_MAP_LOOKUP      1
#define NBPF_HELPER_MAP_UPDATE      2
#define NBPF_HELPER_MAP_DELETE      3
#define NBPF_HELPER_KTIME_GET_NS    5
#define NBPF_HELPER_TRACE_PRINTK    6
#define NBPF_HELPER_PRANDOM_U32     7
#define NBPF_HELPER_SMP_PROC_ID     8
#define NBPF_HELPER_RINGBUF_OUTPUT  130
#define NBPF_HELPER_RINGBUF_RESERVE 131
#define NBPF_HELPER_RINGBUF_SUBMIT  132
#define NBPF_HELPER_RINGBUF_DISCARD 133
#define NBPF_HELPER_RINGBUF_QUERY   134

/* Production helper by kernel id, NULL if none. */
const struct nbpf_helper *nbpf_helper_find(int32_t id);

/*
 * The conformance suite's helper set (CLI raw programs and engine tests
 * only): helper 5 is "unwind" (returns r1; r1 == 0 stops the program with
 * r0 = 0).  Never reachable from a verified program.
 */
const struct nbpf_helper *nbpf_helper_find_conformance(int32_t id);

/* bpf_trace_printk formats: one scanner for the helper and the verifier. */
enum nbpf_printk_kind {
	NBPF_PRINTK_END = 0,  /* end of the format (its length or first NUL) */
	NBPF_PRINTK_TEXT,     /* one literal byte */
	NBPF_PRINTK_PERCENT,  /* "%%" */
	NBPF_PRINTK_CONV,     /* a conversion that consumes one value argument */
	NBPF_PRINTK_BAD,      /* a conversion the helper does not print (%s, %p, ...) */
};

struct nbpf_printk_tok {
	enum nbpf_printk_kind kind;
	size_t start, end;    /* [start, end) of the format */
	char spec[16];        /* CONV: '%', flags and width */
	int lng;              /* CONV: number of 'l' */
	char conv;            /* CONV: d, i, u, x, X or c */
};

size_t nbpf_printk_next(const char *fmt, size_t len, size_t i, struct nbpf_printk_tok *t);
/*
 * Value arguments the format consumes (conversions up to len or its first
 * NUL), or -EINVAL with *bad (may be NULL) = offset of the first
 * unsupported conversion.
 */
int nbpf_printk_nargs(const char *fmt, size_t len, size_t *bad);
/* Formats fmt with up to three arguments into out (cap bytes); returns the length. */
size_t nbpf_printk_format(const char *fmt, size_t fmt_len, const uint64_t args[3], char *out,
			  size_t cap);

/* This thread's slot for per-thread ("percpu") maps, 0..NCCLBPF_NR_SLOTS-1. */
uint32_t nbpf_thread_slot(void);

#endif
