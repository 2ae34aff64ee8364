/*
 * test_maps_basic.c - single-threaded semantics of every element map type,
 * size validation, file permissions and the helper table.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check.h"
#include "epoch.h"
#include "helpers.h"
#include "maps/map.h"
#include "maps/map_impl.h"
#include "rundir.h"
#include "maps_test.h"

size_t nbpf_printk_format(const char *fmt, size_t fmt_len, const uint64_t args[3], char *out,
			  size_t cap);

static void test_array(void)
{
	struct ncclbpf_map *m = mk("arr", NCCLBPF_MAP_ARRAY, 4, 12, 4);
	uint32_t k, nk;
	uint8_t v[12], out[12];

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_EQ_U64(m->value_stride, 16);
	CHECK(m->array_base != NULL);
	k = 2;
	memset(v, 0xab, sizeof(v));
	CHECK_EQ_U64(ncclbpf_map__update(m, &k, v, NCCLBPF_ANY), 0);
	CHECK_EQ_U64(ncclbpf_map__update(m, &k, v, NCCLBPF_EXIST), 0);
	CHECK_EQ_U64(ncclbpf_map__update(m, &k, v, NCCLBPF_NOEXIST), -EEXIST);
	CHECK_EQ_U64(ncclbpf_map__update(m, &k, v, 7), -EINVAL);
	CHECK_EQ_U64(ncclbpf_map__lookup(m, &k, out), 0);
	CHECK(!memcmp(out, v, sizeof(v)));
	/* The JIT's inline view agrees with the ops. */
	CHECK(m->ops->lookup_elem(m, &k) == m->array_base + 2 * 16);
	CHECK(!memcmp(m->array_base + 32, v, 12));
	k = 4;
	CHECK_EQ_U64(ncclbpf_map__update(m, &k, v, NCCLBPF_ANY), -E2BIG);
	CHECK_EQ_U64(ncclbpf_map__lookup(m, &k, out), -ENOENT);
	CHECK(m->ops->lookup_elem(m, &k) == NULL);
	CHECK_EQ_U64(ncclbpf_map__delete(m, &k), -EINVAL);
	CHECK_EQ_U64(m->ops->delete_elem(m, &k), -EINVAL);
	/* Untouched elements read as zero. */
	k = 0;
	CHECK_EQ_U64(ncclbpf_map__lookup(m, &k, out), 0);
	CHECK(out[0] == 0 && out[11] == 0);
	/* Iteration: 0,1,2,3 then ENOENT; NULL or out of range restarts at 0. */
	CHECK_EQ_U64(ncclbpf_map__next_key(m, NULL, &nk), 0);
	CHECK_EQ_U64(nk, 0);
	k = 2;
	CHECK_EQ_U64(ncclbpf_map__next_key(m, &k, &nk), 0);
	CHECK_EQ_U64(nk, 3);
	k = 3;
	CHECK_EQ_U64(ncclbpf_map__next_key(m, &k, &nk), -ENOENT);
	k = 99;
	CHECK_EQ_U64(ncclbpf_map__next_key(m, &k, &nk), 0);
	CHECK_EQ_U64(nk, 0);
	/* Program-side update through the ops. */
	k = 1;
	memset(v, 0x11, sizeof(v));
	CHECK_EQ_U64(m->ops->update_elem(m, &k, v, NCCLBPF_ANY), 0);
	CHECK(!memcmp(m->ops->lookup_elem(m, &k), v, 12));
	/* Value address for lddw map-value relocations: index 0 only, inside the value. */
	CHECK(nbpf_map_value_addr(m, 0) == m->array_base);
	CHECK(nbpf_map_value_addr(m, 11) == m->array_base + 11);
	CHECK(nbpf_map_value_addr(m, 12) == NULL);
	ncclbpf_map__put(m);
}

