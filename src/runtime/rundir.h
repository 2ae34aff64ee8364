// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rundir.h - names and directories for files that other processes of the
 * same user must find (map files, control sockets).
 *
 * Two rules keep processes that share a directory apart:
 *  - names carry a per-process-instance id, not just a pid: jobs that are
 *    each pid 1 in their own pid namespace share /dev/shm (--ipc=host);
 *  - a directory name another user can predict (/tmp/ncclbpf-<uid>) is
 *    used only if it is ours and private; otherwise a private sibling
 *    <name>.XXXXXX of ours is used, which nobody else can take first, and
 *    readers look in both.  A directory we did not create is never chmod'ed.
 */
#ifndef NCCLBPF_RUNDIR_H
#define NCCLBPF_RUNDIR_H

#include <stdbool.h>
#include <stddef.h>

/* "<pid>.<16 hex digits>" plus NUL, with room for any pid. */
#define NBPF_INSTANCE_MAX 32

/*
 * This process instance's id, "<pid>.<token>": the pid as the process sees
 * it and 64 random bits (getrandom), drawn at first use and again in a fork
 * child.  Each copy of the library in a process has its own.
 */
const char *nbpf_instance_id(void);

/*
 * Length of the instance id that name starts with ("<digits>.<16 hex>"
 * followed by '.' or the end), or 0 if it does not.  *pid gets the pid.
 */
size_t nbpf_instance_prefix(const char *name, long *pid);

enum {
	NBPF_RUNDIR_CREATE   = 1 << 0, /* make a missing directory (mode 0700) */
	NBPF_RUNDIR_EXPLICIT = 1 << 1, /* the operator named it: no fallback */
};

/*
 * Resolves the directory to use for path into out.
 *
 * EXPLICIT: path must be a real directory (a symlink is refused) that is
 * either ours and not writable by group or others, or sticky (like /tmp)
 * and owned by us or root; our files in it are owner-only.  Anything else
 * is refused with a message saying why.
 *
 * Otherwise path is a predictable default: it is used if it is a real
 * directory of ours with no group/other access.  If someone else has it
 * (or it is not private), the smallest private sibling "<path>.XXXXXX" of
 * ours is used, or one is made with mkdtemp; that is logged as one WARN
 * per process and path, ending with hint (what the operator can set).
 *
 * Returns 0, -ENOENT (missing, without CREATE) or another negative errno
 * with a message (ncclbpf_errmsg).
 */
int nbpf_rundir_resolve(const char *path, unsigned flags, const char *hint, char *out,
			size_t n);

/*
 * Calls fn for every directory a process of ours could have resolved path
 * to: path itself when it is usable, then each private sibling of ours
 * (default paths only).  Stops at the first nonzero return, which it
 * returns.  Missing directories are skipped.
 */
int nbpf_rundir_foreach(const char *path, unsigned flags,
			int (*fn)(const char *dir, void *arg), void *arg);

#endif
