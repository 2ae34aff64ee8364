// SPDX-License-Identifier: Apache-2.0
/*
 * report_kernel.c - the kernel's signals in `ncclbpf report`: from the
 * families `export --observe` writes (block, io_uring, run queue, GPU
 * submission gaps, TCP, migrations, NUMA), one table row per process,
 * labelled as the exporter labels it (pid, process, ranks: the join key
 * with the collective rows above it).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report_kernel.h"

/* Histogram families: latency quantiles per process. */
static const char *const hist_fam[RPTK_HISTS] = {
	"ncclbpf_block_request_latency_seconds", "ncclbpf_io_uring_latency_seconds",
	"ncclbpf_runqueue_latency_seconds",      "ncclbpf_gpu_launch_gap_seconds",
	"ncclbpf_gpu_sync_gap_seconds",
};

/* Counter families: totals per process. */
static const char *const ctr_fam[RPTK_CTRS] = {
	"ncclbpf_tcp_sent_bytes_total", "ncclbpf_tcp_received_bytes_total",
	"ncclbpf_tcp_retransmits_total", "ncclbpf_migrations_total",
	"ncclbpf_numa_migrations_total", "ncclbpf_gpu_launches_total",
};

/* The value of label key in "a=\"x\",b=\"y\"" into out ("" when absent). */
static void label(const char *lb, const char *key, char *out, size_t n)
{
	size_t kl = strlen(key), k = 0;

	out[0] = 0;
	for (const char *p = lb; (p = strstr(p, key)); p += kl) {
		if ((p != lb && p[-1] != ',' && p[-1] != '{') || p[kl] != '=' || p[kl + 1] != '"')
			continue;
		for (p += kl + 2; *p && *p != '"' && k + 1 < n; p++) {
			if (*p == '\\' && p[1])
				p++;
			out[k++] = *p;
		}
		out[k] = 0;
		return;
	}
}

static struct rptk_proc *proc_get(struct rpt_kernel *k, const char *lb)
{
	char pid[16], name[64], ranks[256];
	struct rptk_proc *p;

	label(lb, "pid", pid, sizeof(pid));
	label(lb, "process", name, sizeof(name));
	label(lb, "ranks", ranks, sizeof(ranks));
	for (size_t i = 0; i < k->n; i++)
		if (!strcmp(k->procs[i].pid, pid))
			return &k->procs[i];
	p = realloc(k->procs, (k->n + 1) * sizeof(*p));
	if (!p)
		return NULL;
	k->procs = p;
	p = &p[k->n++];
	memset(p, 0, sizeof(*p));
	snprintf(p->pid, sizeof(p->pid), "%s", pid);
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->ranks, sizeof(p->ranks), "%s", ranks);
	return p;
}

int rpt_kernel_line(struct rpt_kernel *k, const char *ln)
{
	const char *lb = strchr(ln, '{'), *end = lb ? strrchr(lb, '}') : NULL;
	size_t fl = lb ? (size_t)(lb - ln) : 0;
	struct rptk_proc *p;
	char le[32], node[16];
	double v, bound;

	if (!end || strncmp(ln, "ncclbpf_", 8))
		return 0;
	v = strtod(end + 1, NULL);
	if (!isfinite(v) || v < 0)
		return 0;
	for (int h = 0; h < RPTK_HISTS; h++) {
		size_t hl = strlen(hist_fam[h]);
		int i;

		if (fl != hl + 7 || strncmp(ln, hist_fam[h], hl) || strncmp(ln + hl, "_bucket", 7))
			continue;
		label(lb, "le", le, sizeof(le));
		if (!le[0])
			return 0;
		if (!(p = proc_get(k, lb)))
			return -ENOMEM;
		/* Same buckets in every series of a family: devices, opcodes add up. */
		bound = strcmp(le, "+Inf") ? strtod(le, NULL) : INFINITY;
		for (i = 0; i < p->h[h].n_le && p->h[h].le[i] != bound; i++)
			;
		if (i == p->h[h].n_le) {
			if (i == RPTK_BUCKETS)
				return 0;
			p->h[h].le[i] = bound;
			p->h[h].n_le++;
		}
		p->h[h].cum[i] += v;
		return 0;
	}
	for (int c = 0; c < RPTK_CTRS; c++)
		if (fl == strlen(ctr_fam[c]) && !strncmp(ln, ctr_fam[c], fl)) {
			if (!(p = proc_get(k, lb)))
				return -ENOMEM;
			p->ctr[c] += v;
			return 0;
		}
	if (fl == strlen("ncclbpf_numa_cpu_seconds_total") &&
	    !strncmp(ln, "ncclbpf_numa_cpu_seconds_total", fl)) {
		label(lb, "node", node, sizeof(node));
		if (!(p = proc_get(k, lb)))
			return -ENOMEM;
		if (atoi(node) >= 0 && atoi(node) < RPTK_NODES)
			p->node_s[atoi(node)] += v;
	}
	return 0;
}

