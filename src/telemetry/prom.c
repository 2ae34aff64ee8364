/*
 * prom.c - telemetry aggregation and Prometheus text exposition.
 */
#include "prom.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ncclbpf/policy.h"

#ifndef NCCLBPF_VERSION
#define NCCLBPF_VERSION "unknown"
#endif

_Static_assert(NBPF_TELE_COLLS == NCCLBPF_NUM_COLLS + 1, "collective numbering");
_Static_assert(NBPF_TELE_ALGOS == NCCLBPF_NUM_ALGOS + 1, "algorithm numbering");
_Static_assert(NBPF_TELE_PROTOS == NCCLBPF_NUM_PROTOS + 1, "protocol numbering");

static const char *const coll_names[NBPF_TELE_COLLS] = {
	"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce", "other",
};
static const char *const algo_names[NBPF_TELE_ALGOS] = {
	"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT", "unknown",
};
static const char *const proto_names[NBPF_TELE_PROTOS] = { "LL", "LL128", "SIMPLE", "unknown" };
static const char *const size_names[NBPF_SIZE_CLASSES] = {
	"1K", "16K", "256K", "4M", "64M", "1G", "inf",
};
static const char *const refuse_names[NBPF_TELE_REFUSE] = {
	"cell", "range", "channels", "collnet_channels", "return", "error",
};

const char *nbpf_tele_refuse_name(int r)
{
	return r >= 0 && r < NBPF_TELE_REFUSE ? refuse_names[r] : "other";
}

const char *nbpf_tele_coll_name(int c)
{
	return c >= 0 && c < NBPF_TELE_COLLS ? coll_names[c] : "other";
}

const char *nbpf_tele_algo_name(int a)
{
	return a >= 0 && a < NBPF_TELE_ALGOS ? algo_names[a] : "unknown";
}

const char *nbpf_tele_proto_name(int p)
{
	return p >= 0 && p < NBPF_TELE_PROTOS ? proto_names[p] : "unknown";
}

const char *nbpf_tele_size_name(int cls)
{
	return cls >= 0 && cls < NBPF_SIZE_CLASSES ? size_names[cls] : "inf";
}

/* Grows an array by one zeroed element; NULL on allocation failure. */
static void *grow(void **arr, size_t *n, size_t *cap, size_t elem)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		void *p = realloc(*arr, nc * elem);

		if (!p)
			return NULL;
		*arr = p;
		*cap = nc;
	}
	memset((char *)*arr + *n * elem, 0, elem);
	return (char *)*arr + (*n)++ * elem;
}

struct nbpf_tele_cell *nbpf_tele_cell(struct nbpf_tele_set *s, uint64_t comm_id, int coll,
				      int size_cls)
{
	struct nbpf_tele_cell *c;

	if (coll < 0 || coll >= NBPF_TELE_COLLS)
		coll = NBPF_TELE_COLLS - 1;
	if (size_cls < 0 || size_cls >= NBPF_SIZE_CLASSES)
		size_cls = NBPF_SIZE_CLASSES - 1;
	for (size_t i = 0; i < s->n_cells; i++) {
		c = &s->cells[i];
		if (c->comm_id == comm_id && c->coll == coll && c->size_cls == size_cls)
			return c;
	}
	c = grow((void **)&s->cells, &s->n_cells, &s->cap_cells, sizeof(*c));
	if (c) {
		c->comm_id = comm_id;
		c->coll = coll;
		c->size_cls = size_cls;
	}
	return c;
}

struct nbpf_tele_tuner *nbpf_tele_tuner(struct nbpf_tele_set *s, uint64_t comm_id)
{
	struct nbpf_tele_tuner *t;

	for (size_t i = 0; i < s->n_tuners; i++)
		if (s->tuners[i].comm_id == comm_id)
			return &s->tuners[i];
	t = grow((void **)&s->tuners, &s->n_tuners, &s->cap_tuners, sizeof(*t));
	if (t)
		t->comm_id = comm_id;
	return t;
}

struct nbpf_tele_events *nbpf_tele_events(struct nbpf_tele_set *s, uint64_t comm_id)
{
	struct nbpf_tele_events *e;