static void test_global_data(void)
{
	struct ncclbpf_map_create_opts o = { .sz = sizeof(o), .dir = test_map_dir(),
					     .readonly_prog = true };
	struct ncclbpf_map *m = NULL;
	const struct nbpf_helper *upd = nbpf_helper_find(NBPF_HELPER_MAP_UPDATE);
	uint32_t k = 0;
	char v[37] = "hello from rodata";

	CHECK_EQ_U64(ncclbpf_map__create("obj.rodata", NCCLBPF_MAP_ARRAY, 4, 37, 1, &o, &m), 0);
	if (!m)
		return;
	CHECK(m->readonly_prog);
	CHECK_EQ_U64(ncclbpf_map__update(m, &k, v, NCCLBPF_ANY), 0); /* the loader fills it */
	CHECK(!strcmp(nbpf_map_value_addr(m, 0), "hello from rodata"));
	CHECK(!strcmp(nbpf_map_value_addr(m, 6), "from rodata"));
	CHECK_EQ_U64(upd->fn((uintptr_t)m, (uintptr_t)&k, (uintptr_t)v, 0, 0), (uint64_t)-EPERM);
	ncclbpf_map__put(m);
}

static void test_percpu_array(void)
{
	struct ncclbpf_map *m = mk("pca", NCCLBPF_MAP_PERCPU_ARRAY, 4, 4, 3);
	uint32_t k = 1, v = 77, *p, slot = nbpf_thread_slot();
	uint32_t all[NCCLBPF_NR_SLOTS * 2];

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK(m->array_base == NULL); /* never inlined by the JIT */
	CHECK_EQ_U64(nbpf_map_host_value_size(m), NCCLBPF_NR_SLOTS * 8);
	p = m->ops->lookup_elem(m, &k);
	CHECK(p != NULL);
	if (!p)
		return;
	*p = 5;
	CHECK_EQ_U64(m->ops->update_elem(m, &k, &v, NCCLBPF_ANY), 0);
	CHECK_EQ_U64(*p, 77);
	memset(all, 0xff, sizeof(all));
	CHECK_EQ_U64(ncclbpf_map__lookup(m, &k, all), 0);
	for (uint32_t s = 0; s < NCCLBPF_NR_SLOTS; s++)
		CHECK_EQ_U64(all[s * 2], s == slot ? 77 : 0);
	for (uint32_t s = 0; s < NCCLBPF_NR_SLOTS; s++)
		all[s * 2] = 1000 + s;
	CHECK_EQ_U64(ncclbpf_map__update(m, &k, all, NCCLBPF_ANY), 0);
	CHECK_EQ_U64(*p, 1000 + slot);
	CHECK(nbpf_map_value_addr(m, 0) == NULL);
	ncclbpf_map__put(m);
}

