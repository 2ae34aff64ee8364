/*
 * bench_cpu.c - per-call cost of a policy: native C, the JIT, the interpreter.
 *
 *   bench_cpu [-n CALLS] [-b BATCH] [-c COMPILES] [-p NAME] [-d DIR]
 *
 * -d DIR writes each program's JIT code to DIR/NAME.bin, for
 * `objdump -D -b binary -mi386:x86-64 DIR/NAME.bin`.
 *
 * For each program (noop, size thresholds, one array-map lookup, a hash
 * lookup + update, a 16-iteration loop) it times CALLS calls in batches of
 * BATCH (default 1M calls, batches of 100: the clock is read once per
 * batch so its own cost is spread over the batch), and prints the P50 and
 * P99 per-call cost of the batches for each engine, the JIT/native
 * ratios, and the P50/P99 JIT compile time.  The programs are written in
 * eBPF assembly (the same text the CLI assembles); the native functions
 * do the same work on the same maps and contexts and are called through a
 * function pointer, like the JIT's entry point.  Each call gets the next
 * of 16 contexts with different sizes, so branches are not all constant.
 * Numbers, never assertions: docs/benchmarks.md has recorded results.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "helpers.h"
#include "interp.h"
#include "jit/jit.h"
#include "maps/map.h"
#include "ncclbpf/runtime.h"
#include "text/asm.h"

#include "../bench_util.h"

/* The benchmark's context: inputs, then the outputs a tuner writes. */
struct bctx {
	uint32_t coll;      /* 0 */
	uint32_t pad;
	uint64_t bytes;     /* 8 */
	uint32_t nranks;    /* 16 */
	uint32_t nnodes;    /* 20 */
	uint32_t algo;      /* 24 */
	uint32_t proto;     /* 28 */
	uint32_t channels;  /* 32 */
	uint32_t pad2;
};

#define NCTX 16

static struct ncclbpf_map *g_array, *g_hash;

/* ---- the programs ------------------------------------------------------ */

static const char prog_noop[] = "mov %r0, 0\nexit\n";

static const char prog_threshold[] =
	"ldxdw %r2, [%r1+8]\n"
	"ldxw %r3, [%r1+16]\n"
	"mov %r4, 8\n"
	"jle %r3, 8, small\n"
	"mov %r4, 16\n"
	"small:\n"
	"stxw [%r1+32], %r4\n"
	"jge %r2, 65536, mid\n"
	"stw [%r1+24], 1\n"
	"stw [%r1+28], 0\n"
	"ja out\n"
	"mid:\n"
	"jge %r2, 4194304, big\n"
	"stw [%r1+24], 1\n"
	"stw [%r1+28], 1\n"
	"ja out\n"
	"big:\n"
	"stw [%r1+24], 0\n"
	"stw [%r1+28], 2\n"
	"out:\n"
	"mov %r0, 0\n"
	"exit\n";

static const char prog_array[] =
	"mov %r6, %r1\n"
	"ldxw %r2, [%r6+0]\n"
	"stxw [%r10-4], %r2\n"
	"lddw %r1, map[0]\n"
	"mov %r2, %r10\n"
	"add %r2, -4\n"
	"call 1\n"
	"jeq %r0, 0, none\n"
	"ldxw %r1, [%r0+0]\n"
	"stxw [%r6+32], %r1\n"
	"none:\n"
	"mov %r0, 0\n"
	"exit\n";

static const char prog_hash[] =
	"ldxdw %r2, [%r1+8]\n"
	"rsh %r2, 16\n"
	"stxdw [%r10-8], %r2\n"
	"lddw %r1, map[1]\n"
	"mov %r2, %r10\n"
	"add %r2, -8\n"
	"call 1\n"
	"mov %r1, 1\n"
	"jeq %r0, 0, store\n"
	"ldxdw %r1, [%r0+0]\n"
	"add %r1, 1\n"
	"store:\n"
	"stxdw [%r10-16], %r1\n"
	"lddw %r1, map[1]\n"
	"mov %r2, %r10\n"
	"add %r2, -8\n"
	"mov %r3, %r10\n"
	"add %r3, -16\n"
	"mov %r4, 0\n"
	"call 2\n"
	"mov %r0, 0\n"
	"exit\n";

static const char prog_loop[] =
	"ldxdw %r2, [%r1+8]\n"
	"mov %r0, 0\n"
	"mov %r3, 0\n"
	"loop:\n"
	"mov %r4, %r2\n"
	"rsh %r4, %r3\n"
	"and %r4, 0xff\n"
	"mul %r0, 31\n"
	"add %r0, %r4\n"
	"add %r3, 1\n"
	"jlt %r3, 16, loop\n"
	"exit\n";

/* ---- the same work in C ----------------------------------------------- */

static uint64_t native_noop(void *ctx, uint64_t len)
{
	return 0;
}

