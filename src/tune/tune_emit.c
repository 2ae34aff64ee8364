// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tune_emit.c - what tune writes: the policy (NAME.bpf.c with its table in
 * .rodata, compiled with clang as the build compiles policies and
 * verified in strict consistency mode) and the report (NAME.report.txt,
 * NAME.csv, NAME.svg).
 */
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/hooks.h"
#include "ncclbpf/runtime.h"
#include "tune.h"

extern char **environ;

static const char *cell_name(char *buf, size_t n, const struct tune_meas *m)
{
	int k;

	if (m->algo < 0)
		return snprintf(buf, n, "NCCL default"), buf;
	k = snprintf(buf, n, "%s/%s", emu_algo_name(m->algo), emu_proto_name(m->proto));
	if (m->n_channels && k > 0 && (size_t)k < n)
		k += snprintf(buf + k, n - (size_t)k, "/%dch", m->n_channels);
	if (m->chunk && k > 0 && (size_t)k < n)
		snprintf(buf + k, n - (size_t)k, m->chunk % 1024 ? "/%uB" : "/%uK",
			 m->chunk % 1024 ? m->chunk : m->chunk >> 10);
	return buf;
}

/*
 * The chunk sizes the deployed decisions imply, per (collective, size
 * bucket of a channel part, algorithm x protocol): NCCL asks per part, not
 * per collective, so every measured point contributes the part buckets
 * NCCL asked about with the cell it deploys there (a chosen cell with its
 * chunk, else NCCL's pick with NCCL's chunk, 0).  Two points that meet in
 * one key wanting different chunks make it a conflict: NCCL's chunk then
 * stands there (CHUNK_CONFLICT).  CHUNK_NONE: no point asked.
 */
#define CHUNK_CELLS    (7 * 3)
#define CHUNK_KEYS     (TUNE_NUM_COLLS * TUNE_NUM_BUCKETS * CHUNK_CELLS)
#define CHUNK_NONE     UINT32_MAX
#define CHUNK_CONFLICT (UINT32_MAX - 1)

static void chunk_table(const struct tune_result *res, uint32_t *t)
{
	for (int k = 0; k < CHUNK_KEYS; k++)
		t[k] = CHUNK_NONE;
	for (int i = 0; i < res->n_pts; i++) {
		const struct tune_point *p = &res->pts[i];
		const struct tune_meas *d = p->choice >= 0 ? &p->cells[p->choice] : &p->def;
		int algo = p->choice >= 0 ? d->algo : p->nccl_algo;
		int proto = p->choice >= 0 ? d->proto : p->nccl_proto;

		if (algo < 0 || proto < 0)
			continue;
		for (int b = 0; b < TUNE_NUM_BUCKETS; b++) {
			uint32_t *e = &t[(p->coll * TUNE_NUM_BUCKETS + b) * CHUNK_CELLS + algo * 3 + proto];

			if (!(d->parts & (1u << b)))
				continue;
			*e = *e == CHUNK_NONE || *e == d->chunk ? d->chunk : CHUNK_CONFLICT;
		}
	}
}

static FILE *open_out(const struct tune_opts *o, const char *ext, char *path, size_t n,
		      char *err, size_t errlen)
{
	FILE *f;

	snprintf(path, n, "%s/%s%s", o->out_dir, o->name, ext);
	f = fopen(path, "w");
	if (!f)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	return f;
}

/* ---- the policy ------------------------------------------------------------- */

/*
 * The SEC("tuner/chunk") program and its table, when a deployed decision
 * forces a chunk size somewhere (t: chunk_table's); nothing otherwise.
 */
