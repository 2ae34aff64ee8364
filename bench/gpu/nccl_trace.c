/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nccl_trace.c - reads the traces libncclbpf-rec.so wrote for a job (one
 * file per rank; src/emulator/emu_trace.h has the format) and checks what
 * NCCL did against what the plugin decided.
 *
 *   nccl_trace check TRACE...   per rank: every tuner call joined with the
 *                               Coll the profiler saw for it; what NCCL ran
 *                               (algorithm, protocol, channels) against the
 *                               decision; ranks of a communicator agreeing
 *                               call by call; the Coll's count against the
 *                               tuner's bytes.  Exit 1 on any disagreement.
 *   nccl_trace cost TRACE...    the plugin's time per call inside NCCL
 *                               (getCollInfo, and each profiler callback
 *                               kind), from the recorder's cycle counts.
 *
 * A forced channel count that NCCL ran with fewer channels (it has only so
 * many) is reported as clamped, not as a disagreement; more is one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emulator/emu.h"
#include "emulator/emu_trace.h"

#define MAX_TRACES 64

struct rank_view {
	const char *path;
	struct emu_trace_comm *comms;
	size_t n;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void quantiles(const char *what, double *v, size_t n)
{
	double sum = 0;

	if (!n) {
		printf("  %-22s -\n", what);
		return;
	}
	qsort(v, n, sizeof(*v), cmp_double);
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	printf("  %-22s n %-7zu p50 %7.0f  p90 %7.0f  p99 %7.0f  max %8.0f  mean %7.1f ns\n", what,
	       n, v[n / 2], v[n * 9 / 10], v[n * 99 / 100], v[n - 1], sum / (double)n);
}

/* One rank's communicator: returns its disagreements. */
static long check_comm(const char *path, const struct emu_trace_comm *c)
{
	long bad = 0, joined = 0, edited = 0, forced = 0, honoured = 0, clamped = 0, count_ok = 0;
	long own_nch[65] = { 0 }, kch_ok = 0, late_kch = 0, shown = 0, alg_bad = 0;
	size_t n = c->n_colls;

	printf("%s: comm 0x%016llx rank %d of %d (%d nodes): %zu tuner calls, %zu Colls\n", path,
	       (unsigned long long)c->comm, c->rank, c->n_ranks, c->n_nodes, c->n_tuner_calls,
	       c->n_prof_colls);
	if (c->n_tuner_calls && c->n_prof_colls && c->n_tuner_calls != c->n_prof_colls) {
		printf("  DISAGREE: %zu tuner calls but %zu Colls: cannot join call by call\n",
		       c->n_tuner_calls, c->n_prof_colls);
		bad++;
	}
	for (size_t k = 0; k < n; k++) {
		const struct emu_trace_coll *x = &c->colls[k];
		bool forced_nch = x->nch_out > 0 && x->nch_out != x->nch_in;
		uint64_t per = x->count * (uint64_t)x->dsize;

		if (!x->have_coll || !x->n_cells)
			continue;
		joined++;
		edited += x->edited;
		/* AllGather (2) and ReduceScatter (3): the Coll counts one rank's part. */
		if ((x->coll == 2 || x->coll == 3 ? per * (uint64_t)c->n_ranks : per) == x->bytes)
			count_ok++;
		if (x->ran_algo != x->dec_algo || x->ran_proto != x->dec_proto) {
			if (shown++ < 8)
				printf("  DISAGREE call %zu: %s %llu B: decided %s/%s, NCCL ran %s/%s\n", k,
				       emu_coll_name(x->coll), (unsigned long long)x->bytes,
				       emu_algo_name(x->dec_algo), emu_proto_name(x->dec_proto),
				       emu_algo_name(x->ran_algo), emu_proto_name(x->ran_proto));
			alg_bad++;
		}
		if (forced_nch) {
			forced++;
			if (x->ran_nch == x->nch_out) {
				honoured++;
			} else if (x->ran_nch >= 0 && x->ran_nch < x->nch_out) {
				clamped++;
			} else {
				if (shown++ < 8)
					printf("  DISAGREE call %zu: %d channels decided, NCCL ran %d\n", k,
					       x->nch_out, x->ran_nch);
				bad++;
			}
		} else if (x->ran_nch >= 0 && x->ran_nch <= 64) {
			own_nch[x->ran_nch]++;
		}
		kch_ok += x->kch == x->ran_nch;
		late_kch += x->kch_after_stop > 0;
	}
	bad += alg_bad;
	printf("  joined %ld: decided == ran (algorithm, protocol) %ld/%ld; table edited %ld\n", joined,
	       joined - alg_bad, joined, edited);
	printf("  channels forced %ld: ran as decided %ld, clamped %ld; NCCL's own counts:", forced,
	       honoured, clamped);
	for (int i = 0; i <= 64; i++)
		if (own_nch[i])
			printf(" %d ch x%ld", i, own_nch[i]);
	printf("\n  Coll count x type size (x ranks for AllGather/ReduceScatter) == tuner bytes %ld/%ld; "
	       "KernelCh events == Coll channels %ld/%ld; Colls stopped before a KernelCh started %ld\n",
	       count_ok, joined, kch_ok, joined, late_kch);
	if (joined && count_ok != joined)
		bad++;
	return bad;
}

/* Ranks of one communicator decide and run the same, call by call. */
static long check_agree(struct rank_view *rv, int nr)
{
	const struct emu_trace_comm *v[MAX_TRACES * 8];
	int nv = 0;
	long bad = 0;

	for (int a = 0; a < nr; a++)
		for (size_t i = 0; i < rv[a].n && nv < MAX_TRACES * 8; i++)
			v[nv++] = &rv[a].comms[i];
	for (int a = 0; a < nv; a++)
		for (int b = a + 1; b < nv; b++) {
			const struct emu_trace_comm *ca = v[a], *cb = v[b];
			size_t n = ca->n_colls < cb->n_colls ? ca->n_colls : cb->n_colls;
			long diff = 0;

			if (cb->comm != ca->comm)
				continue;
			for (size_t k = 0; k < n; k++) {
				const struct emu_trace_coll *x = &ca->colls[k], *y = &cb->colls[k];

				diff += x->coll != y->coll || x->bytes != y->bytes ||
					x->dec_algo != y->dec_algo || x->dec_proto != y->dec_proto ||
					x->nch_out != y->nch_out || x->ran_algo != y->ran_algo ||
					x->ran_proto != y->ran_proto || x->ran_nch != y->ran_nch;
			}
			if (ca->n_colls != cb->n_colls)
				diff++;
			printf("ranks %d and %d of comm 0x%016llx: %zu calls compared, %ld differ\n",
			       ca->rank, cb->rank, (unsigned long long)ca->comm, n, diff);
			bad += diff;
		}
	return bad;
}

static int cmd_check(int argc, char **argv)
{
	struct rank_view rv[MAX_TRACES];
	struct emu_trace t;
	char err[512];
	long bad = 0;
	int nr = 0;

	for (int i = 0; i < argc && nr < MAX_TRACES; i++) {
		if (emu_trace_load(argv[i], &t, err, sizeof(err))) {
			fprintf(stderr, "nccl_trace: %s\n", err);
			return 2;
		}
		rv[nr].path = argv[i];
		if (emu_trace_comms(&t, &rv[nr].comms, &rv[nr].n)) {
			fprintf(stderr, "nccl_trace: out of memory\n");
			return 2;
		}
		for (size_t k = 0; k < rv[nr].n; k++)
			bad += check_comm(argv[i], &rv[nr].comms[k]);
		emu_trace_free(&t);
		nr++;
	}
	bad += check_agree(rv, nr);
	for (int i = 0; i < nr; i++)
		emu_trace_comms_free(rv[i].comms, rv[i].n);
	printf("%s: %ld disagreement(s)\n", bad ? "FAIL" : "OK", bad);
	return bad ? 1 : 0;
}

enum { C_TUNER, C_COLL_START, C_KCH_START, C_KCH_STATE, C_STOP, C_KINDS };

static int cmd_cost(int argc, char **argv)
{
	static const char *const names[C_KINDS] = {
		"getCollInfo", "startEvent Coll", "startEvent KernelCh", "recordEventState",
		"stopEvent",
	};
	double *v[C_KINDS] = { 0 };
	size_t n[C_KINDS] = { 0 }, cap[C_KINDS] = { 0 };
	struct emu_trace t;
	char err[512];

	for (int i = 0; i < argc; i++) {
		if (emu_trace_load(argv[i], &t, err, sizeof(err))) {
			fprintf(stderr, "nccl_trace: %s\n", err);
			return 2;
		}
		if (t.tsc_per_ns <= 0) {
			fprintf(stderr, "nccl_trace: %s: no clock lines, cycles cannot be converted\n",
				argv[i]);
			emu_trace_free(&t);
			continue;
		}
		for (size_t k = 0; k < t.n; k++) {
			const struct emu_trace_ev *e = &t.ev[k];
			uint64_t cyc = emu_trace_u64(e, "cyc", 0), type;
			int kind;

			if (!cyc)
				continue;
			if (!strcmp(e->kind, "tret"))
				kind = C_TUNER;
			else if (!strcmp(e->kind, "pstart"))
				kind = (type = emu_trace_u64(e, "type", 0)) == 0x2 ? C_COLL_START
				       : type == 0x40 ? C_KCH_START : -1;
			else if (!strcmp(e->kind, "pstate"))
				kind = C_KCH_STATE;
			else if (!strcmp(e->kind, "pstop"))
				kind = C_STOP;
			else
				kind = -1;
			if (kind < 0)
				continue;
			if (n[kind] == cap[kind]) {
				double *nv = realloc(v[kind], (cap[kind] = cap[kind] ? 2 * cap[kind] : 1024) *
							      sizeof(double));

				if (!nv)
					return 2;
				v[kind] = nv;
			}
			v[kind][n[kind]++] = (double)cyc / t.tsc_per_ns;
		}
		emu_trace_free(&t);
	}
	printf("the plugin's time per call inside NCCL (TSC around the forwarded call):\n");
	for (int k = 0; k < C_KINDS; k++) {
		quantiles(names[k], v[k], n[k]);
		free(v[k]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "check"))
		return cmd_check(argc - 2, argv + 2);
	if (argc >= 3 && !strcmp(argv[1], "cost"))
		return cmd_cost(argc - 2, argv + 2);
	fprintf(stderr, "usage: nccl_trace check TRACE...\n       nccl_trace cost TRACE...\n");
	return 2;
}
