/*
 * cmd_bench.c - `ncclbpf bench OBJ[:OBJ...] [--calls N]`: nanoseconds per
 * getCollInfo through the real plugin path (dlopen'd library, the v5 table
 * NCCL 2.28 uses, a fresh cost table per call as NCCL builds one), and per
 * completed collective through the profiler (v5: the collective's start,
 * one KernelCh span, stop), each with the policy and with no program
 * loaded, and the difference.  A policy without a program for one of the
 * two paths is said to have none: that row then times the adapter alone.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "emulator/emu.h"
#include "emulator/emu_cli.h"

#define BENCH_SIZES 16

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Per-call latencies (ns) of n calls; 0 or a negative errno with warn filled. */
static int measure(const char *policy, uint64_t n, uint32_t *lat, char *warn, size_t wl)
{
	struct emu_topo topo = EMU_TOPO_DEFAULT;
	float tables[BENCH_SIZES][7][3], t[7][3];
	struct emu_plugin pl;
	struct emu_tuner tu;
	const nbpf_tuner_v5_t *v5;
	int err = emu_cli_tuner_open(&pl, &tu, policy, 5, &topo, warn, wl);

	if (err)
		return err;
	v5 = pl.table;
	for (int i = 0; i < BENCH_SIZES; i++)
		emu_cost_table(&topo, 4, 8ull << (2 * i), tables[i]);
	for (uint64_t i = 0; i < n + n / 10; i++) {
		int k = (int)(i % BENCH_SIZES), nch = 0;
		uint64_t t0, t1;

		memcpy(t, tables[k], sizeof(t));
		t0 = now_ns();
		v5->getCollInfo(tu.ctx, 4, 8ull << (2 * k), 1, (float **)t, 7, 3, 0, &nch);
		t1 = now_ns();
		if (i >= n / 10) /* warm-up discarded */
			lat[i - n / 10] = (uint32_t)(t1 - t0 > UINT32_MAX ? UINT32_MAX : t1 - t0);
	}
	emu_cli_tuner_close(&pl, &tu);
	qsort(lat, n, sizeof(*lat), cmp_u32);
	return 0;
}

/*
 * Per-collective profiler latencies (ns) of n collectives, the tuner of the
 * same library holding the policy; n_tuner and n_prof count its programs.
 */
static int measure_prof(const char *policy, uint64_t n, uint32_t *lat, int *n_tuner,
			int *n_prof, char *warn, size_t wl)
{
	struct emu_topo topo = EMU_TOPO_DEFAULT;
	struct ncclbpf_load_status st;
	struct emu_plugin pl, pp = { 0 };
	struct emu_tuner tu;
	const nbpf_profiler_v5_t *p5;
	char path[4096], e[256];
	void *ctx = NULL;
	int mask = 0, err = emu_cli_tuner_open(&pl, &tu, policy, 5, &topo, warn, wl);

	if (err)
		return err;
	*n_tuner = *n_prof = 0;
	if (policy && !emu_load_status(&pl, 0, &st))
		for (uint32_t i = 0; i < st.n_progs && i < NCCLBPF_STATUS_MAX_PROGS; i++) {
			*n_tuner += !strcmp(st.progs[i].hook, "tuner");
			*n_prof += !strcmp(st.progs[i].hook, "profiler");
		}
	if (emu_cli_plugin_path(path, sizeof(path)) ||
	    emu_open(&pp, EMU_PROFILER, path, 5, e, sizeof(e)) || pp.version != 5) {
		snprintf(warn, wl, "cannot open the plugin's profiler v5 table");
		err = -ENOENT;
		goto out;
	}
	p5 = pp.table;
	if (p5->init(&ctx, 0x5eed5eedull, &mask, NULL, 1, 8, 3, NULL) || !ctx) {
		snprintf(warn, wl, "profiler init failed");
		err = -EINVAL;
		goto out;
	}
	for (uint64_t i = 0; i < n + n / 10; i++) {
		nbpf_prof_descr_v5_t cd = { .type = NBPF_PROF_COLL, .rank = 3 };
		nbpf_prof_descr_v5_t kd = { .type = NBPF_PROF_KERNEL_CH, .rank = 3 };
		nbpf_prof_state_args_v4_t ka = { .kernelCh = { .pTimer = 1000000 + 5000 * i + 4000 } };
		void *hc = NULL, *hk = NULL;
		uint64_t t0, t1;

		cd.coll.seqNumber = i;
		cd.coll.func = "AllReduce";
		cd.coll.count = 1u << 18;
		cd.coll.datatype = "ncclFloat32";
		cd.coll.nChannels = 16;
		cd.coll.algo = "RING";
		cd.coll.proto = "LL128";
		t0 = now_ns();
		p5->startEvent(ctx, &hc, &cd);
		/* NCCL sends KernelCh events only when the mask asks for them. */
		if (hc && (mask & NBPF_PROF_KERNEL_CH)) {
			kd.parentObj = hc;
			kd.kernelCh.pTimer = 1000000 + 5000 * i;
			p5->startEvent(ctx, &hk, &kd);
			if (hk) {
				p5->recordEventState(hk, NBPF_PROF_STATE_KERNEL_CH_STOP, &ka);
				p5->stopEvent(hk);
			}
		}
		if (hc)
			p5->stopEvent(hc);
		t1 = now_ns();
		if (i >= n / 10)
			lat[i - n / 10] = (uint32_t)(t1 - t0 > UINT32_MAX ? UINT32_MAX : t1 - t0);
	}
	p5->finalize(ctx);
	qsort(lat, n, sizeof(*lat), cmp_u32);
out:
	if (pp.table)
		emu_close(&pp);
	emu_cli_tuner_close(&pl, &tu);
	return err;
}

