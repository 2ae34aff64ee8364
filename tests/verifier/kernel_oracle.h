/* SPDX-License-Identifier: MIT */
/*
 * kernel_oracle.h - the running kernel's verifier as the oracle for ours.
 *
 * A program written for the "raw" test hook (a 96-byte context read only
 * with 8-byte loads, as a raw tracepoint's u64 arguments; the maps of
 * KOR_MAPS; helpers by their kernel numbers, which are ours) is loaded into
 * the kernel as a raw tracepoint program, never attached, and the kernel's
 * verdict compared with ours.  Raw system calls only: the test needs no
 * library beyond the kernel's headers.  Without root (or with bpf() off)
 * kor_probe() says so and the caller skips visibly.
 */
#ifndef NCCLBPF_TEST_KERNEL_ORACLE_H
#define NCCLBPF_TEST_KERNEL_ORACLE_H

#include <errno.h>
#include <linux/bpf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "insn.h"
#include "ncclbpf/runtime.h"

/* The maps lddw map[i] names, on both sides (ours: ncclbpf maps; the kernel's: its own). */
#define KOR_NMAPS 2
static const struct {
	const char *name;
	enum ncclbpf_map_type ours;
	uint32_t kernel, key, value, entries;
} kor_maps[KOR_NMAPS] = {
	{ "kor_arr", NCCLBPF_MAP_ARRAY, BPF_MAP_TYPE_ARRAY, 4, 64, 1 },
	{ "kor_hash", NCCLBPF_MAP_HASH, BPF_MAP_TYPE_HASH, 8, 8, 16 },
};

/* The raw test hook: the context a raw tracepoint program gets (12 u64 arguments). */
static const int32_t kor_helpers[] = { 1, 2, 3, 5, 6, 7, 8 };
static const struct ncclbpf_hook_desc kor_hook = {
	.name = "raw", .section = "raw", .ctx_type = "u64 args[12]", .ctx_size = 96,
	.helpers = kor_helpers, .n_helpers = sizeof(kor_helpers) / sizeof(kor_helpers[0]),
	.ret_min = INT64_MIN, .ret_max = INT64_MAX, .ret_doc = "", .doc = "",
};

static char kor_log[1 << 16];

static inline long kor_bpf(int cmd, union bpf_attr *a)
{
	return syscall(SYS_bpf, cmd, a, sizeof(*a));
}

/* Our maps for the verifier (names unique per process); 0 or -errno. */
static inline int kor_our_maps(struct ncclbpf_map *maps[KOR_NMAPS])
{
	for (int i = 0; i < KOR_NMAPS; i++) {
		char name[64];
		int err;

		snprintf(name, sizeof(name), "%s_%d", kor_maps[i].name, (int)getpid());
		err = ncclbpf_map__create(name, kor_maps[i].ours, kor_maps[i].key, kor_maps[i].value,
					  kor_maps[i].entries, NULL, &maps[i]);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Loads p into the kernel.  Returns 1 when the kernel's verifier accepts
 * it, 0 when it refuses it (kor_log holds why), -errno when the kernel
 * cannot be asked (no root, no map).
 */
static inline int kor_load(const struct nbpf_insn *p, uint32_t n)
{
	int fds[KOR_NMAPS], ret = -ENOMEM, fd;
	struct nbpf_insn *w = calloc(n ? n : 1, sizeof(*w));
	union bpf_attr a;

	for (int i = 0; i < KOR_NMAPS; i++)
		fds[i] = -1;
	if (!w)
		return -ENOMEM;
	memcpy(w, p, n * sizeof(*w));
	for (int i = 0; i < KOR_NMAPS; i++) {
		memset(&a, 0, sizeof(a));
		a.map_type = kor_maps[i].kernel;
		a.key_size = kor_maps[i].key;
		a.value_size = kor_maps[i].value;
		a.max_entries = kor_maps[i].entries;
		fds[i] = (int)kor_bpf(BPF_MAP_CREATE, &a);
		if (fds[i] < 0) {
			ret = -errno;
			goto out;
		}
	}
	/* map references (ours: indices) become the kernel's, by fd */
	for (uint32_t i = 0; i + 1 < n; i++) {
		uint8_t src = w[i].src;
		bool val = src == NBPF_PSEUDO_MAP_VALUE || src == NBPF_PSEUDO_MAP_IDX_VALUE;

		if (w[i].code != (NBPF_LD | NBPF_IMM | NBPF_DW))
			continue;
		if (val || src == NBPF_PSEUDO_MAP_FD || src == NBPF_PSEUDO_MAP_IDX) {
			if (w[i].imm < 0 || w[i].imm >= KOR_NMAPS) {
				ret = 0; /* ours refuses an unknown index too */
				goto out;
			}
			w[i].src = val ? BPF_PSEUDO_MAP_VALUE : BPF_PSEUDO_MAP_FD;
			w[i].imm = fds[w[i].imm];
		}
		i++;
	}
	/* the verdict without a log (a log too small would fail the load), then the log */
	for (int pass = 0; pass < 2; pass++) {
		memset(&a, 0, sizeof(a));
		a.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT;
		a.insns = (uint64_t)(uintptr_t)w;
		a.insn_cnt = n;
		a.license = (uint64_t)(uintptr_t)"GPL";
		if (pass) {
			a.log_buf = (uint64_t)(uintptr_t)kor_log;
			a.log_size = sizeof(kor_log);
			a.log_level = 1;
		}
		kor_log[0] = '\0';
		fd = (int)kor_bpf(BPF_PROG_LOAD, &a);
		if (fd >= 0) {
			close(fd);
			if (!pass) {
				ret = 1;
				break;
			}
		} else if (!pass) {
			ret = errno == EACCES || errno == EINVAL || errno == E2BIG ? 0 : -errno;
			if (ret)
				break;
		}
	}
out:
	for (int i = 0; i < KOR_NMAPS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(w);
	return ret;
}

/* Whether the kernel can be asked at all: a trivial program loads. */
static inline bool kor_probe(void)
{
	const struct nbpf_insn ok[2] = { { .code = NBPF_ALU64 | NBPF_MOV | NBPF_K },
					 { .code = NBPF_OP_EXIT } };

	return kor_load(ok, 2) == 1;
}

/* The last line of the kernel's log that says something (its verdict). */
static inline const char *kor_reason(void)
{
	static char line[256];
	size_t n = strlen(kor_log);
	const char *e, *s;

	while (n && (kor_log[n - 1] == '\n' || kor_log[n - 1] == ' '))
		n--;
	e = kor_log + n;
	s = e;
	while (s > kor_log && s[-1] != '\n')
		s--;
	/* "processed N insns ..." closes an accepted log; the reason precedes it */
	if (!strncmp(s, "processed ", 10) && s > kor_log) {
		e = s - 1;
		s = e;
		while (s > kor_log && s[-1] != '\n')
			s--;
	}
	snprintf(line, sizeof(line), "%.*s", (int)(e - s), s);
	return line;
}

#endif
