// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_report.c - `ncclbpf report [-o FILE.html] [PID... | --from FILE.prom]`:
 * one self-contained HTML page (inline SVG, no scripts, fonts or images)
 * of the plugin's collective telemetry, and of the kernel's signals where
 * the exposition carries them (a saved `export --observe`: report_kernel.c);
 * without -o, a new ncclbpf-report-DATE-TIME.html in the current directory.
 * It says the absolute path it wrote.
 *
 * A live collection is rendered to the Prometheus text first
 * (nbpf_prom_write, what `export` writes) and read back by the same parser
 * as --from, so a saved export and a live process give the same page.
 * Communicators are merged: a row is one collective and size class.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "control/ctl_client.h"
#include "control/ctl_tele.h"
#include "report_kernel.h"

#define RPT_MAX_BUCKETS 64

struct rpt_row {
	char coll[32], size[32];
	double le[RPT_MAX_BUCKETS];
	uint64_t cum[RPT_MAX_BUCKETS];
	int n_le;
	double sum;
	uint64_t count, bytes;
};

struct rpt_mix {
	char coll[32], algo[32], proto[32];
	uint64_t n;
};

struct rpt {
	struct rpt_row *rows;
	size_t n_rows;
	struct rpt_mix *mix;
	size_t n_mix;
	struct rpt_kernel kern; /* the kernel's signals, when the exposition has them */
};

/* The value of label key in "{a="x",b="y"}" into out; -ENOENT when absent. */
static int label(const char *lb, const char *key, char *out, size_t n)
{
	size_t kl = strlen(key), k = 0;
	const char *p = lb;

	while ((p = strstr(p, key))) {
		if ((p == lb || p[-1] == '{' || p[-1] == ',') && p[kl] == '=' && p[kl + 1] == '"') {
			for (p += kl + 2; *p && *p != '"' && k + 1 < n; p++) {
				if (*p == '\\' && p[1])
					p++;
				out[k++] = *p;
			}
			out[k] = 0;
			return 0;
		}
		p += kl;
	}
	return -ENOENT;
}

static struct rpt_row *row_get(struct rpt *r, const char *coll, const char *size)
{
	struct rpt_row *nr;

	for (size_t i = 0; i < r->n_rows; i++)
		if (!strcmp(r->rows[i].coll, coll) && !strcmp(r->rows[i].size, size))
			return &r->rows[i];
	nr = realloc(r->rows, (r->n_rows + 1) * sizeof(*nr));
	if (!nr)
		return NULL;
	r->rows = nr;
	nr = &r->rows[r->n_rows++];
	memset(nr, 0, sizeof(*nr));
	snprintf(nr->coll, sizeof(nr->coll), "%s", coll);
	snprintf(nr->size, sizeof(nr->size), "%s", size);
	return nr;
}

