/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_maps_locks.c - a process that dies, or stops, while holding a lock
 * in a map's shared memory never hangs anyone else.
 *
 * held:   a child takes every bucket lock of a hash map (through its own
 *         open_path handle, or through the handle it inherited by fork)
 *         and leaves one value half-written.  While it lives, program
 *         updates fail fast with -EBUSY and are counted, host lookups give
 *         up with -EBUSY; after SIGKILL, a read-only third process reads
 *         every key (the half-written one as absent), the parent's calls
 *         take the locks over, and the map holds every other key exactly
 *         once.
 * storm:  children updating in a tight loop are SIGKILLed at random points,
 *         many times, for hash and array maps: afterwards every call
 *         completes, no value is torn, and every key is there except the
 *         values recovery counted as discarded.
 * keeper: the holder's own forked child outlives it, keeping its
 *         descriptors and mappings: the holder is still seen dead.
 * slots:  a 65th writable handle cannot lock (-EBUSY), until one goes.
 * ring:   a producer holding the ring's producer lock and a consumer in the
 *         middle of consuming are killed; the next ones take over.
 *
 * An alarm turns any hang into a failure.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"
#include "epoch.h"
#include "maps/lock.h"
#include "maps_test.h"

#define NKEYS 24
#define WORDS 16

static void fill(uint64_t *v, uint64_t x)
{
	for (int i = 0; i < WORDS; i++)
		v[i] = x;
}

static int consistent(const uint64_t *v)
{
	for (int i = 1; i < WORDS; i++)
		if (v[i] != v[0])
			return 0;
	return 1;
}

static struct nbpf_htab_bucket *buckets(struct ncclbpf_map *m)
{
	struct nbpf_map_priv *p = nbpf_priv(m);

	return (struct nbpf_htab_bucket *)((uint8_t *)p->hdr + p->lay.aux_off);
}

/* The pool element holding key k (a live one), or NULL. */
static struct nbpf_htab_elem *find_elem(struct ncclbpf_map *m, uint32_t k)
{
	struct nbpf_map_priv *p = nbpf_priv(m);
	uint8_t *pool = (uint8_t *)p->hdr + p->lay.data_off;

	for (uint32_t i = 0; i < p->lay.pool_size; i++) {
		struct nbpf_htab_elem *e = (void *)(pool + (uint64_t)i * p->lay.elem_size);

		if (atomic_load(&e->state) == NBPF_ELEM_LIVE &&
		    !memcmp((uint8_t *)e + NBPF_HTAB_ELEM_HDR, &k, 4))
			return e;
	}
	return NULL;
}

static long prog_update(struct ncclbpf_map *m, uint32_t k, const uint64_t *v)
{
	long r;

	nbpf_epoch_enter();
	r = m->ops->update_elem(m, &k, v, NCCLBPF_ANY);
	nbpf_epoch_exit();
	return r;
}

static struct ncclbpf_map_lock_stats stats(struct ncclbpf_map *m)
{
	struct ncclbpf_map_lock_stats st = { 0 };

	CHECK_EQ_U64(ncclbpf_map__lock_stats(m, &st), 0);
	return st;
}

/*
 * Walks every chain: each key at most once, every value consistent and
 * equal to its key's pattern.  Returns the number of keys found.
 */
static int audit_hash(struct ncclbpf_map *m)
{
	int seen[NKEYS] = { 0 }, n = 0;
	uint64_t v[WORDS];

	for (uint32_t k = 0; k < NKEYS; k++) {
		int r = ncclbpf_map__lookup(m, &k, v);

		CHECK_MSG(r == 0 || r == -ENOENT, "key %u: lookup %d", k, r);
		if (r == 0) {
			CHECK_MSG(consistent(v) && (uint32_t)(v[0] >> 32) == k, "key %u torn", k);
			seen[k]++;
			n++;
		}
	}
	/* No key linked twice: walk the chains themselves. */
	{
		struct nbpf_map_priv *p = nbpf_priv(m);
		uint8_t *pool = (uint8_t *)p->hdr + p->lay.data_off;
		int linked[NKEYS] = { 0 }, total = 0;

		for (uint32_t b = 0; b < p->lay.n_buckets; b++) {
			uint32_t idx1 = atomic_load(&buckets(m)[b].head), steps = 0;

			while (idx1 && steps++ < p->lay.pool_size) {
				struct nbpf_htab_elem *e =
					(void *)(pool + (uint64_t)(idx1 - 1) * p->lay.elem_size);
				uint32_t k;

				memcpy(&k, (uint8_t *)e + NBPF_HTAB_ELEM_HDR, 4);
				if (k < NKEYS)
					linked[k]++;
				total++;
				idx1 = atomic_load(&e->next);
			}
		}
		for (uint32_t k = 0; k < NKEYS; k++)
			CHECK_MSG(linked[k] == seen[k], "key %u linked %d times, found %d", k,
				  linked[k], seen[k]);
		CHECK_EQ_U64(total, n);
	}
	return n;
}

