// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_loop_channels.c - closed loop 1 end to end.
 *
 * Four emulated ranks, each its own process (fork) running the plugin as
 * tuner and profiler with policies/adaptive_channels.bpf.o, replay the
 * same AllReduce of 4 MiB; the time of each collective comes from a
 * latency model of the channel count (below) with per-rank skew and
 * jitter.  The aggregator (nbpf_loop_run, what `ncclbpf loop` runs) reads
 * their telemetry through their control sockets and map files, tries the
 * candidate counts and settles on one.  Checked: it finds the model's
 * best count (12) from NCCL's 2, every rank makes the same decision on
 * every call, all ranks switch on the announced calls, and without the
 * profiler nothing changes.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "emu_prof.h"
#include "emu_test.h"
#include "loop.h"
#include "loop_test.h"
#include "ncclbpf/runtime.h"

#define N_RANKS   4
#define MAX_CALLS 600000
#define BYTES     (4ull << 20)
#define NCCL_CH   2   /* what the emulated NCCL runs for this size without a plan */
#define PACE      256 /* a rank runs at most this many calls ahead of the slowest */

struct agg_out {
	int err, best, n_procs;
	uint64_t final_call, late;
};

struct shared {
	struct agg_out agg[2];
	_Atomic uint64_t done[N_RANKS];
	_Atomic int stop;
	_Atomic int ready;
	uint8_t ch[N_RANKS][MAX_CALLS];
};

static struct shared *sh;

/*
 * Latency model of a 4 MiB AllReduce by channel count: a fixed cost, the
 * transfer spread over the channels, and a per-channel cost (launch,
 * synchronisation); the optimum is sqrt(216000 / 1500) = 12 channels.
 * Rank r is 200 ns slower than rank 0; +-3% jitter per call.
 */
static uint64_t model_ns(int ch, int rank, uint64_t *rng)
{
	double t = 10000.0 + 216000.0 / ch + 1500.0 * ch + 200.0 * rank;

	*rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
	return (uint64_t)(t * (0.97 + 0.06 * (double)(*rng % 10000) / 10000.0));
}

static uint64_t slowest(void)
{
	uint64_t m = UINT64_MAX;

	for (int r = 0; r < N_RANKS; r++) {
		uint64_t v = atomic_load(&sh->done[r]);

		m = v < m ? v : m;
	}
	return m;
}

static void pace(const struct timespec *t0, uint64_t sim_ns)
{
	struct timespec now, d;
	uint64_t real_ns;

	clock_gettime(CLOCK_MONOTONIC, &now);
	real_ns = (uint64_t)(now.tv_sec - t0->tv_sec) * 1000000000ull + (uint64_t)now.tv_nsec -
		  (uint64_t)t0->tv_nsec;
	if (real_ns >= sim_ns)
		return;
	d.tv_sec = (time_t)((sim_ns - real_ns) / 1000000000ull);
	d.tv_nsec = (long)((sim_ns - real_ns) % 1000000000ull);
	nanosleep(&d, NULL);
}

static void run_rank(int rank, bool profiler)
{
	const struct emu_topo topo = EMU_TOPO_DEFAULT;
	struct prof p = { .v = 5 };
	struct emu_plugin tpl;
	struct emu_tuner t;
	char err[256];
	uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(rank + 1), clock_ns = 1000000;
	struct timespec t0;
	int rc = 1;

	if (emu_open(&tpl, EMU_TUNER, EMU_PLUGIN, 5, err, sizeof(err)) ||
	    emu_tuner_init(&t, &tpl, 0x100c, &topo, emu_logger))
		_exit(2);
	if (profiler && (emu_open(&p.pl, EMU_PROFILER, EMU_PLUGIN, 5, err, sizeof(err)) ||
			 prof_init(&p, 0x100c)))
		_exit(3);
	atomic_fetch_add(&sh->ready, 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t i = 0; i < MAX_CALLS && !atomic_load(&sh->stop); i++) {
		struct emu_decision d;
		int ch;

		while (i > slowest() + PACE && !atomic_load(&sh->stop))
			sched_yield();
		if (emu_tuner_call(&t, &topo, 4, BYTES, &d))
			goto out;
		ch = d.n_channels > 0 ? d.n_channels : NCCL_CH;
		sh->ch[rank][i] = (uint8_t)ch;
		if (profiler) {
			uint64_t lat = model_ns(ch, rank, &rng);
			void *g = start_group(&p);
			void *c = start_coll(&p, g, i, BYTES / 4, ch);
			/* NCCL reports every channel; the Coll completes with the last. */
			for (int j = 0; j < ch; j++) {
				void *k = start_kch(&p, c, j, clock_ns);

				record_kch_stop(&p, k, clock_ns + lat);
				stop(&p, k);
			}
			stop(&p, c);
			stop(&p, g);
			clock_ns += lat + 1000;
		} else {
			clock_ns += model_ns(ch, rank, &rng) + 1000;
		}
		/* Run in the model's time, as a real job would (a few thousand calls a second). */
		if (!(i % 64))
			pace(&t0, clock_ns - 1000000);
		atomic_store(&sh->done[rank], i + 1);
	}
	rc = 0;
out:
	atomic_store(&sh->done[rank], UINT64_MAX); /* never hold the others back */
	if (profiler)
		prof_fini(&p);
	emu_tuner_fini(&t);
	_exit(rc);
}

