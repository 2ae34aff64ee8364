/*
 * cmd_top.c - `ncclbpf top [PID] [INTERVAL] [COUNT]` (or --interval S,
 * --count N): a live table, per communicator and collective, of what
 * completed during each interval; under -j a JSON document per sample.
 *
 * Latency percentiles come from the log2 histograms the profiler adapter
 * keeps (interpolated inside a bucket, so within a factor of two by
 * construction, usually much closer).  Bandwidth follows nccl-tests:
 * algbw = bytes / time, busbw = algbw * 2(n-1)/n for AllReduce,
 * (n-1)/n for AllGather and ReduceScatter, 1 for Broadcast and Reduce.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "control/ctl_client.h"
#include "control/ctl_tele.h"

/* top_net.c: the per-peer pane. */
void cli_top_print_peers(const struct nbpf_tele_set *d, double secs, int iter);
#include "ncclbpf/runtime.h"

/* The top two (algorithm, protocol) cells with their share, e.g. "RING/LL128 80%". */
static void fmt_mix(char *out, size_t n, const struct nbpf_tele_cell *c)
{
	uint64_t best[2] = { 0, 0 }, total = 0;
	int ba[2] = { -1, -1 }, bp[2] = { -1, -1 };
	size_t k = 0;

	out[0] = 0;
	for (int a = 0; a < NBPF_TELE_ALGOS; a++)
		for (int p = 0; p < NBPF_TELE_PROTOS; p++) {
			uint64_t v = c->mix[a][p];

			total += v;
			if (v > best[0]) {
				best[1] = best[0], ba[1] = ba[0], bp[1] = bp[0];
				best[0] = v, ba[0] = a, bp[0] = p;
			} else if (v > best[1]) {
				best[1] = v, ba[1] = a, bp[1] = p;
			}
		}
	for (int i = 0; i < 2 && total; i++)
		if (best[i] && k < n)
			k += (size_t)snprintf(out + k, n - k, "%s%s/%s %.0f%%", i ? " " : "",
					      nbpf_tele_algo_name(ba[i]), nbpf_tele_proto_name(bp[i]),
					      100.0 * (double)best[i] / (double)total);
	if (!out[0])
		snprintf(out, n, "-");
}

static int cell_cmp(const void *a, const void *b)
{
	const struct nbpf_tele_cell *x = a, *y = b;

	if (x->comm_id != y->comm_id)
		return x->comm_id < y->comm_id ? -1 : 1;
	if (x->coll != y->coll)
		return x->coll - y->coll;
	return x->size_cls - y->size_cls;
}