static uint64_t native_threshold(void *ctx, uint64_t len)
{
	struct bctx *c = ctx;

	c->channels = c->nranks > 8 ? 16 : 8;
	if (c->bytes < 65536) {
		c->algo = 1;
		c->proto = 0;
	} else if (c->bytes < 4194304) {
		c->algo = 1;
		c->proto = 1;
	} else {
		c->algo = 0;
		c->proto = 2;
	}
	return 0;
}

static uint64_t native_array(void *ctx, uint64_t len)
{
	struct bctx *c = ctx;
	uint32_t key = c->coll;

	if (key < g_array->max_entries)
		c->channels = *(uint32_t *)(g_array->array_base + (uint64_t)key * g_array->value_stride);
	return 0;
}

static uint64_t native_hash(void *ctx, uint64_t len)
{
	struct bctx *c = ctx;
	uint64_t key = c->bytes >> 16, val = 1;
	uint64_t *v = g_hash->ops->lookup_elem(g_hash, &key);

	if (v)
		val = *v + 1;
	g_hash->ops->update_elem(g_hash, &key, &val, NCCLBPF_ANY);
	return 0;
}

static uint64_t native_loop(void *ctx, uint64_t len)
{
	struct bctx *c = ctx;
	uint64_t h = 0;

	for (uint64_t i = 0; i < 16; i++)
		h = h * 31 + ((c->bytes >> i) & 0xff);
	return h;
}

struct bench_prog {
	const char *name;
	const char *text;
	ncclbpf_func_t native;
};

static const struct bench_prog progs[] = {
	{ "noop", prog_noop, native_noop },
	{ "threshold", prog_threshold, native_threshold },
	{ "array_lookup", prog_array, native_array },
	{ "hash_update", prog_hash, native_hash },
	{ "loop16", prog_loop, native_loop },
};

/* ---- timing ------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct stats {
	double p50, p99;
};

static struct stats percentiles(double *v, size_t n)
{
	struct stats s;

	qsort(v, n, sizeof(*v), cmp_double);
	s.p50 = v[n / 2];
	s.p99 = v[(size_t)((double)n * 0.99)];
	return s;
}

struct runner {
	int kind; /* 0 native/jit function, 1 interpreter */
	ncclbpf_func_t fn;
	const struct nbpf_insn *insns;
	uint32_t n;
	const struct nbpf_env *env;
};

/* Per-call ns of one batch; call i of the batch gets ctxs[i % NCTX]. */
static double time_batch(const struct runner *r, struct bctx *ctxs, size_t batch, uint64_t *sink)
{
	uint64_t acc = 0, t0 = now_ns();

	if (r->kind == 0) {
		ncclbpf_func_t fn = r->fn;

		for (size_t i = 0; i < batch; i++)
			acc += fn(&ctxs[i % NCTX], sizeof(*ctxs));
	} else {
		for (size_t i = 0; i < batch; i++) {
			uint64_t ret = 0;

			nbpf_interp_run_verified(r->insns, r->n, r->env, &ctxs[i % NCTX],
						 sizeof(*ctxs), &ret);
			acc += ret;
		}
	}
	*sink += acc;
	return (double)(now_ns() - t0) / (double)batch;
}

/*
 * Times nr runners with their batches interleaved (a batch of each in
 * turn), so a noisy neighbour or a frequency change hits all of them
 * alike and the ratios stay meaningful.
 */
static void time_runners(const struct runner *const *r, struct stats *out, int nr,
			 struct bctx *ctxs, size_t batches, size_t batch, uint64_t *sink)
{
	double *per[3];

	for (int k = 0; k < nr; k++)
		per[k] = malloc(batches * sizeof(double));
	for (size_t b = 0; b < batches; b++)
		for (int k = 0; k < nr; k++)
			per[k][b] = time_batch(r[k], ctxs, batch, sink);
	for (int k = 0; k < nr; k++) {
		out[k] = percentiles(per[k], batches);
		free(per[k]);
	}
}

static void init_ctxs(struct bctx *ctxs)
{
	for (int i = 0; i < NCTX; i++) {
		memset(&ctxs[i], 0, sizeof(ctxs[i]));
		ctxs[i].coll = (uint32_t)(i % 5);
		ctxs[i].bytes = 1ull << (6 + (i * 7) % 24);
		ctxs[i].nranks = 1u << (i % 5);
		ctxs[i].nnodes = 1;
	}
}

static int make_maps(void)
{
	int err;

	err = ncclbpf_map__create("bench_array", NCCLBPF_MAP_ARRAY, 4, 8, 16, NULL, &g_array);
	if (err)
		return err;
	for (uint32_t k = 0; k < 16; k++) {
		uint64_t v = 4 + k;

		ncclbpf_map__update(g_array, &k, &v, NCCLBPF_ANY);
	}
	return ncclbpf_map__create("bench_hash", NCCLBPF_MAP_HASH, 8, 8, 1024, NULL, &g_hash);
}