static void test_hash(enum ncclbpf_map_type type, const char *name)
{
	const uint32_t max = 64;
	struct ncclbpf_map *m = mk(name, type, 8, 16, max);
	uint64_t k, v[2], out[2], seen = 0, nk, *pk = NULL;
	uint32_t n = 0;

	CHECK(m != NULL);
	if (!m)
		return;
	k = 42;
	v[0] = 1;
	v[1] = 2;
	CHECK_EQ_U64(ncclbpf_map__update(m, &k, v, NCCLBPF_EXIST), -ENOENT);
	CHECK_EQ_U64(ncclbpf_map__update(m, &k, v, NCCLBPF_NOEXIST), 0);
	CHECK_EQ_U64(ncclbpf_map__update(m, &k, v, NCCLBPF_NOEXIST), -EEXIST);
	v[0] = 3;
	CHECK_EQ_U64(ncclbpf_map__update(m, &k, v, NCCLBPF_EXIST), 0);
	CHECK_EQ_U64(ncclbpf_map__lookup(m, &k, out), 0);
	CHECK_EQ_U64(out[0], 3);
	CHECK_EQ_U64(out[1], 2);
	CHECK_EQ_U64(ncclbpf_map__delete(m, &k), 0);
	CHECK_EQ_U64(ncclbpf_map__delete(m, &k), -ENOENT);
	CHECK_EQ_U64(ncclbpf_map__lookup(m, &k, out), -ENOENT);
	CHECK(m->ops->lookup_elem(m, &k) == NULL);
	/* Fill it: the next new key is refused with E2BIG, updates still work. */
	for (k = 100; k < 100 + max; k++) {
		v[0] = k;
		v[1] = ~k;
		CHECK_EQ_U64(ncclbpf_map__update(m, &k, v, NCCLBPF_ANY), 0);
	}
	k = 5000;
	if (type == NCCLBPF_MAP_LRU_HASH) {
		/* Full LRU: the oldest key (100) makes room. */
		CHECK_EQ_U64(ncclbpf_map__update(m, &k, v, NCCLBPF_NOEXIST), 0);
		CHECK_EQ_U64(ncclbpf_map__lookup(m, &k, out), 0);
		CHECK_EQ_U64(ncclbpf_map__delete(m, &k), 0);
		k = 100;
		CHECK_EQ_U64(ncclbpf_map__lookup(m, &k, out), -ENOENT);
		CHECK_EQ_U64(ncclbpf_map__update(m, &k, v, NCCLBPF_NOEXIST), 0);
		k = 101;
		CHECK_EQ_U64(ncclbpf_map__lookup(m, &k, out), 0); /* no eviction below capacity */
	} else {
		CHECK_EQ_U64(ncclbpf_map__update(m, &k, v, NCCLBPF_ANY), -E2BIG);
		CHECK_STR_CONTAINS(ncclbpf_errmsg(), "full");
		CHECK_EQ_U64(m->ops->update_elem(m, &k, v, NCCLBPF_ANY), -E2BIG);
	}
	k = 100;
	CHECK_EQ_U64(ncclbpf_map__update(m, &k, v, NCCLBPF_ANY), 0);
	/* Iterate: every key exactly once, then ENOENT. */
	while (ncclbpf_map__next_key(m, pk, &nk) == 0 && n <= max) {
		CHECK(nk >= 100 && nk < 100 + max);
		if (nk >= 100 && nk < 164)
			seen |= 1ull << (nk - 100);
		k = nk;
		pk = &k;
		n++;
	}
	CHECK_EQ_U64(n, max);
	CHECK_EQ_U64(seen, ~0ull);
	/* Delete all through the program-side op, then refill: deleted
	 * elements come back after their grace period (we are outside any
	 * epoch section, so the host path may wait for one). */
	for (k = 100; k < 100 + max; k++)
		CHECK_EQ_U64(m->ops->delete_elem(m, &k), 0);
	CHECK_EQ_U64(ncclbpf_map__next_key(m, NULL, &nk), -ENOENT);
	for (int round = 0; round < 3; round++)
		for (k = 1; k <= max; k++)
			CHECK_EQ_U64(ncclbpf_map__update(m, &k, v, round ? NCCLBPF_EXIST : NCCLBPF_NOEXIST), 0);
	k = 1;
	v[0] = 9;
	CHECK_EQ_U64(m->ops->update_elem(m, &k, v, NCCLBPF_ANY), 0);
	{
		uint64_t *pv = m->ops->lookup_elem(m, &k);

		CHECK(pv && pv[0] == 9);
	}
	ncclbpf_map__put(m);
}