static int start_ranks(pid_t *pids, bool profiler)
{
	memset(sh, 0, sizeof(*sh)); /* also clears the aggregators' results */
	for (int r = 0; r < N_RANKS; r++) {
		pids[r] = fork();
		if (pids[r] < 0)
			return -errno;
		if (!pids[r])
			run_rank(r, profiler);
	}
	while (atomic_load(&sh->ready) < N_RANKS)
		usleep(1000);
	return 0;
}

static uint64_t stop_ranks(pid_t *pids)
{
	uint64_t n = UINT64_MAX;

	for (int r = 0; r < N_RANKS; r++) {
		uint64_t v = atomic_load(&sh->done[r]);

		n = v < n ? v : n;
	}
	atomic_store(&sh->stop, 1);
	for (int r = 0; r < N_RANKS; r++) {
		int st = 0;

		waitpid(pids[r], &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	/* The calls every rank recorded (a rank's count was final once it exited). */
	for (int r = 0; r < N_RANKS; r++)
		for (uint64_t i = 0; i < MAX_CALLS; i++)
			if (!sh->ch[r][i]) {
				n = i < n ? i : n;
				break;
			}
	return n;
}

/* Calls on which ranks disagree among the first n. */
static uint64_t disagreements(uint64_t n)
{
	uint64_t bad = 0;

	for (uint64_t i = 0; i < n; i++)
		for (int r = 1; r < N_RANKS; r++)
			if (sh->ch[r][i] != sh->ch[0][i]) {
				bad++;
				break;
			}
	return bad;
}

static void wait_calls(uint64_t target)
{
	for (int i = 0; i < 30000 && slowest() < target; i++)
		usleep(1000);
}

static void test_converges(void)
{
	struct nbpf_loop_opts o = {
		.cand = { 2, 4, 8, 10, 12, 14, 16 }, .n_cand = 7,
		.window = 1000, .margin_s = 0.2, .ranks = N_RANKS, .timeout_ms = 10000,
		.log = getenv("LOOP_VERBOSE") ? stderr : NULL,
	};
	struct nbpf_loop_result res;
	pid_t pids[N_RANKS];
	uint64_t n;
	int err;

	CHECK(!start_ranks(pids, true));
	wait_calls(2000); /* some telemetry at NCCL's own count first */
	err = nbpf_loop_run(&o, &res);
	if (err)
		fprintf(stderr, "loop: %s\n", ncclbpf_errmsg());
	CHECK_EQ_U64(err, 0);
	CHECK_EQ_U64(res.n_procs, N_RANKS);
	CHECK_EQ_U64(res.n_keys, 1);
	CHECK_EQ_U64(res.keys[0].key, 4 * 32 + 22);  /* AllReduce, 4 MiB */
	CHECK_EQ_U64(res.keys[0].best, 12);
	CHECK_EQ_U64(res.late, 0);
	/* The worst rank's mean follows the model (rank 3: +600 ns), within the jitter. */
	CHECK(res.keys[0].mean_ns[0] > 0.99 * (10000 + 108000 + 3000 + 600) - 2000 &&
	      res.keys[0].mean_ns[0] < 1.01 * (10000 + 108000 + 3000 + 600));
	wait_calls(res.final_call + 1000);
	n = stop_ranks(pids);
	fprintf(stderr, "loops_channels: %llu calls per rank, plan of 12 channels from call %llu\n",
		(unsigned long long)n, (unsigned long long)res.final_call);
	CHECK(n > res.final_call + 500);
	CHECK(res.final_call < 150000);
	CHECK_EQ_U64(disagreements(n), 0);
	/* Every rank switched exactly on the announced calls. */
	for (int s = 0; s < res.n_steps; s++) {
		uint64_t at = res.step_call[s];
		int want = s < o.n_cand ? o.cand[s] : 12;

		CHECK(at < n);
		if (at < n)
			CHECK_EQ_U64(sh->ch[0][at], want);
	}
	CHECK_EQ_U64(sh->ch[0][res.step_call[0] - 1], NCCL_CH);
	CHECK_EQ_U64(sh->ch[0][n - 1], 12);
}

/*
 * Two aggregators ("nodes"), each driving two of the ranks, agree through
 * a shared directory: both must pick the same plan at the same call.
 */
static void test_shared_dir(void)
{
	char share[] = "/tmp/ncclbpf-loops-share.XXXXXX";
	pid_t pids[N_RANKS], agg[2];
	uint64_t n;

	CHECK(mkdtemp(share) != NULL);
	CHECK(!start_ranks(pids, true));
	wait_calls(2000);
	for (int a = 0; a < 2; a++) {
		agg[a] = fork();
		if (!agg[a]) {
			int mine[2] = { pids[2 * a], pids[2 * a + 1] };
			struct nbpf_loop_opts o = {
				.cand = { 4, 12, 16 }, .n_cand = 3, .window = 1000, .margin_s = 0.5,
				.ranks = 2, .pids = mine, .n_pids = 2, .timeout_ms = 10000,
				.share_dir = share, .node = a ? "node-b" : "node-a", .nodes = 2,
			};
			struct nbpf_loop_result res;
			struct agg_out *out = &sh->agg[a];

			out->err = nbpf_loop_run(&o, &res);
			if (out->err)
				fprintf(stderr, "aggregator %d: %s\n", a, ncclbpf_errmsg());
			out->best = res.n_keys ? res.keys[0].best : 0;
			out->n_procs = res.n_procs;
			out->final_call = res.final_call;
			out->late = res.late;
			_exit(0);
		}
	}
	for (int a = 0; a < 2; a++)
		waitpid(agg[a], NULL, 0);
	for (int a = 0; a < 2; a++) {
		CHECK_EQ_U64(sh->agg[a].err, 0);
		CHECK_EQ_U64(sh->agg[a].n_procs, 2);
		CHECK_EQ_U64(sh->agg[a].best, 12);
		CHECK_EQ_U64(sh->agg[a].late, 0);
	}
	CHECK_EQ_U64(sh->agg[0].final_call, sh->agg[1].final_call);
	wait_calls(sh->agg[0].final_call + 1000);
	n = stop_ranks(pids);
	CHECK(n > sh->agg[0].final_call);
	CHECK_EQ_U64(disagreements(n), 0);
	if (n > sh->agg[0].final_call)
		CHECK_EQ_U64(sh->ch[3][sh->agg[0].final_call], 12);
	loop_share_clean(share);
	CHECK_EQ_U64(rmdir(share), 0);
}

static void test_no_profiler(void)
{
	struct nbpf_loop_opts o = {
		.cand = { 2, 12 }, .n_cand = 2, .window = 100, .margin_s = 0.2,
		.ranks = N_RANKS, .timeout_ms = 1500,
	};
	struct nbpf_loop_result res;
	pid_t pids[N_RANKS];
	uint64_t n;

	CHECK(!start_ranks(pids, false));
	wait_calls(2000);
	CHECK_EQ_U64(nbpf_loop_run(&o, &res), -ETIMEDOUT);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "no telemetry");
	/* The command says the same and exits 1 (a negative verdict), writing nothing. */
	CHECK_EQ_U64(WEXITSTATUS(system(NCCLBPF_CLI " loop --ranks 4 --timeout 1 --channels 2,12 2>/dev/null")), 1);
	n = stop_ranks(pids);
	CHECK(n >= 2000);
	for (int r = 0; r < N_RANKS; r++)
		for (uint64_t i = 0; i < n; i++)
			if (sh->ch[r][i] != NCCL_CH) {
				CHECK_EQ_U64(sh->ch[r][i], NCCL_CH);
				r = N_RANKS;
				break;
			}
}

int main(void)
{
	char dir[] = "/tmp/ncclbpf-loops.XXXXXX";

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	setenv("NCCLBPF_CTL_DIR", dir, 1);
	setenv("NCCLBPF_MAP_DIR", dir, 1);
	setenv("NCCLBPF_POLICY", LOOP_POLICY, 1);
	setenv("NCCL_PROFILER_PLUGIN", "ncclbpf", 1);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	test_converges();
	test_shared_dir();
	test_no_profiler();
	rmdir(dir);
	return check_summary("loops_channels");
}