static void write_chunk_source(FILE *f, const struct tune_opts *o, const uint32_t *t)
{
	int n = 0, conflicts = 0;

	for (int k = 0; k < CHUNK_KEYS; k++) {
		n += t[k] != CHUNK_NONE && t[k] != CHUNK_CONFLICT && t[k];
		conflicts += t[k] == CHUNK_CONFLICT;
	}
	if (!n)
		return;
	fprintf(f, "\n"
"/*\n"
" * Chunk sizes (NCCL 2.30+, tuner v6+): NCCL asks once per channel part of a\n"
" * collective, so the key is the part's size bucket and the cell NCCL runs.\n"
" * An entry is a chunk size a measured cell won with; 0: NCCL's.  %d key(s)\n"
" * where measured points disagreed keep NCCL's chunk.\n"
" */\n"
"#define TUNED_CELLS (NCCLBPF_NUM_ALGOS * NCCLBPF_NUM_PROTOS)\n"
"#define TUNED_CHUNK_KEYS (TUNED_KEYS * TUNED_CELLS)\n\n"
"static const __u32 tuned_chunks[TUNED_CHUNK_KEYS] = {\n", conflicts);
	for (int k = 0; k < CHUNK_KEYS; k++) {
		int cell = k % CHUNK_CELLS, key = k / CHUNK_CELLS;

		if (t[k] == CHUNK_NONE || t[k] == CHUNK_CONFLICT || !t[k])
			continue;
		fprintf(f, "\t[(%d * NCCLBPF_SIZE_BUCKETS + %d) * TUNED_CELLS + NCCLBPF_ALGO_%s * NCCLBPF_NUM_PROTOS + NCCLBPF_PROTO_%s] = %u,\n",
			key / TUNE_NUM_BUCKETS, key % TUNE_NUM_BUCKETS, emu_algo_name(cell / 3),
			emu_proto_name(cell % 3), t[k]);
	}
	fprintf(f, "};\n\n"
"SEC(\"tuner/chunk\")\n"
"int %s_chunk(struct ncclbpf_chunk_ctx *ctx)\n"
"{\n"
"\t__u32 key;\n\n"
"\tif (ctx->n_ranks != TUNED_RANKS || ctx->n_nodes != TUNED_NODES ||\n"
"\t    ctx->coll_type >= NCCLBPF_NUM_COLLS || ctx->algo < 0 || ctx->algo >= NCCLBPF_NUM_ALGOS ||\n"
"\t    ctx->proto < 0 || ctx->proto >= NCCLBPF_NUM_PROTOS)\n"
"\t\treturn NCCLBPF_CHUNK_APPLY;\n"
"\tkey = (ctx->coll_type * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(ctx->n_bytes)) * TUNED_CELLS +\n"
"\t      ctx->algo * NCCLBPF_NUM_PROTOS + ctx->proto;\n"
"\tif (key < TUNED_CHUNK_KEYS && tuned_chunks[key])\n"
"\t\tctx->chunk_size = (int)tuned_chunks[key];\n"
"\treturn NCCLBPF_CHUNK_APPLY;\n"
"}\n", o->name);
}

