/*
 * bench_reload.c - what hot reload costs.
 *
 * 1. Reload latency per policy, through the real path: the plugin is loaded
 *    by the NCCL emulator, a communicator exists, and each object is
 *    reloaded N times over the control socket.  Reported: load (ELF + BTF
 *    + maps) + verify + JIT time as measured inside the process, the
 *    publish (one atomic store, then collecting the replaced image after a
 *    grace period), and the whole round trip as the ncclbpf command sees it.
 *
 * 2. Hot-path cost of the reload machinery: the same JIT-compiled program
 *    called (a) directly through a function pointer, (b) as the tuner
 *    adapter calls it: epoch enter on its own reader record, the image
 *    from the per-communicator cache (chain version + call < until), the
 *    call, epoch exit; (c) as (b) with an at-call image pending in front;
 *    (d) the previous scheme, the chain walked from the published pointer
 *    on every call; (e) the cached lookup without the epoch bracket.
 *    Uses host.c's own image structures and functions.
 *    Batches of B calls are timed, variants interleaved so noise hits all
 *    alike; P50/P99 of the per-call cost over batches.
 *
 * usage: bench_reload [-n RELOADS] [-c CALLS] [POLICY.bpf.o...]
 *        (default: every policies/NAME.bpf.o of the build directory)
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "control/ctl_client.h"
#include "control/ctl_proto.h"
#include "emulator/emu.h"
#include "epoch.h"
#include "host/hooks.h"
#include "host/host.h"
#include "ncclbpf/policy.h"
#include "ncclbpf/runtime.h"

#include "../bench_util.h"

static double pct(uint64_t *v, size_t n, double q)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return n ? (double)v[(size_t)(q * (double)(n - 1))] : 0;
}

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	(void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

/* ---- 1. reload latency -------------------------------------------------- */

static void bench_reload(char **objs, int n_objs, int reps)
{
	struct emu_plugin pl;
	struct emu_tuner t;
	struct emu_topo topo = { .n_ranks = 8, .n_nodes = 1, .nvls = true };
	char err[512];
	uint64_t *load = calloc((size_t)reps, 8), *pub = calloc((size_t)reps, 8),
		 *rt = calloc((size_t)reps, 8);

	unsetenv("NCCLBPF_POLICY");
	if (emu_open(&pl, EMU_TUNER, EMU_PLUGIN, 5, err, sizeof(err)) ||
	    emu_tuner_init(&t, &pl, 0x1234, &topo, logger)) {
		fprintf(stderr, "bench_reload: cannot load the plugin: %s\n", err);
		exit(1);
	}
	printf("reload latency over the control socket, %d reloads per policy (us)\n", reps);
	printf("%-28s %10s %10s %10s %10s %10s %10s\n", "policy", "load_p50", "load_p99", "pub_p50",
	       "pub_p99", "rtt_p50", "rtt_p99");
	for (int o = 0; o < n_objs; o++) {
		char req[4200];
		int ok = 0;
		const char *base = strrchr(objs[o], '/') ? strrchr(objs[o], '/') + 1 : objs[o];

		snprintf(req, sizeof(req), "reload path=%s at_call=0", objs[o]);
		for (int r = 0; r < reps; r++) {
			struct nbpf_ctl_msg m;
			const char *em;
			uint64_t t0 = now_ns(), v = 0;
			int e = nbpf_ctl_call_pid(getpid(), NBPF_CTL_RELOAD, req, &m, &em);

			rt[ok] = now_ns() - t0;
			if (e) {
				printf("%-28s rejected: %s\n", base, em);
				nbpf_ctl_msg_free(&m);
				break;
			}
			for (uint32_t i = 0; i < m.n_recs; i++)
				if (!strcmp(m.recs[i].kind, "reload")) {
					nbpf_ctl_rec_u64(&m.recs[i], "load_ns", &v);
					load[ok] = v;
					nbpf_ctl_rec_u64(&m.recs[i], "publish_ns", &v);
					pub[ok] = v;
				}
			/* One decision per reload, so each image is really used before the next. */
			struct emu_decision d;
			emu_tuner_call(&t, &topo, 4, 1 << 20, &d);
			ok++;
			nbpf_ctl_msg_free(&m);
		}
		if (ok)
			printf("%-28s %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f\n", base,
			       pct(load, ok, 0.5) / 1e3, pct(load, ok, 0.99) / 1e3, pct(pub, ok, 0.5) / 1e3,
			       pct(pub, ok, 0.99) / 1e3, pct(rt, ok, 0.5) / 1e3, pct(rt, ok, 0.99) / 1e3);
	}
	emu_tuner_fini(&t);
	emu_close(&pl);
	free(load);
	free(pub);
	free(rt);
}

/* ---- 2. hot-path cost of the machinery ---------------------------------- */

/*
 * The host's own code (host.c is linked into this program; the plugin's
 * copy stays hidden inside its .so): real images, the real resolution
 * cache and chain walk.  The bench plays the publisher itself.
 */
static struct nbpf_image img_cur, img_pend;
static struct nbpf_host_prog hp_cur;