static void print_table(const struct nbpf_tele_set *d, double secs, int iter)
{
	if (iter == 1)
		printf("\nncclbpf top  %u process%s  sample 1: totals since each process started\n",
		       d->processes, d->processes == 1 ? "" : "es");
	else
		printf("\nncclbpf top  %u process%s  last %.3g s  sample %d\n", d->processes,
		       d->processes == 1 ? "" : "es", secs, iter);
	printf("%-18s %-13s %-5s %9s %9s %9s %9s %9s %9s  %s\n", "COMMUNICATOR", "COLLECTIVE", "SIZE",
	       "CALLS", "CALLS/s", "P50", "P99", "ALGBW", "BUSBW", "ALGO/PROTO");
	for (size_t i = 0; i < d->n_cells; i++) {
		const struct nbpf_tele_cell *c = &d->cells[i];
		char p50[16], p99[16], mix[64], id[24], rate[24];
		double algbw = c->sum_ns ? (double)c->bytes / (double)c->sum_ns : 0; /* GB/s */

		if (!c->count)
			continue;
		cli_fmt_ns(p50, sizeof(p50), nbpf_tele_quantile_ns(c->hist, NBPF_LAT_BUCKETS, 0.50));
		cli_fmt_ns(p99, sizeof(p99), nbpf_tele_quantile_ns(c->hist, NBPF_LAT_BUCKETS, 0.99));
		fmt_mix(mix, sizeof(mix), c);
		snprintf(id, sizeof(id), "0x%016" PRIx64, c->comm_id);
		if (iter == 1)
			snprintf(rate, sizeof(rate), "-");
		else
			snprintf(rate, sizeof(rate), "%.0f", (double)c->count / secs);
		printf("%-18s %-13s %-5s %9" PRIu64 " %9s %9s %9s %8.2fG %8.2fG  %s\n", id,
		       nbpf_tele_coll_name(c->coll), nbpf_tele_size_name(c->size_cls), c->count,
		       rate, p50, p99, algbw, algbw * nbpf_tele_busbw_factor(c->coll, c->n_ranks), mix);
	}
	for (size_t i = 0; i < d->n_tuners; i++) {
		const struct nbpf_tele_tuner *t = &d->tuners[i];
		uint64_t refused = 0;

		for (int k = 0; k < NBPF_TELE_REFUSE; k++)
			refused += t->refused[k];
		printf("tuner 0x%016" PRIx64 "  ranks %u  calls %" PRIu64, t->comm_id, t->n_ranks, t->calls);
		if (iter > 1)
			printf(" (%.0f/s)", (double)t->calls / secs);
		printf("  applied %" PRIu64 "  skipped %" PRIu64 "  refused %" PRIu64 "\n", t->applied,
		       t->skipped, refused);
	}
	cli_top_print_peers(d, secs, iter);
	fflush(stdout);
}