static void test_percpu_hash(void)
{
	struct ncclbpf_map *m = mk("pch", NCCLBPF_MAP_PERCPU_HASH, 4, 8, 8);
	uint32_t k = 7, slot = nbpf_thread_slot();
	uint64_t v = 123, all[NCCLBPF_NR_SLOTS], *p;

	CHECK(m != NULL);
	if (!m)
		return;
	/* A program update creates the element with only its slot set. */
	CHECK_EQ_U64(m->ops->update_elem(m, &k, &v, NCCLBPF_NOEXIST), 0);
	p = m->ops->lookup_elem(m, &k);
	CHECK(p && *p == 123);
	CHECK_EQ_U64(ncclbpf_map__lookup(m, &k, all), 0);
	for (uint32_t s = 0; s < NCCLBPF_NR_SLOTS; s++)
		CHECK_EQ_U64(all[s], s == slot ? 123 : 0);
	for (uint32_t s = 0; s < NCCLBPF_NR_SLOTS; s++)
		all[s] = s * 3;
	CHECK_EQ_U64(ncclbpf_map__update(m, &k, all, NCCLBPF_EXIST), 0);
	CHECK(p && *p == slot * 3);
	v = 5;
	CHECK_EQ_U64(m->ops->update_elem(m, &k, &v, NCCLBPF_EXIST), 0);
	CHECK_EQ_U64(ncclbpf_map__lookup(m, &k, all), 0);
	CHECK_EQ_U64(all[slot], 5);
	CHECK_EQ_U64(all[(slot + 1) % NCCLBPF_NR_SLOTS], ((slot + 1) % NCCLBPF_NR_SLOTS) * 3);
	ncclbpf_map__put(m);
}

static void test_bad_shapes(void)
{
	struct ncclbpf_map_create_opts o = { .sz = sizeof(o), .dir = test_map_dir() };
	struct ncclbpf_map *m = (void *)1;

	CHECK_EQ_U64(ncclbpf_map__create("a", NCCLBPF_MAP_ARRAY, 8, 4, 4, &o, &m), -EINVAL);
	CHECK(m == NULL);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "key_size must be 4");
	CHECK_EQ_U64(ncclbpf_map__create("a", NCCLBPF_MAP_ARRAY, 4, 0, 4, &o, &m), -EINVAL);
	CHECK_EQ_U64(ncclbpf_map__create("a", NCCLBPF_MAP_ARRAY, 4, 4, 0, &o, &m), -EINVAL);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "max_entries");
	CHECK_EQ_U64(ncclbpf_map__create("a", NCCLBPF_MAP_ARRAY, 4, 1u << 24, UINT32_MAX, &o, &m), -E2BIG);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "limit");
	CHECK_EQ_U64(ncclbpf_map__create("a", NCCLBPF_MAP_ARRAY, 4, UINT32_MAX, 1, &o, &m), -E2BIG);
	CHECK_EQ_U64(ncclbpf_map__create("a", NCCLBPF_MAP_PERCPU_ARRAY, 4, 65536, 1, &o, &m), -E2BIG);
	CHECK_EQ_U64(ncclbpf_map__create("h", NCCLBPF_MAP_HASH, 0, 4, 4, &o, &m), -EINVAL);
	CHECK_EQ_U64(ncclbpf_map__create("h", NCCLBPF_MAP_HASH, 513, 4, 4, &o, &m), -EINVAL);
	CHECK_EQ_U64(ncclbpf_map__create("h", NCCLBPF_MAP_HASH, 8, 4096, UINT32_MAX, &o, &m), -E2BIG);
	CHECK_EQ_U64(ncclbpf_map__create("h", NCCLBPF_MAP_PERCPU_HASH, 8, 32768, 1u << 20, &o, &m), -E2BIG);
	CHECK_EQ_U64(ncclbpf_map__create("r", NCCLBPF_MAP_RINGBUF, 0, 0, 4096 + 1, &o, &m), -EINVAL);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "power of two");
	CHECK_EQ_U64(ncclbpf_map__create("r", NCCLBPF_MAP_RINGBUF, 0, 0, 2048, &o, &m), -EINVAL);
	CHECK_EQ_U64(ncclbpf_map__create("r", NCCLBPF_MAP_RINGBUF, 4, 0, 4096, &o, &m), -EINVAL);
	CHECK_EQ_U64(ncclbpf_map__create("r", NCCLBPF_MAP_RINGBUF, 0, 0, 1u << 31, &o, &m), -E2BIG);
	CHECK_EQ_U64(ncclbpf_map__create("x", (enum ncclbpf_map_type)3, 4, 4, 4, &o, &m), -EINVAL);
	CHECK_EQ_U64(ncclbpf_map__create("x", NCCLBPF_MAP_HASH, 4, 4, 4, NULL, NULL), -EINVAL);
	o.map_flags = 1u << 20;
	CHECK_EQ_U64(ncclbpf_map__create("f", NCCLBPF_MAP_HASH, 4, 4, 4, &o, &m), -EINVAL);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "map_flags");
}

