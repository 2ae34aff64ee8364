/*
 * test_reload_stress.c - hot reload under load, through the real control
 * socket: 8 ranks of one communicator on 8 threads make >= 10 million
 * decisions in total (scaled by NCCLBPF_TEST_SCALE) while the main thread
 * reloads about every millisecond, alternating good policies (A: Ring/LL,
 * B: Ring/Simple, each activated at an agreed call number, picked like
 * `ncclbpf reload --sync`: highest current call number + a margin) with
 * objects that fail to load (verifier rejection, malformed ELF); every
 * fourth good attempt is a rollback at an agreed call number instead.
 *
 * Checks: no call lost or failed; every rank made the same decision for
 * every call number; each decision is exactly the one the publish log
 * predicts (the newest good reload whose activation call is <= the call);
 * every failed reload reported an error and changed nothing; at the end
 * every communicator counted every call.  Old images must be freed (the
 * ASan/LSan build reports leaks at exit) and the TSan build must be clean.
 *
 * Like NCCL, ranks cannot drift apart: a collective completes only when
 * every rank has joined it, so ranks meet at a barrier every BLOCK calls.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "control/ctl_client.h"
#include "control/ctl_proto.h"
#include "emu_test.h"

#define RANKS 8
#define MAX_PENDING 16
#define BLOCK 1024 /* ranks meet every BLOCK calls, so none is more than BLOCK ahead */
#define CODE_A (1 * 4 + 0) /* RING/LL */
#define CODE_B (1 * 4 + 2) /* RING/SIMPLE */

static const struct emu_topo topo8 = { .n_ranks = 8, .n_nodes = 1, .nvls = true };

struct rank {
	struct emu_tuner t;
	uint8_t *dec;
	uint64_t failed;
	_Alignas(64) _Atomic uint64_t progress;
};

static struct rank ranks[RANKS];
static pthread_barrier_t meet;
static uint64_t n_calls;

struct pub {
	uint64_t at;
	uint8_t code;
};

static uint64_t min_progress(void)
{
	uint64_t m = UINT64_MAX;

	for (int r = 0; r < RANKS; r++) {
		uint64_t p = atomic_load_explicit(&ranks[r].progress, memory_order_acquire);

		if (p < m)
			m = p;
	}
	return m;
}

