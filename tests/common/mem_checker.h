/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mem_checker.h - the checking interpreter's view of memory a verified
 * program may touch: the context, byte by byte against the hook's field
 * table and rights, and regions (map values handed out by lookups or
 * lddw, live ring buffer records).  The interpreter itself allows the live
 * stack frames (interp.h); anything else traps, which for a program the
 * verifier accepted is a soundness bug.  Used by the soundness fuzzer and
 * the kernel-differential fuzzer.
 */
#ifndef NCCLBPF_TEST_MEM_CHECKER_H
#define NCCLBPF_TEST_MEM_CHECKER_H

#include <stdbool.h>
#include <stdint.h>

#include "interp.h"
#include "ncclbpf/runtime.h"

#define MEM_CHECKER_MAX_REGIONS 64

struct mem_checker_region {
	uint64_t lo, hi;  /* [lo, hi); lo == hi: gone (a released record) */
	bool readonly;
};

struct mem_checker {
	const struct ncclbpf_hook_desc *hook;
	const uint8_t *ctx;
	struct mem_checker_region r[MEM_CHECKER_MAX_REGIONS];
	int n;
	struct nbpf_checker chk; /* what nbpf_interp_run takes */
};

/* Empty region list; ctx (hook->ctx_size bytes) may be NULL. */
void mem_checker_init(struct mem_checker *mc, const struct ncclbpf_hook_desc *hook, void *ctx);
/* Allows [lo, lo + len) (reads only when readonly). */
void mem_checker_add(struct mem_checker *mc, const void *lo, uint64_t len, bool readonly);

#endif