/* Writes the JIT code to dir/name.bin; failures only warn (it is a debugging aid). */
static void dump_code(const char *dir, const char *name, const struct nbpf_jit_image *img)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.bin", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(img->mem, 1, img->code_size, f) != img->code_size)
		fprintf(stderr, "bench_cpu: cannot write %s\n", path);
	if (f)
		fclose(f);
}

int main(int argc, char **argv)
{
	size_t calls = 1000000, batch = 100, compiles = 2000;
	const char *only = NULL, *dump = NULL;
	struct bctx ctxs[NCTX];
	uint64_t sink = 0;
	int err, rc = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			calls = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-b") && i + 1 < argc)
			batch = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-c") && i + 1 < argc)
			compiles = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-p") && i + 1 < argc)
			only = argv[++i];
		else if (!strcmp(argv[i], "-d") && i + 1 < argc)
			dump = argv[++i];
		else {
			fprintf(stderr, "usage: %s [-n CALLS] [-b BATCH] [-c COMPILES] [-p NAME] [-d DIR]\n",
				argv[0]);
			return 2;
		}
	}
	if (!batch || calls < batch || !compiles) {
		fprintf(stderr, "bench_cpu: need CALLS >= BATCH > 0 and COMPILES > 0\n");
		return 2;
	}
	err = make_maps();
	if (err) {
		fprintf(stderr, "bench_cpu: maps: %s\n", ncclbpf_errmsg());
		return 1;
	}
	{
		struct ncclbpf_map *maps[2] = { g_array, g_hash };
		const struct nbpf_env env = { .maps = maps, .n_maps = 2, .helper = nbpf_helper_find };
		size_t batches = calls / batch;

		printf("bench_cpu: %zu calls per engine in batches of %zu; ns per call\n", batches * batch,
		       batch);
		printf("%-13s %9s %9s %9s %9s %9s %9s %8s %8s %9s %9s %6s\n", "program", "nat_p50",
		       "nat_p99", "jit_p50", "jit_p99", "int_p50", "int_p99", "jit/nat", "p99 j/n",
		       "cmp_p50us", "cmp_p99us", "bytes");
		for (size_t p = 0; p < sizeof(progs) / sizeof(progs[0]); p++) {
			const struct bench_prog *bp = &progs[p];
			struct nbpf_insn *insns = NULL;
			struct nbpf_jit_image *img = NULL;
			struct runner rn = { 0 }, rj = { 0 }, ri = { 0 };
			struct stats sn, sj, si, sc;
			double *ct;
			uint32_t n = 0;
			size_t code_size;

			if (only && strcmp(only, bp->name))
				continue;
			err = nbpf_asm(bp->text, strlen(bp->text), &insns, &n);
			if (!err)
				err = nbpf_jit_compile(insns, n, &env, &img);
			if (err) {
				fprintf(stderr, "bench_cpu: %s: %s\n", bp->name, ncclbpf_errmsg());
				free(insns);
				rc = 1;
				continue;
			}
			code_size = img->code_size;
			if (dump)
				dump_code(dump, bp->name, img);
			ct = malloc(compiles * sizeof(*ct));
			for (size_t c = 0; c < compiles; c++) {
				struct nbpf_jit_image *tmp = NULL;
				uint64_t t0 = now_ns();

				nbpf_jit_compile(insns, n, &env, &tmp);
				ct[c] = (double)(now_ns() - t0) / 1000.0;
				nbpf_jit_free(tmp);
			}
			sc = percentiles(ct, compiles);
			free(ct);
			rn.fn = bp->native;
			rj.fn = img->func;
			/* The interpreter as a prepared program runs: checked once, then trusted. */
			if (nbpf_interp_check(insns, n)) {
				fprintf(stderr, "bench_cpu: %s: %s\n", bp->name, ncclbpf_errmsg());
				rc = 1;
			}
			ri.kind = 1;
			ri.insns = insns;
			ri.n = n;
			ri.env = &env;
			/* Warm up caches and predictors, then measure. */
			init_ctxs(ctxs);
			{
				const struct runner *pair[2] = { &rn, &rj }, *interp[1] = { &ri };
				struct stats s2[2];

				time_runners(pair, s2, 2, ctxs, batches / 10 + 1, batch, &sink);
				time_runners(pair, s2, 2, ctxs, batches, batch, &sink);
				sn = s2[0];
				sj = s2[1];
				time_runners(interp, &si, 1, ctxs, batches, batch, &sink);
			}
			printf("%-13s %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %8.2f %8.2f %9.2f %9.2f %6zu\n",
			       bp->name, sn.p50, sn.p99, sj.p50, sj.p99, si.p50, si.p99, sj.p50 / sn.p50,
			       sj.p99 / sn.p99, sc.p50, sc.p99, code_size);
			fflush(stdout);
			nbpf_jit_free(img);
			free(insns);
		}
	}
	ncclbpf_map__put(g_array);
	ncclbpf_map__put(g_hash);
	if (sink == 42)
		printf("\n");
	return rc;
}
