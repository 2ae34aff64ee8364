// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench_peers.c - ncclbpf's engines next to uBPF's on the same programs,
 * in one process, interleaved batch by batch.
 *
 *   bench_peers [-n CALLS] [-b BATCH] [-r REPS] [-p NAME] [-d DIR]
 *
 * -d DIR writes each program's ncclbpf JIT code to DIR/NAME.bin (for
 * `objdump -D -b binary -mi386:x86-64`).
 *
 * Programs: bench/cpu's five rewritten as BPF C (progs.bpf.c) and five
 * shipped tuner policies, each with a native C twin doing the same work on
 * the same maps and contexts.  Engines: native, ncclbpf JIT, ncclbpf
 * interpreter (the path prepared programs take), and, when built with
 * -DNCCLBPF_UBPF_DIR=<uBPF checkout>, uBPF's JIT and interpreter.  uBPF
 * gets the instructions ncclbpf's loader produced, with map references
 * turned into 64-bit constants and the same helper functions registered
 * under the same ids; its run-time bounds checks stay on, with a data
 * bounds callback that accepts map values.  Each call takes the next of 16
 * contexts (collectives, sizes 64 B - 1 GiB, 1-16 ranks, 1-4 nodes, every
 * Tree/Ring cell offered).  Prints, per program and engine, the median
 * over REPS of the P50 per-call cost of the batches, and JIT compile time.
 * Numbers, never assertions: docs/benchmarks.md has recorded results.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "interp.h"
#include "jit/jit.h"
#include "maps/map.h"
#include "ncclbpf/policy.h"
#include "ncclbpf/runtime.h"
#include "host/hooks.h"
#include "object.h"

#include "../bench_util.h"

#ifdef NCCLBPF_HAVE_UBPF
#include <ubpf.h>
#endif

#define NCTX 16
#define MAX_REPS 15

enum { E_NAT, E_JIT, E_INT, E_UJIT, E_UINT, E_COUNT };
static const char *const engine_names[E_COUNT] = { "native", "jit", "interp", "ubpf_jit",
						   "ubpf_int" };

static struct ncclbpf_map *m_array, *m_hash, *m_slo, *m_plan;

/* ---- native twins ------------------------------------------------------- */

static int offered(const struct ncclbpf_tuner_ctx *c, int a, int p)
{
	return (c->avail_mask & NCCLBPF_CELL(a, p)) != 0;
}

static uint64_t nat_noop(void *ctx, uint64_t len)
{
	return 0;
}

static uint64_t nat_threshold(void *ctx, uint64_t len)
{
	struct ncclbpf_tuner_ctx *c = ctx;
	uint64_t n = c->n_bytes;

	c->n_channels = c->n_ranks > 8 ? 16 : 8;
	if (n < 65536) {
		c->algo = 1;
		c->proto = 0;
	} else if (n < 4194304) {
		c->algo = 1;
		c->proto = 1;
	} else {
		c->algo = 0;
		c->proto = 2;
	}
	return 0;
}

static uint64_t nat_array(void *ctx, uint64_t len)
{
	struct ncclbpf_tuner_ctx *c = ctx;
	uint32_t key = c->coll_type;

	if (key < m_array->max_entries)
		c->n_channels = (int32_t)*(uint64_t *)(m_array->array_base +
						       (uint64_t)key * m_array->value_stride);
	return 0;
}

static uint64_t nat_hash(void *ctx, uint64_t len)
{
	struct ncclbpf_tuner_ctx *c = ctx;
	uint64_t key = c->n_bytes >> 16, val = 1;
	uint64_t *v = m_hash->ops->lookup_elem(m_hash, &key);

	if (v)
		val = *v + 1;
	m_hash->ops->update_elem(m_hash, &key, &val, NCCLBPF_ANY);
	return 0;
}

static uint64_t nat_loop(void *ctx, uint64_t len)
{
	struct ncclbpf_tuner_ctx *c = ctx;
	uint64_t n = c->n_bytes, h = 0;

	for (uint64_t i = 0; i < 16; i++)
		h = h * 31 + ((n >> i) & 0xff);
	c->n_channels = (int32_t)(h & 63) + 1;
	return 0;
}

