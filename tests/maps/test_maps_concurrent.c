/*
 * test_maps_concurrent.c - 8 writer threads against outside readers.
 *
 * Every value carries a self-checking pattern (all eight words equal), so
 * a torn copy is detected.  Readers: a thread using the creating handle,
 * a thread using a second handle from ncclbpf_map__open_path (read-only),
 * and a forked child process that opens the file itself.  Writers mix
 * program-style updates/deletes (inside epoch sections) with host ones,
 * so elements are recycled while readers run.  Program-side calls may fail
 * with -EBUSY when a lock holder is descheduled past the program budget
 * (this machine is oversubscribed on purpose); each such failure must be
 * counted in the map's lock_timeouts, and nothing else may fail.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/wait.h>

#include "check.h"
#include "epoch.h"
#include "maps/map.h"
#include "maps_test.h"

#define NWRITERS 8
#define NKEYS 48
#define WORDS 64

struct shared {
	struct ncclbpf_map *map;
	struct ncclbpf_map *ro;  /* open_path handle */
	long iters;
	atomic_int stop;
	atomic_long torn, reads, hits, errors, busy;
};

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

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct wargs {
	struct shared *sh;
	int id;
};

static void *writer(void *p)
{
	struct wargs *a = p;
	struct ncclbpf_map *m = a->sh->map;
	bool hash = m->type != NCCLBPF_MAP_ARRAY;
	uint64_t s = 0x9e3779b97f4a7c15ull * (a->id + 1), v[WORDS];

	for (long i = 0; i < a->sh->iters; i++) {
		uint32_t k = (uint32_t)(rnd(&s) % NKEYS);
		long r;

		fill(v, ((uint64_t)a->id << 48) | (uint64_t)i);
		switch (rnd(&s) % 4) {
		case 0: /* host update */
			r = ncclbpf_map__update(m, &k, v, NCCLBPF_ANY);
			break;
		case 1: /* delete then re-insert: recycles pool elements */
			if (hash) {
				nbpf_epoch_enter();
				r = m->ops->delete_elem(m, &k);
				nbpf_epoch_exit();
				if (r == -EBUSY)
					atomic_fetch_add(&a->sh->busy, 1);
			}
			/* fall through */
		default: /* program-style update */
			nbpf_epoch_enter();
			r = m->ops->update_elem(m, &k, v, NCCLBPF_ANY);
			nbpf_epoch_exit();
			if (r == -EBUSY) {
				atomic_fetch_add(&a->sh->busy, 1);
				r = 0;
			}
			break;
		}
		if (r && r != -E2BIG)
			atomic_fetch_add(&a->sh->errors, 1);
	}
	return NULL;
}

static void read_loop(struct shared *sh, struct ncclbpf_map *m)
{
	uint64_t s = 12345, v[WORDS];
	long n = 0;

	while (!atomic_load(&sh->stop) || n < 1000) {
		uint32_t k = (uint32_t)(rnd(&s) % NKEYS);
		int r = ncclbpf_map__lookup(m, &k, v);

		n++;
		if (r == 0) {
			atomic_fetch_add(&sh->hits, 1);
			if (!consistent(v))
				atomic_fetch_add(&sh->torn, 1);
		} else if (r != -ENOENT) {
			atomic_fetch_add(&sh->errors, 1);
		}
	}
	atomic_fetch_add(&sh->reads, n);
}

static void *reader_main(void *p)
{
	struct shared *sh = p;

	read_loop(sh, sh->map);
	return NULL;
}

static void *reader_ro(void *p)
{
	struct shared *sh = p;

	read_loop(sh, sh->ro);
	return NULL;
}

/*
 * Child: opens the map by path (read-only), reads until the parent closes
 * the pipe, exits 0 only if it read values and none was torn.
 */
