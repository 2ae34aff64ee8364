/*
 * test_prom.c - telemetry aggregation and the Prometheus exposition:
 * merging TELEMETRY responses of several ranks, interval deltas,
 * percentiles, bus-bandwidth factors; the exposition passes
 * `promtool check metrics` and its histogram parses back to the counts
 * that went in.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "control/ctl_proto.h"
#include "control/ctl_tele.h"
#include "telemetry/prom.h"

/* A TELEMETRY response of one process with one profiler comm (registry id rid). */
static void fake_response(struct nbpf_ctl_buf *b, uint64_t rid, uint64_t comm_id, uint32_t ranks,
			  const uint64_t *hist, uint64_t count, uint64_t sum_ns, uint64_t bytes)
{
	uint64_t mix[NBPF_TELE_ALGOS * NBPF_TELE_PROTOS] = { 0 };

	mix[1 * NBPF_TELE_PROTOS + 1] = count - 1; /* RING/LL128 */
	mix[0 * NBPF_TELE_PROTOS + 2] = 1;         /* TREE/SIMPLE */
	nbpf_ctl_buf_rec(b, "status");
	nbpf_ctl_buf_i64(b, "err", 0);
	nbpf_ctl_buf_rec(b, "proc");
	nbpf_ctl_buf_u64(b, "pid", 1);
	nbpf_ctl_buf_rec(b, "prog");
	nbpf_ctl_buf_u64(b, "gen", 3);
	nbpf_ctl_buf_u64(b, "slot", 0);
	nbpf_ctl_buf_str(b, "name", "pick\"me");
	nbpf_ctl_buf_str(b, "hook", "tuner");
	nbpf_ctl_buf_str(b, "tag", "0123456789abcdef");
	nbpf_ctl_buf_rec(b, "progstat");
	nbpf_ctl_buf_u64(b, "gen", 3);
	nbpf_ctl_buf_u64(b, "slot", 0);
	nbpf_ctl_buf_u64(b, "runs", 10);
	nbpf_ctl_buf_u64(b, "ns", 250);
	nbpf_ctl_buf_rec(b, "comm");
	nbpf_ctl_buf_u64(b, "id", rid + 100);
	nbpf_ctl_buf_x64(b, "comm_id", comm_id);
	nbpf_ctl_buf_str(b, "kind", "tuner");
	nbpf_ctl_buf_u64(b, "ranks", ranks);
	nbpf_ctl_buf_u64(b, "calls", 40);
	nbpf_ctl_buf_u64s(b, "coll_calls", (uint64_t[]){ 0, 0, 0, 0, 40, 0 }, 6);
	nbpf_ctl_buf_u64s(b, "refused", (uint64_t[]){ 1, 0, 2, 0, 0, 0 }, 6);
	nbpf_ctl_buf_rec(b, "comm");
	nbpf_ctl_buf_u64(b, "id", rid);
	nbpf_ctl_buf_x64(b, "comm_id", comm_id);
	nbpf_ctl_buf_str(b, "kind", "profiler");
	nbpf_ctl_buf_u64(b, "ranks", ranks);
	nbpf_ctl_buf_rec(b, "tele");
	nbpf_ctl_buf_u64(b, "comm", rid);
	nbpf_ctl_buf_u64(b, "coll", 4);
	nbpf_ctl_buf_u64(b, "size", 3);
	nbpf_ctl_buf_u64(b, "count", count);
	nbpf_ctl_buf_u64(b, "bytes", bytes);
	nbpf_ctl_buf_u64(b, "sum_ns", sum_ns);
	nbpf_ctl_buf_u64s(b, "hist", hist, NBPF_LAT_BUCKETS);
	nbpf_ctl_buf_u64s(b, "mix", mix, NBPF_TELE_ALGOS * NBPF_TELE_PROTOS);
}

static void merge(struct nbpf_tele_set *s, const uint64_t *hist, uint64_t count, uint64_t rid)
{
	struct nbpf_ctl_buf b = { 0 };
	struct nbpf_ctl_msg m;

	fake_response(&b, rid, 0xfeedULL, 8, hist, count, count * 3000, count * 4096);
	CHECK(b.err == 0);
	CHECK(nbpf_ctl_msg_parse(NBPF_CTL_TELEMETRY | NBPF_CTL_REPLY, b.data, b.len, &m) == 0);
	cli_tele_merge(s, &m);
	nbpf_ctl_msg_free(&m);
	nbpf_ctl_buf_free(&b);
}

/* Reads the exposition back: cumulative bucket counts of the one histogram series. */
static int parse_back(const char *path, double *le, uint64_t *cum, int max, uint64_t *count,
		      double *sum, int *help_type)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int n = 0;

	*help_type = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p;

		if (!strncmp(line, "# TYPE ncclbpf_collective_latency_seconds histogram", 51))
			(*help_type)++;
		if (!strncmp(line, "# HELP ncclbpf_collective_latency_seconds ", 42))
			(*help_type)++;
		if (!strncmp(line, "ncclbpf_collective_latency_seconds_bucket{", 42) && n < max) {
			p = strstr(line, "le=\"");
			if (!p)
				continue;
			le[n] = !strncmp(p + 4, "+Inf", 4) ? INFINITY : strtod(p + 4, NULL);
			cum[n++] = strtoull(strchr(p, '}') + 1, NULL, 10);
		} else if (!strncmp(line, "ncclbpf_collective_latency_seconds_count{", 41)) {
			*count = strtoull(strchr(line, '}') + 1, NULL, 10);
		} else if (!strncmp(line, "ncclbpf_collective_latency_seconds_sum{", 39)) {
			*sum = strtod(strchr(line, '}') + 1, NULL);
		}
	}
	fclose(f);
	return n;
}