static void write_source(FILE *f, const struct tune_opts *o, const struct tune_result *res)
{
	uint32_t chunks[CHUNK_KEYS]; /* 13 KiB */
	int changed = 0;

	for (int i = 0; i < res->n_pts; i++)
		changed += res->pts[i].choice >= 0;
	fprintf(f,
"// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)\n"
"/*\n"
" * %s - generated by `ncclbpf tune` from measurements (%s).\n"
" *\n"
" * One entry per (collective, size bucket) where a measured cell beat NCCL's\n"
" * default outside the noise: its 95%% confidence interval lies wholly below\n"
" * the default's and the gain exceeds %.1f%%.  Everywhere else the entry is\n"
" * empty and NCCL decides.  Buckets are ncclbpf_size_bucket(n_bytes), each\n"
" * measured at its lower bound.  The table is read-only (.rodata) and every\n"
" * input is rank-invariant, so all ranks choose alike (verified with\n"
" * --strict-consistency).  It applies only to communicators of the shape it\n"
" * was measured on, and a cell NCCL does not offer for a call is never\n"
" * forced: NCCL's pick then stands.  %d change(s) from NCCL's picks.\n"
" */\n"
"#include <ncclbpf/policy.h>\n\n"
"#define TUNED_RANKS %d\n#define TUNED_NODES %d\n#define TUNED_KEYS (NCCLBPF_NUM_COLLS * NCCLBPF_SIZE_BUCKETS)\n\n"
"struct tuned_cell {\n"
"\t__u8 set;        /* 0: NCCL decides */\n"
"\t__u8 algo;       /* NCCLBPF_ALGO_* */\n"
"\t__u8 proto;      /* NCCLBPF_PROTO_* */\n"
"\t__u8 n_channels; /* 0: NCCL's count */\n"
"};\n\n"
"static const struct tuned_cell tuned_table[TUNED_KEYS] = {\n",
		o->name, res->backend_desc, 100 * o->min_gain, changed, res->n_ranks, res->n_nodes);
	for (int i = 0; i < res->n_pts; i++) {
		const struct tune_point *p = &res->pts[i];
		const struct tune_meas *c;

		if (p->choice < 0)
			continue;
		c = &p->cells[p->choice];
		fprintf(f, "\t/* %s %llu B: NCCL %s/%s %.2f us [%.2f, %.2f]; %.2f us [%.2f, %.2f], %+.1f%% */\n",
			emu_coll_name(p->coll), (unsigned long long)p->n_bytes,
			emu_algo_name(p->nccl_algo), emu_proto_name(p->nccl_proto), p->def.mean_us,
			p->def.lo_us, p->def.hi_us, c->mean_us, c->lo_us, c->hi_us,
			100 * (p->def.mean_us / c->mean_us - 1));
		fprintf(f, "\t[%d * NCCLBPF_SIZE_BUCKETS + %d] = { 1, NCCLBPF_ALGO_%s, NCCLBPF_PROTO_%s, %d },\n",
			p->coll, tune_size_bucket(p->n_bytes), emu_algo_name(c->algo),
			emu_proto_name(c->proto), c->n_channels);
	}
	fprintf(f, "};\n\n"
"SEC(\"tuner\")\n"
"int %s(struct ncclbpf_tuner_ctx *ctx)\n"
"{\n"
"\tconst struct tuned_cell *t;\n"
"\t__u32 key;\n\n"
"\tif (ctx->n_ranks != TUNED_RANKS || ctx->n_nodes != TUNED_NODES ||\n"
"\t    ctx->coll_type >= NCCLBPF_NUM_COLLS)\n"
"\t\treturn NCCLBPF_TUNER_APPLY;\n"
"\tkey = ctx->coll_type * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(ctx->n_bytes);\n"
"\tif (key >= TUNED_KEYS)\n"
"\t\treturn NCCLBPF_TUNER_APPLY;\n"
"\tt = &tuned_table[key];\n"
"\tif (!t->set || !ncclbpf_cell_offered(ctx, t->algo, t->proto))\n"
"\t\treturn NCCLBPF_TUNER_APPLY;\n"
"\tctx->algo = t->algo;\n"
"\tctx->proto = t->proto;\n"
"\tif (t->n_channels)\n"
"\t\tctx->n_channels = t->n_channels;\n"
"\treturn NCCLBPF_TUNER_APPLY;\n"
"}\n", o->name);
	chunk_table(res, chunks);
	write_chunk_source(f, o, chunks);
	fprintf(f, "\nchar LICENSE[] SEC(\"license\") = \"Dual BSD/GPL\";\n");
}

