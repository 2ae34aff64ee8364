/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_lifecycle.c - the control socket follows the plugin's lifetime when
 * NCCL creates and destroys contexts on two threads at once.
 *
 * One context is alive; thread A finalizes it while thread B initializes a
 * new one.  Whatever the interleaving, one context is alive afterwards, so
 * the process must answer on its control socket (otherwise `ps` cannot see
 * it and `reload --sync` leaves it on the old policy while the others
 * switch).  Then the last context goes and the socket must go with it.
 * NCCLBPF_TEST_SCALE scales the 4000 rounds.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "control/ctl_client.h"
#include "control/ctl_proto.h"
#include "emu_test.h"

static const struct emu_topo topo2 = { .n_ranks = 2, .n_nodes = 1 };
static struct emu_plugin pl;
static struct emu_tuner ctx_a, ctx_b;
static pthread_barrier_t go;
static int fini_err, init_err;

static void *finalize_a(void *arg)
{
	pthread_barrier_wait(&go);
	fini_err = emu_tuner_fini(&ctx_a);
	return NULL;
}

static void *init_b(void *arg)
{
	pthread_barrier_wait(&go);
	init_err = emu_tuner_init(&ctx_b, &pl, 2, &topo2, NULL);
	return NULL;
}

static bool answers(void)
{
	struct nbpf_ctl_msg m;
	const char *em;
	int err = nbpf_ctl_call_pid(getpid(), NBPF_CTL_HELLO, NULL, &m, &em);

	nbpf_ctl_msg_free(&m);
	return err == 0;
}

int main(void)
{
	const char *scale = getenv("NCCLBPF_TEST_SCALE");
	int rounds = (int)(4000 * (scale ? atof(scale) : 1.0)), lost = 0, stale = 0;

	if (rounds < 100)
		rounds = 100;
	emu_set_policy(NULL);
	CHECK(emu_open(&pl, EMU_TUNER, EMU_PLUGIN, 5, NULL, 0) == 0);
	pthread_barrier_init(&go, NULL, 2);
	for (int i = 0; i < rounds; i++) {
		pthread_t a, b;

		CHECK(emu_tuner_init(&ctx_a, &pl, 1, &topo2, NULL) == 0);
		pthread_create(&a, NULL, finalize_a, NULL);
		pthread_create(&b, NULL, init_b, NULL);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		CHECK(fini_err == 0 && init_err == 0);
		if (!answers())
			lost++;
		CHECK(emu_tuner_fini(&ctx_b) == 0);
		if (answers())
			stale++;
	}
	CHECK_MSG(lost == 0, "%d of %d rounds left a live context without a control socket", lost,
		  rounds);
	CHECK_MSG(stale == 0, "%d of %d rounds left a socket after the last context", stale, rounds);
	emu_close(&pl);
	return check_summary("control_lifecycle");
}
