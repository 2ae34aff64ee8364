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
int nbpf_ctl_client_timeout_ms(void)
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
	return nbpf_ctl_call_path_ms(path, type, payload, nbpf_ctl_client_timeout_ms(), resp,
				     errmsg);
}

int nbpf_ctl_call_path_ms(const char *path, int type, const char *payload, int timeout_ms,
			  struct nbpf_ctl_msg *resp, const char **errmsg)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int64_t deadline = now_ms() + timeout_ms;
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

int nbpf_ctl_pid_path(int pid, char *path, size_t n)
{
	struct nbpf_ctl_proc *all = NULL;
	int k;

	if (!lookup(pid, path, n))
		return 0;
	k = nbpf_ctl_list(&all);
	free(all);
	if (k < 0)
		return k;
	if (lookup(pid, path, n))
		return nbpf_err(-ESRCH, "no control socket of uid %u answers for pid %d (is it running ncclbpf, as you, with the same NCCLBPF_CTL_DIR?)",
				(unsigned)geteuid(), pid);
	return 0;
}

int nbpf_ctl_call_pid(int pid, int type, const char *payload, struct nbpf_ctl_msg *resp,
		      const char **errmsg)
{
	char path[108];
	int err;

	memset(resp, 0, sizeof(*resp));
	if ((err = nbpf_ctl_pid_path(pid, path, sizeof(path)))) {
		*errmsg = ncclbpf_errmsg();
		return err;
	}
	return nbpf_ctl_call_path(path, type, payload, resp, errmsg);
}

/* ---- many requests at once ------------------------------------------------------ */

struct call_io {
	int fd;
	uint8_t hdr[NBPF_CTL_HDR_SIZE];
	uint8_t *out, *in;
	size_t out_len, out_off, in_len, in_off;
	bool done;
};

static void call_fail(struct nbpf_ctl_call *c, struct call_io *io, int err, const char *fmt,
		      const char *why)
{
	snprintf(c->errbuf, sizeof(c->errbuf), fmt, c->path, why);
	c->err = err;
	c->errmsg = c->errbuf;
	io->done = true;
}

/* Connects and queues the request frame; a failure here is certain: nothing was sent. */
static void call_open(struct nbpf_ctl_call *c, struct call_io *io)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t plen = c->payload ? strlen(c->payload) : 0;

	io->fd = -1;
	if (strlen(c->path) >= sizeof(sa.sun_path) || plen > NBPF_CTL_MAX_REQUEST) {
		call_fail(c, io, -EINVAL, "%s: %s", "bad socket path or request too large");
		return;
	}
	memcpy(sa.sun_path, c->path, strlen(c->path) + 1);
	io->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (io->fd < 0 || connect(io->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		call_fail(c, io, -errno, "%s: %s", strerror(errno));
		return;
	}
	io->out = malloc(NBPF_CTL_HDR_SIZE + plen);
	if (!io->out) {
		call_fail(c, io, -ENOMEM, "%s: %s", "out of memory");
		return;
	}
	nbpf_ctl_hdr_encode(io->out, (uint16_t)c->type, (uint32_t)plen);
	if (plen)
		memcpy(io->out + NBPF_CTL_HDR_SIZE, c->payload, plen);
	io->out_len = NBPF_CTL_HDR_SIZE + plen;
}

