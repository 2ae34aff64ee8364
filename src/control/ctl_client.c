/*
 * ctl_client.c - connects to a process's control socket, sends one framed
 * request and reads the framed response within one deadline.
 */
#include "ctl_client.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ncclbpf/runtime.h"
#include "runtime/error.h"

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

int nbpf_ctl_call_path(const char *path, int type, const char *payload,
		       struct nbpf_ctl_msg *resp, const char **errmsg)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *tmo = getenv("NCCLBPF_CTL_TIMEOUT_MS");
	int64_t deadline = now_ms() + ((tmo && atoi(tmo) > 0) ? atoi(tmo) : NBPF_CTL_CLIENT_TIMEOUT_MS);
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

int nbpf_ctl_call_pid(int pid, int type, const char *payload, struct nbpf_ctl_msg *resp,
		      const char **errmsg)
{
	char dir[4096], path[4200];
	int err;

	memset(resp, 0, sizeof(*resp));
	if ((err = nbpf_ctl_runtime_dir(dir, sizeof(dir), false)) ||
	    (err = nbpf_ctl_sock_path(path, sizeof(path), dir, pid))) {
		*errmsg = ncclbpf_errmsg();
		return err;
	}
	return nbpf_ctl_call_path(path, type, payload, resp, errmsg);
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

int nbpf_ctl_list_pids(int **pids)
{
	char dir[4096];
	struct dirent *de;
	DIR *d;
	int n = 0, cap = 0, err;

	*pids = NULL;
	if ((err = nbpf_ctl_runtime_dir(dir, sizeof(dir), false)))
		return err == -ENOENT ? 0 : err;
	d = opendir(dir);
	if (!d)
		return nbpf_err(-errno, "%s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (pid <= 0 || strcmp(end, ".sock"))
			continue;
		/* kill(pid, 0): EPERM still means alive (someone else's pid reused). */
		if (kill((pid_t)pid, 0) && errno == ESRCH)
			continue;
		if (n == cap) {
			int *np = realloc(*pids, (size_t)(cap = cap ? cap * 2 : 16) * sizeof(int));

			if (!np) {
				closedir(d);
				free(*pids);
				*pids = NULL;
				return nbpf_err(-ENOMEM, "out of memory");
			}
			*pids = np;
		}
		(*pids)[n++] = (int)pid;
	}
	closedir(d);
	if (n) /* qsort's array may not be NULL, even for no elements */
		qsort(*pids, (size_t)n, sizeof(int), cmp_int);
	return n;
}