static uint64_t nat_size_aware(void *ctx, uint64_t len)
{
	struct ncclbpf_tuner_ctx *c = ctx;
	uint64_t n = c->n_bytes;
	int algo = NCCLBPF_ALGO_RING, proto;

	if (n < (64ull << 10)) {
		proto = NCCLBPF_PROTO_LL;
		if (c->coll_type == NCCLBPF_COLL_ALLREDUCE && c->n_nodes > 1 &&
		    offered(c, NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_LL))
			algo = NCCLBPF_ALGO_TREE;
	} else if (n < (8ull << 20)) {
		proto = NCCLBPF_PROTO_LL128;
	} else {
		proto = NCCLBPF_PROTO_SIMPLE;
	}
	if (offered(c, algo, proto)) {
		c->algo = algo;
		c->proto = proto;
	}
	return NCCLBPF_TUNER_APPLY;
}

static uint64_t nat_nvlink_ring_mid(void *ctx, uint64_t len)
{
	struct ncclbpf_tuner_ctx *c = ctx;
	uint64_t n = c->n_bytes;
	int proto;

	if (c->coll_type != NCCLBPF_COLL_ALLREDUCE)
		return NCCLBPF_TUNER_APPLY;
	if (n >= (4ull << 20) && n <= (32ull << 20))
		proto = NCCLBPF_PROTO_LL128;
	else if (n >= (64ull << 20) && n <= (192ull << 20))
		proto = NCCLBPF_PROTO_SIMPLE;
	else
		return NCCLBPF_TUNER_APPLY;
	if (offered(c, NCCLBPF_ALGO_RING, proto)) {
		c->algo = NCCLBPF_ALGO_RING;
		c->proto = proto;
	}
	return NCCLBPF_TUNER_APPLY;
}

static uint64_t nat_adaptive(void *ctx, uint64_t len)
{
	struct ncclbpf_tuner_ctx *c = ctx;
	uint32_t key, plan;

	if (c->coll_type >= NCCLBPF_NUM_COLLS)
		return NCCLBPF_TUNER_APPLY;
	key = c->coll_type * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(c->n_bytes);
	if (key < m_plan->max_entries) {
		plan = *(uint32_t *)(m_plan->array_base + (uint64_t)key * m_plan->value_stride);
		if (plan >= 1 && plan <= 64)
			c->n_channels = (int32_t)plan;
	}
	return NCCLBPF_TUNER_APPLY;
}

struct slo_target {
	uint64_t target_ns;
	uint32_t n_channels, reserved;
};

static uint64_t nat_slo(void *ctx, uint64_t len)
{
	struct ncclbpf_tuner_ctx *c = ctx;
	uint64_t n = c->n_bytes, target;
	const struct slo_target *cfg;
	int algo = NCCLBPF_ALGO_RING, proto;
	uint32_t key;

	if (c->coll_type >= NCCLBPF_NUM_COLLS)
		return NCCLBPF_TUNER_APPLY;
	key = c->coll_type * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(n);
	if (key >= m_slo->max_entries)
		return NCCLBPF_TUNER_APPLY;
	cfg = (const void *)(m_slo->array_base + (uint64_t)key * m_slo->value_stride);
	target = cfg->target_ns;
	if (!target || (target >= 50000 && n < target * 100))
		return NCCLBPF_TUNER_APPLY;
	if (n < (256ull << 10)) {
		proto = NCCLBPF_PROTO_LL;
		if (c->coll_type == NCCLBPF_COLL_ALLREDUCE && c->n_nodes > 1 &&
		    offered(c, NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_LL))
			algo = NCCLBPF_ALGO_TREE;
	} else if (n < (64ull << 20)) {
		proto = NCCLBPF_PROTO_LL128;
	} else {
		proto = NCCLBPF_PROTO_SIMPLE;
	}
	if (offered(c, algo, proto)) {
		c->algo = algo;
		c->proto = proto;
	}
	if (cfg->n_channels >= 1 && cfg->n_channels <= 64)
		c->n_channels = (int32_t)cfg->n_channels;
	return NCCLBPF_TUNER_APPLY;
}

static uint64_t nat_bad_channels(void *ctx, uint64_t len)
{
	((struct ncclbpf_tuner_ctx *)ctx)->n_channels = 1;
	return NCCLBPF_TUNER_APPLY;
}

struct bprog {
	const char *name, *object, *prog; /* object under the build's policies/ or bench/peers/ */
	ncclbpf_func_t native;
};

static const struct bprog progs[] = {
	{ "noop", "peers", "noop", nat_noop },
	{ "threshold", "peers", "threshold", nat_threshold },
	{ "array_lookup", "peers", "array_lookup", nat_array },
	{ "hash_update", "peers", "hash_update", nat_hash },
	{ "loop16", "peers", "loop16", nat_loop },
	{ "size_aware", "size_aware", "size_aware", nat_size_aware },
	{ "nvlink_ring_mid", "nvlink_ring_mid", "nvlink_ring_mid", nat_nvlink_ring_mid },
	{ "adaptive_channels", "adaptive_channels", "adaptive_channels_tune", nat_adaptive },
	{ "slo_enforcer_tune", "slo_enforcer", "slo_enforcer_tune", nat_slo },
	{ "bad_channels", "bad_channels", "bad_channels", nat_bad_channels },
};

