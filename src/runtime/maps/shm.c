/*
 * shm.c - owner-only shared-memory files that back maps.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "map_impl.h"

static atomic_uint file_counter;

/*
 * Makes sure dir exists as a real directory owned by us with no group or
 * other access, creating it 0700 if missing.  A symlink, a foreign owner or
 * loose permissions are refused: another user could otherwise read values
 * or plant files.
 */
static int check_dir(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return nbpf_err(-errno, "map directory %s: cannot create: %s", dir, strerror(errno));
	if (lstat(dir, &st))
		return nbpf_err(-errno, "map directory %s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return nbpf_err(-ENOTDIR, "map directory %s: not a directory (symlinks are refused)", dir);
	if (st.st_uid != geteuid())
		return nbpf_err(-EPERM, "map directory %s: owned by uid %u, not %u", dir,
				(unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & 077)
		return nbpf_err(-EPERM, "map directory %s: mode %03o gives others access (want 0700)",
				dir, (unsigned)(st.st_mode & 0777));
	return 0;
}

/* Resolves the directory: explicit dir, else $XDG_RUNTIME_DIR/ncclbpf, else /dev/shm/ncclbpf-<uid>. */
int nbpf_shm_dir(const char *dir, char *out, size_t out_sz)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (dir && *dir)
		n = snprintf(out, out_sz, "%s", dir);
	else if (xdg && xdg[0] == '/')
		n = snprintf(out, out_sz, "%s/ncclbpf", xdg);
	else
		n = snprintf(out, out_sz, "/dev/shm/ncclbpf-%u", (unsigned)geteuid());
	if (n < 0 || (size_t)n >= out_sz)
		return nbpf_err(-ENAMETOOLONG, "map directory name too long");
	return check_dir(out);
}

/* Keeps [A-Za-z0-9_.-] of a map name so it is safe inside a file name. */
static void sanitize(const char *name, char *out, size_t out_sz)
{
	size_t i = 0;

	for (; name && *name && i + 1 < out_sz; name++) {
		char c = *name;

		out[i++] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-') ? c : '_';
	}
	if (!i)
		out[i++] = '_';
	out[i] = '\0';
}

/*
 * Removes files left behind by processes that died without dropping their
 * maps.  A creator holds a shared flock on its file for the map's life, so
 * a file is stale only if its pid (the name's prefix) is gone AND nobody
 * holds the lock: the pid test alone would be wrong for a process in
 * another pid namespace sharing the directory.  Best effort, once per
 * process.
 */
static void reap_stale(const char *dir)
{
	static atomic_int done;
	DIR *d;
	struct dirent *de;

	if (atomic_exchange(&done, 1))
		return;
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (end == de->d_name || *end != '.' || pid <= 0 || pid == getpid())
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		int f = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

		if (f < 0)
			continue;
		if (flock(f, LOCK_EX | LOCK_NB) == 0)
			unlinkat(dirfd(d), de->d_name, 0);
		close(f);
	}
	closedir(d);
}

/*
 * Creates <dir>/<pid>.<counter>.<name> exclusively, mode 0600, sized and
 * backed (fallocate, so a full tmpfs fails here and not with SIGBUS later).
 * On success the caller owns *path (malloc'd) and *fd.
 */
int nbpf_shm_create(const char *dir, const char *name, uint64_t size, char **path, int *fd)
{
	char d[4096], clean[NBPF_MAP_NAME_MAX + 1], *p = NULL;
	int err, f = -1;

	err = nbpf_shm_dir(dir, d, sizeof(d));
	if (err)
		return err;
	reap_stale(d);
	sanitize(name, clean, sizeof(clean));
	if (asprintf(&p, "%s/%d.%u.%s", d, (int)getpid(), atomic_fetch_add(&file_counter, 1),
		     clean) < 0)
		return nbpf_err(-ENOMEM, "map %s: out of memory", name);
	f = open(p, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (f < 0) {
		err = nbpf_err(-errno, "map %s: cannot create %s: %s", name, p, strerror(errno));
		goto fail;
	}
	/* Marks the file live for reap_stale() in other processes. */
	flock(f, LOCK_SH | LOCK_NB);
	/* umask may have cleared bits; we want exactly owner read/write. */
	if (fchmod(f, 0600)) {
		err = nbpf_err(-errno, "map %s: chmod %s: %s", name, p, strerror(errno));
		goto fail_unlink;
	}
	err = posix_fallocate(f, 0, (off_t)size);
	if (err == EOPNOTSUPP || err == EINVAL)
		err = ftruncate(f, (off_t)size) ? errno : 0;
	if (err) {
		err = nbpf_err(-err, "map %s: cannot size %s to %llu bytes: %s", name, p,
			       (unsigned long long)size, strerror(err));
		goto fail_unlink;
	}
	*path = p;
	*fd = f;
	return 0;
fail_unlink:
	unlink(p);
fail:
	if (f >= 0)
		close(f);
	free(p);
	return err;
}