static char parent_id[NBPF_INSTANCE_MAX];

static void *first_id(void *arg)
{
	*(const char **)arg = nbpf_instance_id();
	return NULL;
}

static void test_files(void)
{
	struct ncclbpf_map_create_opts o = { .sz = sizeof(o) };
	struct ncclbpf_map *m = NULL;
	struct stat st;
	char dir[4096], bad[128];
	const char *slash;

	/* Default directory: per-user, 0700, file 0600, named <pid>.<n>.<name>. */
	CHECK_EQ_U64(ncclbpf_map__create("my map!", NCCLBPF_MAP_HASH, 4, 4, 4, &o, &m), 0);
	if (!m)
		return;
	CHECK(ncclbpf_map__path(m) != NULL);
	CHECK(stat(ncclbpf_map__path(m), &st) == 0);
	CHECK_EQ_U64(st.st_mode & 0777, 0600);
	CHECK_EQ_U64(st.st_uid, geteuid());
	slash = strrchr(ncclbpf_map__path(m), '/');
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - ncclbpf_map__path(m)), ncclbpf_map__path(m));
	CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
	CHECK_EQ_U64(st.st_mode & 0777, 0700);
	{
		char want[64];

		long pid = 0;
		size_t k = nbpf_instance_prefix(slash + 1, &pid);

		/* <pid>.<token>.<n>.<name>: the token keeps equal pids of two pid namespaces apart. */
		snprintf(want, sizeof(want), "/%d.", (int)getpid());
		CHECK(!strncmp(slash, want, strlen(want)));
		CHECK(k == strlen(nbpf_instance_id()) && pid == getpid() &&
		      !strncmp(slash + 1, nbpf_instance_id(), k));
		CHECK_STR_CONTAINS(slash, ".my_map_");
	}
	CHECK(!strcmp(ncclbpf_map__name(m), "my map!"));
	{
		/* A fork child is another instance: new token, even where the pid could repeat. */
		char parent[NBPF_INSTANCE_MAX];
		int pfd[2], st = -1;
		pid_t c;

		snprintf(parent, sizeof(parent), "%s", nbpf_instance_id());
		CHECK(!strcmp(parent, nbpf_instance_id()));
		CHECK(pipe(pfd) == 0);
		c = fork();
		if (c == 0) {
			const char *id = nbpf_instance_id();

			(void)!write(pfd[1], id, strlen(id) + 1);
			_exit(0);
		}
		close(pfd[1]);
		{
			char child[NBPF_INSTANCE_MAX] = "";
			long cp = 0;

			CHECK(read(pfd[0], child, sizeof(child)) > 0);
			CHECK(nbpf_instance_prefix(child, &cp) == strlen(child) && cp == c);
			CHECK(strcmp(strchr(child, '.'), strchr(parent, '.')) != 0);
		}
		close(pfd[0]);
		waitpid(c, &st, 0);
	}
	{
		/* Threads racing for the first id of a fresh instance all get the same one. */
		int st = -1;
		pid_t c;

		snprintf(parent_id, sizeof(parent_id), "%s", nbpf_instance_id());
		c = fork();
		if (c == 0) {
			pthread_t th[8];
			const char *ids[8];

			for (int i = 0; i < 8; i++)
				pthread_create(&th[i], NULL, first_id, &ids[i]);
			for (int i = 0; i < 8; i++)
				pthread_join(th[i], NULL);
			for (int i = 1; i < 8; i++)
				if (strcmp(ids[i], ids[0]) || !nbpf_instance_prefix(ids[i], NULL))
					_exit(1);
			_exit(strcmp(ids[0], parent_id) ? 0 : 2);
		}
		CHECK(waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	snprintf(bad, sizeof(bad), "%s", ncclbpf_map__path(m));
	ncclbpf_map__put(m);
	CHECK(access(bad, F_OK) != 0); /* unlinked on the last put */

	/* A directory others can write to (not sticky) is refused, and left as it is. */
	snprintf(bad, sizeof(bad), "%s/loose", test_map_dir());
	CHECK(mkdir(bad, 0755) == 0);
	chmod(bad, 0775);
	o.dir = bad;
	CHECK_EQ_U64(ncclbpf_map__create("m", NCCLBPF_MAP_HASH, 4, 4, 4, &o, &m), -EPERM);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "0775");
	CHECK(stat(bad, &st) == 0 && (st.st_mode & 07777) == 0775);
	/* A sticky shared one keeps its mode; the map file is still owner-only. */
	chmod(bad, 01777);
	CHECK_EQ_U64(ncclbpf_map__create("m", NCCLBPF_MAP_HASH, 4, 4, 4, &o, &m), 0);
	CHECK(stat(bad, &st) == 0 && (st.st_mode & 07777) == 01777);
	if (m) {
		CHECK(stat(ncclbpf_map__path(m), &st) == 0 && (st.st_mode & 0777) == 0600);
		ncclbpf_map__put(m);
		m = NULL;
	}
	rmdir(bad);
	/* A symlink in place of the directory is refused. */
	CHECK(symlink("/tmp", bad) == 0);
	CHECK_EQ_U64(ncclbpf_map__create("m", NCCLBPF_MAP_HASH, 4, 4, 4, &o, &m), -ENOTDIR);
	unlink(bad);
}