/* ---- engines ------------------------------------------------------------ */

struct runner {
	int kind; /* E_* */
	ncclbpf_func_t fn;
	const struct nbpf_insn *insns;
	uint32_t n;
	struct nbpf_env env;
#ifdef NCCLBPF_HAVE_UBPF
	struct ubpf_vm *vm;
#endif
	bool ok;
};

#ifdef NCCLBPF_HAVE_UBPF
static bool ubpf_any_region(void *user, uint64_t addr, uint64_t size)
{
	return true; /* map values: outside the context and stack uBPF knows of */
}

/*
 * A uBPF VM with prog's instructions: lddw of a map becomes the map's
 * address, of a map value the value's address; helpers keep their ids.
 */
static struct ubpf_vm *ubpf_make(const struct nbpf_insn *insns, uint32_t n,
				 const struct nbpf_env *env, bool jit, ncclbpf_func_t *fn)
{
	struct nbpf_insn *v = malloc(n * sizeof(*v));
	struct ubpf_vm *vm = ubpf_create();
	char *err = NULL;

	if (!v || !vm)
		goto fail;
	memcpy(v, insns, n * sizeof(*v));
	for (uint32_t i = 0; i + 1 < n; i++) {
		uint64_t a;

		if (v[i].code != NBPF_OP_LDDW)
			continue;
		if (v[i].src) {
			struct ncclbpf_map *m = env->maps[v[i].imm];

			a = v[i].src == NBPF_PSEUDO_MAP_FD || v[i].src == NBPF_PSEUDO_MAP_IDX ?
				    (uintptr_t)m : (uintptr_t)nbpf_map_value_addr(m, (uint32_t)v[i + 1].imm);
			v[i].src = 0;
			v[i].imm = (int32_t)(uint32_t)a;
			v[i + 1].imm = (int32_t)(uint32_t)(a >> 32);
		}
		i++;
	}
	for (int32_t id = 1; id < 64; id++) {
		const struct nbpf_helper *h = nbpf_helper_find(id);

		if (h && h->fn)
			ubpf_register(vm, (unsigned)id, h->name, (external_function_t)h->fn);
	}
	ubpf_register_data_bounds_check(vm, NULL, ubpf_any_region);
	if (ubpf_load(vm, v, n * sizeof(*v), &err) < 0)
		goto fail;
	if (jit && !(*fn = (ncclbpf_func_t)ubpf_compile(vm, &err)))
		goto fail;
	free(v);
	return vm;
fail:
	fprintf(stderr, "bench_peers: uBPF: %s\n", err ? err : "out of memory");
	free(err);
	free(v);
	if (vm)
		ubpf_destroy(vm);
	return NULL;
}
#endif

/* Per-call ns of one batch; call i gets ctxs[i % NCTX] (outputs reset by the copy). */
static double time_batch(const struct runner *r, const struct ncclbpf_tuner_ctx *ctxs,
			 struct ncclbpf_tuner_ctx *work, size_t batch, uint64_t *sink)
{
	uint64_t acc = 0, t0;

