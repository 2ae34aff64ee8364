/*
 * test_telemetry.c - telemetry end to end: collectives with known GPU
 * latencies are replayed into the real profiler plugin (NCCL's v5 event
 * sequence: Coll, KernelCh with timer start, KernelCh stop state, stops),
 * then read back over the control socket, through `ncclbpf top -j`, and
 * through `ncclbpf export` (checked by promtool and parsed back): every
 * histogram bucket, count, sum and byte total must match what went in.  A
 * second communicator with other collectives, algorithms and protocols makes
 * the exposition carry several label sets; both the textfile and one
 * --listen scrape must pass promtool.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "control/ctl_client.h"
#include "control/ctl_proto.h"
#include "control/ctl_tele.h"
#include "emu_test.h"
#include "telemetry/prom.h"

#define RANK 3
#define COMM UINT64_C(0xfeed)

#define COMM2 UINT64_C(0xbeef)

static const nbpf_profiler_v5_t *prof;
static void *pctx, *pctx2;

static void *start(void *ctx, nbpf_prof_descr_v5_t *d)
{
	void *h = NULL;

	prof->startEvent(ctx, &h, d);
	return h;
}

/* One collective on context ctx of rank rank, whose single channel ran lat ns. */
static void coll_on(void *ctx, int rank, const char *func, const char *algo, const char *proto,
		    uint64_t seq, size_t count, uint64_t lat)
{
	nbpf_prof_descr_v5_t d;
	nbpf_prof_state_args_v4_t a = { .kernelCh = { .pTimer = 1000 + lat } };
	void *c, *k;

	memset(&d, 0, sizeof(d));
	d.type = NBPF_PROF_COLL;
	d.rank = rank;
	d.coll.seqNumber = seq;
	d.coll.func = func;
	d.coll.count = count;
	d.coll.datatype = "ncclFloat32";
	d.coll.nChannels = 1;
	d.coll.algo = algo;
	d.coll.proto = proto;
	c = start(ctx, &d);
	memset(&d, 0, sizeof(d));
	d.type = NBPF_PROF_KERNEL_CH;
	d.parentObj = c;
	d.rank = rank;
	d.kernelCh.channelId = 0;
	d.kernelCh.pTimer = 1000;
	k = start(ctx, &d);
	prof->recordEventState(k, NBPF_PROF_STATE_KERNEL_CH_STOP, &a);
	prof->stopEvent(k);
	prof->stopEvent(c);
}

/* One AllReduce of count floats on the main communicator. */
static void coll(uint64_t seq, size_t count, uint64_t lat)
{
	coll_on(pctx, RANK, "AllReduce", "RING", "LL128", seq, count, lat);
}

/* promtool accepts the exposition in file path (when promtool is installed). */
static void promtool_ok(const char *path)
{
	char cmd[600];
	int st;

	if (access("/usr/bin/promtool", X_OK) != 0)
		return;
	snprintf(cmd, sizeof(cmd), "/usr/bin/promtool check metrics < %s", path);
	st = system(cmd);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "promtool rejected %s", path);
}

