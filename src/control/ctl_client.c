/*
 * ctl_client.c - connects to a process's control socket, sends one framed
 * request and reads the framed response within one deadline.
 */
#include "ctl_client.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ncclbpf/runtime.h"
#include "runtime/error.h"
#include "runtime/rundir.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for fd to become ready for events before the deadline: 0, or -ETIMEDOUT. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - now_ms();
		struct pollfd p = { .fd = fd, .events = events };
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static int io_all(int fd, void *buf, size_t len, bool wr, int64_t deadline)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n;
		int err = wait_fd(fd, wr ? POLLOUT : POLLIN, deadline);

		if (err)
			return err;
		n = wr ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT) : recv(fd, p, len, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * NCCLBPF_CTL_TIMEOUT_MS for the client side; a bad value is named once on
 * stderr (the client runs in the command, not in NCCL's process).
 */
static int client_timeout_ms(void)
{
	static _Atomic int warned;
	const char *v = getenv("NCCLBPF_CTL_TIMEOUT_MS");
	char *end;
	long long x;

	if (!v || !*v)
		return NBPF_CTL_CLIENT_TIMEOUT_MS;
	errno = 0;
	x = strtoll(v, &end, 10);
	if (!errno && !*end && end != v && x >= 1 && x <= 3600 * 1000)
		return (int)x;
	if (!atomic_exchange(&warned, 1))
		fprintf(stderr, "ncclbpf: NCCLBPF_CTL_TIMEOUT_MS=%s: not a number in 1..3600000; using %d\n",
			v, NBPF_CTL_CLIENT_TIMEOUT_MS);
	return NBPF_CTL_CLIENT_TIMEOUT_MS;
}

int nbpf_ctl_call_path(const char *path, int type, const char *payload,
		       struct nbpf_ctl_msg *resp, const char **errmsg)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int64_t deadline = now_ms() + client_timeout_ms();
	size_t plen = payload ? strlen(payload) : 0;
	uint8_t hdr[NBPF_CTL_HDR_SIZE];
	struct nbpf_ctl_hdr h;
	uint8_t *body = NULL;
	int fd = -1, err;

	memset(resp, 0, sizeof(*resp));
	*errmsg = "";
	if (strlen(path) >= sizeof(sa.sun_path)) {
		err = nbpf_err(-ENAMETOOLONG, "%s: socket path too long", path);
		goto fail;
	}
	if (plen > NBPF_CTL_MAX_REQUEST) {
		err = nbpf_err(-EMSGSIZE, "request of %zu bytes exceeds %u", plen, NBPF_CTL_MAX_REQUEST);
		goto fail;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = nbpf_err(-errno, "socket: %s", strerror(errno));
		goto fail;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = nbpf_err(-errno, "%s: %s", path, strerror(errno));
		goto fail;
	}
	nbpf_ctl_hdr_encode(hdr, (uint16_t)type, (uint32_t)plen);
	err = io_all(fd, hdr, sizeof(hdr), true, deadline);
	if (!err && plen)
		err = io_all(fd, (void *)payload, plen, true, deadline);
	/*
	 * A process that refuses us (credentials, oversized request) answers
	 * and closes before reading everything: still read that answer.
	 */
	if (err && err != -EPIPE && err != -ECONNRESET) {
		nbpf_err(err, "%s: %s", path, strerror(-err));
		goto fail;
	}
	if ((err = io_all(fd, hdr, sizeof(hdr), false, deadline))) {
		nbpf_err(err, "%s: %s", path, err == -ECONNRESET ? "connection closed by the process"
							    : strerror(-err));
		goto fail;
	}
	if ((err = nbpf_ctl_hdr_decode(hdr, NBPF_CTL_MAX_RESPONSE, &h)))
		goto fail;
	if (h.type != (type | NBPF_CTL_REPLY) && h.type != NBPF_CTL_REPLY) {
		err = nbpf_err(-EPROTO, "%s: response of type 0x%x to request %d", path, h.type, type);
		goto fail;
	}
	body = malloc(h.len ? h.len : 1);
	if (!body) {
		err = nbpf_err(-ENOMEM, "out of memory");
		goto fail;
	}
	if (h.len && (err = io_all(fd, body, h.len, false, deadline))) {
		nbpf_err(err, "%s: %s", path, strerror(-err));
		goto fail;
	}
	if ((err = nbpf_ctl_msg_parse(h.type, body, h.len, resp)))
		goto fail;
	free(body);
	close(fd);
	return nbpf_ctl_msg_status(resp, errmsg);
fail:
	*errmsg = ncclbpf_errmsg();
	free(body);
	if (fd >= 0)
		close(fd);
	return err;
}

/*
 * Live processes, as found by the last scan.  The CLI is short-lived and
 * `top`/`export` ask the same processes again every interval: rescanning
 * (one connection per socket) happens only when a pid is not in the table.
 */
static pthread_mutex_t procs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nbpf_ctl_proc *procs_cache;
static int n_procs_cache = -1;

struct scan {
	struct nbpf_ctl_proc *v;
	int n, cap;
	int err;
};

/*
 * Connects to one candidate socket.  Only sockets of ours count; a refused
 * connection is a stale socket; SO_PEERCRED names the listener's pid as
 * this process sees it (0 when it lives in a pid namespace we cannot see),
 * and its uid must be ours, so nobody else's socket can answer for a job.
 */
static int probe(int dfd, const char *dir, const char *name, struct nbpf_ctl_proc *p)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct stat st;
	long nspid;
	int fd, ok = -1;

	if (!nbpf_ctl_sock_name(name, &nspid) || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) ||
	    !S_ISSOCK(st.st_mode) || st.st_uid != geteuid() ||
	    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name) >= (int)sizeof(sa.sun_path))
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if ((!connect(fd, (struct sockaddr *)&sa, sizeof(sa)) || errno == EAGAIN) &&
	    !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) && len == sizeof(cred) &&
	    cred.uid == geteuid()) {
		memset(p, 0, sizeof(*p));
		p->pid = cred.pid;
		p->ns_pid = (int)nspid;
		memcpy(p->path, sa.sun_path, sizeof(p->path));
		snprintf(p->instance, sizeof(p->instance), "%.*s",
			 (int)nbpf_instance_prefix(name, NULL), name);
		ok = 0;
	}
	close(fd);
	return ok;
}