static void child(const char *path, int rfd)
{
	struct ncclbpf_map *m = NULL;
	uint64_t s = 777, v[WORDS];
	long hits = 0, torn = 0, reads = 0;
	char c;

	if (ncclbpf_map__open_path(path, false, &m))
		_exit(10);
	if (read(rfd, &c, 1) != 1) /* start signal */
		_exit(11);
	fcntl(rfd, F_SETFL, O_NONBLOCK);
	while (read(rfd, &c, 1) < 0 || reads < 1000) {
		uint32_t k = (uint32_t)(rnd(&s) % NKEYS);

		reads++;
		if (ncclbpf_map__lookup(m, &k, v) == 0) {
			hits++;
			torn += !consistent(v);
		}
	}
	/* Writes through a read-only handle are refused. */
	if (ncclbpf_map__update(m, &(uint32_t){ 0 }, v, 0) != -EPERM)
		_exit(12);
	_exit(torn ? 13 : hits ? 0 : 14);
}

static void run(enum ncclbpf_map_type type, const char *name)
{
	struct shared sh = { .iters = scaled(40000) };
	pthread_t w[NWRITERS], r1, r2;
	struct wargs wa[NWRITERS];
	int pfd[2], status = -1;
	pid_t pid;

	sh.map = mk(name, type, 4, WORDS * 8, type == NCCLBPF_MAP_ARRAY ? NKEYS : NKEYS - 8);
	if (!sh.map) {
		CHECK(0);
		return;
	}
	CHECK_EQ_U64(ncclbpf_map__open_path(ncclbpf_map__path(sh.map), false, &sh.ro), 0);
	if (!sh.ro)
		return;
	CHECK_EQ_U64(ncclbpf_map__type(sh.ro), type);
	CHECK_EQ_U64(ncclbpf_map__value_size(sh.ro), WORDS * 8);
	CHECK(!strcmp(ncclbpf_map__name(sh.ro), name));

	/* Fork before any thread exists. */
	CHECK(pipe(pfd) == 0);
	pid = fork();
	if (pid == 0) {
		close(pfd[1]);
		child(ncclbpf_map__path(sh.map), pfd[0]);
	}
	close(pfd[0]);

	for (int i = 0; i < NWRITERS; i++) {
		wa[i] = (struct wargs){ &sh, i };
		pthread_create(&w[i], NULL, writer, &wa[i]);
	}
	pthread_create(&r1, NULL, reader_main, &sh);
	pthread_create(&r2, NULL, reader_ro, &sh);
	CHECK(write(pfd[1], "g", 1) == 1);
	for (int i = 0; i < NWRITERS; i++)
		pthread_join(w[i], NULL);
	atomic_store(&sh.stop, 1);
	close(pfd[1]);
	pthread_join(r1, NULL);
	pthread_join(r2, NULL);
	waitpid(pid, &status, 0);

	CHECK_EQ_U64(atomic_load(&sh.torn), 0);
	CHECK_EQ_U64(atomic_load(&sh.errors), 0);
	{
		struct ncclbpf_map_lock_stats ls;

		CHECK_EQ_U64(ncclbpf_map__lock_stats(sh.map, &ls), 0);
		CHECK_EQ_U64(ls.timeouts, atomic_load(&sh.busy));
		CHECK_EQ_U64(ls.recoveries, 0);
		CHECK_EQ_U64(ls.discarded, 0);
	}
	CHECK(atomic_load(&sh.hits) > 0);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
	printf("%s: %ld reads, %ld hits, %ld torn, %ld program calls busy\n", name,
	       atomic_load(&sh.reads), atomic_load(&sh.hits), atomic_load(&sh.torn),
	       atomic_load(&sh.busy));

	/* After the storm every present value is still self-consistent. */
	for (uint32_t k = 0; k < NKEYS; k++) {
		uint64_t v[WORDS];

		if (ncclbpf_map__lookup(sh.ro, &k, v) == 0)
			CHECK(consistent(v));
	}
	ncclbpf_map__put(sh.ro);
	ncclbpf_map__put(sh.map);
}

int main(void)
{
	run(NCCLBPF_MAP_HASH, "conc_hash");
	run(NCCLBPF_MAP_LRU_HASH, "conc_lru");
	run(NCCLBPF_MAP_ARRAY, "conc_array");
	test_map_dir_cleanup();
	return check_summary("maps_concurrent");
}
