/*
 * shm.c - owner-only shared-memory files that back maps.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "map_impl.h"
#include "ncclbpf/runtime.h"
#include "rundir.h"

static atomic_uint file_counter;

/*
 * Resolves the directory: an explicit dir is used as given (see
 * nbpf_rundir_resolve: ours and not writable by others, or sticky; never
 * chmod'ed); else $XDG_RUNTIME_DIR/ncclbpf, else /dev/shm/ncclbpf-<uid>,
 * which fall back to a private sibling of ours when someone else has them.
 */
int nbpf_shm_dir(const char *dir, char *out, size_t out_sz)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char def[4096];
	int n, err;

	if (dir && *dir) {
		err = nbpf_rundir_resolve(dir, NBPF_RUNDIR_CREATE | NBPF_RUNDIR_EXPLICIT, NULL, out,
					  out_sz);
		goto out;
	}
	if (xdg && xdg[0] == '/')
		n = snprintf(def, sizeof(def), "%s/ncclbpf", xdg);
	else
		n = snprintf(def, sizeof(def), "/dev/shm/ncclbpf-%u", (unsigned)geteuid());
	if (n < 0 || (size_t)n >= sizeof(def))
		return nbpf_err(-ENAMETOOLONG, "map directory name too long");
	err = nbpf_rundir_resolve(def, NBPF_RUNDIR_CREATE,
				  "name a map directory of your own (NCCLBPF_MAP_DIR) to silence this",
				  out, out_sz);
out:
	if (err) {
		char why[768];

		snprintf(why, sizeof(why), "%s", ncclbpf_errmsg());
		return nbpf_err(err, "map directory %s", why);
	}
	return 0;
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
 * Removes map files whose creator is gone.  A creator takes a shared flock
 * on its file before it writes the header magic and holds it for the map's
 * life (fork children inherit it), so a file that has the magic and whose
 * lock we can then take exclusively has no creator left.  This works across pid
 * namespaces, where the pid in a name proves nothing.  A file without the
 * magic may be one being created right now: left alone.  Only regular
 * files of ours are considered, opened without following links or
 * blocking.  Best effort, once per process.
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
		struct stat st, fst;
		uint64_t magic = 0;
		int f;

		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
		    st.st_uid != geteuid() || st.st_size < (off_t)sizeof(struct nbpf_shm_hdr))
			continue;
		f = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (f < 0)
			continue;
		/*
		 * Magic first: another program's file of ours (a shared directory
		 * such as /dev/shm) never sees our lock probe.  Once set, the
		 * magic stays, so reading it before the lock proves as much.
		 */
		if (!fstat(f, &fst) && fst.st_ino == st.st_ino && fst.st_dev == st.st_dev &&
		    pread(f, &magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) &&
		    magic == NBPF_SHM_MAGIC && flock(f, LOCK_EX | LOCK_NB) == 0)
			unlinkat(dirfd(d), de->d_name, 0);
		close(f);
	}
	closedir(d);
}

/*
 * Creates <dir>/<instance>.<counter>.<name> exclusively, mode 0600, sized
 * and backed (fallocate, so a full tmpfs fails here and not with SIGBUS
 * later).  The instance id (pid and a random token) keeps two processes
 * apart that have the same pid in different pid namespaces.
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
	if (asprintf(&p, "%s/%s.%u.%s", d, nbpf_instance_id(), atomic_fetch_add(&file_counter, 1),
		     clean) < 0)
		return nbpf_err(-ENOMEM, "map %s: out of memory", name);
	f = open(p, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (f < 0) {
		err = nbpf_err(-errno, "map %s: cannot create %s: %s", name, p, strerror(errno));
		goto fail;
	}
	/*
	 * Marks the file live for reap_stale() in other processes, before the
	 * header magic exists.  Blocking: a reaper holds its probe only for a
	 * pread, and must not make us run unlocked.
	 */
	while (flock(f, LOCK_SH) && errno == EINTR)
		;
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
