// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rundir.c - per-process-instance ids and per-user directories in shared
 * places (see rundir.h).
 */
#include "rundir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "ncclbpf/runtime.h"

/* ---- instance id --------------------------------------------------------- */

enum { INST_NONE, INST_BUSY, INST_READY };

static char inst_id[NBPF_INSTANCE_MAX];
static atomic_int inst_state;
static atomic_int inst_atfork;

/* A fork child is another instance: the same token would collide when it is pid 1 too. */
static void inst_fork_child(void)
{
	atomic_store(&inst_state, INST_NONE);
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t draw_token(void)
{
	uint64_t t = 0;
	struct timespec ts;

	if (getrandom(&t, sizeof(t), GRND_NONBLOCK) == (ssize_t)sizeof(t) && t)
		return t;
	/* No entropy yet (early boot): still distinct per process and moment. */
	clock_gettime(CLOCK_REALTIME, &ts);
	return mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
		     mix64((uint64_t)getpid() ^ (uint64_t)(uintptr_t)&t));
}

const char *nbpf_instance_id(void)
{
	int st = atomic_load_explicit(&inst_state, memory_order_acquire);

	while (st != INST_READY) {
		int none = INST_NONE;

		if (st == INST_NONE &&
		    atomic_compare_exchange_strong(&inst_state, &none, INST_BUSY)) {
			if (!atomic_exchange(&inst_atfork, 1))
				pthread_atfork(NULL, NULL, inst_fork_child);
			snprintf(inst_id, sizeof(inst_id), "%d.%016llx", (int)getpid(),
				 (unsigned long long)draw_token());
			atomic_store_explicit(&inst_state, INST_READY, memory_order_release);
			break;
		}
		sched_yield();
		st = atomic_load_explicit(&inst_state, memory_order_acquire);
	}
	return inst_id;
}

size_t nbpf_instance_prefix(const char *name, long *pid)
{
	size_t i = 0, d;
	long v = 0;

	for (; name[i] >= '0' && name[i] <= '9' && i < 10; i++)
		v = v * 10 + (name[i] - '0');
	if (!i || name[i] != '.' || v <= 0)
		return 0;
	d = ++i;
	for (; (name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'); i++)
		;
	if (i - d != 16 || (name[i] && name[i] != '.'))
		return 0;
	if (pid)
		*pid = v;
	return i;
}

/* ---- directories --------------------------------------------------------- */

static bool is_private(const struct stat *st)
{
	return S_ISDIR(st->st_mode) && st->st_uid == geteuid() && !(st->st_mode & 077);
}

/* Why st is not a private directory of ours, for messages. */
static void describe(const struct stat *st, char *out, size_t n)
{
	if (!S_ISDIR(st->st_mode))
		snprintf(out, n, "not a directory (symlinks are refused, not followed)");
	else if (st->st_uid != geteuid())
		snprintf(out, n, "owned by uid %u, not by uid %u", (unsigned)st->st_uid,
			 (unsigned)geteuid());
	else
		snprintf(out, n, "mode %04o gives others access", (unsigned)(st->st_mode & 07777));
}

/*
 * A directory the operator named: ours and not writable by others, or
 * sticky and owned by us or root (others cannot remove or rename our files
 * in it).  Never chmod'ed: it may be /tmp.
 */
static int check_explicit(const char *path, const struct stat *st)
{
	char why[96];

	if (!S_ISDIR(st->st_mode)) {
		describe(st, why, sizeof(why));
		return nbpf_err(-ENOTDIR, "%s: %s", path, why);
	}
	if (st->st_mode & S_ISVTX) {
		if (st->st_uid == geteuid() || st->st_uid == 0)
			return 0;
		return nbpf_err(-EPERM, "%s: sticky directory owned by uid %u, who could remove our files; use a directory of your own",
				path, (unsigned)st->st_uid);
	}
	if (st->st_uid != geteuid())
		return nbpf_err(-EPERM, "%s: owned by uid %u, not by uid %u; use a directory of your own",
				path, (unsigned)st->st_uid, (unsigned)geteuid());
	if (st->st_mode & 022)
		return nbpf_err(-EPERM, "%s: mode %04o lets others replace our files and has no sticky bit; use a private directory (it is left unchanged)",
				path, (unsigned)(st->st_mode & 07777));
	return 0;
}

static int split(const char *path, char *parent, size_t n, const char **base)
{
	const char *slash = strrchr(path, '/');
	size_t len;

	if (!slash || !slash[1])
		return nbpf_err(-EINVAL, "%s: not an absolute file name", path);
	len = slash == path ? 1 : (size_t)(slash - path);
	if (len >= n)
		return nbpf_err(-ENAMETOOLONG, "%s: name too long", path);
	memcpy(parent, path, len);
	parent[len] = '\0';
	*base = slash + 1;
	return 0;
}

/* Is name "<base>.XXXXXX" (the shape mkdtemp makes)? */
static bool is_sibling(const char *name, const char *base)
{
	size_t bl = strlen(base);

	return !strncmp(name, base, bl) && name[bl] == '.' && strlen(name + bl + 1) == 6;
}

/*
 * Calls fn for each private sibling of path, smallest name first when
 * pick is set (only that one), in directory order otherwise.
 */
static int siblings(const char *path, bool pick, char *out, size_t n,
		    int (*fn)(const char *dir, void *arg), void *arg)
{
	char parent[4096], best[256] = "", full[4400];
	const char *base = NULL;
	struct dirent *de;
	DIR *d;
	int err = split(path, parent, sizeof(parent), &base), ret = 0;

	if (err)
		return err;
	d = opendir(parent);
	if (!d)
		return 0;
	while (!ret && (de = readdir(d))) {
		struct stat st;

		if (!is_sibling(de->d_name, base) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !is_private(&st))
			continue;
		if (pick) {
			if (!best[0] || strcmp(de->d_name, best) < 0)
				snprintf(best, sizeof(best), "%s", de->d_name);
			continue;
		}
		snprintf(full, sizeof(full), "%s/%s", strcmp(parent, "/") ? parent : "", de->d_name);
		ret = fn(full, arg);
	}
	closedir(d);
	if (pick && best[0]) {
		int k = snprintf(out, n, "%s/%s", strcmp(parent, "/") ? parent : "", best);

		return (k < 0 || (size_t)k >= n) ? -ENAMETOOLONG : 1;
	}
	return ret;
}

/* One WARN per process and path: every map and every start would repeat it. */
static void warn_once(const char *path, const char *msg)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static char seen[4][256];
	static unsigned n_seen;
	bool dup = false;

	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < n_seen && i < 4; i++)
		dup = dup || !strncmp(seen[i], path, sizeof(seen[i]) - 1);
	if (!dup)
		snprintf(seen[n_seen++ % 4], sizeof(seen[0]), "%s", path);
	pthread_mutex_unlock(&lock);
	if (!dup)
		nbpf_log(NCCLBPF_LOG_WARN, "%s", msg);
}

