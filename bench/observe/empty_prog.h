/* SPDX-License-Identifier: Apache-2.0 */
/*
 * empty_prog.h - an empty program (r0 = 0; exit) loaded for the typed raw
 * tracepoint tp: the zero of the observe benchmark's per-program figures
 * (floor.c) and the program whose runs the statistics are measured on
 * (stats_cost.c).  Returns its fd, or -errno with errno set; -ENOENT where
 * the kernel's BTF names no such tracepoint.  Not attached: the caller
 * makes the link.
 */
#ifndef NCCLBPF_BENCH_EMPTY_PROG_H
#define NCCLBPF_BENCH_EMPTY_PROG_H

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <errno.h>
#include <stdio.h>

static inline int empty_prog_load(const struct btf *btf, const char *tp, const char *name)
{
	const struct bpf_insn insns[] = {
		{ .code = 0xb7, .dst_reg = 0, .imm = 0 }, /* r0 = 0 */
		{ .code = 0x95 },                         /* exit */
	};
	LIBBPF_OPTS(bpf_prog_load_opts, po, .expected_attach_type = BPF_TRACE_RAW_TP);
	char tn[160];
	int id, fd;

	snprintf(tn, sizeof(tn), "btf_trace_%s", tp);
	id = btf__find_by_name_kind(btf, tn, BTF_KIND_TYPEDEF);
	if (id <= 0) {
		errno = ENOENT;
		return -ENOENT;
	}
	po.attach_btf_id = (__u32)id;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, name, "GPL", insns, 2, &po);
	return fd < 0 ? -errno : fd;
}

#endif