static int run_clang(const char *clang, const char *inc, const char *src, const char *obj,
		     char *err, size_t errlen)
{
	char incflag[4200];
	char *argv[] = { (char *)clang, "-O2", "-g", "-target", "bpf", incflag, "-c",
			 (char *)src, "-o", (char *)obj, NULL };
	pid_t pid;
	int st, r;

	snprintf(incflag, sizeof(incflag), "-I%s", inc);
	r = posix_spawnp(&pid, clang, NULL, NULL, argv, environ);
	if (r) {
		snprintf(err, errlen, "cannot run %s (%s): the policy source is %s; compile it where clang exists: "
			 "clang -O2 -g -target bpf -I INCLUDE -c %s -o %s", clang, strerror(r), src, src, obj);
		return -ENOENT;
	}
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		snprintf(err, errlen, "%s failed on %s (exit %d)", clang, src,
			 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return WIFEXITED(st) && WEXITSTATUS(st) == 127 ? -ENOENT : -EIO;
	}
	return 0;
}

/* Strict verification of every program of obj, as `ncclbpf verify --strict-consistency`. */
static int verify_strict(const char *path, char *err, size_t errlen)
{
	struct ncclbpf_verify_opts vo = { .sz = sizeof(vo), .strict_consistency = true };
	struct ncclbpf_object *obj = NULL;
	int ret = ncclbpf_object__open_file(path, NULL, &obj);

	if (ret) {
		snprintf(err, errlen, "%s: %s", path, ncclbpf_errmsg());
		return ret;
	}
	for (size_t i = 0; i < ncclbpf_object__prog_count(obj) && !ret; i++) {
		struct ncclbpf_program *p = ncclbpf_object__prog(obj, i);
		const struct ncclbpf_hook_desc *h = ncclbpf_hook_find_section(ncclbpf_program__section(p));
		struct ncclbpf_verify_result vr;

		memset(&vr, 0, sizeof(vr));
		if (!h) {
			snprintf(err, errlen, "%s: unknown section", path);
			ret = -EINVAL;
			break;
		}
		ret = ncclbpf_program__verify(p, h, &vo, &vr);
		if (ret && vr.n_findings) {
			const struct ncclbpf_finding *fd = &vr.findings[0];

			snprintf(err, errlen, "%s: %s: rejected in strict consistency mode: %s:%u: insn %u: %s",
				 path, ncclbpf_program__name(p), fd->file ? fd->file : "?", fd->line,
				 fd->insn, fd->reason);
		} else if (ret) {
			snprintf(err, errlen, "%s: %s: rejected in strict consistency mode: %s", path,
				 ncclbpf_program__name(p), ncclbpf_errmsg());
		}
	}
	ncclbpf_object__close(obj);
	return ret;
}

int tune_emit_policy(const struct tune_opts *o, const struct tune_result *res, char *err,
		     size_t errlen)
{
	char src[4096], obj[4096];
	const char *clang = o->clang ? o->clang : getenv("CLANG");
	FILE *f = open_out(o, ".bpf.c", src, sizeof(src), err, errlen);
	int ret;

	if (!f)
		return -EIO;
	write_source(f, o, res);
	if (fclose(f)) {
		snprintf(err, errlen, "%s: %s", src, strerror(errno));
		return -EIO;
	}
	if (!o->compile)
		return 0;
	snprintf(obj, sizeof(obj), "%s/%s.bpf.o", o->out_dir, o->name);
	/* A stale object from an earlier run must not pass for this one. */
	unlink(obj);
	ret = run_clang(clang && *clang ? clang : "clang", o->include_dir, src, obj, err, errlen);
	return ret ? ret : verify_strict(obj, err, errlen);
}

/* ---- the report --------------------------------------------------------------- */

/* busbw is inversely proportional to time: its interval comes from the time's. */
static void busbw_ci(char *buf, size_t n, const struct tune_meas *m)
{
	double k = m->busbw * m->mean_us;

	snprintf(buf, n, "%.3g [%.3g,%.3g]", m->busbw, m->hi_us > 0 ? k / m->hi_us : 0,
		 m->lo_us > 0 ? k / m->lo_us : INFINITY);
}