/* Upper bound of the bucket holding quantile q, in seconds; NAN without samples. */
static double hq(const struct rptk_hist *h, double q)
{
	double total = 0, best = INFINITY;

	for (int i = 0; i < h->n_le; i++)
		if (isinf(h->le[i]))
			total = h->cum[i];
	if (!total)
		return NAN;
	for (int i = 0; i < h->n_le; i++)
		if (h->cum[i] >= q * total && h->le[i] < best)
			best = h->le[i];
	return best;
}

static void esc(FILE *f, const char *s)
{
	for (; *s; s++)
		fputs(*s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '&' ? "&amp;" : *s == '"' ? "&quot;" :
		      (char[2]){ *s, 0 }, f);
}

static void cell_s(FILE *f, double s)
{
	char b[24];

	if (isnan(s))
		fputs("<td>-</td>", f);
	else if (isinf(s))
		fputs("<td>overflow</td>", f);
	else {
		cli_fmt_ns(b, sizeof(b), s * 1e9);
		fprintf(f, "<td>%s</td>", b);
	}
}

void rpt_kernel_html(FILE *f, const struct rpt_kernel *k)
{
	if (!k->n)
		return;
	fputs("<h2>Kernel signals per process (ncclbpf export --observe)</h2>\n"
	      "<table border=\"1\" cellspacing=\"0\" cellpadding=\"4\"><tr><th>pid</th><th>process</th>"
	      "<th>ranks</th><th>block P99</th><th>io_uring P99</th><th>run-queue P99</th>"
	      "<th>GPU launches</th><th>launch gap P50</th><th>launch gap P99</th>"
	      "<th>sync to launch P99</th><th>TCP sent</th><th>TCP received</th>"
	      "<th>retransmitted segments</th><th>migrations (cross-node)</th><th>CPU time per NUMA node</th></tr>\n", f);
	for (size_t i = 0; i < k->n; i++) {
		const struct rptk_proc *p = &k->procs[i];
		double cpu = 0;

		fputs("<tr><td>", f);
		esc(f, p->pid);
		fputs("</td><td>", f);
		esc(f, p->name);
		fputs("</td><td>", f);
		esc(f, p->ranks);
		fputs("</td>", f);
		cell_s(f, hq(&p->h[0], 0.99));
		cell_s(f, hq(&p->h[1], 0.99));
		cell_s(f, hq(&p->h[2], 0.99));
		fprintf(f, "<td>%.0f</td>", p->ctr[5]);
		cell_s(f, hq(&p->h[3], 0.5));
		cell_s(f, hq(&p->h[3], 0.99));
		cell_s(f, hq(&p->h[4], 0.99));
		fprintf(f, "<td>%.0f B</td><td>%.0f B</td><td>%.0f</td><td>%.0f (%.0f)</td><td>", p->ctr[0],
			p->ctr[1], p->ctr[2], p->ctr[3], p->ctr[4]);
		for (int n = 0; n < RPTK_NODES; n++)
			cpu += p->node_s[n];
		for (int n = 0; n < RPTK_NODES; n++)
			if (p->node_s[n] > 0)
				fprintf(f, "node %d %.0f%% ", n, 100 * p->node_s[n] / cpu);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n<p class=\"note\">Cumulative since the exporter attached; quantiles are the "
	      "upper bounds of the power-of-two buckets that hold them.</p>\n", f);
}

void rpt_kernel_free(struct rpt_kernel *k)
{
	free(k->procs);
	memset(k, 0, sizeof(*k));
}
