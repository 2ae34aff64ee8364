// SPDX-License-Identifier: Apache-2.0
/*
 * test_maps_truncate.c - a map file truncated while processes map it
 * (`: > /dev/shm/ncclbpf-0/...`, a cleanup script) costs its contents, not
 * the processes: the job that created it, a writable opener and a
 * read-only opener (the command's map dump) each touch the cut range and
 * live on; the creator's file gets its size and header back, so it can be
 * opened again; the job says once which file was cut.  A SIGBUS that is
 * not a map's (another truncated file, kill -BUS) still reaches the
 * disposition that was there before: the default kills (under ASan, its
 * handler reports and aborts), a handler runs.
 *
 * Each case runs in a forked child: before the guard, the first one died
 * of SIGBUS.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check.h"
#include "maps/map.h"
#include "maps/map_impl.h"
#include "maps_test.h"

static char err_path[128];

/* Runs fn in a child with stderr to err_path; its wait status. */
static int in_child(void (*fn)(void))
{
	int st = 0;
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd >= 0)
			dup2(fd, 2);
		check_passed = check_failed = 0;
		fn();
		_exit(check_failed ? 1 : 0);
	}
	waitpid(pid, &st, 0);
	return st;
}

static void child_err(char *buf, size_t n)
{
	int fd = open(err_path, O_RDONLY);
	ssize_t k = fd >= 0 ? read(fd, buf, n - 1) : -1;

	buf[k > 0 ? k : 0] = 0;
	if (fd >= 0)
		close(fd);
}

static int exited_ok(int st)
{
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* The creator: values, helpers' pointers and the host API through a cut to 0. */
static void creator_array(void)
{
	struct ncclbpf_map *m = mk("trunc_arr", NCCLBPF_MAP_ARRAY, 4, 8, 1024), *again = NULL;
	uint64_t v = 42, got = 1;
	uint32_t k = 5;
	volatile uint64_t *p;

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK(ncclbpf_map__update(m, &k, &v, 0) == 0);
	p = nbpf_map_value_addr(m, 0);
	CHECK(p && *p == 0);
	CHECK(truncate(ncclbpf_map__path(m), 0) == 0);
	/* A program's pointer into the value: the first access after the cut. */
	*p = 9;
	CHECK(*p == 9);
	CHECK(ncclbpf_map__lookup(m, &k, &got) == 0);
	CHECK_EQ_U64(got, 0); /* what was cut is gone */
	v = 7;
	CHECK(ncclbpf_map__update(m, &k, &v, 0) == 0);
	CHECK(nbpf_map_guard_repairs() == 1);
	/* The file is whole again: another process could open it. */
	CHECK(ncclbpf_map__open_path(ncclbpf_map__path(m), false, &again) == 0);
	got = 0;
	CHECK(again && ncclbpf_map__lookup(again, &k, &got) == 0 && got == 7);
	ncclbpf_map__put(again);
	ncclbpf_map__put(m);
}

/* A hash map cut in the middle of its element pool: no crash, bounded damage. */
static void creator_hash_partial(void)
{
	struct ncclbpf_map *m = mk("trunc_hash", NCCLBPF_MAP_HASH, 8, 8, 4096);
	struct stat st;
	uint64_t k, v;
	int found = 0;

	CHECK(m != NULL);
	if (!m)
		return;
	for (k = 0; k < 4096; k++) {
		v = k * 3;
		CHECK(ncclbpf_map__update(m, &k, &v, 0) == 0);
	}
	CHECK(stat(ncclbpf_map__path(m), &st) == 0);
	CHECK(truncate(ncclbpf_map__path(m), st.st_size / 2) == 0);
	for (k = 0; k < 4096; k++)
		if (!ncclbpf_map__lookup(m, &k, &v))
			found += v == k * 3;
	/* Every bucket head sat in the cut tail: nothing is reachable any more. */
	CHECK(found == 0);
	for (k = 0; k < 64; k++) {
		v = k;
		ncclbpf_map__update(m, &k, &v, 0); /* may fail: the free list was cut too */
	}
	ncclbpf_map__put(m);
}

static int count_rec(void *user, const void *data, uint32_t size)
{
	(void)user, (void)data, (void)size;
	return 0;
}

static void creator_ringbuf(void)
{
	struct ncclbpf_map *m = mk("trunc_rb", NCCLBPF_MAP_RINGBUF, 0, 0, 4096 * 4);

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK(truncate(ncclbpf_map__path(m), 0) == 0);
	CHECK(ncclbpf_ringbuf__consume(m, count_rec, NULL) == 0);
	ncclbpf_map__put(m);
}

/* Openers in a second process: read-only (map dump) and writable (map update). */
static void openers(void)
{
	struct ncclbpf_map *m = mk("trunc_open", NCCLBPF_MAP_ARRAY, 4, 8, 64), *ro = NULL, *rw = NULL;
	uint32_t k = 3;
	uint64_t v = 11;
	int up[2], down[2];
	char b;
	pid_t pid;
	int st = 0;

	CHECK(m && pipe(up) == 0 && pipe(down) == 0);
	if (!m)
		return;
	CHECK(ncclbpf_map__update(m, &k, &v, 0) == 0);
	pid = fork();
	if (pid == 0) {
		check_passed = check_failed = 0;
		CHECK(ncclbpf_map__open_path(ncclbpf_map__path(m), false, &ro) == 0);
		CHECK(ncclbpf_map__open_path(ncclbpf_map__path(m), true, &rw) == 0);
		CHECK(ro && rw);
		(void)!write(up[1], "o", 1);
		(void)!read(down[0], &b, 1); /* truncated meanwhile */
		if (ro && rw) {
			v = 1;
			CHECK(ncclbpf_map__lookup(ro, &k, &v) == 0 && v == 0);
			v = 12;
			CHECK(ncclbpf_map__update(rw, &k, &v, 0) == 0);
		}
		ncclbpf_map__put(ro);
		ncclbpf_map__put(rw);
		_exit(check_failed ? 1 : 0);
	}
	(void)!read(up[0], &b, 1);
	CHECK(truncate(ncclbpf_map__path(m), 0) == 0);
	(void)!write(down[1], "t", 1);
	waitpid(pid, &st, 0);
	CHECK_MSG(exited_ok(st), "opener: wait status 0x%x", st);
	/* The writable opener grew the file back and wrote: the creator sees it. */
	v = 0;
	CHECK(ncclbpf_map__lookup(m, &k, &v) == 0 && v == 12);
	for (int i = 0; i < 2; i++)
		close(up[i]), close(down[i]);
	ncclbpf_map__put(m);
}

/* A cut file that is no map: the default disposition still kills. */
static void foreign_default(void)
{
	char path[160];
	volatile char *p;
	int fd;

	/* The guard is in place once a map was mapped, and stays. */
	ncclbpf_map__put(mk("trunc_guard_on", NCCLBPF_MAP_ARRAY, 4, 8, 4));

	snprintf(path, sizeof(path), "%s/foreign", test_map_dir());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 4096))
		_exit(3);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	unlink(path);
	if (p == MAP_FAILED || ftruncate(fd, 0))
		_exit(3);
	*p = 1; /* SIGBUS, not ours */
	_exit(0);
}

