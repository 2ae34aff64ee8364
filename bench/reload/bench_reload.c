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
 *    adapter calls it: epoch enter, one acquire load of the published
 *    image, the at-call check, the call, epoch exit; (c) as (b) with a
 *    pending at-call image in front (one more step of the chain walk);
 *    (d) the atomic load and at-call check without the epoch bracket, to
 *    show which part of the cost is the grace-period fence.
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

#include "cli/ctl_client.h"
#include "emu.h"
#include "epoch.h"
#include "nccl/ctl_proto.h"
#include "nccl/hooks.h"
#include "ncclbpf/policy.h"
#include "ncclbpf/runtime.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

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

/* The parts of an image the hot path touches, laid out like the host's. */
struct img {
	_Atomic uint64_t at_call;
	struct img *_Atomic prev;
	ncclbpf_func_t func;
};

static struct img *_Atomic published;

static inline const struct img *img_for(const struct img *cur, uint64_t call)
{
	while (cur && call < atomic_load_explicit(&cur->at_call, memory_order_relaxed))
		cur = atomic_load_explicit(&cur->prev, memory_order_acquire);
	return cur;
}

static __attribute__((noinline)) uint64_t run_direct(ncclbpf_func_t f, struct ncclbpf_tuner_ctx *c)
{
	return f(c, sizeof(*c));
}

static __attribute__((noinline)) uint64_t run_machinery(struct ncclbpf_tuner_ctx *c)
{
	const struct img *i;
	uint64_t r = 0;

	nbpf_epoch_enter();
	i = img_for(atomic_load_explicit(&published, memory_order_acquire), c->call_seq);
	if (i && i->func)
		r = i->func(c, sizeof(*c));
	nbpf_epoch_exit();
	return r;
}

/* The publish/at-call part alone, without the grace-period bracket (for the breakdown). */
static __attribute__((noinline)) uint64_t run_pointer_only(struct ncclbpf_tuner_ctx *c)
{
	const struct img *i = img_for(atomic_load_explicit(&published, memory_order_acquire),
				      c->call_seq);

	return i && i->func ? i->func(c, sizeof(*c)) : 0;
}

static void bench_hot(const char *obj, uint64_t calls)
{
	struct ncclbpf_object *o = NULL;
	struct ncclbpf_program *p;
	struct ncclbpf_prepare_opts po = { .sz = sizeof(po), .engine = NCCLBPF_ENGINE_JIT };
	ncclbpf_func_t f;
	enum { B = 1000 };
	size_t nb = (size_t)(calls / B);
	uint64_t *v[4];
	static struct img cur, pending;
	struct ncclbpf_tuner_ctx ctx[16];

	if (ncclbpf_object__open_file(obj, NULL, &o) || !(p = ncclbpf_object__prog(o, 0)) ||
	    ncclbpf_program__prepare(p, ncclbpf_hook_find_section(ncclbpf_program__section(p)), &po) ||
	    !(f = ncclbpf_program__func(p))) {
		fprintf(stderr, "bench_reload: %s: %s\n", obj, ncclbpf_errmsg());
		ncclbpf_object__close(o);
		return;
	}
	for (int i = 0; i < 16; i++) {
		memset(&ctx[i], 0, sizeof(ctx[i]));
		ctx[i].n_bytes = 1ull << (i + 4);
		ctx[i].coll_type = NCCLBPF_COLL_ALLREDUCE;
		ctx[i].n_ranks = 8;
		ctx[i].n_nodes = 1;
		ctx[i].avail_mask = 0x1ff;
		ctx[i].algo = ctx[i].proto = ctx[i].n_channels = NCCLBPF_KEEP;
	}
	cur.func = f;
	pending.func = f;
	for (int k = 0; k < 4; k++)
		v[k] = calloc(nb, 8);
	for (size_t b = 0; b < nb; b++) {
		for (int k = 0; k < 4; k++) {
			uint64_t t0, sink = 0;

			if (k == 1 || k == 3)
				atomic_store(&published, &cur);
			if (k == 2) {
				/* A reload pending far in the future: every call steps over it. */
				atomic_store(&pending.at_call, UINT64_MAX);
				atomic_store(&pending.prev, &cur);
				atomic_store(&published, &pending);
			}
			t0 = now_ns();
			for (int i = 0; i < B; i++) {
				struct ncclbpf_tuner_ctx *c = &ctx[i & 15];

				c->call_seq = b * B + (uint64_t)i;
				sink += k == 0 ? run_direct(f, c) : k == 3 ? run_pointer_only(c)
									 : run_machinery(c);
			}
			v[k][b] = now_ns() - t0;
			__asm__ volatile("" : : "r"(sink));
		}
	}
	double d50 = pct(v[0], nb, 0.5) / B, d99 = pct(v[0], nb, 0.99) / B;
	double m50 = pct(v[1], nb, 0.5) / B, m99 = pct(v[1], nb, 0.99) / B;
	double p50 = pct(v[2], nb, 0.5) / B, p99 = pct(v[2], nb, 0.99) / B;
	double q50 = pct(v[3], nb, 0.5) / B;
	const char *base = strrchr(obj, '/') ? strrchr(obj, '/') + 1 : obj;

	printf("%-28s %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %+8.2f %+8.2f %+8.2f\n", base, d50, d99, m50,
	       m99, p50, p99, m50 - d50, p50 - d50, q50 - d50);
	for (int k = 0; k < 4; k++)
		free(v[k]);
	atomic_store(&published, NULL);
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

	printf("\nhot path per call (ns): direct = JIT entry through a function pointer; machinery =\n"
	       "epoch enter + acquire load + at-call check + call + epoch exit; pending = the same\n"
	       "with a reload waiting at a later call (one more chain step); d_ptr = the atomic\n"
	       "load and at-call check alone, without the epoch bracket; %" PRIu64 " calls each\n",
	       calls);
	printf("%-28s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", "tuner program of", "dir_p50",
	       "dir_p99", "mach_p50", "mach_p99", "pend_p50", "pend_p99", "d_mach", "d_pend", "d_ptr");
	for (int o = 0; o < n_objs; o++)
		if (is_tuner_obj(objs[o]))
			bench_hot(objs[o], calls);
	rmdir(dir);
	return 0;
}