/* ---- a holder that stops, then dies --------------------------------------- */

/*
 * Child: takes every bucket lock, leaves key 5 half-written (odd sequence,
 * half the words new), says so and waits to be killed.
 */
static void hold_child(struct ncclbpf_map *m, int wfd)
{
	struct nbpf_htab_elem *e;
	uint64_t *val;

	for (uint32_t b = 0; b < nbpf_priv(m)->lay.n_buckets; b++)
		if (nbpf_lock(m, &buckets(m)[b].lock, NBPF_LOCK_HOST) != 0)
			_exit(11);
	e = find_elem(m, 5);
	if (!e)
		_exit(12);
	atomic_fetch_add(&e->seq, 1);
	val = (uint64_t *)((uint8_t *)e + NBPF_HTAB_ELEM_HDR + nbpf_priv(m)->lay.key_stride);
	for (int i = 0; i < WORDS / 2; i++)
		__atomic_store_n(&val[i], 0xdeadull, __ATOMIC_RELAXED);
	if (write(wfd, "h", 1) != 1)
		_exit(13);
	for (;;)
		pause();
}

/* Third process: a read-only handle reads every key within the alarm. */
static void reader_child(const char *path)
{
	struct ncclbpf_map *m = NULL;
	uint64_t v[WORDS];
	int found = 0;

	alarm(20);
	if (ncclbpf_map__open_path(path, false, &m))
		_exit(20);
	for (uint32_t k = 0; k < NKEYS; k++) {
		int r = ncclbpf_map__lookup(m, &k, v);

		if (k == 5 && r != -ENOENT)
			_exit(21); /* the half-written value must not be served */
		if (k != 5 && (r || !consistent(v) || (uint32_t)(v[0] >> 32) != k))
			_exit(22);
		found += r == 0;
	}
	if (found != NKEYS - 1)
		_exit(23);
	/* A dump walks every key, the half-written one included (its lookup says absent). */
	{
		uint32_t k, prev, listed = 0;
		int r;

		for (r = ncclbpf_map__next_key(m, NULL, &k); !r; r = ncclbpf_map__next_key(m, &prev, &k)) {
			prev = k;
			listed++;
		}
		if (r != -ENOENT || listed != NKEYS)
			_exit(24);
	}
	_exit(0);
}