	memcpy(work, ctxs, NCTX * sizeof(*work));
	t0 = now_ns();
	switch (r->kind) {
	case E_NAT: case E_JIT: case E_UJIT:
		for (size_t i = 0; i < batch; i++)
			acc += r->fn(&work[i % NCTX], sizeof(*work));
		break;
	case E_INT:
		for (size_t i = 0; i < batch; i++) {
			uint64_t ret = 0;

			nbpf_interp_run_verified(r->insns, r->n, &r->env, &work[i % NCTX],
						 sizeof(*work), &ret);
			acc += ret;
		}
		break;
#ifdef NCCLBPF_HAVE_UBPF
	case E_UINT:
		for (size_t i = 0; i < batch; i++) {
			uint64_t ret = 0;

			ubpf_exec(r->vm, &work[i % NCTX], sizeof(*work), &ret);
			acc += ret;
		}
		break;
#endif
	default:
		break;
	}
	*sink += acc;
	return (double)(now_ns() - t0) / (double)batch;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static void init_ctxs(struct ncclbpf_tuner_ctx *c)
{
	for (int i = 0; i < NCTX; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		c[i].coll_type = (uint32_t)(i % 5);
		c[i].n_bytes = 1ull << (6 + (i * 7) % 25);
		c[i].n_ranks = 1u << (i % 5);
		c[i].n_nodes = 1u + (uint32_t)(i % 4 == 3) * 3;
		c[i].avail_mask = (1u << 6) - 1; /* Tree and Ring, every protocol */
		c[i].nccl_algo = c[i].nccl_proto = -1;
		c[i].algo = c[i].proto = c[i].n_channels = NCCLBPF_KEEP;
	}
}

static int fill_maps(void)
{
	for (uint32_t k = 0; k < 16 && m_array; k++) {
		uint64_t v = 4 + k;

		ncclbpf_map__update(m_array, &k, &v, NCCLBPF_ANY);
	}
	/* Tight targets for some (collective, size) keys, NCCL's choice elsewhere. */
	for (uint32_t k = 0; m_slo && k < m_slo->max_entries; k++) {
		struct slo_target t = { .target_ns = k % 3 ? 20000 : 0, .n_channels = k % 5 ? 8 : 0 };

		ncclbpf_map__update(m_slo, &k, &t, NCCLBPF_ANY);
	}
	for (uint32_t k = 0; m_plan && k < m_plan->max_entries; k++) {
		uint32_t v = k % 4 ? 4 + k % 16 : 0;

		ncclbpf_map__update(m_plan, &k, &v, NCCLBPF_ANY);
	}
	return 0;
}

int main(int argc, char **argv)
{
	size_t calls = 200000, batch = 100, reps = 3;
	const char *only = NULL, *dump = NULL;
	struct ncclbpf_object *objs[sizeof(progs) / sizeof(progs[0])] = { 0 };
	struct ncclbpf_tuner_ctx ctxs[NCTX], work[NCTX];
	uint64_t sink = 0;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			calls = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-b") && i + 1 < argc)
			batch = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-r") && i + 1 < argc)
			reps = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-p") && i + 1 < argc)
			only = argv[++i];
		else if (!strcmp(argv[i], "-d") && i + 1 < argc)
			dump = argv[++i];
		else {
			fprintf(stderr, "usage: %s [-n CALLS] [-b BATCH] [-r REPS] [-p NAME] [-d DIR]\n",
				argv[0]);
			return 2;
		}
	}
	if (!batch || calls < batch || !reps || reps > MAX_REPS)
		return 2;
	init_ctxs(ctxs);
	printf("bench_peers: %zu calls per engine per repetition, batches of %zu, median of %zu "
	       "repetitions of the batch P50; ns per call\n", calls, batch, reps);
	printf("%-18s", "program");
	for (int e = 0; e < E_COUNT; e++)
		printf(" %9s", engine_names[e]);
	printf(" %8s %8s %10s %10s\n", "jit/nat", "int/uint", "cmp_us", "ubpf_cmp");
	for (size_t p = 0; p < sizeof(progs) / sizeof(progs[0]); p++) {
		const struct bprog *bp = &progs[p];
		struct runner r[E_COUNT] = { 0 };
		struct ncclbpf_prepare_opts po = { .sz = sizeof(po), .engine = NCCLBPF_ENGINE_JIT };
		struct ncclbpf_program *prog;
		struct ncclbpf_object *obj;
		double med[E_COUNT] = { 0 }, cmp_us = 0, ucmp_us = 0;
		char path[512];

		if (only && strcmp(only, bp->name))
			continue;
		if (!strcmp(bp->object, "peers"))
			snprintf(path, sizeof(path), "%s/peers.bpf.o", PEERS_DIR);
		else
			snprintf(path, sizeof(path), "%s/%s.bpf.o", POLICY_DIR, bp->object);
		/* One open per object file: its maps are shared by its programs. */
		obj = NULL;
		for (size_t q = 0; q < p && !obj; q++)
			if (objs[q] && !strcmp(progs[q].object, bp->object))
				obj = objs[q];
		if (!obj) {
			if (ncclbpf_object__open_file(path, NULL, &obj)) {
				fprintf(stderr, "bench_peers: %s: %s\n", path, ncclbpf_errmsg());
				rc = 1;
				continue;
			}
			objs[p] = obj; /* closed at the end */
		}
		m_array = ncclbpf_object__find_map(obj, "peer_array") ?: m_array;
		m_hash = ncclbpf_object__find_map(obj, "peer_hash") ?: m_hash;
		m_slo = ncclbpf_object__find_map(obj, "slo_config") ?: m_slo;
		m_plan = ncclbpf_object__find_map(obj, "channel_plan") ?: m_plan;
		fill_maps();
		prog = ncclbpf_object__find_program(obj, bp->prog);
		if (!prog || ncclbpf_program__prepare(prog, ncclbpf_hook_find_section("tuner"), &po)) {
			fprintf(stderr, "bench_peers: %s: %s\n", bp->name, ncclbpf_errmsg());
			rc = 1;
			continue;
		}
		{
			uint64_t t0 = now_ns();
			struct nbpf_jit_image *img = NULL;

			/* Compile time of our JIT alone (prepare also verifies). */
			for (int k = 0; k < 20; k++) {
				struct nbpf_env env = { .maps = obj->maps, .n_maps = (uint32_t)obj->n_maps,
							.helper = nbpf_helper_find };

				nbpf_jit_compile(prog->insns, prog->n_insns, &env, &img);
				nbpf_jit_free(img);
			}
			cmp_us = (double)(now_ns() - t0) / 20000.0;
			if (dump) {
				const struct nbpf_jit_image *ji = prog->jit;
				FILE *f;

				snprintf(path, sizeof(path), "%s/%s.bin", dump, bp->name);
				f = fopen(path, "wb");
				if (!f || fwrite(ji->mem, 1, ji->code_size, f) != ji->code_size)
					fprintf(stderr, "bench_peers: cannot write %s\n", path);
				if (f)
					fclose(f);
			}
		}
		r[E_NAT] = (struct runner){ .kind = E_NAT, .fn = bp->native, .ok = true };
		r[E_JIT] = (struct runner){ .kind = E_JIT, .fn = ncclbpf_program__func(prog), .ok = true };
		r[E_INT] = (struct runner){
			.kind = E_INT, .insns = prog->insns, .n = prog->n_insns, .ok = true,
			.env = { .maps = obj->maps, .n_maps = (uint32_t)obj->n_maps,
				 .helper = nbpf_helper_find },
		};
#ifdef NCCLBPF_HAVE_UBPF
		{
			uint64_t t0 = now_ns();

			r[E_UJIT].kind = E_UJIT;
			r[E_UJIT].vm = ubpf_make(prog->insns, prog->n_insns, &r[E_INT].env, true,
						 &r[E_UJIT].fn);
			r[E_UJIT].ok = r[E_UJIT].vm != NULL;
			ucmp_us = (double)(now_ns() - t0) / 1000.0; /* one load + compile */
			r[E_UINT].kind = E_UINT;
			r[E_UINT].vm = ubpf_make(prog->insns, prog->n_insns, &r[E_INT].env, false, NULL);
			r[E_UINT].ok = r[E_UINT].vm != NULL;
		}
#endif
		{
			size_t batches = calls / batch;
			double *per[E_COUNT], reps_p50[E_COUNT][MAX_REPS];

			for (int e = 0; e < E_COUNT; e++)
				per[e] = malloc(batches * sizeof(double));
			for (size_t rep = 0; rep < reps; rep++) {
				/* Warm-up, then batches of every engine in turn. */
				for (int e = 0; e < E_COUNT; e++)
					if (r[e].ok)
						time_batch(&r[e], ctxs, work, batch * 10, &sink);
				for (size_t b = 0; b < batches; b++)
					for (int e = 0; e < E_COUNT; e++)
						if (r[e].ok)
							per[e][b] = time_batch(&r[e], ctxs, work, batch, &sink);
				for (int e = 0; e < E_COUNT; e++)
					if (r[e].ok)
						reps_p50[e][rep] = median(per[e], batches);
			}
			for (int e = 0; e < E_COUNT; e++) {
				if (r[e].ok)
					med[e] = median(reps_p50[e], reps);
				free(per[e]);
			}
		}
		printf("%-18s", bp->name);
		for (int e = 0; e < E_COUNT; e++)
			if (r[e].ok)
				printf(" %9.2f", med[e]);
			else
				printf(" %9s", "-");
		printf(" %8.2f", med[E_NAT] > 0 ? med[E_JIT] / med[E_NAT] : 0.0);
		if (r[E_UINT].ok)
			printf(" %8.2f", med[E_INT] / med[E_UINT]);
		else
			printf(" %8s", "-");
		printf(" %10.2f", cmp_us);
		if (r[E_UJIT].ok)
			printf(" %10.2f\n", ucmp_us);
		else
			printf(" %10s\n", "-");
#ifdef NCCLBPF_HAVE_UBPF
		if (r[E_UJIT].vm)
			ubpf_destroy(r[E_UJIT].vm);
		if (r[E_UINT].vm)
			ubpf_destroy(r[E_UINT].vm);
#endif
	}
	for (size_t p = 0; p < sizeof(progs) / sizeof(progs[0]); p++)
		ncclbpf_object__close(objs[p]);
	if (sink == 42)
		printf("\n");
	return rc;
}