/* Files of dead creators are removed, unless someone still holds their lock. */
static void test_reap(void)
{
	char dir[128], stale[192], held[192], young[192];
	struct ncclbpf_map *m = NULL;
	int fs, fh, status = -1;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/reap", test_map_dir());
	CHECK(mkdir(dir, 0700) == 0);
	snprintf(stale, sizeof(stale), "%s/999999999.0.stale", dir);
	snprintf(held, sizeof(held), "%s/999999998.0.held", dir);
	snprintf(young, sizeof(young), "%s/1.0123456789abcdef.0.young", dir);
	/* Not locked yet and no magic: its creator may be between open and flock. */
	fs = open(young, O_CREAT | O_RDWR, 0600);
	CHECK(fs >= 0 && ftruncate(fs, 4096) == 0);
	close(fs);
	fs = open(stale, O_CREAT | O_RDWR, 0600);
	fh = open(held, O_CREAT | O_RDWR, 0600);
	CHECK(fs >= 0 && fh >= 0);
	{
		/* Finished map files (header magic written): a file without it may be one being made. */
		struct nbpf_shm_hdr h = { .magic = NBPF_SHM_MAGIC };

		CHECK(pwrite(fs, &h, sizeof(h), 0) == (ssize_t)sizeof(h));
		CHECK(pwrite(fh, &h, sizeof(h), 0) == (ssize_t)sizeof(h));
	}
	close(fs);
	CHECK(flock(fh, LOCK_SH) == 0);
	pid = fork();
	if (pid == 0) {
		struct ncclbpf_map_create_opts o = { .sz = sizeof(o), .dir = dir };

		/* First map of a fresh process: reaps once. */
		if (ncclbpf_map__create("r", NCCLBPF_MAP_ARRAY, 4, 4, 1, &o, &m))
			_exit(1);
		ncclbpf_map__put(m);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(access(stale, F_OK) != 0);
	CHECK(access(held, F_OK) == 0);
	CHECK(access(young, F_OK) == 0);
	close(fh);
	unlink(held);
	unlink(young);
	CHECK(rmdir(dir) == 0); /* the child's own map file was unlinked too */
}

static void test_helpers(void)
{
	static const int32_t ids[] = { 1, 2, 3, 5, 6, 7, 8, 130, 131, 132, 133, 134 };
	const struct nbpf_helper *h;
	struct ncclbpf_map *m = mk("hm", NCCLBPF_MAP_HASH, 4, 8, 4);
	uint32_t k = 3;
	uint64_t v = 99, t1, t2, *p;

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		h = nbpf_helper_find(ids[i]);
		CHECK_MSG(h && h->id == ids[i] && h->fn && h->name, "helper %d", ids[i]);
	}
	CHECK(nbpf_helper_find(4) == NULL);   /* probe_read: never */
	CHECK(nbpf_helper_find(36) == NULL);  /* probe_write_user: never */
	CHECK(nbpf_helper_find(0) == NULL);
	h = nbpf_helper_find(1);
	CHECK(h->ret == NBPF_RET_PTR_TO_MAP_VALUE_OR_NULL && h->args[0] == NBPF_ARG_CONST_MAP_PTR &&
	      h->args[1] == NBPF_ARG_PTR_TO_MAP_KEY && h->args[2] == NBPF_ARG_NONE);
	CHECK(nbpf_helper_find(5)->flags & NBPF_HELPER_RANK_LOCAL);
	CHECK(nbpf_helper_find(7)->flags & NBPF_HELPER_RANK_LOCAL);
	CHECK(nbpf_helper_find(8)->flags & NBPF_HELPER_RANK_LOCAL);
	CHECK(!(nbpf_helper_find(1)->flags & NBPF_HELPER_RANK_LOCAL));
	CHECK(nbpf_helper_find(131)->ret == NBPF_RET_PTR_TO_RINGBUF_MEM_OR_NULL);
	CHECK(nbpf_helper_find(132)->args[0] == NBPF_ARG_PTR_TO_RINGBUF_MEM);
	if (!m)
		return;
	/* Called the way the JIT calls them: five u64 arguments. */
	CHECK_EQ_U64(nbpf_helper_find(2)->fn((uintptr_t)m, (uintptr_t)&k, (uintptr_t)&v, 0, 0), 0);
	p = (uint64_t *)(uintptr_t)nbpf_helper_find(1)->fn((uintptr_t)m, (uintptr_t)&k, 0, 0, 0);
	CHECK(p && *p == 99);
	CHECK_EQ_U64(nbpf_helper_find(2)->fn((uintptr_t)m, (uintptr_t)&k, (uintptr_t)&v, 1, 0),
		     (uint64_t)-EEXIST);
	CHECK_EQ_U64(nbpf_helper_find(3)->fn((uintptr_t)m, (uintptr_t)&k, 0, 0, 0), 0);
	CHECK_EQ_U64(nbpf_helper_find(3)->fn((uintptr_t)m, (uintptr_t)&k, 0, 0, 0), (uint64_t)-ENOENT);
	t1 = nbpf_helper_find(5)->fn(0, 0, 0, 0, 0);
	t2 = nbpf_helper_find(5)->fn(0, 0, 0, 0, 0);
	CHECK(t1 > 0 && t2 >= t1);
	{
		uint64_t r = 0, or = 0;

		for (int i = 0; i < 64; i++) {
			r = nbpf_helper_find(7)->fn(0, 0, 0, 0, 0);
			CHECK(r <= UINT32_MAX);
			or |= r;
		}
		CHECK(or > 0xffff); /* not stuck at zero, uses high bits */
	}
	CHECK_EQ_U64(nbpf_helper_find(8)->fn(0, 0, 0, 0, 0), nbpf_thread_slot());
	CHECK(nbpf_thread_slot() < NCCLBPF_NR_SLOTS);
	ncclbpf_map__put(m);
}