void tune_print_table(FILE *f, const struct tune_result *res)
{
	char a[48], b[48], c2[48];

	fprintf(f, "# %s\n", res->backend_desc);
	fprintf(f, "%-13s %11s  %-12s %21s  %-18s %21s %8s  %s\n", "coll", "bytes", "nccl",
		"default busbw [CI]", "best cell", "best busbw [CI]", "gain", "policy");
	for (int i = 0; i < res->n_pts; i++) {
		const struct tune_point *p = &res->pts[i];
		const struct tune_meas *best = p->best >= 0 ? &p->cells[p->best] : NULL;
		const struct tune_meas *ch = p->choice >= 0 ? &p->cells[p->choice] : NULL;
		char dci[40], bci[40];

		busbw_ci(dci, sizeof(dci), &p->def);
		if (best)
			busbw_ci(bci, sizeof(bci), best);
		snprintf(a, sizeof(a), "%s/%s", emu_algo_name(p->nccl_algo), emu_proto_name(p->nccl_proto));
		fprintf(f, "%-13s %11llu  %-12s %21s  %-18s %21s %+7.1f%%  %s\n", emu_coll_name(p->coll),
			(unsigned long long)p->n_bytes, a, dci,
			best ? cell_name(b, sizeof(b), best) : "-",
			best ? bci : "-", 100 * p->gain,
			ch ? cell_name(c2, sizeof(c2), ch) : "NCCL");
	}
}

static void write_csv(FILE *f, const struct tune_result *res)
{
	char b[48];

	fprintf(f, "coll,bytes,cell,algo,proto,n_channels,n,mean_us,lo_us,hi_us,busbw_gbps,nccl_pick,chosen,chunk\n");
	for (int i = 0; i < res->n_pts; i++) {
		const struct tune_point *p = &res->pts[i];

		for (int k = -1; k < p->n_cells; k++) {
			const struct tune_meas *m = k < 0 ? &p->def : &p->cells[k];

			fprintf(f, "%s,%llu,%s,%s,%s,%d,%d,%.4f,%.4f,%.4f,%.4f,%d,%d,%u\n", emu_coll_name(p->coll),
				(unsigned long long)p->n_bytes,
				cell_name(b, sizeof(b), m),
				k < 0 ? "-" : emu_algo_name(m->algo), k < 0 ? "-" : emu_proto_name(m->proto),
				m->n_channels, m->n, m->mean_us, m->lo_us, m->hi_us, m->busbw,
				k >= 0 && m->algo == p->nccl_algo && m->proto == p->nccl_proto && !m->n_channels &&
				!m->chunk, k == p->choice, m->chunk);
		}
	}
}