static int mix_add(struct rpt *r, const char *coll, const char *a, const char *p, uint64_t n)
{
	struct rpt_mix *m;

	for (size_t i = 0; i < r->n_mix; i++) {
		m = &r->mix[i];
		if (!strcmp(m->coll, coll) && !strcmp(m->algo, a) && !strcmp(m->proto, p)) {
			m->n += n;
			return 0;
		}
	}
	m = realloc(r->mix, (r->n_mix + 1) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	r->mix = m;
	m = &r->mix[r->n_mix++];
	snprintf(m->coll, sizeof(m->coll), "%s", coll);
	snprintf(m->algo, sizeof(m->algo), "%s", a);
	snprintf(m->proto, sizeof(m->proto), "%s", p);
	m->n = n;
	return 0;
}

/* One sample line; lines of other families are ignored. */
static int parse_line(struct rpt *r, char *ln)
{
	static const char fam[] = "ncclbpf_collective_";
	char coll[32], size[32], le[32], a[32], p[32], *lb, *end;
	struct rpt_row *row;
	double v;

	if (strncmp(ln, fam, sizeof(fam) - 1))
		return 0;
	lb = strchr(ln, '{');
	end = lb ? strrchr(lb, '}') : NULL;
	if (!end || label(lb, "collective", coll, sizeof(coll)))
		return 0;
	v = strtod(end + 1, NULL);
	if (!isfinite(v) || v < 0)
		return 0;
	*lb = 0;
	ln += sizeof(fam) - 1;
	if (!strcmp(ln, "algo_proto_total")) {
		if (label(lb + 1, "algorithm", a, sizeof(a)) || label(lb + 1, "protocol", p, sizeof(p)))
			return 0;
		return mix_add(r, coll, a, p, (uint64_t)v);
	}
	if (label(lb + 1, "size", size, sizeof(size)))
		return 0;
	if (strcmp(ln, "latency_seconds_bucket") && strcmp(ln, "latency_seconds_sum") &&
	    strcmp(ln, "latency_seconds_count") && strcmp(ln, "bytes_total"))
		return 0;
	row = row_get(r, coll, size);
	if (!row)
		return -ENOMEM;
	if (!strcmp(ln, "latency_seconds_sum")) {
		row->sum += v;
	} else if (!strcmp(ln, "latency_seconds_count")) {
		row->count += (uint64_t)v;
	} else if (!strcmp(ln, "bytes_total")) {
		row->bytes += (uint64_t)v;
	} else if (!label(lb + 1, "le", le, sizeof(le))) {
		double l = strcmp(le, "+Inf") ? strtod(le, NULL) : INFINITY;
		int i = 0;

		while (i < row->n_le && row->le[i] != l)
			i++;
		if (i == row->n_le) {
			if (i == RPT_MAX_BUCKETS)
				return 0;
			row->le[row->n_le++] = l;
		}
		row->cum[i] += (uint64_t)v;
	}
	return 0;
}

static int parse(struct rpt *r, FILE *f)
{
	char *ln = NULL;
	size_t cap = 0;
	int err = 0;

	while (!err && getline(&ln, &cap, f) > 0) {
		ln[strcspn(ln, "\n")] = 0;
		if (*ln && *ln != '#')
			err = parse_line(r, ln) ?: rpt_kernel_line(&r->kern, ln);
	}
	free(ln);
	return err;
}

/* Upper bound (s) of the bucket holding quantile q; NAN without samples. */
static double quantile(const struct rpt_row *row, double q)
{
	double best = INFINITY;
	uint64_t total = 0;

	for (int i = 0; i < row->n_le; i++)
		if (isinf(row->le[i]))
			total = row->cum[i];
	if (!total)
		return NAN;
	/* Buckets are cumulative: the smallest le whose count reaches q. */
	for (int i = 0; i < row->n_le; i++)
		if ((double)row->cum[i] >= q * (double)total && row->le[i] < best)
			best = row->le[i];
	return best;
}

static void html_str(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

static void fmt_si(char *out, size_t n, double v, const char *unit)
{
	static const char *pre[] = { "n", "u", "m", "", "K", "M", "G", "T" };
	int k = 3;

	if (!isfinite(v)) {
		snprintf(out, n, "%s", isinf(v) ? "overflow" : "-");
		return;
	}
	while (v != 0 && fabs(v) < 1 && k > 0)
		v *= 1000, k--;
	while (fabs(v) >= 1000 && k < 7)
		v /= 1000, k++;
	snprintf(out, n, "%.3g %s%s", v, pre[k], unit);
}

struct bar_chart {
	const char *title, *unit;
	const char *series[2]; /* legend; series[1] NULL: one series */
	size_t n;
	char (*labels)[96];
	double (*val)[2];
};

#define BAR_LEFT 200
#define BAR_W 480
#define BAR_ROW 26

/* Horizontal bars, linear from zero, each labelled with its value. */
static void svg_bars(FILE *f, const struct bar_chart *c)
{
	static const char *color[2] = { "#4477aa", "#ee6677" };
	int ns = c->series[1] ? 2 : 1, h = 40 + (int)c->n * BAR_ROW;
	double max = 0;
	char t[32];

	for (size_t i = 0; i < c->n; i++)
		for (int s = 0; s < ns; s++)
			if (isfinite(c->val[i][s]) && c->val[i][s] > max)
				max = c->val[i][s];
	fputs("<h2>", f);
	html_str(f, c->title);
	fputs("</h2>\n", f);
	if (!c->n) {
		fputs("<p>No samples.</p>\n", f);
		return;
	}
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		   "font-family=\"sans-serif\" font-size=\"12\">\n", BAR_LEFT + BAR_W + 110, h);
	for (int s = 0; s < ns; s++) {
		fprintf(f, "<rect x=\"%d\" y=\"6\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			   "<text x=\"%d\" y=\"16\">", BAR_LEFT + s * 120, color[s], BAR_LEFT + s * 120 + 16);
		html_str(f, c->series[s]);
		fputs("</text>\n", f);
	}
	for (size_t i = 0; i < c->n; i++) {
		int y = 30 + (int)i * BAR_ROW, bh = (BAR_ROW - 6) / ns;

		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", BAR_LEFT - 6, y + 14);
		html_str(f, c->labels[i]);
		fputs("</text>\n", f);
		for (int s = 0; s < ns; s++) {
			double v = c->val[i][s];
			double w = max > 0 && isfinite(v) ? v / max * BAR_W : isinf(v) ? BAR_W : 0;

			fmt_si(t, sizeof(t), v, c->unit);
			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\">"
				   "<title>%s</title></rect>", BAR_LEFT, y + s * bh, w, bh - 1,
				color[s], t);
			fprintf(f, "<text x=\"%.1f\" y=\"%d\">%s</text>\n", BAR_LEFT + w + 4,
				y + s * bh + bh - 2, t);
		}
	}
	fputs("</svg>\n", f);
}