static void print_json(const struct nbpf_tele_set *d, double secs, int iter)
{
	printf("{\"sample\":%d,\"interval_s\":%.3f,\"processes\":%u,\"rows\":[", iter, secs,
	       d->processes);
	for (size_t i = 0, n = 0; i < d->n_cells; i++) {
		const struct nbpf_tele_cell *c = &d->cells[i];
		double algbw = c->sum_ns ? (double)c->bytes / (double)c->sum_ns : 0;

		if (!c->count)
			continue;
		printf("%s{\"comm_id\":\"0x%016" PRIx64 "\",\"coll\":\"%s\",\"size\":\"%s\",\"ranks\":%u,"
		       "\"calls\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"p50_ns\":%.0f,\"p99_ns\":%.0f,"
		       "\"mean_ns\":%.0f,\"algbw_gbs\":%.4f,\"busbw_gbs\":%.4f,\"mix\":[",
		       n++ ? "," : "", c->comm_id, nbpf_tele_coll_name(c->coll),
		       nbpf_tele_size_name(c->size_cls), c->n_ranks, c->count, c->bytes,
		       nbpf_tele_quantile_ns(c->hist, NBPF_LAT_BUCKETS, 0.50),
		       nbpf_tele_quantile_ns(c->hist, NBPF_LAT_BUCKETS, 0.99),
		       (double)c->sum_ns / (double)c->count, algbw,
		       algbw * nbpf_tele_busbw_factor(c->coll, c->n_ranks));
		for (int a = 0, m = 0; a < NBPF_TELE_ALGOS; a++)
			for (int p = 0; p < NBPF_TELE_PROTOS; p++)
				if (c->mix[a][p])
					printf("%s{\"algo\":\"%s\",\"proto\":\"%s\",\"count\":%" PRIu64 "}",
					       m++ ? "," : "", nbpf_tele_algo_name(a),
					       nbpf_tele_proto_name(p), c->mix[a][p]);
		printf("]}");
	}
	printf("],\"tuners\":[");
	for (size_t i = 0; i < d->n_tuners; i++) {
		const struct nbpf_tele_tuner *t = &d->tuners[i];

		printf("%s{\"comm_id\":\"0x%016" PRIx64 "\",\"ranks\":%u,\"calls\":%" PRIu64
		       ",\"applied\":%" PRIu64 ",\"skipped\":%" PRIu64 ",\"refused\":[",
		       i ? "," : "", t->comm_id, t->n_ranks, t->calls, t->applied, t->skipped);
		for (int k = 0; k < NBPF_TELE_REFUSE; k++)
			printf("%s%" PRIu64, k ? "," : "", t->refused[k]);
		printf("]}");
	}
	printf("]}\n");
	fflush(stdout);
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int parse_interval(const char *s, double *out)
{
	char *end;

	*out = strtod(s, &end);
	return *s && !*end && *out > 0 && *out <= 86400 ? 0 : -EINVAL;
}

static int parse_count(const char *s, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	*out = (int)v;
	return *s && !*end && v > 0 && v <= 1 << 30 ? 0 : -EINVAL;
}

int cmd_top(struct cli *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'c' },
		{ 0 },
	};
	int pids[1], n_pids = 0, count = 0, rc = CLI_OK, opt, k;
	double interval = 1.0, t_prev;
	struct nbpf_tele_set prev = { 0 };

	while ((opt = cli_getopt(argc + 1, argv - 1, "", opts, "top")) != -1) {
		if (opt == 'i' && parse_interval(optarg, &interval))
			return cli_usage_error("top: --interval: expected seconds > 0 (at most 86400), got '%s'",
					       optarg);
		if (opt == 'c' && parse_count(optarg, &count))
			return cli_usage_error("top: --count: expected a positive number, got '%s'", optarg);
		if (opt == '?')
			return CLI_USAGE;
	}
	/*
	 * Positional [PID] [INTERVAL] [COUNT]: a whole number first is a PID,
	 * which must run the plugin (a dead one is an error, never a long
	 * interval); anything else first is the interval.
	 */
	k = cli_optind - 1;
	if (k < argc && cli_parse_pid(argv[k]) > 0) {
		pids[n_pids++] = cli_parse_pid(argv[k++]);
		if (cli_check_pids(pids, n_pids))
			return CLI_NO;
	}
	if (k < argc && parse_interval(argv[k++], &interval))
		return cli_usage_error("top: '%s' is neither a process id nor an interval in seconds",
				       argv[k - 1]);
	if (k < argc && parse_count(argv[k++], &count))
		return cli_usage_error("top: '%s': count must be a positive number", argv[k - 1]);
	if (k < argc)
		return cli_usage_error("top: unexpected argument '%s' (ncclbpf help top)", argv[k]);
	/* Under -j: one document per sample, one per line. */
	cli_json_stream(c);
	/* The first table covers everything since each process started. */
	t_prev = mono_s();
	for (int iter = 1; !count || iter <= count; iter++) {
		struct nbpf_tele_set now = { 0 }, delta = { 0 };
		double t_now, secs;
		int got;

		if (iter > 1)
			cli_nap(interval);
		got = cli_tele_collect(pids, n_pids, &now, stderr);
		t_now = mono_s();
		secs = iter == 1 ? interval : t_now - t_prev;
		if (got < 0) {
			cli_err(0, "%s", ncclbpf_errmsg());
			rc = CLI_NO;
			nbpf_tele_free(&now);
			break;
		}
		if (cli_tele_delta(&delta, &now, iter == 1 ? NULL : &prev)) {
			rc = CLI_NO;
			nbpf_tele_free(&now);
			nbpf_tele_free(&delta);
			break;
		}
		if (delta.n_cells)
			qsort(delta.cells, delta.n_cells, sizeof(*delta.cells), cell_cmp);
		if (c->json)
			print_json(&delta, secs, iter);
		else
			print_table(&delta, secs, iter);
		nbpf_tele_free(&prev);
		nbpf_tele_free(&delta);
		prev = now;
		t_prev = t_now;
		if (n_pids && got == 0) {
			cli_err(0, "top: pid %d stopped answering", pids[0]);
			rc = CLI_NO;
			break;
		}
	}
	nbpf_tele_free(&prev);
	return rc;
}