static void test_held(bool inherit)
{
	const char *name = inherit ? "held_inherited" : "held_open_path";
	struct ncclbpf_map *m = mk(name, NCCLBPF_MAP_HASH, 4, WORDS * 8, NKEYS), *ro = NULL;
	struct ncclbpf_map_lock_stats st;
	uint64_t v[WORDS];
	int pfd[2], status;
	pid_t holder, reader;
	char c;

	if (!m) {
		CHECK(0);
		return;
	}
	for (uint32_t k = 0; k < NKEYS; k++) {
		fill(v, (uint64_t)k << 32);
		CHECK_EQ_U64(ncclbpf_map__update(m, &k, v, NCCLBPF_ANY), 0);
	}
	CHECK_EQ_U64(ncclbpf_map__open_path(ncclbpf_map__path(m), false, &ro), 0);
	CHECK(pipe(pfd) == 0);
	holder = fork();
	if (holder == 0) {
		close(pfd[0]);
		if (inherit) {
			hold_child(m, pfd[1]);
		} else {
			struct ncclbpf_map *own = NULL;

			if (ncclbpf_map__open_path(ncclbpf_map__path(m), true, &own))
				_exit(10);
			hold_child(own, pfd[1]);
		}
	}
	close(pfd[1]);
	CHECK(read(pfd[0], &c, 1) == 1);
	close(pfd[0]);

	/* Alive and holding: the program path fails fast and counts; hosts give up. */
	fill(v, 5ull << 32 | 1);
	CHECK_EQ_U64(prog_update(m, 7, v), (uint64_t)-EBUSY);
	CHECK_EQ_U64(stats(m).timeouts, 1);
	/* Again and again: each call fails (at once, the lock being known stuck) and counts. */
	for (int i = 0; i < 99; i++)
		CHECK_EQ_U64(prog_update(m, 7, v), (uint64_t)-EBUSY);
	CHECK_EQ_U64(stats(m).timeouts, 100);
	CHECK_EQ_U64(ncclbpf_map__lookup(ro, &(uint32_t){ 3 }, v), (uint64_t)-EBUSY);
	CHECK_EQ_U64(stats(m).recoveries, 0);

	kill(holder, SIGKILL);
	waitpid(holder, &status, 0);

	/* A third process reads everything while the locks still name the dead child. */
	reader = fork();
	if (reader == 0)
		reader_child(ncclbpf_map__path(m));
	waitpid(reader, &status, 0);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: reader status 0x%x", name,
		  status);

	/* The writable handle takes the bucket of key 5 over and drops its torn value. */
	CHECK_EQ_U64(ncclbpf_map__lookup(m, &(uint32_t){ 5 }, v), (uint64_t)-ENOENT);
	st = stats(m);
	CHECK_EQ_U64(st.discarded, 1);
	CHECK(st.recoveries >= 1);
	/* Every other key, from the program path and the host, exactly once. */
	for (uint32_t k = 0; k < NKEYS; k++) {
		fill(v, (uint64_t)k << 32 | 2);
		if (k % 2)
			CHECK_EQ_U64(prog_update(m, k, v), 0);
		else
			CHECK_EQ_U64(ncclbpf_map__update(m, &k, v, NCCLBPF_ANY), 0);
	}
	CHECK_EQ_U64(audit_hash(m), NKEYS);
	st = stats(m);
	CHECK(st.recoveries >= 1 && st.recoveries <= nbpf_priv(m)->lay.n_buckets);
	CHECK_EQ_U64(st.timeouts, 100);
	CHECK_EQ_U64(atomic_load(&nbpf_priv(m)->hdr->count), NKEYS);
	printf("%s: recoveries %llu, discarded %llu, timeouts %llu\n", name,
	       (unsigned long long)st.recoveries, (unsigned long long)st.discarded,
	       (unsigned long long)st.timeouts);
	ncclbpf_map__put(ro);
	ncclbpf_map__put(m);
}

/*
 * The holder forks a child that outlives it (a worker that keeps every
 * descriptor and mapping it inherited): that child must not keep the dead
 * holder's slot looking alive.
 */
static void test_keeper(void)
{
	struct ncclbpf_map *m = mk("held_keeper", NCCLBPF_MAP_HASH, 4, WORDS * 8, NKEYS);
	int pfd[2], status;
	pid_t holder, keeper = 0;
	uint64_t v[WORDS];

	if (!m) {
		CHECK(0);
		return;
	}
	fill(v, 7ull << 32);
	CHECK_EQ_U64(ncclbpf_map__update(m, &(uint32_t){ 7 }, v, NCCLBPF_ANY), 0);
	CHECK(pipe(pfd) == 0);
	holder = fork();
	if (holder == 0) {
		struct ncclbpf_map *own = NULL;
		pid_t k;

		if (ncclbpf_map__open_path(ncclbpf_map__path(m), true, &own))
			_exit(50);
		for (uint32_t b = 0; b < nbpf_priv(own)->lay.n_buckets; b++)
			if (nbpf_lock(own, &buckets(own)[b].lock, NBPF_LOCK_HOST) != 0)
				_exit(51);
		/* The keeper reports once its fork has returned (its atfork handlers ran). */
		k = fork();
		if (k == 0) {
			k = getpid();
			if (write(pfd[1], &k, sizeof(k)) != sizeof(k))
				_exit(52);
			for (;;)
				pause();
		}
		for (;;)
			pause();
	}
	CHECK(read(pfd[0], &keeper, sizeof(keeper)) == sizeof(keeper));
	kill(holder, SIGKILL);
	waitpid(holder, &status, 0);
	/* The keeper lives on, with the dead holder's descriptors and mappings. */
	CHECK_EQ_U64(prog_update(m, 7, v), 0);
	CHECK_EQ_U64(stats(m).recoveries, 1);
	CHECK_EQ_U64(stats(m).timeouts, 0);
	if (keeper > 0) {
		kill(keeper, SIGKILL);
		waitpid(keeper, &status, 0); /* ours: we are the subreaper */
	}
	close(pfd[0]);
	close(pfd[1]);
	ncclbpf_map__put(m);
}

/*
 * 64 writable handles hold every holder slot: one more cannot write (and
 * says so with -EBUSY, counted); once one handle goes, its slot is free.
 */