/* path is taken or not private: use (or make) a private sibling of ours. */
static int fallback(const char *path, const struct stat *st, unsigned flags, const char *hint,
		    char *out, size_t n)
{
	char why[96], msg[1024];
	int r;

	describe(st, why, sizeof(why));
	r = siblings(path, true, out, n, NULL, NULL);
	if (r < 0)
		return nbpf_err(r, "%s: %s, and no private replacement: name too long", path, why);
	if (!r) {
		if (!(flags & NBPF_RUNDIR_CREATE))
			return nbpf_err(-ENOENT, "%s: %s", path, why);
		if (snprintf(out, n, "%s.XXXXXX", path) >= (int)n)
			return nbpf_err(-ENAMETOOLONG, "%s: name too long", path);
		if (!mkdtemp(out))
			return nbpf_err(-errno, "%s: %s, and cannot make a private replacement: %s",
					path, why, strerror(errno));
	}
	snprintf(msg, sizeof(msg), "%s is %s; using %s instead%s%s", path, why, out,
		 hint ? ": " : "", hint ? hint : "");
	warn_once(path, msg);
	return 0;
}

int nbpf_rundir_resolve(const char *path, unsigned flags, const char *hint, char *out, size_t n)
{
	bool explicit = flags & NBPF_RUNDIR_EXPLICIT;
	struct stat st;
	int err;

	if (!path || path[0] != '/')
		return nbpf_err(-EINVAL, "%s: not an absolute directory name", path ? path : "(null)");
	if (strlen(path) >= n)
		return nbpf_err(-ENAMETOOLONG, "%s: name too long", path);
	if (lstat(path, &st)) {
		if (errno != ENOENT)
			return nbpf_err(-errno, "%s: %s", path, strerror(errno));
		if (!(flags & NBPF_RUNDIR_CREATE)) {
			if (!explicit && siblings(path, true, out, n, NULL, NULL) == 1)
				return 0;
			return nbpf_err(-ENOENT, "%s: %s", path, strerror(ENOENT));
		}
		if (mkdir(path, 0700) && errno != EEXIST)
			return nbpf_err(-errno, "%s: cannot create: %s", path, strerror(errno));
		/* Checked again: EEXIST may be someone else's, made in between. */
		if (lstat(path, &st))
			return nbpf_err(-errno, "%s: %s", path, strerror(errno));
	}
	if (explicit) {
		err = check_explicit(path, &st);
		if (err)
			return err;
	} else if (!is_private(&st)) {
		return fallback(path, &st, flags, hint, out, n);
	}
	memcpy(out, path, strlen(path) + 1);
	return 0;
}

int nbpf_rundir_foreach(const char *path, unsigned flags,
			int (*fn)(const char *dir, void *arg), void *arg)
{
	bool explicit = flags & NBPF_RUNDIR_EXPLICIT;
	struct stat st;
	int ret = 0;

	if (!path || path[0] != '/')
		return nbpf_err(-EINVAL, "%s: not an absolute directory name", path ? path : "(null)");
	if (!lstat(path, &st) && (explicit ? !check_explicit(path, &st) : is_private(&st)))
		ret = fn(path, arg);
	if (!ret && !explicit)
		ret = siblings(path, false, NULL, 0, fn, arg);
	return ret;
}
