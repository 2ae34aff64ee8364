/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_kernel.h - the kernel's signals in `ncclbpf report` (report_kernel.c):
 * the families `export --observe` writes, gathered per process from the
 * exposition and shown as one table.
 */
#ifndef NCCLBPF_REPORT_KERNEL_H
#define NCCLBPF_REPORT_KERNEL_H

#include <stddef.h>
#include <stdio.h>

#define RPTK_HISTS 5   /* block, io_uring, run queue, GPU launch gap, synchronize-to-launch gap */
#define RPTK_CTRS 6    /* TCP sent, received, retransmitted; migrations, cross-node; GPU launches */
#define RPTK_BUCKETS 48
#define RPTK_NODES 8

struct rptk_hist {
	double le[RPTK_BUCKETS], cum[RPTK_BUCKETS];
	int n_le;
};

struct rptk_proc {
	char pid[16], name[64], ranks[256];
	struct rptk_hist h[RPTK_HISTS];
	double ctr[RPTK_CTRS];
	double node_s[RPTK_NODES];
};

struct rpt_kernel {
	struct rptk_proc *procs;
	size_t n;
};

/* One exposition line (comments already skipped); lines of other families are ignored. */
int rpt_kernel_line(struct rpt_kernel *k, const char *line);
/* The table, nothing when no kernel family was seen. */
void rpt_kernel_html(FILE *f, const struct rpt_kernel *k);
void rpt_kernel_free(struct rpt_kernel *k);

#endif