static void *rank_main(void *arg)
{
	struct rank *rk = arg;

	for (uint64_t k = 0; k < n_calls; k++) {
		struct emu_decision d;

		if (k % BLOCK == 0)
			pthread_barrier_wait(&meet);
		if (emu_tuner_call(&rk->t, &topo8, 4, 1ull << (3 + k % 24), &d) != 0) {
			rk->failed++;
			rk->dec[k] = 0xff;
		} else {
			rk->dec[k] = (uint8_t)(d.algo * 4 + d.proto);
		}
		atomic_store_explicit(&rk->progress, k + 1, memory_order_release);
	}
	return NULL;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Highest call number over the process's communicators, and how many reported calls == want. */
static int calls_info(uint64_t *max, uint64_t want, int *n_at_want)
{
	struct nbpf_ctl_msg m;
	const char *em;
	int err = nbpf_ctl_call_pid(getpid(), NBPF_CTL_CALLS, NULL, &m, &em);

	*max = 0;
	if (n_at_want)
		*n_at_want = 0;
	for (uint32_t i = 0; !err && i < m.n_recs; i++) {
		uint64_t v;

		if (strcmp(m.recs[i].kind, "comm") || nbpf_ctl_rec_u64(&m.recs[i], "calls", &v))
			continue;
		if (v > *max)
			*max = v;
		if (n_at_want && v == want)
			(*n_at_want)++;
	}
	nbpf_ctl_msg_free(&m);
	return err;
}

static int reload(const char *spec, uint64_t at, uint64_t *late, char *msg, size_t msglen)
{
	char req[2048];
	struct nbpf_ctl_msg m;
	const char *em;
	int err;

	snprintf(req, sizeof(req), "reload path=%s at_call=%" PRIu64, spec, at);
	err = nbpf_ctl_call_pid(getpid(), NBPF_CTL_RELOAD, req, &m, &em);
	snprintf(msg, msglen, "%s", em);
	*late = 0;
	for (uint32_t i = 0; !err && i < m.n_recs; i++)
		if (!strcmp(m.recs[i].kind, "reload"))
			nbpf_ctl_rec_u64(&m.recs[i], "late", late);
	nbpf_ctl_msg_free(&m);
	return err;
}

static int rollback(uint64_t at, char *msg, size_t msglen)
{
	char req[128];
	struct nbpf_ctl_msg m;
	const char *em;
	int err;

	snprintf(req, sizeof(req), "rollback at_call=%" PRIu64, at);
	err = nbpf_ctl_call_pid(getpid(), NBPF_CTL_ROLLBACK, req, &m, &em);
	snprintf(msg, msglen, "%s", em);
	nbpf_ctl_msg_free(&m);
	return err;
}

int main(void)
{
	char dir[] = "/tmp/ncclbpf-stress-XXXXXX", ctl[256], garbage[256], err[512], msg[1024];
	char pol_a[1024], pol_b[1024], pol_bad[1024];
	struct pub *log = NULL;
	size_t n_log = 0, cap_log = 0;
	uint64_t good = 0, bad = 0, late_total = 0, last_at = 0, t_start, t_prev = 0, max_prev = 0;
	double rate_per_us = 0;
	uint64_t worst_window_us = 0, skipped = 0, rollbacks = 0;
	struct emu_plugin pl;
	pthread_t th[RANKS];
	FILE *f;

	n_calls = (uint64_t)(1250000 * emu_scale());
	if (n_calls < 2000)
		n_calls = 2000;
	snprintf(pol_a, sizeof(pol_a), "%s/ctl_a.bpf.o", CTL_BPF_DIR);
	snprintf(pol_b, sizeof(pol_b), "%s/ctl_b.bpf.o", CTL_BPF_DIR);
	snprintf(pol_bad, sizeof(pol_bad), "%s/ctl_bad.bpf.o", CTL_BPF_DIR);
	CHECK(mkdtemp(dir) != NULL);
	snprintf(ctl, sizeof(ctl), "%s/ctl", dir);
	snprintf(garbage, sizeof(garbage), "%s/garbage.bpf.o", dir);
	f = fopen(garbage, "w");
	CHECK(f && fputs("\177ELF this is not an object", f) >= 0);
	if (f)
		fclose(f);
	setenv("NCCLBPF_CTL_DIR", ctl, 1);
	emu_set_policy(pol_a);

	CHECK(emu_open(&pl, EMU_TUNER, EMU_PLUGIN, 5, err, sizeof(err)) == 0);
	for (int r = 0; r < RANKS; r++) {
		ranks[r].dec = calloc(n_calls, 1);
		CHECK(ranks[r].dec != NULL);
		CHECK(emu_tuner_init(&ranks[r].t, &pl, 0x5eedULL, &topo8, emu_logger) == 0);
	}
	CHECK(pthread_barrier_init(&meet, NULL, RANKS) == 0);
	t_start = now_us();
	for (int r = 0; r < RANKS; r++)
		CHECK(pthread_create(&th[r], NULL, rank_main, &ranks[r]) == 0);

	/* The operator: a reload attempt about every millisecond until the ranks finish. */
	for (uint64_t i = 0; min_progress() < n_calls; i++) {
		uint64_t max, late = 0, t;
		int e;

		usleep(1000);
		if (getenv("STRESS_NO_RELOAD"))
			continue;
		/*
		 * Odd attempts load objects that must fail.  Even ones load a good
		 * policy, unless MAX_PENDING earlier ones still wait for their
		 * activation call (an operator's reloads do not pile up, and each
		 * pending image costs the hot path a step): then a failing one
		 * goes instead, so an attempt still comes every millisecond.
		 */
		int pending = 0;

		for (size_t k = n_log; k > 0 && log[k - 1].at > min_progress(); k--)
			pending++;
		/*
		 * Every even attempt samples the highest call number, which gives
		 * the call rate margins are made of (the first one only samples).
		 */
		if (!(i & 1)) {
			if (calls_info(&max, 0, NULL)) {
				CHECK_MSG(0, "CALLS request failed");
				continue;
			}
			t = now_us();
			if (t_prev && t > t_prev && max >= max_prev) {
				double r = (double)(max - max_prev) / (double)(t - t_prev);

				rate_per_us = rate_per_us > r ? rate_per_us : r;
			}
			t_prev = t;
			max_prev = max;
		}
		if ((i & 1) || pending >= MAX_PENDING || rate_per_us <= 0) {
			const char *spec = (bad & 1) ? pol_bad : garbage;

			skipped += !(i & 1) && rate_per_us > 0;
			e = reload(spec, 0, &late, msg, sizeof(msg));
			CHECK_MSG(e < 0 && msg[0], "bad reload %s accepted (%d)", spec, e);
			if (bad < 2)
				printf("refused as expected: %s\n", msg);
			bad++;
			continue;
		}
		/*
		 * Margin: the calls ranks make, at the fastest rate seen, during
		 * four times the longest sample-to-publish window seen so far
		 * (at least 50 ms), plus two blocks of drift, so every rank is
		 * still below it when the image lands; `ncclbpf reload --sync`
		 * does the same across processes.
		 */
		uint64_t window = worst_window_us * 4 > 50000 ? worst_window_us * 4 : 50000;
		uint64_t at = max + 2 * BLOCK + (uint64_t)(rate_per_us * (double)window);

		if (at <= last_at)
			at = last_at + 1;
		const char *spec = (good & 1) ? pol_a : pol_b;
		uint8_t code = (good & 1) ? CODE_A : CODE_B;

		/*
		 * Every fourth good attempt rolls back instead, at the agreed
		 * call, usually while the current image still chains to the
		 * target: the target is what the last publish replaced.
		 */
		if (good % 4 == 3 && n_log >= 2) {
			e = rollback(at, msg, sizeof(msg));
			code = log[n_log - 2].code;
			rollbacks += !e;
		} else {
			e = reload(spec, at, &late, msg, sizeof(msg));
		}
		if (now_us() - t > worst_window_us)
			worst_window_us = now_us() - t;
		CHECK_MSG(e == 0, "good reload failed: %s", msg);
		if (e)
			continue;
		late_total += late;
		if (n_log == cap_log) {
			cap_log = cap_log ? cap_log * 2 : 1024;
			log = realloc(log, cap_log * sizeof(*log));
		}
		log[n_log++] = (struct pub){ .at = at, .code = code };
		last_at = at;
		good++;
	}
	for (int r = 0; r < RANKS; r++)
		pthread_join(th[r], NULL);
	double secs = (double)(now_us() - t_start) / 1e6;

	printf("%" PRIu64 " decisions on %d ranks in %.2f s (%.1f M/s); %" PRIu64
	       " good reloads, %" PRIu64 " refused\n",
	       n_calls * RANKS, RANKS, secs, (double)(n_calls * RANKS) / secs / 1e6, good, bad);
	printf("%" PRIu64 " of the good ones were rollbacks at a call number\n", rollbacks);
	CHECK(good >= 10);
	CHECK(rollbacks >= 2);
	CHECK(bad >= 10);
	CHECK_EQ_U64(late_total, 0);

	/* No call lost: every rank's communicator counted every call. */
	{
		uint64_t max;
		int at_want = 0;

		CHECK(calls_info(&max, n_calls, &at_want) == 0);
		CHECK_EQ_U64(at_want, RANKS);
	}
	/* Agreement, and agreement with the publish log. */
	{
		uint64_t disagree = 0, wrong = 0, failed = 0, first_bad = UINT64_MAX;
		size_t j = 0;
		uint8_t expect = CODE_A;

		for (int r = 0; r < RANKS; r++)
			failed += ranks[r].failed;
		for (uint64_t k = 0; k < n_calls; k++) {
			while (j < n_log && log[j].at <= k)
				expect = log[j++].code;
			for (int r = 1; r < RANKS; r++)
				if (ranks[r].dec[k] != ranks[0].dec[k]) {
					if (!disagree)
						fprintf(stderr, "call %" PRIu64 ": rank %d decided %u, rank 0 %u"
							" (expected %u, last activation before: %" PRIu64
							", next: %" PRIu64 ")\n",
							k, r, ranks[r].dec[k], ranks[0].dec[k], expect,
							j ? log[j - 1].at : 0, j < n_log ? log[j].at : 0);
					disagree++;
					break;
				}
			if (ranks[0].dec[k] != expect) {
				wrong++;
				if (first_bad == UINT64_MAX)
					first_bad = k;
			}
		}
		CHECK_EQ_U64(failed, 0);
		CHECK_EQ_U64(disagree, 0);
		CHECK_MSG(wrong == 0, "%" PRIu64 " decisions differ from the publish log (first at call %" PRIu64 ")",
			  wrong, first_bad);
		/* Both policies really ran. */
		uint64_t na = 0, nb = 0;

		for (uint64_t k = 0; k < n_calls; k++) {
			na += ranks[0].dec[k] == CODE_A;
			nb += ranks[0].dec[k] == CODE_B;
		}
		CHECK(na > 0 && nb > 0);
	}

	printf("longest sample-to-publish window %.1f ms; %" PRIu64 " good reloads deferred while %d were pending\n",
	       worst_window_us / 1e3, skipped, MAX_PENDING);
	pthread_barrier_destroy(&meet);
	for (int r = 0; r < RANKS; r++) {
		CHECK(emu_tuner_fini(&ranks[r].t) == 0);
		free(ranks[r].dec);
	}
	emu_close(&pl);
	free(log);
	unlink(garbage);
	rmdir(ctl);
	rmdir(dir);
	return check_summary("control_reload_stress");
}