static void test_slots_full(void)
{
	struct ncclbpf_map *m = mk("slots_full", NCCLBPF_MAP_ARRAY, 4, 8, 4), *h[NBPF_LOCK_SLOTS];
	uint64_t v = 1;
	uint32_t k = 0;

	if (!m) {
		CHECK(0);
		return;
	}
	/* The creator holds slot 0. */
	for (uint32_t i = 0; i + 1 < NBPF_LOCK_SLOTS; i++)
		CHECK_EQ_U64(ncclbpf_map__open_path(ncclbpf_map__path(m), true, &h[i]), 0);
	CHECK_EQ_U64(ncclbpf_map__open_path(ncclbpf_map__path(m), true, &h[NBPF_LOCK_SLOTS - 1]), 0);
	CHECK_EQ_U64(ncclbpf_map__update(h[NBPF_LOCK_SLOTS - 2], &k, &v, NCCLBPF_ANY), 0);
	CHECK_EQ_U64(ncclbpf_map__update(h[NBPF_LOCK_SLOTS - 1], &k, &v, NCCLBPF_ANY),
		     (uint64_t)-EBUSY);
	CHECK_EQ_U64(stats(m).timeouts, 1);
	ncclbpf_map__put(h[0]);
	CHECK_EQ_U64(ncclbpf_map__update(h[NBPF_LOCK_SLOTS - 1], &k, &v, NCCLBPF_ANY), 0);
	for (uint32_t i = 1; i < NBPF_LOCK_SLOTS; i++)
		ncclbpf_map__put(h[i]);
	ncclbpf_map__put(m);
}

/* ---- writers killed in a tight loop ----------------------------------------- */

/*
 * Rewrites existing keys only (EXIST): a writer killed while inserting may
 * leak one pool element, which is documented and not what this checks.
 */