/* Moves what the socket allows; sets done once the response is parsed. */
static void call_step(struct nbpf_ctl_call *c, struct call_io *io, short rev)
{
	struct nbpf_ctl_hdr h;
	ssize_t n;

	if ((rev & POLLOUT) && io->out_off < io->out_len) {
		n = send(io->fd, io->out + io->out_off, io->out_len - io->out_off, MSG_NOSIGNAL);
		if (n > 0)
			io->out_off += (size_t)n;
		if (io->out_off == io->out_len)
			c->sent = true;
		if (n < 0 && errno != EAGAIN && errno != EINTR && errno != EPIPE && errno != ECONNRESET)
			return call_fail(c, io, -errno, "%s: %s", strerror(errno));
	}
	if (!(rev & (POLLIN | POLLHUP | POLLERR)))
		return;
	if (!io->in) {
		n = recv(io->fd, io->hdr + io->in_off, NBPF_CTL_HDR_SIZE - io->in_off, 0);
		if (n == 0)
			return call_fail(c, io, -ECONNRESET, "%s: %s", "connection closed by the process");
		if (n < 0)
			return (errno == EAGAIN || errno == EINTR) ? (void)0
				: call_fail(c, io, -errno, "%s: %s", strerror(errno));
		io->in_off += (size_t)n;
		if (io->in_off < NBPF_CTL_HDR_SIZE)
			return;
		if (nbpf_ctl_hdr_decode(io->hdr, NBPF_CTL_MAX_RESPONSE, &h))
			return call_fail(c, io, -EPROTO, "%s: %s", ncclbpf_errmsg());
		io->in_len = h.len;
		io->in_off = 0;
		io->in = malloc(h.len ? h.len : 1);
		if (!io->in)
			return call_fail(c, io, -ENOMEM, "%s: %s", "out of memory");
	}
	if (io->in_off < io->in_len) {
		n = recv(io->fd, io->in + io->in_off, io->in_len - io->in_off, 0);
		if (n == 0)
			return call_fail(c, io, -ECONNRESET, "%s: %s", "connection closed mid-answer");
		if (n < 0)
			return (errno == EAGAIN || errno == EINTR) ? (void)0
				: call_fail(c, io, -errno, "%s: %s", strerror(errno));
		io->in_off += (size_t)n;
	}
	if (io->in_off < io->in_len)
		return;
	if (nbpf_ctl_msg_parse((uint16_t)(c->type | NBPF_CTL_REPLY), io->in, io->in_len, &c->resp))
		return call_fail(c, io, -EPROTO, "%s: %s", ncclbpf_errmsg());
	c->err = nbpf_ctl_msg_status(&c->resp, &c->errmsg);
	c->answered = true;
	io->done = true;
}

int nbpf_ctl_call_all(struct nbpf_ctl_call *calls, int n, int timeout_ms)
{
	struct call_io *io = calloc((size_t)(n ? n : 1), sizeof(*io));
	struct pollfd *pfd = calloc((size_t)(n ? n : 1), sizeof(*pfd));
	int64_t deadline = now_ms() + timeout_ms;
	int answered = 0;

	for (int i = 0; i < n; i++) {
		memset(&calls[i].resp, 0, sizeof(calls[i].resp));
		calls[i].err = -ETIMEDOUT;
		calls[i].answered = false;
		calls[i].sent = false;
		calls[i].errmsg = calls[i].errbuf;
		snprintf(calls[i].errbuf, sizeof(calls[i].errbuf),
			 "%s: no answer within %d ms (the process may still read the request)",
			 calls[i].path, timeout_ms);
		if (io && pfd)
			call_open(&calls[i], &io[i]);
	}
	for (;;) {
		int64_t left = deadline - now_ms();
		int k = 0;

		for (int i = 0; io && pfd && i < n; i++)
			if (!io[i].done)
				pfd[k++] = (struct pollfd){ .fd = io[i].fd, .events = (short)(POLLIN |
							    (io[i].out_off < io[i].out_len ? POLLOUT : 0)) };
		if (!k || left <= 0)
			break;
		if (poll(pfd, (nfds_t)k, (int)left) < 0 && errno != EINTR)
			break;
		k = 0;
		for (int i = 0; i < n; i++)
			if (!io[i].done)
				call_step(&calls[i], &io[i], pfd[k++].revents);
	}
	for (int i = 0; i < n; i++) {
		answered += calls[i].answered;
		if (io) {
			if (io[i].fd >= 0)
				close(io[i].fd);
			free(io[i].out);
			free(io[i].in);
		}
	}
	free(io);
	free(pfd);
	return answered;
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
