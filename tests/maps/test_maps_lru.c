/*
 * test_maps_lru.c - LRU_HASH eviction order, capacity under churn, and
 * program-side churn inside epoch sections (evicted elements wait for
 * their grace period in the spare pool).
 */
#include <errno.h>
#include <stdint.h>

#include "check.h"
#include "epoch.h"
#include "maps/map.h"
#include "maps_test.h"

static int present(struct ncclbpf_map *m, uint32_t k)
{
	uint64_t v;

	return ncclbpf_map__lookup(m, &k, &v) == 0;
}

static void put(struct ncclbpf_map *m, uint32_t k)
{
	uint64_t v = k * 10ull;

	CHECK_EQ_U64(ncclbpf_map__update(m, &k, &v, NCCLBPF_ANY), 0);
}

static void test_order(void)
{
	struct ncclbpf_map *m = mk("lru_order", NCCLBPF_MAP_LRU_HASH, 4, 8, 4);
	uint32_t k;

	if (!m) {
		CHECK(0);
		return;
	}
	put(m, 1), put(m, 2), put(m, 3), put(m, 4);
	k = 1;
	CHECK(m->ops->lookup_elem(m, &k) != NULL); /* 1 is now as recent as 4 */
	put(m, 5);                                 /* evicts 2 */
	CHECK(!present(m, 2));
	CHECK(present(m, 1) && present(m, 3) && present(m, 4) && present(m, 5));
	put(m, 3);                                 /* update refreshes 3 */
	k = 4;
	CHECK(m->ops->lookup_elem(m, &k) != NULL);
	put(m, 6);                                 /* oldest now: 1 */
	CHECK(!present(m, 1));
	CHECK(present(m, 3) && present(m, 4) && present(m, 5) && present(m, 6));
	put(m, 7);                                 /* then 5 (stamped before 3's update) */
	CHECK(!present(m, 5));
	CHECK(present(m, 3) && present(m, 4) && present(m, 6) && present(m, 7));
	/* NOEXIST on a present key still fails; EXIST on an evicted one too. */
	{
		uint64_t v = 0;

		k = 3;
		CHECK_EQ_U64(ncclbpf_map__update(m, &k, &v, NCCLBPF_NOEXIST), -EEXIST);
		k = 1;
		CHECK_EQ_U64(ncclbpf_map__update(m, &k, &v, NCCLBPF_EXIST), -ENOENT);
	}
	ncclbpf_map__put(m);
}

static void test_churn(void)
{
	const uint32_t max = 1000;
	struct ncclbpf_map *m = mk("lru_churn", NCCLBPF_MAP_LRU_HASH, 4, 8, max);
	uint32_t k, n = (uint32_t)scaled(20000), count = 0, *pk = NULL, nk;
	int fails = 0;

	if (!m) {
		CHECK(0);
		return;
	}
	for (k = 0; k < n; k++) {
		uint64_t v = k;

		/* Program-style: each insert in its own section, like one program run. */
		nbpf_epoch_enter();
		if (m->ops->update_elem(m, &k, &v, NCCLBPF_ANY))
			fails++;
		nbpf_epoch_exit();
	}
	CHECK_EQ_U64(fails, 0);
	while (ncclbpf_map__next_key(m, pk, &nk) == 0 && count <= 2 * max) {
		count++;
		k = nk;
		pk = &k;
	}
	CHECK_EQ_U64(count, max);
	/* The most recent keys survived (the sample always holds older ones). */
	for (k = n - 50; k < n; k++)
		CHECK_MSG(present(m, k), "recent key %u evicted", k);
	/* And their values are the right ones. */
	{
		uint64_t v;

		k = n - 1;
		CHECK(ncclbpf_map__lookup(m, &k, &v) == 0 && v == n - 1);
	}
	ncclbpf_map__put(m);
}

int main(void)
{
	test_order();
	test_churn();
	test_map_dir_cleanup();
	return check_summary("maps_lru");
}
