// SPDX-License-Identifier: Apache-2.0
/*
 * test_repin.c - the NUMA re-pinner's decisions (src/observe/repin.c) on a
 * fake four-CPU, two-node machine with fake affinity calls: homes, moves,
 * threads pinned by someone else, the moves-per-second budget, exited
 * threads.  No kernel, no root.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "repin.h"

static int failures;

#define CHECK(cond, ...)                                                                   \
	do {                                                                               \
		if (!(cond)) {                                                             \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);                         \
			printf(__VA_ARGS__);                                               \
			printf("\n");                                                      \
			failures++;                                                        \
		}                                                                          \
	} while (0)

/* Fake threads: tid -> mask; a tid outside [0, 16) does not exist. */
struct fake {
	cpu_set_t mask[16];
	int sets;
};

static int fake_get(void *ctx, int tid, cpu_set_t *set)
{
	struct fake *f = ctx;

	if (tid < 0 || tid >= 16)
		return -ESRCH;
	*set = f->mask[tid];
	return 0;
}

static int fake_set(void *ctx, int tid, const cpu_set_t *set)
{
	struct fake *f = ctx;

	if (tid < 0 || tid >= 16)
		return -ESRCH;
	f->mask[tid] = *set;
	f->sets++;
	return 0;
}

/* CPUs 0,1 on node 0; 2,3 on node 1. */
static const int node[4] = { 0, 0, 1, 1 };

static cpu_set_t cpus(int a, int b)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(a, &s);
	if (b >= 0)
		CPU_SET(b, &s);
	return s;
}

static struct nbpf_repin *open_fake(struct fake *f, struct nbpf_repin_ops *ops, int home,
				    double rate)
{
	struct nbpf_repin_opts o = { .home_node = home, .max_per_s = rate, .n_online = 4, .ops = ops };
	struct nbpf_repin *r = NULL;

	memset(f, 0, sizeof(*f));
	for (int t = 0; t < 16; t++)
		for (int c = 0; c < 4; c++)
			CPU_SET(c, &f->mask[t]);
	*ops = (struct nbpf_repin_ops){ fake_get, fake_set, f };
	CHECK(!nbpf_repin_new(node, 4, &o, &r), "new");
	return r;
}

static void test_auto_home(void)
{
	struct nbpf_repin_ops ops;
	struct fake f;
	struct nbpf_repin *r = open_fake(&f, &ops, -1, 100);
	cpu_set_t home0 = cpus(0, 1);

	/* First seen on CPU 1 (a scan): home is node 0, nothing to do. */
	CHECK(nbpf_repin_seen(r, 3, 1, 1, 0.0) == 0, "scan");
	CHECK(nbpf_repin_home(r, 3) == 0, "home %d", nbpf_repin_home(r, 3));
	/* Within the node: nothing. */
	CHECK(nbpf_repin_seen(r, 3, 0, 1, 0.1) == 0 && f.sets == 0, "same node moved");
	/* Across: back to node 0's CPUs. */
	CHECK(nbpf_repin_seen(r, 3, 2, 0, 0.2) == 1, "not moved");
	CHECK(CPU_EQUAL(&f.mask[3], &home0), "mask not node 0");
	/*
	 * A scan that finds it still "on" CPU 2 (the last CPU a sleeping thread
	 * ran on): its mask already keeps it home, so no second move.
	 */
	CHECK(nbpf_repin_seen(r, 3, 2, 2, 0.25) == 0 && f.sets == 1, "stale CPU moved again");
	/* The move's own migration lands home: nothing more. */
	CHECK(nbpf_repin_seen(r, 3, 1, 2, 0.3) == 0 && f.sets == 1, "moved twice");
	/* A thread first met in a migration event: its home is the source's node. */
	CHECK(nbpf_repin_seen(r, 5, 0, 3, 0.4) == 1 && nbpf_repin_home(r, 5) == 1, "event home");
	{
		cpu_set_t home1 = cpus(2, 3);

		CHECK(CPU_EQUAL(&f.mask[5], &home1), "mask not node 1");
	}
	CHECK(nbpf_repin_stats(r)->moved == 2 && nbpf_repin_stats(r)->tracked == 2, "stats");
	nbpf_repin_free(r);
}

static void test_given_home_and_pinned(void)
{
	struct nbpf_repin_ops ops;
	struct fake f;
	struct nbpf_repin *r = open_fake(&f, &ops, 1, 100);
	cpu_set_t pinned = cpus(0, -1);

	/* Free thread on node 0 at first sight: the operator's home is node 1. */
	CHECK(nbpf_repin_seen(r, 2, 0, 0, 0.0) == 1 && nbpf_repin_home(r, 2) == 1, "given home");
	/* Pinned by someone else to CPU 0 before we met it: left where it is. */
	f.mask[4] = pinned;
	CHECK(nbpf_repin_seen(r, 4, 0, 0, 0.0) == 0, "pinned thread moved");
	CHECK(nbpf_repin_seen(r, 4, 1, 0, 0.1) == 0, "pinned thread moved");
	CHECK(CPU_EQUAL(&f.mask[4], &pinned), "pinned mask changed");
	CHECK(nbpf_repin_stats(r)->pinned == 2, "pinned %llu",
	      (unsigned long long)nbpf_repin_stats(r)->pinned);
	nbpf_repin_free(r);
}

static void test_budget(void)
{
	struct nbpf_repin_ops ops;
	struct fake f;
	struct nbpf_repin *r = open_fake(&f, &ops, 0, 2);

	/* Two moves per second, two at once: the third is refused, and counted. */
	CHECK(nbpf_repin_seen(r, 1, 2, 2, 10.0) == 1, "1st");
	CHECK(nbpf_repin_seen(r, 2, 2, 2, 10.0) == 1, "2nd");
	CHECK(nbpf_repin_seen(r, 3, 2, 2, 10.0) == 0, "3rd allowed");
	CHECK(nbpf_repin_stats(r)->limited == 1, "limited");
	/* 0.25 s later half a move has accrued: still refused. */
	CHECK(nbpf_repin_seen(r, 3, 2, 2, 10.25) == 0, "early retry allowed");
	/* 0.5 s after the burst one move has: the retry goes through. */
	CHECK(nbpf_repin_seen(r, 3, 2, 2, 10.5) == 1, "retry refused");
	CHECK(nbpf_repin_stats(r)->moved == 3 && nbpf_repin_stats(r)->limited == 2, "stats");
	/* An idle minute does not bank more than the burst. */
	for (int t = 6; t < 10; t++)
		nbpf_repin_seen(r, t, 2, 2, 70.0);
	CHECK(nbpf_repin_stats(r)->moved == 5, "burst after idle: moved %llu",
	      (unsigned long long)nbpf_repin_stats(r)->moved);
	nbpf_repin_free(r);
}

static void test_exited(void)
{
	struct nbpf_repin_ops ops;
	struct fake f;
	struct nbpf_repin *r = open_fake(&f, &ops, 0, 100);

	/* A thread that is gone before we meet it is not tracked. */
	CHECK(nbpf_repin_seen(r, 99, 2, 2, 0.0) == 0 && nbpf_repin_stats(r)->tracked == 0, "ghost");
	CHECK(nbpf_repin_seen(r, 7, 0, 0, 0.0) == 0 && nbpf_repin_stats(r)->tracked == 1, "track");
	nbpf_repin_free(r);
}

int main(void)
{
	test_auto_home();
	test_given_home_and_pinned();
	test_budget();
	test_exited();
	if (!failures)
		printf("repin: ok\n");
	return failures ? 1 : 0;
}