static void set_published(struct nbpf_image *img)
{
	atomic_store_explicit(&nbpf_host_published, img, memory_order_release);
	atomic_fetch_add_explicit(&nbpf_host_chain.v, 1, memory_order_release);
}

static __attribute__((noinline)) uint64_t run_direct(ncclbpf_func_t f, struct ncclbpf_tuner_ctx *c)
{
	return f(c, sizeof(*c));
}

/* As the tuner adapter: own reader record, cached image, call, exit. */
static __attribute__((noinline)) uint64_t run_machinery(struct nbpf_epoch_reader *rd,
							struct nbpf_image_cache *cache,
							struct ncclbpf_tuner_ctx *c)
{
	const struct nbpf_host_prog *hp;
	uint64_t r = 0;

	nbpf_epoch_enter_rec(rd);
	if (!nbpf_host_cache_hit(cache, c->call_seq))
		nbpf_host_image_fill(cache, c->call_seq);
	hp = cache->tuner;
	if (hp)
		r = cache->func(c, sizeof(*c));
	nbpf_epoch_exit_rec(rd);
	return r;
}

/* The epoch bracket around a direct call: what any program run with maps
 * needs, reload or not. */
static __attribute__((noinline)) uint64_t run_bracket(struct nbpf_epoch_reader *rd,
						      ncclbpf_func_t f, struct ncclbpf_tuner_ctx *c)
{
	uint64_t r;

	nbpf_epoch_enter_rec(rd);
	r = f(c, sizeof(*c));
	nbpf_epoch_exit_rec(rd);
	return r;
}

/* The previous scheme: the chain walked from the published pointer on every call. */
static __attribute__((noinline)) uint64_t run_walk(struct nbpf_epoch_reader *rd,
						   struct ncclbpf_tuner_ctx *c)
{
	const struct nbpf_image *i;
	uint64_t r = 0;

	nbpf_epoch_enter_rec(rd);
	i = nbpf_host_image_for(atomic_load_explicit(&nbpf_host_published, memory_order_acquire),
				c->call_seq, c->comm_id);
	if (i && i->tuner)
		r = i->tuner->func(c, sizeof(*c));
	nbpf_epoch_exit_rec(rd);
	return r;
}

/* The cached lookup alone, without the epoch bracket (for the breakdown). */
static __attribute__((noinline)) uint64_t run_pointer_only(struct nbpf_image_cache *cache,
							   struct ncclbpf_tuner_ctx *c)
{
	const struct nbpf_host_prog *hp;

	if (!nbpf_host_cache_hit(cache, c->call_seq))
		nbpf_host_image_fill(cache, c->call_seq);
	hp = cache->tuner;
	return hp ? cache->func(c, sizeof(*c)) : 0;
}

enum { V_DIR, V_MACH, V_PEND, V_WALK, V_PTR, V_BRK, V_N };