static int write_html(FILE *f, const struct rpt *r, const char *source)
{
	size_t n = r->n_rows > r->n_mix ? r->n_rows : r->n_mix;
	char (*labels)[96] = calloc(n ? n : 1, sizeof(*labels));
	double (*val)[2] = calloc(n ? n : 1, sizeof(*val));
	struct bar_chart c = { 0 };
	char when[64];
	time_t now = time(NULL);
	size_t k = 0;

	if (!labels || !val) {
		free(labels);
		free(val);
		return -ENOMEM;
	}
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	      "<title>ncclbpf report</title>\n<style>body{font-family:sans-serif;margin:2em}"
	      "h2{font-size:1.1em;margin-top:2em}p.note{color:#555}</style></head><body>\n"
	      "<h1>ncclbpf report</h1>\n<p>Source: ", f);
	html_str(f, source);
	fprintf(f, "; written %s.</p>\n", when);

	c.labels = labels;
	c.val = val;
	for (size_t i = 0; i < r->n_rows; i++) {
		snprintf(labels[i], sizeof(*labels), "%s %s (%" PRIu64 ")", r->rows[i].coll,
			 r->rows[i].size, r->rows[i].count);
		val[i][0] = quantile(&r->rows[i], 0.5);
		val[i][1] = quantile(&r->rows[i], 0.99);
	}
	c.title = "Collective latency per size class (count in brackets)";
	c.unit = "s";
	c.series[0] = "P50";
	c.series[1] = "P99";
	c.n = r->n_rows;
	svg_bars(f, &c);
	fputs("<p class=\"note\">Quantiles are the upper bounds of the power-of-two "
	      "histogram buckets that hold them.</p>\n", f);

	/* Per collective: bytes over time spent in it, every size class summed. */
	for (size_t i = 0; i < r->n_rows; i++) {
		size_t j = 0;

		while (j < k && strcmp(labels[j], r->rows[i].coll))
			j++;
		if (j == k) {
			snprintf(labels[k], sizeof(*labels), "%s", r->rows[i].coll);
			val[k][0] = val[k][1] = 0;
			k++;
		}
		val[j][0] += (double)r->rows[i].bytes;
		val[j][1] += r->rows[i].sum;
	}
	for (size_t j = 0; j < k; j++)
		val[j][0] = val[j][1] > 0 ? val[j][0] / val[j][1] : 0;
	c.title = "Bandwidth per collective (bytes / time in the collective)";
	c.unit = "B/s";
	c.series[0] = "algbw";
	c.series[1] = NULL;
	c.n = k;
	svg_bars(f, &c);
	fputs("<p class=\"note\">Algorithm bandwidth: the export carries no rank count, so the "
	      "bus factor (2(n-1)/n for all-reduce) is not applied.</p>\n", f);

	for (size_t i = 0; i < r->n_mix; i++) {
		snprintf(labels[i], sizeof(*labels), "%s %s/%s", r->mix[i].coll, r->mix[i].algo,
			 r->mix[i].proto);
		val[i][0] = (double)r->mix[i].n;
	}
	c.title = "Completed collectives per algorithm/protocol";
	c.unit = "";
	c.series[0] = "collectives";
	c.n = r->n_mix;
	svg_bars(f, &c);
	rpt_kernel_html(f, &r->kern);
	fputs("</body></html>\n", f);
	free(labels);
	free(val);
	return ferror(f) ? -EIO : 0;
}