static int run(char *out, size_t len, const char *fmt, ...)
{
	char args[1024], cmd[2048];
	va_list ap;
	FILE *p;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "%s %s", CTL_CLI, args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(out, 1, len - 1, p);
	out[n] = 0;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(void)
{
	char dir[] = "/tmp/ncclbpf-tele-XXXXXX", ctl[256], spec[2048], err[512], path[300];
	static char out[1 << 20];
	uint64_t hist[NBPF_LAT_BUCKETS] = { 0 }, sum = 0, n_small = 0, n_big = 0;
	struct emu_plugin pl;
	int mask = 0, n = (int)(2000 * emu_scale()) + 50;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(ctl, sizeof(ctl), "%s/ctl", dir);
	setenv("NCCLBPF_CTL_DIR", ctl, 1);
	snprintf(spec, sizeof(spec), "%s/latency_hist.bpf.o", POLICY_DIR);
	emu_set_policy(spec);
	CHECK(emu_open(&pl, EMU_PROFILER, EMU_PLUGIN, 5, err, sizeof(err)) == 0);
	prof = pl.table;
	CHECK(prof->init(&pctx, COMM, &mask, "c", 1, 8, RANK, emu_logger) == 0);
	CHECK(mask & NBPF_PROF_KERNEL_CH);
	/* A second communicator with other collectives, algorithms and protocols,
	 * so the exposition carries several label sets of every family. */
	CHECK(prof->init(&pctx2, COMM2, &mask, "c2", 2, 16, 5, emu_logger) == 0);
	for (int i = 0; i < 40; i++) {
		static const char *const fn[] = { "AllGather", "Broadcast", "ReduceScatter", "AllReduce" };

		coll_on(pctx2, 5, fn[i % 4], i % 2 ? "TREE" : "RING", i % 3 ? "SIMPLE" : "LL",
			(uint64_t)i, (size_t)1 << (6 + i % 20), 3000 + (uint64_t)i * 777);
	}

	/* Latencies spread over several log2 buckets; two size classes (1 KiB and 4 MiB). */
	for (int i = 0; i < n; i++) {
		uint64_t lat = 700 + (uint64_t)(i % 13) * 911 + (uint64_t)(i % 3) * 40000;
		bool big = i % 4 == 0;

		coll((uint64_t)i, big ? (1u << 20) : 256, lat);
		if (big) {
			n_big++;
			continue;
		}
		n_small++;
		hist[63 - __builtin_clzll(lat)]++;
		sum += lat;
	}

	/* 1. over the socket */
	{
		struct nbpf_ctl_msg m;
		struct nbpf_tele_set s = { 0 };
		const char *em;
		const struct nbpf_tele_cell *small = NULL, *bigc = NULL;

		CHECK(nbpf_ctl_call_pid(getpid(), NBPF_CTL_TELEMETRY, NULL, &m, &em) == 0);
		cli_tele_merge(&s, &m);
		nbpf_ctl_msg_free(&m);
		for (size_t i = 0; i < s.n_cells; i++) {
			if (s.cells[i].comm_id == COMM && s.cells[i].coll == 4 && s.cells[i].size_cls == 0)
				small = &s.cells[i];
			if (s.cells[i].comm_id == COMM && s.cells[i].coll == 4 && s.cells[i].size_cls == 3)
				bigc = &s.cells[i];
		}
		CHECK(small && bigc);
		if (small && bigc) {
			CHECK_EQ_U64(small->count, n_small);
			CHECK_EQ_U64(small->sum_ns, sum);
			CHECK_EQ_U64(small->bytes, n_small * 1024);
			CHECK_EQ_U64(small->gpu_timed, n_small);
			CHECK_EQ_U64(small->mix[1][1], n_small); /* RING/LL128 */
			CHECK(!memcmp(small->hist, hist, sizeof(hist)));
			CHECK_EQ_U64(bigc->count, n_big);
			CHECK_EQ_U64(bigc->bytes, n_big * (4ull << 20));
			CHECK_EQ_U64(small->n_ranks, 8);
		}
		nbpf_tele_free(&s);
	}

	/* 2. ncclbpf top -j: one sample, since start */
	CHECK(run(out, sizeof(out), "-j top %d 0.05 1", getpid()) == 0);
	{
		char want[128];

		snprintf(want, sizeof(want), "\"coll\":\"AllReduce\",\"size\":\"1K\",\"ranks\":8,\"calls\":%" PRIu64,
			 n_small);
		CHECK_STR_CONTAINS(out, want);
		CHECK_STR_CONTAINS(out, "{\"algo\":\"RING\",\"proto\":\"LL128\",\"count\":");
	}

	if (getenv("CTL_SHOW")) { /* for eyes: the plain table */
		run(out, sizeof(out), "top %d 0.05 1", getpid());
		fputs(out, stdout);
	}

	/* 3. the exposition: promtool, then every bucket of the 1K series read back */
	snprintf(path, sizeof(path), "%s/m.prom", dir);
	CHECK(run(out, sizeof(out), "export --textfile %s --count 1", path) == 0);
	promtool_ok(path);
	{
		char want[160];

		snprintf(want, sizeof(want), "{communicator=\"0x%016" PRIx64 "\",collective=\"AllGather\"",
			 COMM2);
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;

		out[n] = 0;
		if (f)
			fclose(f);
		CHECK_STR_CONTAINS(out, want);
		CHECK_STR_CONTAINS(out, "collective=\"Broadcast\"");
		CHECK_STR_CONTAINS(out, "collective=\"ReduceScatter\"");
	}
	/* The same through --listen: one scrape, saved, then promtool. */
	if (access("/usr/bin/curl", X_OK) == 0) {
		char cmd[1200], scrape[400];
		int port = 20000 + (getpid() + 7) % 20000, st;

		snprintf(scrape, sizeof(scrape), "%s/scrape.prom", dir);
		snprintf(cmd, sizeof(cmd),
			 "timeout 20 %s export --listen 127.0.0.1:%d --count 1 >/dev/null & pid=$!; "
			 "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.2; "
			 "curl -sf -o %s http://127.0.0.1:%d/metrics && break; done; wait $pid",
			 CTL_CLI, port, scrape, port);
		st = system(cmd);
		CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "--listen scrape failed (%d)", st);
		{
			FILE *f = fopen(scrape, "r");
			size_t n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;

			out[n] = 0;
			if (f)
				fclose(f);
		}
		CHECK_STR_CONTAINS(out, "ncclbpf_collective_latency_seconds_bucket{communicator=\"0x000000000000beef\"");
		CHECK_STR_CONTAINS(out, "collective=\"ReduceScatter\"");
		promtool_ok(scrape);
	}
	{
		FILE *f = fopen(path, "r");
		char line[1024], prefix[256];
		int buckets = 0, bad = 0;
		uint64_t count = 0;
		double psum = -1;

		snprintf(prefix, sizeof(prefix),
			 "{communicator=\"0x%016" PRIx64 "\",collective=\"AllReduce\",size=\"1K\"", COMM);
		while (f && fgets(line, sizeof(line), f)) {
			char *lab = strchr(line, '{'), *le;

			if (!lab || strncmp(lab, prefix, strlen(prefix)))
				continue;
			if (!strncmp(line, "ncclbpf_collective_latency_seconds_bucket", 41) &&
			    (le = strstr(line, "le=\""))) {
				double bound = !strncmp(le + 4, "+Inf", 4) ? INFINITY : strtod(le + 4, NULL);
				uint64_t got = strtoull(strchr(le, '}') + 1, NULL, 10), want = 0;

				for (int b = 0; b < NBPF_LAT_BUCKETS; b++)
					if (isinf(bound) || ldexp(1e-9, b + 1) <= bound * (1 + 1e-9))
						want += hist[b];
				bad += got != want;
				buckets++;
			} else if (!strncmp(line, "ncclbpf_collective_latency_seconds_count", 40)) {
				count = strtoull(strchr(line, '}') + 1, NULL, 10);
			} else if (!strncmp(line, "ncclbpf_collective_latency_seconds_sum", 38)) {
				psum = strtod(strchr(line, '}') + 1, NULL);
			}
		}
		if (f)
			fclose(f);
		CHECK_EQ_U64(buckets, NBPF_PROM_LAST_BUCKET - NBPF_PROM_FIRST_BUCKET + 2);
		CHECK_EQ_U64(bad, 0);
		CHECK_EQ_U64(count, n_small);
		CHECK(fabs(psum - (double)sum * 1e-9) < 1e-9);
	}

	CHECK(prof->finalize(pctx2) == 0);
	CHECK(prof->finalize(pctx) == 0);
	emu_close(&pl);
	snprintf(spec, sizeof(spec), "rm -rf %s", dir);
	CHECK(system(spec) == 0);
	return check_summary("control_telemetry");
}