	for (size_t i = 0; i < s->n_events; i++)
		if (s->events[i].comm_id == comm_id)
			return &s->events[i];
	e = grow((void **)&s->events, &s->n_events, &s->cap_events, sizeof(*e));
	if (e)
		e->comm_id = comm_id;
	return e;
}

const char *nbpf_tele_event_name(int bit)
{
	static const char *const names[NBPF_TELE_EVENTS] = {
		"Group", "Coll", "P2p", "ProxyOp", "ProxyStep", "ProxyCtrl", "KernelCh",
		"NetPlugin", "GroupApi", "CollApi", "P2pApi", "KernelLaunch", "CeColl", "CeSync",
		"CeBatch", "KernelPhase",
	};

	return bit >= 0 && bit < NBPF_TELE_EVENTS ? names[bit] : "other";
}

struct nbpf_tele_prog *nbpf_tele_prog(struct nbpf_tele_set *s, const char *name,
				      const char *hook, const char *tag)
{
	struct nbpf_tele_prog *p;

	for (size_t i = 0; i < s->n_progs; i++) {
		p = &s->progs[i];
		if (!strcmp(p->name, name) && !strcmp(p->hook, hook) && !strcmp(p->tag, tag))
			return p;
	}
	p = grow((void **)&s->progs, &s->n_progs, &s->cap_progs, sizeof(*p));
	if (p) {
		snprintf(p->name, sizeof(p->name), "%s", name);
		snprintf(p->hook, sizeof(p->hook), "%s", hook);
		snprintf(p->tag, sizeof(p->tag), "%s", tag);
	}
	return p;
}

struct nbpf_tele_map *nbpf_tele_map(struct nbpf_tele_set *s, const char *name)
{
	struct nbpf_tele_map *p;

	for (size_t i = 0; i < s->n_maps; i++)
		if (!strcmp(s->maps[i].name, name))
			return &s->maps[i];
	p = grow((void **)&s->maps, &s->n_maps, &s->cap_maps, sizeof(*p));
	if (p)
		snprintf(p->name, sizeof(p->name), "%s", name);
	return p;
}

void nbpf_tele_free(struct nbpf_tele_set *s)
{
	free(s->cells);
	free(s->tuners);
	free(s->progs);
	free(s->maps);
	free(s->peers);
	free(s->loads);
	free(s->events);
	memset(s, 0, sizeof(*s));
}

/*
 * Bucket i spans [2^i, 2^(i+1)) ns (bucket 0 also holds 0).  The rank is
 * placed by linear interpolation inside its bucket, the usual estimate for
 * exponential histograms; the error is bounded by the bucket width.
 */
double nbpf_tele_quantile_ns(const uint64_t *hist, size_t n, double q)
{
	uint64_t total = 0, seen = 0;
	double rank;

	for (size_t i = 0; i < n; i++)
		total += hist[i];
	if (!total)
		return 0;
	rank = q * (double)total;
	for (size_t i = 0; i < n; i++) {
		if (!hist[i])
			continue;
		if ((double)(seen + hist[i]) >= rank) {
			double lo = i ? ldexp(1, (int)i) : 0, hi = ldexp(1, (int)i + 1);
			double frac = (rank - (double)seen) / (double)hist[i];

			return lo + (hi - lo) * (frac < 0 ? 0 : frac > 1 ? 1 : frac);
		}
		seen += hist[i];
	}
	return ldexp(1, (int)n);
}

double nbpf_tele_busbw_factor(int coll, uint32_t n)
{
	if (!n)
		return 1;
	switch (coll) {
	case NCCLBPF_COLL_ALLREDUCE:
		return 2.0 * (n - 1) / n;
	case NCCLBPF_COLL_ALLGATHER:
	case NCCLBPF_COLL_REDUCESCATTER:
		return (double)(n - 1) / n;
	default:
		return 1;
	}
}

static void labels3(FILE *f, const struct nbpf_tele_cell *c)
{
	fprintf(f, "communicator=\"0x%016" PRIx64 "\",collective=\"%s\",size=\"%s\"", c->comm_id,
		nbpf_tele_coll_name(c->coll), nbpf_tele_size_name(c->size_cls));
}

/* Label values from program objects are escaped as the text format requires. */
static void label_str(FILE *f, const char *key, const char *v)
{
	fprintf(f, "%s=\"", key);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f), fputc(*v, f);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

