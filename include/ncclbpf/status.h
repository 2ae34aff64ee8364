/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ncclbpf/status.h - what the plugin loaded, one record per load attempt:
 * the objects, programs, hooks and maps of a policy that loaded, or the
 * object, program and verifier message of one that was refused.
 *
 * Every attempt is recorded, whatever started it: NCCLBPF_POLICY at the
 * first init, `ncclbpf reload`, the file watch.  Two ways to read them:
 *   - a process running the plugin answers the control socket's PS request
 *     with one "load" record per attempt (`ncclbpf ps`, docs/operations.md);
 *   - a program that loads the plugin library itself (`ncclbpf sim` and
 *     `ncclbpf bench` through the emulator, test drivers) looks up the
 *     table the library exports, ncclbpfStatus_v1, with dlsym.
 *
 * ABI rules: the table's name carries its version; a later version is a new
 * table beside this one.  The record may grow at its end only: a caller
 * passes sizeof(struct ncclbpf_load_status) as it knows it and the library
 * fills at most that many bytes.
 */
#ifndef NCCLBPF_STATUS_H
#define NCCLBPF_STATUS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NCCLBPF_STATUS_MAX_OBJS   16
#define NCCLBPF_STATUS_MAX_PROGS  32
#define NCCLBPF_STATUS_MAX_MAPS   32
/* Attempts kept, newest first (older ones are dropped). */
#define NCCLBPF_STATUS_HISTORY    8

struct ncclbpf_load_obj {
	char name[64];
	char tag[20];      /* 16 hex digits of the content hash */
};

struct ncclbpf_load_prog {
	char name[64];
	char obj[64];      /* object name */
	char hook[16];     /* "tuner", "profiler" */
	uint32_t insns;
	uint32_t jit;      /* 1: JIT-compiled, 0: interpreted */
	uint32_t warning;  /* 1: the verifier flagged a rank-local decision */
	char tag[20];      /* 16 hex digits: the program's tag, as the kernel's prog tag */
};

struct ncclbpf_load_map {
	char name[64];
	uint32_t type;     /* enum ncclbpf_map_type */
	uint32_t key_size, value_size, max_entries;
};

struct ncclbpf_load_status {
	uint64_t seq;          /* attempt number in this process, from 1 */
	uint64_t at;           /* CLOCK_REALTIME ns of the attempt */
	uint64_t load_ns;      /* load + verify + compile time */
	int32_t err;           /* 0: loaded; a negative errno: refused, nothing changed */
	uint32_t n_objs, n_progs, n_maps, n_env;  /* what was loaded (0 when refused) */
	char spec[1024];       /* the ':'-separated object list asked for (truncated) */
	/*
	 * Refused: the object that failed ("" when none was reached) and the
	 * program the verifier rejected ("" when the object itself failed).
	 */
	char refused_obj[256];
	char refused_prog[64];
	/*
	 * Refused: why, as the loader or the verifier said it (a verifier
	 * rejection names the source line and the instruction).  Loaded: what
	 * was skipped or warned about ("" when nothing).
	 */
	char message[512];
	/* Loaded: the first NCCLBPF_STATUS_MAX_* of each (the n_* count them all). */
	struct ncclbpf_load_obj objs[NCCLBPF_STATUS_MAX_OBJS];
	struct ncclbpf_load_prog progs[NCCLBPF_STATUS_MAX_PROGS];
	struct ncclbpf_load_map maps[NCCLBPF_STATUS_MAX_MAPS];
};

/* The table libnccl-ncclbpf.so exports as ncclbpfStatus_v1. */
typedef struct {
	const char *name;      /* "ncclbpf" */
	/*
	 * Copies load attempt back (0: the latest, up to HISTORY-1) into out,
	 * at most size bytes.  0, or -ENOENT when there is no such attempt
	 * (none yet: no policy was set), -EINVAL for a NULL out.  Any thread;
	 * waits while a load is in progress.
	 */
	int (*loadStatus)(unsigned back, struct ncclbpf_load_status *out, size_t size);
} ncclbpf_status_v1_t;

#define NCCLBPF_STATUS_SYMBOL_V1 "ncclbpfStatus_v1"

#ifdef __cplusplus
}
#endif

#endif