static void storm_child(const char *path, bool inherit_prog, struct ncclbpf_map *inherited)
{
	struct ncclbpf_map *m = inherited;
	uint64_t v[WORDS], i = 0;

	if (!inherit_prog && ncclbpf_map__open_path(path, true, &m))
		_exit(30);
	for (;; i++) {
		uint32_t k = (uint32_t)(i % NKEYS);

		fill(v, (uint64_t)k << 32 | (i & 0xffffffffu));
		if (inherit_prog) {
			nbpf_epoch_enter();
			m->ops->update_elem(m, &k, v, NCCLBPF_EXIST);
			nbpf_epoch_exit();
		} else {
			ncclbpf_map__update(m, &k, v, NCCLBPF_EXIST);
		}
	}
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void test_storm(enum ncclbpf_map_type type, const char *name)
{
	struct ncclbpf_map *m = mk(name, type, 4, WORDS * 8, NKEYS);
	struct ncclbpf_map_lock_stats st;
	long rounds = scaled(40), missing = 0;
	uint64_t v[WORDS], seed = 0x1234567;

	if (!m) {
		CHECK(0);
		return;
	}
	for (uint32_t k = 0; k < NKEYS; k++) {
		fill(v, (uint64_t)k << 32);
		CHECK_EQ_U64(ncclbpf_map__update(m, &k, v, NCCLBPF_ANY), 0);
	}
	for (long r = 0; r < rounds; r++) {
		bool prog = r % 2;
		int status;
		pid_t pid = fork();

		if (pid == 0)
			storm_child(ncclbpf_map__path(m), prog, m);
		/* Let it get going, then kill it wherever it is. */
		usleep(200 + (useconds_t)(rnd(&seed) % 3000));
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		CHECK(WIFSIGNALED(status));
		/* Every call completes and nothing is torn; a key may read absent
		 * (hash) or zero (array) only if recovery discarded its value. */
		for (uint32_t k = 0; k < NKEYS; k++) {
			int rc = ncclbpf_map__lookup(m, &k, v);

			CHECK_MSG(rc == 0 || (rc == -ENOENT && type != NCCLBPF_MAP_ARRAY),
				  "%s round %ld key %u: %d", name, r, k, rc);
			if (rc == 0)
				CHECK_MSG(consistent(v) && (v[0] == 0 || (uint32_t)(v[0] >> 32) == k),
					  "%s round %ld key %u torn", name, r, k);
		}
		fill(v, (uint64_t)(r % NKEYS) << 32);
		CHECK_EQ_U64(prog_update(m, (uint32_t)(r % NKEYS), v), 0);
	}
	/* Count what is gone and compare with what recovery says it discarded. */
	for (uint32_t k = 0; k < NKEYS; k++) {
		int rc = ncclbpf_map__lookup(m, &k, v);

		missing += rc == -ENOENT || (rc == 0 && v[0] == 0 && k);
	}
	st = stats(m);
	CHECK_MSG((uint64_t)missing <= st.discarded, "%s: %ld missing, %llu discarded", name,
		  missing, (unsigned long long)st.discarded);
	if (type != NCCLBPF_MAP_ARRAY) {
		CHECK_EQ_U64(audit_hash(m), NKEYS - missing);
		CHECK_EQ_U64(atomic_load(&nbpf_priv(m)->hdr->count), NKEYS - missing);
	}
	CHECK_EQ_U64(st.timeouts, 0);
	printf("%s: %ld kills, recoveries %llu, discarded %llu, missing now %ld\n", name, rounds,
	       (unsigned long long)st.recoveries, (unsigned long long)st.discarded, missing);
	ncclbpf_map__put(m);
}

/* ---- ring buffer ------------------------------------------------------------ */

static int slow_cb(void *user, const void *data, uint32_t size)
{
	int fd = *(int *)user;

	if (write(fd, "c", 1) != 1)
		_exit(40);
	for (;;)
		pause();
	return 0;
}

static int count_cb(void *user, const void *data, uint32_t size)
{
	++*(int *)user;
	return 0;
}

static void test_ring(void)
{
	struct ncclbpf_map *m = mk("held_ring", NCCLBPF_MAP_RINGBUF, 0, 0, 4096), *own = NULL;
	int pfd[2], status, n = 0;
	pid_t pid;
	void *rec;
	char c;

	if (!m) {
		CHECK(0);
		return;
	}
	/* A producer dies holding the producer lock. */
	CHECK(pipe(pfd) == 0);
	pid = fork();
	if (pid == 0) {
		if (ncclbpf_map__open_path(ncclbpf_map__path(m), true, &own) ||
		    nbpf_lock(own, &nbpf_priv(own)->hdr->producer_lock, NBPF_LOCK_PROG) != 0)
			_exit(41);
		if (write(pfd[1], "p", 1) != 1)
			_exit(42);
		for (;;)
			pause();
	}
	CHECK(read(pfd[0], &c, 1) == 1);
	nbpf_epoch_enter();
	CHECK(nbpf_ringbuf_reserve(m, 8, 0) == NULL); /* alive: fails fast, counted */
	nbpf_epoch_exit();
	CHECK_EQ_U64(stats(m).timeouts, 1);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	/* Known stuck for up to NBPF_LOCK_CHECK_NS after the failure: then checked again. */
	usleep(2 * NBPF_LOCK_CHECK_NS / 1000);
	nbpf_epoch_enter();
	rec = nbpf_ringbuf_reserve(m, 8, 0);
	CHECK(rec != NULL);
	if (rec)
		nbpf_ringbuf_commit(rec, false);
	nbpf_epoch_exit();
	CHECK_EQ_U64(stats(m).recoveries, 1);
	CHECK_EQ_U64(stats(m).timeouts, 1);

	/* A consumer dies in the middle of consuming. */
	pid = fork();
	if (pid == 0) {
		if (ncclbpf_map__open_path(ncclbpf_map__path(m), true, &own))
			_exit(43);
		ncclbpf_ringbuf__consume(own, slow_cb, &pfd[1]);
		_exit(44);
	}
	CHECK(read(pfd[0], &c, 1) == 1);
	CHECK_EQ_U64(ncclbpf_ringbuf__consume(m, count_cb, &n), (uint64_t)-EBUSY);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	/* The dead consumer had not advanced past its record: it comes again. */
	CHECK_EQ_U64(ncclbpf_ringbuf__consume(m, count_cb, &n), 1);
	CHECK_EQ_U64(n, 1);
	CHECK_EQ_U64(stats(m).recoveries, 2);
	close(pfd[0]);
	close(pfd[1]);
	ncclbpf_map__put(m);
}

int main(void)
{
	alarm(120);
	/* Orphaned grandchildren come back to us, to be reaped. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	test_held(false);
	test_held(true);
	test_keeper();
	test_slots_full();
	test_storm(NCCLBPF_MAP_HASH, "storm_hash");
	test_storm(NCCLBPF_MAP_LRU_HASH, "storm_lru");
	test_storm(NCCLBPF_MAP_ARRAY, "storm_array");
	test_ring();
	test_map_dir_cleanup();
	return check_summary("maps_locks");
}
