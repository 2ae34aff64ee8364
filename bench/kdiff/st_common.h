/* SPDX-License-Identifier: Apache-2.0 */
/*
 * st_common.h - what the two selftest harnesses (st_tables.c, st_progs.c)
 * share: the contract a kernel test is verified against, and which of our
 * refusals mean the test needs something our runtime does not have.
 */
#ifndef NCCLBPF_ST_COMMON_H
#define NCCLBPF_ST_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "helpers.h"
#include "kdiff.h"

/* The __sk_buff mirror of tests/kdiff, with bpf_trace_printk among its helpers. */
static inline struct ncclbpf_hook_desc st_hook(void)
{
	static const int32_t helpers[] = {
		NBPF_HELPER_MAP_LOOKUP, NBPF_HELPER_MAP_UPDATE, NBPF_HELPER_MAP_DELETE,
		NBPF_HELPER_KTIME_GET_NS, NBPF_HELPER_TRACE_PRINTK, NBPF_HELPER_PRANDOM_U32,
		NBPF_HELPER_SMP_PROC_ID, NBPF_HELPER_RINGBUF_OUTPUT, NBPF_HELPER_RINGBUF_RESERVE,
		NBPF_HELPER_RINGBUF_SUBMIT, NBPF_HELPER_RINGBUF_DISCARD, NBPF_HELPER_RINGBUF_QUERY,
	};
	struct ncclbpf_hook_desc hook = kd_hook;

	hook.helpers = helpers;
	hook.n_helpers = sizeof(helpers) / sizeof(helpers[0]);
	return hook;
}

/* Our refusals that mean the test uses something our runtime does not have. */
static inline bool st_not_ours(const char *reason)
{
	static const char *const r[] = {
		"unknown helper", "helper not allowed for this hook", "map type not supported by helper",
		"unsupported call", "unsupported lddw pseudo source", "unknown map index",
		"unsupported instruction", "context access out of bounds",
		"context access not at a declared field", "write to read-only context field",
		"context access width does not match field", "variable-offset context access",
		"atomic operation on context",
	};

	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		if (!strcmp(reason, r[i]))
			return true;
	return false;
}

/* The class of one compared test: both ways, and which way we differ. */
static inline const char *st_class(bool kernel_accepts, bool ours)
{
	return kernel_accepts == ours ? "agree" : ours ? "ACCEPTED_KERNEL_REFUSES" : "gap";
}

/*
 * Counts one compared test and prints its class column: our first error's
 * reason (res, when !ours) decides whether the test needs something our
 * runtime lacks ("unsupported") or is compared (n[kernel_accepts][ours]).
 * Returns that reason ("" when we accept).
 */
static inline const char *st_tally(const struct ncclbpf_verify_result *res, bool ours,
				   bool kernel_accepts, unsigned n[2][2], unsigned *unsupported)
{
	const char *reason = "";

	for (uint32_t f = 0; !ours && f < res->n_findings; f++)
		if (res->findings[f].kind == NCCLBPF_FINDING_ERROR) {
			reason = res->findings[f].reason;
			break;
		}
	if (!ours && st_not_ours(reason)) {
		(*unsupported)++;
		printf("unsupported\t");
	} else {
		n[kernel_accepts][ours]++;
		printf("%s\t", st_class(kernel_accepts, ours));
	}
	return reason;
}

#endif
