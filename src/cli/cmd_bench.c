/*
 * cmd_bench.c - `ncclbpf bench OBJ [--calls N]`: nanoseconds per
 * getCollInfo through the real plugin path (dlopen'd library, the v5 table
 * NCCL 2.28 uses, a fresh cost table per call as NCCL builds one), with the
 * policy and with no program loaded, and the difference.
 */
#include <errno.h>
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

int cmd_bench(struct cli *c, int argc, char **argv)
{
	const char *obj = NULL;
	uint64_t calls = 1000000;
	uint32_t *a = NULL, *b = NULL;
	char warn[4096] = "";
	struct stat st;
	int ret = CLI_OK;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--calls")) {
			char *end;

			if (i + 1 >= argc)
				return cli_usage_error("bench: --calls needs a number");
			errno = 0;
			calls = strtoull(argv[++i], &end, 10);
			if (errno || *end || calls < 100 || calls > 100000000)
				return cli_usage_error("bench: --calls: expected 100..100000000, got '%s'", argv[i]);
		} else if (argv[i][0] == '-') {
			return cli_usage_error("bench: unknown option '%s'", argv[i]);
		} else if (!obj) {
			obj = argv[i];
		} else {
			return cli_usage_error("bench: unexpected argument '%s'", argv[i]);
		}
	}
	if (!obj)
		return cli_usage_error("usage: ncclbpf bench OBJ [--calls N] [-j]");
	if (stat(obj, &st) || !S_ISREG(st.st_mode))
		return cli_usage_error("bench: %s: not a readable file", obj);
	a = malloc(calls * sizeof(*a));
	b = malloc(calls * sizeof(*b));
	if (!a || !b) {
		ret = cli_usage_error("bench: out of memory for %llu samples", (unsigned long long)calls);
		goto out;
	}
	if (measure(obj, calls, a, warn, sizeof(warn)) || measure(NULL, calls, b, warn, sizeof(warn))) {
		warn[strcspn(warn, "\n")] = 0; /* one line: the first says why */
		ret = cli_usage_error("bench: %s", warn[0] ? warn : "cannot load the plugin");
		goto out;
	}
	uint32_t p50a = a[calls / 2], p99a = a[calls * 99 / 100];
	uint32_t p50b = b[calls / 2], p99b = b[calls * 99 / 100];

	if (c->json) {
		printf("{\"object\":");
		cli_json_str(stdout, obj);
		printf(",\"calls\":%llu,\"policy\":{\"p50_ns\":%u,\"p99_ns\":%u},"
		       "\"none\":{\"p50_ns\":%u,\"p99_ns\":%u},\"delta\":{\"p50_ns\":%d,\"p99_ns\":%d}}\n",
		       (unsigned long long)calls, p50a, p99a, p50b, p99b, (int)p50a - (int)p50b,
		       (int)p99a - (int)p99b);
	} else {
		printf("getCollInfo (tuner v5, %llu calls, clock_gettime per call included)\n",
		       (unsigned long long)calls);
		printf("  %-12s P50 %6u ns  P99 %6u ns\n", "policy", p50a, p99a);
		printf("  %-12s P50 %6u ns  P99 %6u ns\n", "no program", p50b, p99b);
		printf("  %-12s P50 %+6d ns  P99 %+6d ns\n", "difference", (int)p50a - (int)p50b,
		       (int)p99a - (int)p99b);
	}
out:
	free(a);
	free(b);
	return ret;
}
