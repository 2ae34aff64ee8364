/*
 * test_maps_epoch.c - grace periods: a value pointer held inside an epoch
 * section survives a delete and heavy reuse pressure; synchronize waits
 * for readers; deferred callbacks wait too; per-thread slots are exclusive
 * and recycled when threads exit.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "check.h"
#include "epoch.h"
#include "helpers.h"
#include "maps/map.h"
#include "maps_test.h"

static atomic_int phase;

static void wait_phase(int p)
{
	while (atomic_load(&phase) < p)
		usleep(100);
}

struct holder {
	struct ncclbpf_map *map;
	uint64_t seen_after;  /* value through the pointer after the storm */
	int found;
};

/* Holds a lookup pointer inside one section across phases 1..2. */
static void *hold(void *p)
{
	struct holder *h = p;
	uint32_t k = 1;
	uint64_t *v;

	nbpf_epoch_enter();
	v = h->map->ops->lookup_elem(h->map, &k);
	h->found = v != NULL;
	atomic_store(&phase, 1);
	wait_phase(2);
	h->seen_after = v ? __atomic_load_n(v, __ATOMIC_RELAXED) : 0;
	nbpf_epoch_exit();
	atomic_store(&phase, 3);
	return NULL;
}

static atomic_int host_done;

static void *host_insert(void *p)
{
	struct ncclbpf_map *m = p;
	uint32_t k = 999;
	uint64_t v = 999;

	/* Needs a grace period (pool exhausted): must wait for the holder. */
	atomic_store(&host_done, ncclbpf_map__update(m, &k, &v, NCCLBPF_ANY) == 0 ? 1 : -1);
	return NULL;
}

static void test_pointer_survives_delete(void)
{
	struct ncclbpf_map *m = mk("ep_hash", NCCLBPF_MAP_HASH, 4, 8, 1); /* pool: 1 + 16 spares */
	struct holder h = { .map = m };
	pthread_t t, t2;
	uint32_t k = 1;
	uint64_t v = 0x1111111111111111ull;
	int refused = 0;

	if (!m) {
		CHECK(0);
		return;
	}
	atomic_store(&phase, 0);
	CHECK_EQ_U64(ncclbpf_map__update(m, &k, &v, NCCLBPF_ANY), 0);
	pthread_create(&t, NULL, hold, &h);
	wait_phase(1);
	CHECK(h.found);
	CHECK_EQ_U64(ncclbpf_map__delete(m, &k), 0);
	CHECK_EQ_U64(ncclbpf_map__lookup(m, &k, &v), -ENOENT);
	/* Churn program-style: every spare is used once, then inserts are
	 * refused rather than reusing memory the holder may still read. */
	for (uint32_t i = 2; i < 200; i++) {
		uint64_t x = 0xdeaddeaddeaddeadull;
		long r;

		nbpf_epoch_enter();
		r = m->ops->update_elem(m, &i, &x, NCCLBPF_ANY);
		if (r == 0)
			m->ops->delete_elem(m, &i);
		else
			refused += r == -E2BIG;
		nbpf_epoch_exit();
	}
	CHECK(refused > 0);
	/* Synchronize from inside a section would deadlock: refused. */
	nbpf_epoch_enter();
	CHECK_EQ_U64(nbpf_epoch_synchronize(), -EDEADLK);
	nbpf_epoch_exit();
	/* A host insert must wait for the holder's section. */
	pthread_create(&t2, NULL, host_insert, m);
	usleep(50000);
	CHECK_MSG(!atomic_load(&host_done), "host insert reused memory inside a grace period");
	atomic_store(&phase, 2);
	pthread_join(t, NULL);
	pthread_join(t2, NULL);
	CHECK_EQ_U64(h.seen_after, 0x1111111111111111ull);
	CHECK_EQ_U64(atomic_load(&host_done), 1);
	/* Once the holder left, program-side inserts work again. */
	{
		uint32_t k2 = 5;
		long r;

		CHECK_EQ_U64(ncclbpf_map__delete(m, &(uint32_t){ 999 }), 0);
		nbpf_epoch_enter();
		r = m->ops->update_elem(m, &k2, &v, NCCLBPF_ANY);
		nbpf_epoch_exit();
		CHECK_EQ_U64(r, 0);
	}
	ncclbpf_map__put(m);
}

static atomic_int deferred_runs;

static void deferred(void *arg)
{
	atomic_fetch_add(&deferred_runs, 1);
	*(int *)arg = 42;
}

static int nesting_ok;

static void *reader_section(void *p)
{
	(void)p;
	nbpf_epoch_enter();
	nbpf_epoch_enter(); /* nested */
	atomic_store(&phase, 1);
	wait_phase(2);
	nbpf_epoch_exit();
	nesting_ok = nbpf_epoch_in_section();
	nbpf_epoch_exit();
	nesting_ok &= !nbpf_epoch_in_section();
	return NULL;
}