/* One chart per collective: busbw of every cell (thin), NCCL's default (black), the policy's choices (red). */
static void write_svg(FILE *f, const struct tune_result *res)
{
	static const char *const pal[] = { "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
					   "#e377c2", "#17becf", "#bcbd22", "#7f7f7f" };
	const int W = 900, H = 340, L = 70, R = 220, T = 30, B = 40;
	int colls[TUNE_NUM_COLLS], nc = 0;
	char b[48];

	for (int c = 0; c < TUNE_NUM_COLLS; c++) {
		for (int i = 0; i < res->n_pts; i++)
			if (res->pts[i].coll == c) {
				colls[nc++] = c;
				break;
			}
	}
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"11\">\n",
		W, H * (nc ? nc : 1));
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	for (int ci = 0; ci < nc; ci++) {
		int c = colls[ci], y0 = ci * H, lo = 64, hi = 0, first = -1;
		double ymax = 0;

		for (int i = 0; i < res->n_pts; i++) {
			const struct tune_point *p = &res->pts[i];
			int lb = tune_size_bucket(p->n_bytes);

			if (p->coll != c)
				continue;
			if (first < 0)
				first = i;
			lo = lb < lo ? lb : lo;
			hi = lb > hi ? lb : hi;
			ymax = p->def.busbw > ymax ? p->def.busbw : ymax;
			for (int k = 0; k < p->n_cells; k++)
				ymax = p->cells[k].busbw > ymax ? p->cells[k].busbw : ymax;
		}
		if (hi == lo)
			hi = lo + 1;
		if (ymax <= 0)
			ymax = 1;
#define PX(lb) (L + (double)((lb) - lo) * (W - L - R) / (hi - lo))
#define PY(v) (y0 + T + (H - T - B) * (1.0 - (v) / ymax))
		fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"14\">%s: busbw (GB/s) per cell, %d ranks; black: NCCL's default, red: the policy's choice</text>\n",
			L, y0 + 18, emu_coll_name(c), res->n_ranks);
		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"black\"/>\n", L, PY(0), W - R, PY(0));
		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"black\"/>\n", L, PY(0), L, PY(ymax));
		for (int k = 0; k <= 4; k++)
			fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n", L - 4, PY(ymax * k / 4) + 4, ymax * k / 4);
		for (int lb = lo; lb <= hi; lb += 2) {
			uint64_t v = 1ull << lb;

			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%llu%s</text>\n", PX(lb), PY(0) + 14,
				(unsigned long long)(v >= (1 << 30) ? v >> 30 : v >= (1 << 20) ? v >> 20 : v >= 1024 ? v >> 10 : v),
				v >= (1 << 30) ? "G" : v >= (1 << 20) ? "M" : v >= 1024 ? "K" : "");
		}
		/* Every cell present at the first point names a series (cells are the same per point). */
		for (int k = 0; first >= 0 && k < res->pts[first].n_cells; k++) {
			const struct tune_meas *m0 = &res->pts[first].cells[k];
			const char *col = pal[k % 9];

			fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1\" points=\"", col);
			for (int i = 0; i < res->n_pts; i++) {
				const struct tune_point *p = &res->pts[i];

				for (int j = 0; p->coll == c && j < p->n_cells; j++)
					if (p->cells[j].algo == m0->algo && p->cells[j].proto == m0->proto &&
					    p->cells[j].n_channels == m0->n_channels &&
					    p->cells[j].chunk == m0->chunk && p->cells[j].n >= 2)
						fprintf(f, "%.1f,%.1f ", PX(tune_size_bucket(p->n_bytes)), PY(p->cells[j].busbw));
			}
			fprintf(f, "\"/>\n<text x=\"%d\" y=\"%d\" fill=\"%s\">%s</text>\n", W - R + 10,
				y0 + T + 14 * (k + 1), col, cell_name(b, sizeof(b), m0));
		}
		fprintf(f, "<polyline fill=\"none\" stroke=\"black\" stroke-width=\"2.5\" points=\"");
		for (int i = 0; i < res->n_pts; i++)
			if (res->pts[i].coll == c)
				fprintf(f, "%.1f,%.1f ", PX(tune_size_bucket(res->pts[i].n_bytes)), PY(res->pts[i].def.busbw));
		fprintf(f, "\"/>\n");
		for (int i = 0; i < res->n_pts; i++) {
			const struct tune_point *p = &res->pts[i];

			if (p->coll == c && p->choice >= 0)
				fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"red\"><title>%s</title></circle>\n",
					PX(tune_size_bucket(p->n_bytes)), PY(p->cells[p->choice].busbw),
					cell_name(b, sizeof(b), &p->cells[p->choice]));
		}
#undef PX
#undef PY
	}
	fprintf(f, "</svg>\n");
}

int tune_emit_report(const struct tune_opts *o, const struct tune_result *res, char *err,
		     size_t errlen)
{
	static const char *const ext[] = { ".report.txt", ".csv", ".svg" };
	char path[4096];

	for (int k = 0; k < 3; k++) {
		FILE *f = open_out(o, ext[k], path, sizeof(path), err, errlen);

		if (!f)
			return -EIO;
		if (k == 0)
			tune_print_table(f, res);
		else if (k == 1)
			write_csv(f, res);
		else
			write_svg(f, res);
		if (fclose(f)) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			return -EIO;
		}
	}
	return 0;
}