/* Live: the exposition the exporter would write, parsed back. */
static int collect_live(struct rpt *r, const int *pids, int n_pids)
{
	struct nbpf_tele_set s = { 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int err = 0;

	for (int i = 0; i < n_pids && !err; i++) {
		struct nbpf_ctl_msg m;
		const char *em;
		int e = nbpf_ctl_call_pid(pids[i], NBPF_CTL_TELEMETRY, NULL, &m, &em);

		if (e)
			err = cli_pid_err(CLI_NO, pids[i], e, em);
		else
			cli_tele_merge(&s, &m);
		nbpf_ctl_msg_free(&m);
	}
	if (err)
		goto out;
	f = open_memstream(&buf, &len);
	if (!f) {
		err = cli_err(1, "out of memory");
		goto out;
	}
	err = nbpf_prom_write(f, &s);
	if (fclose(f) || err) {
		err = cli_err(1, "cannot render the telemetry");
		goto out;
	}
	f = fmemopen(buf, len, "r");
	if (!f || parse(r, f))
		err = cli_err(1, "cannot read the telemetry back");
	if (f)
		fclose(f);
out:
	free(buf);
	nbpf_tele_free(&s);
	return err;
}

int cmd_report(struct cli *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "from", required_argument, NULL, 'F' },
		{ 0 },
	};
	const char *out = NULL, *from = NULL;
	struct rpt r = { 0 };
	int *pids = NULL, n_pids = 0, opt, err = 0;
	char src[256], name[64], abs[PATH_MAX];
	FILE *f;

	while ((opt = cli_getopt(argc + 1, argv - 1, "o:", opts, "report")) != -1) {
		if (opt == 'o')
			out = optarg;
		else if (opt == 'F')
			from = optarg;
		else
			return CLI_USAGE;
	}
	/* argv[0] is the first argument: cli_optind counts the verb too. */
	argc -= cli_optind - 1;
	argv += cli_optind - 1;
	if (from && argc)
		return cli_usage_error("report: give pids or --from FILE, not both");
	if (from) {
		f = fopen(from, "r");
		if (!f)
			return cli_err(CLI_USAGE, "report: cannot read %s: %s", from, strerror(errno));
		err = parse(&r, f);
		fclose(f);
		if (err) {
			err = cli_err(1, "report: out of memory reading %s", from);
			goto out;
		}
		snprintf(src, sizeof(src), "%s", from);
	} else {
		n_pids = cli_target_pids(argc, argv, &pids);
		if (n_pids < 0)
			return CLI_USAGE;
		if (!n_pids)
			return cli_err(CLI_NO, "report: no process runs the plugin; give a pid or --from FILE");
		err = collect_live(&r, pids, n_pids);
		if (err)
			goto out;
		snprintf(src, sizeof(src), "%d live process%s", n_pids, n_pids == 1 ? "" : "es");
	}
	/* No -o: a new file in the current directory, never last run's. */
	if (!out) {
		cli_stamp_name(name, sizeof(name), "ncclbpf-report-", ".html");
		out = name;
	}
	f = fopen(out, "w");
	if (!f) {
		err = cli_err(CLI_NO, "report: cannot write %s: %s", out, strerror(errno));
		goto out;
	}
	err = write_html(f, &r, src);
	cli_abspath(out, abs, sizeof(abs));
	if (fclose(f) || err) {
		err = cli_err(CLI_NO, "report: writing %s failed", abs);
	} else if (c->json) {
		printf("{\"output\":");
		cli_json_str(stdout, abs);
		printf(",\"size_classes\":%zu,\"mix_rows\":%zu}\n", r.n_rows, r.n_mix);
	} else {
		printf("wrote %s: %zu size classes, %zu algorithm/protocol rows\n", abs, r.n_rows,
		       r.n_mix);
	}
out:
	free(pids);
	free(r.rows);
	rpt_kernel_free(&r.kern);
	free(r.mix);
	return err;
}
