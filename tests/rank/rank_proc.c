/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rank_proc.c - one rank process of the tester: the plugin loaded as NCCL
 * loads it (the tuner and profiler tables through the emulator's dlopen,
 * the net table through its own), and one thread per communicator it is a
 * member of.  Each thread initialises the tuner and profiler contexts with
 * the communicator's id, then makes calls as NCCL's launching thread does:
 * getCollInfo, then the collective's profiler events with a latency that
 * depends on the channel count (so `ncclbpf loop` has something to find),
 * never more than RM_PACE calls ahead of its slowest peer (a collective
 * completes only when every rank joined it), at the slot's rate.  Every
 * decision is recorded for the checker.  The process stops a thread when
 * the driver closes the slot, and exits when the driver says stop.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emu_prof.h"
#include "model.h"
#include "net_drv.h"

struct comm_thr {
	pthread_t th;
	bool running;
	uint32_t gen;
	int slot;
};

static const struct rm_conf *g_conf;
static struct rm_shared *g_sh;
static int g_me;
static struct emu_plugin g_tuner, g_prof;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t slowest(struct rm_slot *s, uint32_t members)
{
	uint64_t m = UINT64_MAX;

	for (int p = 0; p < RM_MAX_PROCS; p++)
		if (members & (1u << p)) {
			uint64_t v = atomic_load(&s->progress[p]);

			m = v < m ? v : m;
		}
	return m;
}

/* Latency of one 64 KiB AllReduce on ch channels: best near 6 (the loop's target). */
static uint64_t model_ns(int ch)
{
	return 8000 + 36000 / (uint64_t)(ch > 0 ? ch : 1) + 1000 * (uint64_t)ch;
}

static void *comm_main(void *arg)
{
	struct comm_thr *ct = arg;
	struct rm_slot *s = &g_sh->slot[ct->slot];
	uint32_t members = atomic_load(&s->members);
	uint64_t comm_id = atomic_load(&s->comm_id), t_next = now_ns(), clock_ns = 1000000;
	struct emu_topo topo = { .n_ranks = __builtin_popcount(members), .n_nodes = 0 };
	struct prof pr = { .pl = g_prof, .v = 5 };
	struct emu_tuner t;
	bool have_prof;
	uint32_t nodes = 0;

	for (int p = 0; p < RM_MAX_PROCS; p++)
		if (members & (1u << p))
			nodes |= 1u << rm_node_of(g_conf, p);
	topo.n_nodes = __builtin_popcount(nodes);
	if (emu_tuner_init(&t, &g_tuner, comm_id, &topo, emu_logger)) {
		fprintf(stderr, "rank %d: tuner init failed\n", g_me);
		_exit(3);
	}
	have_prof = !prof_init(&pr, comm_id) && pr.ctx;
	atomic_fetch_or(&s->joined, 1u << g_me);
	for (uint64_t i = 0; i < RM_MAX_CALLS; i++) {
		struct emu_decision d;
		uint32_t rate = 0;
		int ch;

		/* The collective waits for every rank; the slot closing ends it. */
		while (atomic_load(&s->state) == SLOT_LIVE && i > slowest(s, members) + RM_PACE)
			usleep(200);
		while (atomic_load(&s->state) == SLOT_LIVE && !(rate = atomic_load(&s->rate)))
			usleep(2000);
		if (atomic_load(&s->state) != SLOT_LIVE)
			break;
		if (emu_tuner_call(&t, &topo, 4, RM_BYTES, &d)) {
			fprintf(stderr, "rank %d: getCollInfo failed\n", g_me);
			_exit(4);
		}
		ch = d.n_channels > 0 ? d.n_channels : d.nccl_channels;
		s->dec[g_me][i] = rm_code(d.algo, d.proto, d.n_channels);
		if (have_prof) {
			uint64_t lat = model_ns(ch);
			void *g = start_group(&pr);
			void *c = start_coll(&pr, g, i, RM_BYTES / 4, ch);

			for (int j = 0; j < ch && j < 16; j++) {
				void *k = start_kch(&pr, c, j, clock_ns);

				record_kch_stop(&pr, k, clock_ns + lat);
				stop(&pr, k);
			}
			stop(&pr, c);
			stop(&pr, g);
			clock_ns += lat + 1000;
		}
		atomic_store(&s->progress[g_me], i + 1);
		t_next += 1000000000ull / rate;
		if (t_next > now_ns() + 1000) {
			uint64_t w = t_next - now_ns();
			struct timespec ts = { (time_t)(w / 1000000000ull), (long)(w % 1000000000ull) };

			nanosleep(&ts, NULL);
		} else if (t_next + 100000000ull < now_ns()) {
			t_next = now_ns(); /* a stop or a slow machine: no burst to catch up */
		}
	}
	if (have_prof)
		prof_fini(&pr);
	emu_tuner_fini(&t);
	atomic_fetch_or(&s->left, 1u << g_me);
	return NULL;
}

/* The net role: init (a net context registers with the host) until exit. */
static void net_up(struct drv *d, void **lib)
{
	*lib = drv_open(g_conf->plugin);
	if (!*lib || drv_bind(d, *lib, 11) || drv_init(d, 0x1e7, 0, NULL)) {
		if (g_conf->verbose)
			fprintf(stderr, "rank %d: net plugin not initialised (tuner and profiler only)\n", g_me);
		d->tbl = NULL;
	}
}

void rm_rank_main(const struct rm_conf *c, struct rm_shared *sh, int p)
{
	struct comm_thr thr[RM_MAX_SLOTS] = { 0 };
	char err[256];
	struct drv net = { 0 };
	void *netlib = NULL;

	g_conf = c;
	g_sh = sh;
	g_me = p;
	signal(SIGPIPE, SIG_IGN);
	if (emu_open(&g_tuner, EMU_TUNER, c->plugin, 5, err, sizeof(err)) ||
	    emu_open(&g_prof, EMU_PROFILER, c->plugin, 5, err, sizeof(err))) {
		fprintf(stderr, "rank %d: %s\n", p, err);
		_exit(2);
	}
	net_up(&net, &netlib);
	atomic_store(&sh->proc[p].ready, 1);
	while (!atomic_load(&sh->stop)) {
		for (int k = 0; k < c->slots; k++) {
			struct rm_slot *s = &sh->slot[k];
			int st = atomic_load(&s->state);
			uint32_t gen = atomic_load(&s->gen);

			if (thr[k].running && (st != SLOT_LIVE || thr[k].gen != gen)) {
				pthread_join(thr[k].th, NULL);
				thr[k].running = false;
			}
			if (!thr[k].running && st == SLOT_LIVE && (atomic_load(&s->members) & (1u << p)) &&
			    !(atomic_load(&s->joined) & (1u << p)) && !(atomic_load(&s->left) & (1u << p))) {
				thr[k] = (struct comm_thr){ .gen = gen, .slot = k, .running = true };
				if (pthread_create(&thr[k].th, NULL, comm_main, &thr[k]))
					_exit(5);
			}
		}
		usleep(2000);
	}
	for (int k = 0; k < c->slots; k++)
		if (thr[k].running)
			pthread_join(thr[k].th, NULL);
	if (net.tbl)
		drv_finalize(&net);
	emu_close(&g_prof);
	emu_close(&g_tuner);
	_exit(0);
}