static void bench_hot(const char *obj, uint64_t calls)
{
	struct ncclbpf_object *o = NULL;
	struct ncclbpf_program *p;
	struct ncclbpf_prepare_opts po = { .sz = sizeof(po), .engine = NCCLBPF_ENGINE_JIT };
	struct nbpf_epoch_reader *rd = nbpf_epoch_reader_new();
	struct nbpf_image_cache cache[V_N];
	ncclbpf_func_t f;
	enum { B = 1000 };
	size_t nb = (size_t)(calls / B);
	uint64_t *v[V_N];
	struct ncclbpf_tuner_ctx ctx[16];

	if (!rd || ncclbpf_object__open_file(obj, NULL, &o) || !(p = ncclbpf_object__prog(o, 0)) ||
	    ncclbpf_program__prepare(p, ncclbpf_hook_find_section(ncclbpf_program__section(p)), &po) ||
	    !(f = ncclbpf_program__func(p))) {
		fprintf(stderr, "bench_reload: %s: %s\n", obj, rd ? ncclbpf_errmsg() : "no reader record");
		ncclbpf_object__close(o);
		nbpf_epoch_reader_free(rd);
		return;
	}
	memset(cache, 0, sizeof(cache));
	for (int i = 0; i < 16; i++) {
		memset(&ctx[i], 0, sizeof(ctx[i]));
		ctx[i].n_bytes = 1ull << (i + 4);
		ctx[i].coll_type = NCCLBPF_COLL_ALLREDUCE;
		ctx[i].n_ranks = 8;
		ctx[i].n_nodes = 1;
		ctx[i].avail_mask = 0x1ff;
		ctx[i].algo = ctx[i].proto = ctx[i].n_channels = NCCLBPF_KEEP;
	}
	hp_cur.func = f;
	img_cur.tuner = &hp_cur;
	img_cur.generation = 1;
	img_pend.tuner = &hp_cur;
	img_pend.generation = 2;
	for (int k = 0; k < V_N; k++)
		v[k] = calloc(nb, 8);
	for (size_t b = 0; b < nb; b++) {
		for (int k = 0; k < V_N; k++) {
			uint64_t t0, sink = 0;

			if (k == V_PEND) {
				/* A reload pending far in the future: without the cache every
				 * call would step over it. */
				atomic_store(&img_pend.at_call, UINT64_MAX);
				atomic_store(&img_pend.prev, &img_cur);
				set_published(&img_pend);
			} else if (k != V_DIR && atomic_load(&nbpf_host_published) != &img_cur) {
				set_published(&img_cur);
			}
			/* One loop per variant, so no dispatch sits inside the timed loop. */
#define TIMED_LOOP(expr)                                                        \
			for (int i = 0; i < B; i++) {                                  \
				struct ncclbpf_tuner_ctx *c = &ctx[i & 15];            \
				c->call_seq = b * B + (uint64_t)i;                     \
				sink += (expr);                                        \
			}
			t0 = now_ns();
			switch (k) {
			case V_DIR: TIMED_LOOP(run_direct(f, c)) break;
			case V_MACH: case V_PEND: TIMED_LOOP(run_machinery(rd, &cache[k], c)) break;
			case V_WALK: TIMED_LOOP(run_walk(rd, c)) break;
			case V_BRK: TIMED_LOOP(run_bracket(rd, f, c)) break;
			default: TIMED_LOOP(run_pointer_only(&cache[k], c)) break;
			}
#undef TIMED_LOOP
			v[k][b] = now_ns() - t0;
			__asm__ volatile("" : : "r"(sink));
		}
	}
	double r50[V_N], r99[V_N];

	for (int k = 0; k < V_N; k++) {
		r50[k] = pct(v[k], nb, 0.5) / B;
		r99[k] = pct(v[k], nb, 0.99) / B;
	}
	const char *base = strrchr(obj, '/') ? strrchr(obj, '/') + 1 : obj;

	printf("%-24s %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %+7.2f %+7.2f %+7.2f %+7.2f %+7.2f %+7.2f\n",
	       base, r50[V_DIR], r99[V_DIR], r50[V_MACH], r99[V_MACH], r50[V_PEND], r99[V_PEND],
	       r50[V_MACH] - r50[V_DIR], r50[V_PEND] - r50[V_DIR], r50[V_WALK] - r50[V_DIR],
	       r50[V_PTR] - r50[V_DIR], r50[V_BRK] - r50[V_DIR], r50[V_MACH] - r50[V_BRK]);
	for (int k = 0; k < V_N; k++)
		free(v[k]);
	set_published(NULL);
	nbpf_epoch_barrier();
	nbpf_epoch_reader_free(rd);
	ncclbpf_object__close(o);
}

static int is_tuner_obj(const char *path)
{
	struct ncclbpf_object *o = NULL;
	int ok = 0;

	if (!ncclbpf_object__open_file(path, NULL, &o)) {
		for (size_t i = 0; i < ncclbpf_object__prog_count(o); i++)
			ok |= !strcmp(ncclbpf_program__section(ncclbpf_object__prog(o, i)), "tuner") && i == 0;
		ncclbpf_object__close(o);
	}
	return ok;
}

int main(int argc, char **argv)
{
	int reps = 200, n_objs = 0;
	uint64_t calls = 2000000;
	char *objs[64];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-c") && i + 1 < argc)
			calls = strtoull(argv[++i], NULL, 0);
		else if (n_objs < 64)
			objs[n_objs++] = argv[i];
	}
	if (!n_objs) {
		DIR *d = opendir(POLICY_DIR);
		struct dirent *de;

		while (d && (de = readdir(d)) && n_objs < 64) {
			size_t l = strlen(de->d_name);

			if (l > 6 && !strcmp(de->d_name + l - 6, ".bpf.o")) {
				char *p = malloc(strlen(POLICY_DIR) + l + 2);

				sprintf(p, "%s/%s", POLICY_DIR, de->d_name);
				objs[n_objs++] = p;
			}
		}
		if (d)
			closedir(d);
	}
	char dir[] = "/tmp/ncclbpf-bench-XXXXXX";

	if (!mkdtemp(dir))
		return 1;
	setenv("NCCLBPF_CTL_DIR", dir, 1);
	setenv("NCCLBPF_LOG", "none", 0);
	bench_reload(objs, n_objs, reps);

	printf("\nhot path per call (ns): dir = JIT entry through a function pointer; mach = as the\n"
	       "tuner adapter: epoch enter (own reader record) + cached image (chain version and\n"
	       "call < until) + call + epoch exit; pend = the same with a reload waiting at a later\n"
	       "call; d_walk = the previous scheme (chain walked from the published pointer every\n"
	       "call, same bracket); d_ptr = the cached lookup alone, without the epoch bracket;\n"
	       "d_brk = the epoch bracket around the direct call, without any image lookup;\n"
	       "d_* are P50 differences to dir; reload = mach - brk, what reload support adds to a\n"
	       "bracketed run; %" PRIu64 " calls each\n",
	       calls);
	printf("%-24s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s\n", "tuner program of", "dir50",
	       "dir99", "mach50", "mach99", "pend50", "pend99", "d_mach", "d_pend", "d_walk", "d_ptr",
	       "d_brk", "reload");
	for (int o = 0; o < n_objs; o++)
		if (is_tuner_obj(objs[o]))
			bench_hot(objs[o], calls);
	rmdir(dir);
	return 0;
}