static void print_rows(const char *what, const uint32_t *a, const uint32_t *b, uint64_t n)
{
	uint32_t p50a = a[n / 2], p99a = a[n * 99 / 100], p50b = b[n / 2], p99b = b[n * 99 / 100];

	printf("%s\n", what);
	printf("  %-12s P50 %6u ns  P99 %6u ns\n", "policy", p50a, p99a);
	printf("  %-12s P50 %6u ns  P99 %6u ns\n", "no program", p50b, p99b);
	printf("  %-12s P50 %+6d ns  P99 %+6d ns\n", "difference", (int)p50a - (int)p50b,
	       (int)p99a - (int)p99b);
}

static void json_rows(const char *name, const uint32_t *a, const uint32_t *b, uint64_t n)
{
	uint32_t p50a = a[n / 2], p99a = a[n * 99 / 100], p50b = b[n / 2], p99b = b[n * 99 / 100];

	printf("\"%s\":{\"policy\":{\"p50_ns\":%u,\"p99_ns\":%u},"
	       "\"none\":{\"p50_ns\":%u,\"p99_ns\":%u},\"delta\":{\"p50_ns\":%d,\"p99_ns\":%d}}",
	       name, p50a, p99a, p50b, p99b, (int)p50a - (int)p50b, (int)p99a - (int)p99b);
}

int cmd_bench(struct cli *c, int argc, char **argv)
{
	const char *obj = NULL;
	uint64_t calls = 1000000;
	uint32_t *a = NULL, *b = NULL, *pa = NULL, *pb = NULL;
	int n_tuner = 0, n_prof = 0, dummy_t, dummy_p;
	char warn[4096] = "";
	int ret = CLI_OK;

	static const struct option lo[] = { { "calls", required_argument, NULL, 'n' }, { 0 } };
	int opt;

	/* argv[-1] is the object name "bench": getopt's argv[0]. */
	while ((opt = cli_getopt(argc + 1, argv - 1, "", lo, "bench")) != -1) {
		char *end;

		if (opt == '?')
			return CLI_USAGE;
		errno = 0;
		calls = strtoull(optarg, &end, 10);
		if (errno || *end || !*optarg || optarg[0] == '-' || calls < 100 || calls > 100000000)
			return cli_usage_error("bench: --calls: expected 100..100000000, got '%s'", optarg);
	}
	for (int i = cli_optind - 1; i < argc; i++) {
		if (!obj)
			obj = argv[i];
		else
			return cli_usage_error("bench: unexpected argument '%s'", argv[i]);
	}
	if (!obj)
		return cli_usage_error("bench: which object? (ncclbpf help bench)");
	if (cli_check_spec(obj, "bench"))
		return CLI_USAGE;
	a = malloc(calls * sizeof(*a));
	b = malloc(calls * sizeof(*b));
	pa = malloc(calls * sizeof(*pa));
	pb = malloc(calls * sizeof(*pb));
	if (!a || !b || !pa || !pb) {
		ret = cli_usage_error("bench: out of memory for %llu samples", (unsigned long long)calls);
		goto out;
	}
	if (measure(obj, calls, a, warn, sizeof(warn)) || measure(NULL, calls, b, warn, sizeof(warn)) ||
	    measure_prof(obj, calls, pa, &n_tuner, &n_prof, warn, sizeof(warn)) ||
	    measure_prof(NULL, calls, pb, &dummy_t, &dummy_p, warn, sizeof(warn))) {
		warn[strcspn(warn, "\n")] = 0; /* one line: the first says why */
		ret = cli_usage_error("bench: %s", warn[0] ? warn : "cannot load the plugin");
		goto out;
	}
	if (c->json) {
		printf("{\"object\":");
		cli_json_str(stdout, obj);
		printf(",\"calls\":%llu,\"programs\":{\"tuner\":%d,\"profiler\":%d},",
		       (unsigned long long)calls, n_tuner, n_prof);
		/* The getCollInfo rows stay top-level, as before; the profiler's are nested. */
		{
			uint32_t p50a = a[calls / 2], p99a = a[calls * 99 / 100];
			uint32_t p50b = b[calls / 2], p99b = b[calls * 99 / 100];

			printf("\"policy\":{\"p50_ns\":%u,\"p99_ns\":%u},\"none\":{\"p50_ns\":%u,"
			       "\"p99_ns\":%u},\"delta\":{\"p50_ns\":%d,\"p99_ns\":%d},",
			       p50a, p99a, p50b, p99b, (int)p50a - (int)p50b, (int)p99a - (int)p99b);
		}
		json_rows("profiler", pa, pb, calls);
		puts("}");
	} else {
		char what[160];

		snprintf(what, sizeof(what),
			 "getCollInfo (tuner v5, %llu calls, clock_gettime per call included)",
			 (unsigned long long)calls);
		print_rows(what, a, b, calls);
		if (!n_tuner)
			printf("  note: %s has no tuner program: the policy row is the adapter with NCCL deciding\n",
			       obj);
		snprintf(what, sizeof(what),
			 "profiler (v5, %llu collectives: start, one KernelCh span, stop)",
			 (unsigned long long)calls);
		print_rows(what, pa, pb, calls);
		if (!n_prof)
			printf("  note: %s has no profiler program: the policy row is the adapter's own telemetry\n",
			       obj);
	}
out:
	free(a);
	free(b);
	free(pa);
	free(pb);
	return ret;
}