static void test_defer(void)
{
	pthread_t t;
	int target = 0;

	atomic_store(&phase, 0);
	pthread_create(&t, NULL, reader_section, NULL);
	wait_phase(1);
	CHECK_EQ_U64(nbpf_epoch_defer(deferred, &target), 0);
	for (int i = 0; i < 20; i++)
		nbpf_epoch_poll();
	CHECK_EQ_U64(atomic_load(&deferred_runs), 0); /* reader still inside */
	atomic_store(&phase, 2);
	pthread_join(t, NULL);
	CHECK(nesting_ok);
	CHECK_EQ_U64(nbpf_epoch_barrier(), 0);
	CHECK_EQ_U64(atomic_load(&deferred_runs), 1);
	CHECK_EQ_U64(target, 42);
	CHECK_EQ_U64(nbpf_epoch_synchronize(), 0); /* nobody inside: returns */
}

/* ---- per-thread slots ------------------------------------------------- */

#define NT 8
static pthread_barrier_t bar;
static uint32_t slots[NT];

struct pcargs {
	struct ncclbpf_map *pca, *pch;
	int id;
	long iters;
};

/* Plain (non-atomic) increments through the slot pointer: exclusive slots
 * make them exact; shared slots would lose counts (and TSan would say so). */
static void *percpu_worker(void *p)
{
	struct pcargs *a = p;
	uint32_t k = 0;
	uint64_t one = 1;

	slots[a->id] = nbpf_thread_slot();
	pthread_barrier_wait(&bar);
	for (long i = 0; i < a->iters; i++) {
		uint64_t *v;

		nbpf_epoch_enter();
		v = a->pca->ops->lookup_elem(a->pca, &k);
		(*v)++;
		v = a->pch->ops->lookup_elem(a->pch, &k);
		if (!v)
			a->pch->ops->update_elem(a->pch, &k, &one, NCCLBPF_NOEXIST);
		v = a->pch->ops->lookup_elem(a->pch, &k);
		if (v)
			(*v)++;
		nbpf_epoch_exit();
	}
	pthread_barrier_wait(&bar);
	return NULL;
}

static void *record_slot(void *p)
{
	*(uint32_t *)p = nbpf_thread_slot();
	return NULL;
}

static void test_slots(void)
{
	struct ncclbpf_map *pca = mk("ep_pca", NCCLBPF_MAP_PERCPU_ARRAY, 4, 8, 1);
	struct ncclbpf_map *pch = mk("ep_pch", NCCLBPF_MAP_PERCPU_HASH, 4, 8, 4);
	struct pcargs a[NT];
	pthread_t t[NT];
	long iters = scaled(100000);
	uint64_t all[NCCLBPF_NR_SLOTS], sum = 0, hsum = 0;
	uint32_t k = 0, mine = nbpf_thread_slot();

	if (!pca || !pch) {
		CHECK(0);
		return;
	}
	pthread_barrier_init(&bar, NULL, NT);
	for (int i = 0; i < NT; i++) {
		a[i] = (struct pcargs){ pca, pch, i, iters };
		pthread_create(&t[i], NULL, percpu_worker, &a[i]);
	}
	for (int i = 0; i < NT; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < NT; i++) {
		CHECK(slots[i] < NCCLBPF_NR_SLOTS && slots[i] != mine);
		for (int j = 0; j < i; j++)
			CHECK_MSG(slots[i] != slots[j], "threads %d and %d share slot %u", i, j, slots[i]);
	}
	CHECK_EQ_U64(ncclbpf_map__lookup(pca, &k, all), 0);
	for (int i = 0; i < NT; i++)
		CHECK_EQ_U64(all[slots[i]], iters);
	for (int s = 0; s < NCCLBPF_NR_SLOTS; s++)
		sum += all[s];
	CHECK_EQ_U64(sum, (uint64_t)iters * NT);
	CHECK_EQ_U64(ncclbpf_map__lookup(pch, &k, all), 0);
	for (int s = 0; s < NCCLBPF_NR_SLOTS; s++)
		hsum += all[s];
	/* Each thread's first update created or filled its slot with 1, then +1 per iteration. */
	CHECK(hsum >= (uint64_t)iters * NT);
	for (int i = 0; i < NT; i++)
		CHECK(all[slots[i]] >= (uint64_t)iters && all[slots[i]] <= (uint64_t)iters + 1);

	/* Recycling: 300 short-lived threads in turn never run out of slots
	 * and reuse the ones exited threads gave back. */
	{
		uint32_t s, min = UINT32_MAX, max = 0;

		for (int i = 0; i < 300; i++) {
			pthread_t x;

			pthread_create(&x, NULL, record_slot, &s);
			pthread_join(x, NULL);
			min = s < min ? s : min;
			max = s > max ? s : max;
		}
		CHECK(max < NCCLBPF_NR_SLOTS);
		CHECK_MSG(max - min < NT + 2, "slots not recycled: %u..%u", min, max);
	}
	pthread_barrier_destroy(&bar);
	ncclbpf_map__put(pca);
	ncclbpf_map__put(pch);
}

int main(void)
{
	test_pointer_survives_delete();
	test_defer();
	test_slots();
	test_map_dir_cleanup();
	return check_summary("maps_epoch");
}