static void on_bus(int sig)
{
	(void)sig;
	_exit(42);
}

/* A handler installed before the first map still gets what is not ours. */
static void foreign_handler(void)
{
	signal(SIGBUS, on_bus);
	foreign_default();
}

/* kill -BUS is no fault: the default still applies. */
static void sent_sigbus(void)
{
	ncclbpf_map__put(mk("trunc_kill", NCCLBPF_MAP_ARRAY, 4, 8, 4));
	kill(getpid(), SIGBUS);
	_exit(0);
}

int main(void)
{
	char err[4096];
	int st;

	snprintf(err_path, sizeof(err_path), "%s/stderr", test_map_dir());
	st = in_child(creator_array);
	CHECK_MSG(exited_ok(st), "creator, array: wait status 0x%x (signal %d)", st,
		  WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	child_err(err, sizeof(err));
	CHECK_STR_CONTAINS(err, "trunc_arr was truncated while mapped");
	/* One line, however many accesses hit the cut. */
	CHECK(strstr(err, "truncated") && !strstr(strstr(err, "truncated") + 1, "truncated"));
	st = in_child(creator_hash_partial);
	CHECK_MSG(exited_ok(st), "creator, hash cut in half: wait status 0x%x", st);
	st = in_child(creator_ringbuf);
	CHECK_MSG(exited_ok(st), "creator, ring buffer: wait status 0x%x", st);
	st = in_child(openers);
	CHECK_MSG(exited_ok(st), "openers: wait status 0x%x", st);
	/* The disposition before ours: the default (SIGBUS), or a sanitizer's report (SIGABRT). */
	st = in_child(foreign_default);
	CHECK_MSG(WIFSIGNALED(st) && (WTERMSIG(st) == SIGBUS || WTERMSIG(st) == SIGABRT),
		  "foreign cut file: wait status 0x%x", st);
	st = in_child(foreign_handler);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 42, "earlier handler: wait status 0x%x", st);
	st = in_child(sent_sigbus);
	CHECK_MSG(WIFSIGNALED(st) && (WTERMSIG(st) == SIGBUS || WTERMSIG(st) == SIGABRT),
		  "kill -BUS: wait status 0x%x", st);
	unlink(err_path);
	test_map_dir_cleanup();
	CHECK_MSG(access(test_map_dir(), F_OK) != 0, "map files left in %s", test_map_dir());
	return check_summary("maps_truncate");
}