static char last_log[512];
static int n_logs, n_suppress_notes;

static void capture(int level, const char *msg)
{
	snprintf(last_log, sizeof(last_log), "%s", msg);
	n_logs++;
	if (strstr(msg, "suppressed"))
		n_suppress_notes++;
}

static void test_printk(void)
{
	const uint64_t a[3] = { (uint64_t)-5, 0xdeadbeefcafeull, 42 };
	char out[256];
	const struct nbpf_helper *h = nbpf_helper_find(6);
	static const char f1[] = "v=%d x=%llx u=%u\n";
	static const char f2[] = "s=%s p=%p ok=%d";
	static const char f3[] = "%d %d %d %d|%5u|%-3d|%%|%c";
	static const char f4[] = "%ld %lu %lld %i %x %lx";
	static const char nonul[4] = { 'a', 'b', 'c', 'd' };

	nbpf_printk_format(f1, sizeof(f1), a, out, sizeof(out));
	CHECK(!strcmp(out, "v=-5 x=deadbeefcafe u=42\n"));
	nbpf_printk_format(f2, sizeof(f2), a, out, sizeof(out));
	CHECK(!strcmp(out, "s=<unsupported %s> p=<unsupported %p> ok=-5"));
	nbpf_printk_format(f3, sizeof(f3), a, out, sizeof(out));
	CHECK_STR_CONTAINS(out, "-5 ");
	CHECK_STR_CONTAINS(out, "<too many args>");
	nbpf_printk_format(f4, sizeof(f4), a, out, sizeof(out));
	CHECK(!strcmp(out, "-5 244837814094590 42 <too many args> <too many args> <too many args>"));
	{
		const uint64_t b[3] = { 7, 65, 0x1ffffffffull }, c[3] = { 65, 66, 67 };
		static const char f5[] = "[%5u|%-3d|%%|%x]";
		static const char f6[] = "%c%c|%q|%lc";

		nbpf_printk_format(f5, sizeof(f5), b, out, sizeof(out));
		CHECK(!strcmp(out, "[    7|65 |%|ffffffff]"));
		nbpf_printk_format(f6, sizeof(f6), c, out, sizeof(out));
		CHECK_STR_CONTAINS(out, "AB|");
		CHECK_STR_CONTAINS(out, "|<unsupported %q>|<unsupported %lc>");
	}
	/* Through the helper: rate limited to a burst of 10, then counted. */
	ncclbpf_set_logger(capture);
	CHECK_EQ_U64(h->fn((uintptr_t)nonul, sizeof(nonul), 0, 0, 0), (uint64_t)-EINVAL);
	CHECK_EQ_U64(h->fn((uintptr_t)f1, sizeof(f1), 1, 2, 3), strlen("v=1 x=2 u=3"));
	CHECK(!strcmp(last_log, "bpf_trace_printk: v=1 x=2 u=3"));
	for (int i = 0; i < 50; i++)
		h->fn((uintptr_t)f1, sizeof(f1), (uint64_t)i, 0, 0);
	CHECK_MSG(n_logs >= 10 && n_logs <= 12, "n_logs %d", n_logs);
	usleep(250000);
	n_logs = 0;
	CHECK(h->fn((uintptr_t)f1, sizeof(f1), 7, 0, 0) > 0);
	CHECK_EQ_U64(n_suppress_notes, 1);
	CHECK_EQ_U64(n_logs, 2);
	CHECK(!strcmp(last_log, "bpf_trace_printk: v=7 x=0 u=0"));
	ncclbpf_set_logger(NULL);
}

int main(void)
{
	test_reap(); /* first: before this process reaps */
	test_array();
	test_global_data();
	test_percpu_array();
	test_hash(NCCLBPF_MAP_HASH, "hash");
	test_hash(NCCLBPF_MAP_LRU_HASH, "lru");
	test_percpu_hash();
	test_bad_shapes();
	test_files();
	test_helpers();
	test_printk();
	test_map_dir_cleanup();
	CHECK(access(test_map_dir(), F_OK) != 0); /* every map file was unlinked */
	return check_summary("maps_basic");
}
