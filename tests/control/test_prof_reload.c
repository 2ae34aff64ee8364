// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_prof_reload.c - reloads and rollbacks, through the real control
 * socket, while NCCL's launching thread sweeps stale Colls and hands them
 * to a slow profiler program (ctl_prof_a, milliseconds per record in the
 * interpreter): every image a sweep runs must stay alive until the
 * callback that loaded it returns (ASan reports a use after free
 * otherwise).  The main thread alternates a reload of a small program
 * (ctl_prof_b, quick to load) with a rollback to the slow one, so the
 * record a sweep is running is replaced twice, and freed, within a few
 * milliseconds unless the callback holds it.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "control/ctl_client.h"
#include "emu_prof.h"
#include "emu_test.h"
#include "control/ctl_proto.h"

#define STALE_COLLS 1600 /* of a 2048-slot pool: the sweep runs on every Coll start */

static _Atomic int done;
static int rounds;
static int launcher_failures; /* read by main after the join (CHECK counts are not atomic) */

static int ctl(int type, const char *req)
{
	struct nbpf_ctl_msg m;
	const char *em;
	int err = nbpf_ctl_call_pid(getpid(), type, req, &m, &em);

	if (err)
		fprintf(stderr, "control request failed: %s\n", em);
	nbpf_ctl_msg_free(&m); /* filled on failure too (ctl_client.h) */
	return err;
}

#define SWEEP_STARTS 40 /* Coll starts after the wait: each sweeps */

/*
 * NCCL's launching thread, one context per round: fills the pool with
 * Colls whose channels never report, waits until they are stale, then
 * starts more (each start sweeps and runs the slow program on up to two
 * stale records); finalize hands over a bounded number of the rest.
 */
static void *launcher(void *arg)
{
	struct prof *p = arg;
	struct timespec ts = { 1, 100000000 };
	uint64_t seq = 0;

	for (int r = 0; r < rounds; r++) {
		launcher_failures += prof_init(p, 0x77 + (uint64_t)r) != 0 || !p->ctx;
		for (int i = 0; i < STALE_COLLS; i++)
			stop(p, start_coll(p, NULL, seq++, 64, 2));
		nanosleep(&ts, NULL);
		for (int i = 0; i < SWEEP_STARTS; i++)
			stop(p, start_coll(p, NULL, seq++, 64, 2));
		launcher_failures += prof_fini(p) != 0;
	}
	atomic_store(&done, 1);
	return NULL;
}

int main(void)
{
	char dir[] = "/tmp/ncclbpf-profreload-XXXXXX", ctldir[256], err[512], req[2048];
	char pol_a[1024], pol_b[1024];
	struct prof p = { .v = 5 }, anchor = { .v = 5 };
	uint64_t reloads = 0, rollbacks = 0, failed = 0;
	pthread_t th;

	rounds = (int)(3 * emu_scale());
	if (rounds < 2)
		rounds = 2;
	snprintf(pol_a, sizeof(pol_a), "%s/ctl_prof_a.bpf.o", CTL_BPF_DIR);
	snprintf(pol_b, sizeof(pol_b), "%s/ctl_prof_b.bpf.o", CTL_BPF_DIR);
	CHECK(mkdtemp(dir) != NULL);
	snprintf(ctldir, sizeof(ctldir), "%s/ctl", dir);
	setenv("NCCLBPF_CTL_DIR", ctldir, 1);
	emu_set_policy(pol_a);
	setenv("NCCLBPF_ENGINE", "interp", 1);
	CHECK(emu_open(&p.pl, EMU_PROFILER, EMU_PLUGIN, 5, err, sizeof(err)) == 0);
	/* Keeps the host (and its control socket) up between the launcher's contexts. */
	anchor.pl = p.pl;
	CHECK(prof_init(&anchor, 0x66) == 0);
	CHECK_STR_CONTAINS(emu_log_buf, "on_coll_slow -> profiler");
	CHECK(pthread_create(&th, NULL, launcher, &p) == 0);
	for (uint64_t i = 0; !atomic_load(&done); i++) {
		if (i & 1) {
			failed += ctl(NBPF_CTL_ROLLBACK, "rollback at_call=0") != 0;
			rollbacks++;
		} else {
			snprintf(req, sizeof(req), "reload path=%s at_call=0", pol_b);
			failed += ctl(NBPF_CTL_RELOAD, req) != 0;
			reloads++;
		}
	}
	pthread_join(th, NULL);
	CHECK_EQ_U64(launcher_failures, 0);
	CHECK_EQ_U64(failed, 0);
	CHECK(reloads > 10 && rollbacks > 3);
	printf("%d rounds of %d stale Colls swept under %" PRIu64 " reloads and %" PRIu64 " rollbacks\n",
	       rounds, STALE_COLLS, reloads, rollbacks);
	CHECK(prof_fini(&anchor) == 0);
	emu_close(&p.pl);
	rmdir(ctldir);
	rmdir(dir);
	return check_summary("control_prof_reload");
}