static int scan_dir(const char *dir, void *arg)
{
	struct scan *sc = arg;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		struct nbpf_ctl_proc p;

		if (probe(dirfd(d), dir, de->d_name, &p))
			continue;
		if (sc->n == sc->cap) {
			int cap = sc->cap ? sc->cap * 2 : 16;
			struct nbpf_ctl_proc *v = realloc(sc->v, (size_t)cap * sizeof(*v));

			if (!v) {
				sc->err = nbpf_err(-ENOMEM, "out of memory");
				break;
			}
			sc->v = v;
			sc->cap = cap;
		}
		sc->v[sc->n++] = p;
	}
	closedir(d);
	return sc->err;
}

static int cmp_proc(const void *a, const void *b)
{
	const struct nbpf_ctl_proc *x = a, *y = b;

	return x->pid != y->pid ? (x->pid > y->pid) - (x->pid < y->pid)
				: strcmp(x->instance, y->instance);
}

int nbpf_ctl_list(struct nbpf_ctl_proc **out)
{
	struct scan sc = { 0 };
	int err;

	*out = NULL;
	err = nbpf_ctl_runtime_dir_foreach(scan_dir, &sc);
	if (err) {
		free(sc.v);
		return err;
	}
	if (sc.n)
		qsort(sc.v, (size_t)sc.n, sizeof(*sc.v), cmp_proc);
	pthread_mutex_lock(&procs_lock);
	free(procs_cache);
	procs_cache = malloc((size_t)(sc.n ? sc.n : 1) * sizeof(*sc.v));
	n_procs_cache = procs_cache ? sc.n : -1;
	if (procs_cache && sc.n)
		memcpy(procs_cache, sc.v, (size_t)sc.n * sizeof(*sc.v));
	pthread_mutex_unlock(&procs_lock);
	*out = sc.v;
	return sc.n;
}

/* Socket path of the process with this (visible) pid: 0, or -ESRCH. */
static int lookup(int pid, char *path, size_t n)
{
	int err = -ESRCH;

	pthread_mutex_lock(&procs_lock);
	for (int i = 0; i < n_procs_cache; i++)
		if (procs_cache[i].pid == pid) {
			snprintf(path, n, "%s", procs_cache[i].path);
			err = 0;
			break;
		}
	pthread_mutex_unlock(&procs_lock);
	return err;
}

int nbpf_ctl_call_pid(int pid, int type, const char *payload, struct nbpf_ctl_msg *resp,
		      const char **errmsg)
{
	struct nbpf_ctl_proc *all = NULL;
	char path[108];
	int n;

	memset(resp, 0, sizeof(*resp));
	if (lookup(pid, path, sizeof(path))) {
		n = nbpf_ctl_list(&all);
		free(all);
		if (n < 0 || lookup(pid, path, sizeof(path))) {
			if (n >= 0)
				nbpf_err(-ESRCH, "no control socket of uid %u answers for pid %d (is it running ncclbpf, as you, with the same NCCLBPF_CTL_DIR?)",
					 (unsigned)geteuid(), pid);
			*errmsg = ncclbpf_errmsg();
			return n < 0 ? n : -ESRCH;
		}
	}
	return nbpf_ctl_call_path(path, type, payload, resp, errmsg);
}

int nbpf_ctl_list_pids(int **pids)
{
	struct nbpf_ctl_proc *all;
	int n = nbpf_ctl_list(&all), k = 0;

	*pids = NULL;
	if (n < 0)
		return n;
	*pids = malloc((size_t)(n ? n : 1) * sizeof(int));
	if (!*pids) {
		free(all);
		return nbpf_err(-ENOMEM, "out of memory");
	}
	/* Processes whose pid we cannot see (pid 0) cannot be named by pid: left out. */
	for (int i = 0; i < n; i++)
		if (all[i].pid > 0 && (!k || (*pids)[k - 1] != all[i].pid))
			(*pids)[k++] = all[i].pid;
	free(all);
	return k;
}