int main(void)
{
	struct nbpf_tele_set s = { 0 }, before = { 0 }, d;
	uint64_t hist[NBPF_LAT_BUCKETS] = { 0 }, cum[64], count = 0;
	double le[64], sum = 0;
	char path[] = "/tmp/ncclbpf-prom-XXXXXX";
	int fd, n, ht;

	/* Two ranks of one communicator: 1 below the first shown bucket, then spread. */
	hist[3] = 1;   /* [8, 16) ns: folded into the first exported bucket */
	hist[10] = 5;  /* [1024, 2048) ns */
	hist[11] = 3;
	hist[20] = 1;  /* ~1 ms */
	merge(&s, hist, 10, 1);
	merge(&s, hist, 10, 2);
	CHECK(s.processes == 2);
	CHECK(s.n_cells == 1);
	CHECK(s.n_tuners == 1);
	CHECK(s.n_progs == 1);
	if (s.n_cells != 1 || s.n_tuners != 1 || s.n_progs != 1)
		return check_summary("control_prom");
	CHECK(s.cells[0].count == 20 && s.cells[0].hist[10] == 10 && s.cells[0].contributors == 2);
	CHECK(s.cells[0].n_ranks == 8 && s.cells[0].comm_id == 0xfeed);
	CHECK(s.cells[0].mix[1][1] == 18 && s.cells[0].mix[0][2] == 2);
	CHECK(s.tuners[0].calls == 80 && s.tuners[0].refused[2] == 4);
	CHECK(s.progs[0].runs == 20 && s.progs[0].ns == 500);

	/* Percentiles and busbw factors. */
	double p50 = nbpf_tele_quantile_ns(s.cells[0].hist, NBPF_LAT_BUCKETS, 0.5);
	double p99 = nbpf_tele_quantile_ns(s.cells[0].hist, NBPF_LAT_BUCKETS, 0.99);
	CHECK_MSG(p50 >= 1024 && p50 < 2048, "p50 %f", p50);
	CHECK_MSG(p99 >= 1 << 20 && p99 <= 1 << 21, "p99 %f", p99);
	CHECK(nbpf_tele_quantile_ns(before.cells ? before.cells[0].hist : hist, 0, 0.5) == 0);
	CHECK(fabs(nbpf_tele_busbw_factor(4, 8) - 1.75) < 1e-12);
	CHECK(fabs(nbpf_tele_busbw_factor(2, 8) - 0.875) < 1e-12);
	CHECK(fabs(nbpf_tele_busbw_factor(3, 4) - 0.75) < 1e-12);
	CHECK(nbpf_tele_busbw_factor(0, 8) == 1 && nbpf_tele_busbw_factor(1, 8) == 1);

	/* Interval delta: what happened between two samples. */
	merge(&before, hist, 10, 1);
	CHECK(cli_tele_delta(&d, &s, &before) == 0);
	CHECK(d.n_cells == 1 && d.cells[0].count == 10 && d.cells[0].hist[10] == 5);
	CHECK(d.n_tuners == 1 && d.tuners[0].calls == 40);
	nbpf_tele_free(&d);

	/* Exposition, then promtool, then read it back. */
	fd = mkstemp(path);
	CHECK(fd >= 0);
	FILE *f = fdopen(fd, "w");
	CHECK(nbpf_prom_write(f, &s) == 0);
	fclose(f);
	if (access("/usr/bin/promtool", X_OK) == 0) {
		char cmd[256];
		int st;

		snprintf(cmd, sizeof(cmd), "/usr/bin/promtool check metrics < %s", path);
		st = system(cmd);
		CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "promtool rejected %s", path);
	} else {
		printf("promtool not installed: skipping its check\n");
	}
	n = parse_back(path, le, cum, 64, &count, &sum, &ht);
	CHECK(ht == 2);
	CHECK(n == NBPF_PROM_LAST_BUCKET - NBPF_PROM_FIRST_BUCKET + 2);
	CHECK(count == 20);
	CHECK(fabs(sum - 20 * 3000e-9) < 1e-12);
	for (int i = 0; i < n; i++) {
		/* Expected: observations below le (buckets are [2^i, 2^(i+1)) ns). */
		uint64_t want = 0;

		for (int b = 0; b < NBPF_LAT_BUCKETS; b++)
			if (isinf(le[i]) || ldexp(1, b + 1) <= le[i] * 1e9 * (1 + 1e-9))
				want += s.cells[0].hist[b];
		CHECK_MSG(cum[i] == want, "le=%g: %llu != %llu", le[i], (unsigned long long)cum[i],
			  (unsigned long long)want);
		if (i)
			CHECK(cum[i] >= cum[i - 1] && le[i] > le[i - 1]);
	}
	CHECK(n > 0 && isinf(le[n - 1]) && cum[n - 1] == 20);
	CHECK(n > 0 && cum[0] == 2); /* the 8 ns observations fold into the first bucket */
	unlink(path);
	nbpf_tele_free(&s);
	nbpf_tele_free(&before);
	return check_summary("control_prom");
}
