/*
 * hooks.h - the hook contracts of ncclbpf's NCCL hooks: the one table that
 * the loader, verifier, engines, adapters, CLI and docs read.
 */
#ifndef NCCLBPF_HOOKS_H
#define NCCLBPF_HOOKS_H

#include <stddef.h>

#include "ncclbpf/runtime.h"

enum ncclbpf_hook_id {
	NCCLBPF_HOOK_TUNER = 0,
	NCCLBPF_HOOK_PROFILER,
	NCCLBPF_HOOK_NET,
	NCCLBPF_HOOK_CHUNK,
	NCCLBPF_HOOK_PROF_EVENT,
	NCCLBPF_HOOK_COUNT,
};

extern const struct ncclbpf_hook_desc ncclbpf_hooks[NCCLBPF_HOOK_COUNT];

/* Hook whose section matches sec (exact, or prefix for "name/" sections), or NULL. */
const struct ncclbpf_hook_desc *ncclbpf_hook_find_section(const char *sec);
/* Hook by name ("tuner"), or NULL. */
const struct ncclbpf_hook_desc *ncclbpf_hook_find(const char *name);

#endif