static void prog_labels(FILE *f, const struct nbpf_tele_prog *p)
{
	label_str(f, "program", p->name);
	fputc(',', f);
	label_str(f, "hook", p->hook);
	fputc(',', f);
	label_str(f, "tag", p->tag);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/*
 * Prometheus requires cumulative buckets whose le is inclusive; ours are
 * half-open powers of two, so bucket i's count is every observation
 * below 2^(i+1) ns and le=2^(i+1)*1e-9 s over-covers only the boundary
 * value itself.  Buckets below FIRST are folded into the first one shown.
 */
int nbpf_prom_write(FILE *f, const struct nbpf_tele_set *s)
{
	family(f, "ncclbpf_build_info", "gauge",
	       "The exporter's version (value 1), for joins and upgrade tracking.");
	fprintf(f, "ncclbpf_build_info{version=\"%s\"} 1\n", NCCLBPF_VERSION);
	family(f, "ncclbpf_processes", "gauge", "Processes running the ncclbpf plugin that answered.");
	fprintf(f, "ncclbpf_processes %u\n", s->processes);

	family(f, "ncclbpf_collective_latency_seconds", "histogram",
	       "Latency of completed collectives (GPU time from kernel spans, else host time).");
	for (size_t i = 0; i < s->n_cells; i++) {
		const struct nbpf_tele_cell *c = &s->cells[i];
		uint64_t cum = 0;

		for (int b = 0; b < NBPF_LAT_BUCKETS; b++) {
			cum += c->hist[b];
			if (b < NBPF_PROM_FIRST_BUCKET || b > NBPF_PROM_LAST_BUCKET)
				continue;
			fputs("ncclbpf_collective_latency_seconds_bucket{", f);
			labels3(f, c);
			fprintf(f, ",le=\"%.10g\"} %" PRIu64 "\n", ldexp(1e-9, b + 1), cum);
		}
		fputs("ncclbpf_collective_latency_seconds_bucket{", f);
		labels3(f, c);
		fprintf(f, ",le=\"+Inf\"} %" PRIu64 "\n", c->count);
		fputs("ncclbpf_collective_latency_seconds_sum{", f);
		labels3(f, c);
		fprintf(f, "} %.9f\n", (double)c->sum_ns * 1e-9);
		fputs("ncclbpf_collective_latency_seconds_count{", f);
		labels3(f, c);
		fprintf(f, "} %" PRIu64 "\n", c->count);
	}

	family(f, "ncclbpf_collective_bytes_total", "counter", "Bytes moved by completed collectives.");
	for (size_t i = 0; i < s->n_cells; i++) {
		fputs("ncclbpf_collective_bytes_total{", f);
		labels3(f, &s->cells[i]);
		fprintf(f, "} %" PRIu64 "\n", s->cells[i].bytes);
	}

	family(f, "ncclbpf_collective_algo_proto_total", "counter",
	       "Completed collectives by the algorithm and protocol NCCL ran.");
	for (size_t i = 0; i < s->n_cells; i++) {
		const struct nbpf_tele_cell *c = &s->cells[i];

		for (int a = 0; a < NBPF_TELE_ALGOS; a++)
			for (int p = 0; p < NBPF_TELE_PROTOS; p++) {
				if (!c->mix[a][p])
					continue;
				fputs("ncclbpf_collective_algo_proto_total{", f);
				labels3(f, c);
				fprintf(f, ",algorithm=\"%s\",protocol=\"%s\"} %" PRIu64 "\n",
					nbpf_tele_algo_name(a), nbpf_tele_proto_name(p), c->mix[a][p]);
			}
	}

	family(f, "ncclbpf_tuner_calls_total", "counter", "Tuner getCollInfo calls, summed over ranks.");
	for (size_t i = 0; i < s->n_tuners; i++)
		for (int k = 0; k < NBPF_TELE_COLLS; k++)
			if (s->tuners[i].coll_calls[k])
				fprintf(f, "ncclbpf_tuner_calls_total{communicator=\"0x%016" PRIx64
					   "\",collective=\"%s\"} %" PRIu64 "\n",
					s->tuners[i].comm_id, nbpf_tele_coll_name(k),
					s->tuners[i].coll_calls[k]);
	family(f, "ncclbpf_tuner_applied_total", "counter",
	       "Tuner calls where a policy output changed NCCL's choice.");
	for (size_t i = 0; i < s->n_tuners; i++)
		fprintf(f, "ncclbpf_tuner_applied_total{communicator=\"0x%016" PRIx64 "\"} %" PRIu64 "\n",
			s->tuners[i].comm_id, s->tuners[i].applied);
	family(f, "ncclbpf_tuner_refused_total", "counter",
	       "Policy outputs refused by the adapter (NCCL's choice kept), by reason.");
	for (size_t i = 0; i < s->n_tuners; i++)
		for (int r = 0; r < NBPF_TELE_REFUSE; r++)
			fprintf(f, "ncclbpf_tuner_refused_total{communicator=\"0x%016" PRIx64
				   "\",reason=\"%s\"} %" PRIu64 "\n",
				s->tuners[i].comm_id, refuse_names[r], s->tuners[i].refused[r]);

	/* Only with profiler contexts that counted events. */
	for (size_t i = 0, head = 0; i < s->n_events; i++)
		for (int b = 0; b < NBPF_TELE_EVENTS; b++) {
			if (!s->events[i].n[b])
				continue;
			if (!head++)
				family(f, "ncclbpf_profiler_events_total", "counter",
				       "Profiler events NCCL started, by type, summed over ranks.");
			fprintf(f, "ncclbpf_profiler_events_total{communicator=\"0x%016" PRIx64
				   "\",type=\"%s\"} %" PRIu64 "\n", s->events[i].comm_id,
				nbpf_tele_event_name(b), s->events[i].n[b]);
		}

	family(f, "ncclbpf_program_runs_total", "counter", "Policy program runs.");
	for (size_t i = 0; i < s->n_progs; i++) {
		fputs("ncclbpf_program_runs_total{", f);
		prog_labels(f, &s->progs[i]);
		fprintf(f, "} %" PRIu64 "\n", s->progs[i].runs);
	}
	family(f, "ncclbpf_program_run_seconds_total", "counter",
	       "Time spent in policy programs (measured only with NCCLBPF_STATS=1).");
	for (size_t i = 0; i < s->n_progs; i++) {
		/* Unmeasured (runs without time: NCCLBPF_STATS=0) is absent, not 0. */
		if (s->progs[i].runs && !s->progs[i].ns)
			continue;
		fputs("ncclbpf_program_run_seconds_total{", f);
		prog_labels(f, &s->progs[i]);
		fprintf(f, "} %.9f\n", (double)s->progs[i].ns * 1e-9);
	}

	/* Only with maps to show: a job without any should not grow the exposition. */
	for (size_t i = 0; i < s->n_maps; i++) {
		if (!i)
			family(f, "ncclbpf_map_lock_timeouts_total", "counter",
			       "Map calls that failed with -EBUSY: no lock in time.");
		fputs("ncclbpf_map_lock_timeouts_total{", f);
		label_str(f, "map", s->maps[i].name);
		fprintf(f, "} %" PRIu64 "\n", s->maps[i].lock_timeouts);
	}
	for (size_t i = 0; i < s->n_maps; i++) {
		if (!i)
			family(f, "ncclbpf_map_lock_recoveries_total", "counter",
			       "Map locks taken over from a dead holder.");
		fputs("ncclbpf_map_lock_recoveries_total{", f);
		label_str(f, "map", s->maps[i].name);
		fprintf(f, "} %" PRIu64 "\n", s->maps[i].lock_recoveries);
	}
	for (size_t i = 0; i < s->n_maps; i++) {
		if (!i)
			family(f, "ncclbpf_map_lock_discarded_total", "counter",
			       "Map values a dead writer left half-written, then removed or zeroed.");
		fputs("ncclbpf_map_lock_discarded_total{", f);
		label_str(f, "map", s->maps[i].name);
		fprintf(f, "} %" PRIu64 "\n", s->maps[i].lock_discarded);
	}
	nbpf_prom_write_net(f, s);
	nbpf_prom_write_loads(f, s);
	return ferror(f) ? -EIO : 0;
}
