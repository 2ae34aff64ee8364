/*
 * ctl_server.c - the control socket's thread (see ctl_server.h).
 */
#include "ctl_server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ncclbpf/runtime.h"
#include "runtime/error.h"
#include "runtime/rundir.h"

enum { ST_READ, ST_WRITE };

struct ctl_client {
	int fd;
	int state;
	uint8_t hdr[NBPF_CTL_HDR_SIZE];
	size_t got;             /* bytes of header + body read so far */
	struct nbpf_ctl_hdr h;
	uint8_t *body;
	uint8_t *out;
	size_t out_len, out_off;
	int64_t deadline_ms;
};

struct nbpf_ctl_server {
	char path[108];
	int listen_fd;
	int stop_pipe[2];
	pthread_t thread;
	nbpf_ctl_handler_fn handler;
	void *user;
	int timeout_ms;
	int max_clients;
	int extra_fd;
	void (*on_extra)(void *user);
	struct ctl_client *clients;
	int n_clients;
	_Atomic uint64_t accepted, refused_cred, timed_out, bad_frames, served;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void client_close(struct nbpf_ctl_server *srv, int i)
{
	struct ctl_client *c = &srv->clients[i];

	close(c->fd);
	free(c->body);
	free(c->out);
	srv->clients[i] = srv->clients[--srv->n_clients];
}

/* Queues the response frame: status record first, then the handler's records. */
static void client_respond(struct ctl_client *c, uint16_t type, int err, const char *msg,
			   const struct nbpf_ctl_buf *data)
{
	struct nbpf_ctl_buf b = { .max = NBPF_CTL_MAX_RESPONSE };

	nbpf_ctl_buf_rec(&b, "status");
	nbpf_ctl_buf_i64(&b, "err", err);
	nbpf_ctl_buf_str(&b, "msg", msg ? msg : "");
	if (!err && data && data->len) {
		nbpf_ctl_buf_append(&b, "\n", 1);
		nbpf_ctl_buf_append(&b, data->data, data->len);
	}
	free(c->out);
	c->out = NULL;
	if (b.err) {
		/* Fall back to a minimal frame that always fits. */
		nbpf_ctl_buf_free(&b);
		b = (struct nbpf_ctl_buf){ .max = 4096 };
		nbpf_ctl_buf_rec(&b, "status");
		nbpf_ctl_buf_i64(&b, "err", -EMSGSIZE);
		nbpf_ctl_buf_str(&b, "msg", "response too large");
	}
	c->out = malloc(NBPF_CTL_HDR_SIZE + b.len);
	if (c->out) {
		nbpf_ctl_hdr_encode(c->out, (uint16_t)(type | NBPF_CTL_REPLY), (uint32_t)b.len);
		if (b.len)
			memcpy(c->out + NBPF_CTL_HDR_SIZE, b.data, b.len);
		c->out_len = NBPF_CTL_HDR_SIZE + b.len;
	} else {
		c->out_len = 0;
	}
	c->out_off = 0;
	c->state = ST_WRITE;
	nbpf_ctl_buf_free(&b);
}

static void client_dispatch(struct nbpf_ctl_server *srv, struct ctl_client *c)
{
	struct nbpf_ctl_msg req;
	struct nbpf_ctl_buf data = { .max = NBPF_CTL_MAX_RESPONSE - 4096 };
	char errmsg[1024] = "";
	int err;

	if (!c->h.type || c->h.type > NBPF_CTL_TYPE_MAX) {
		atomic_fetch_add(&srv->bad_frames, 1);
		client_respond(c, c->h.type, -EOPNOTSUPP, "unknown request type", NULL);
		return;
	}
	err = nbpf_ctl_msg_parse(c->h.type, c->body, c->h.len, &req);
	if (err) {
		atomic_fetch_add(&srv->bad_frames, 1);
		client_respond(c, c->h.type, err, ncclbpf_errmsg(), NULL);
		nbpf_ctl_msg_free(&req);
		return;
	}
	err = srv->handler ? srv->handler(srv->user, &req, &data, errmsg, sizeof(errmsg))
			   : -EOPNOTSUPP;
	if (!err && data.err) {
		err = data.err;
		snprintf(errmsg, sizeof(errmsg), "response too large");
	}
	if (err && !errmsg[0])
		snprintf(errmsg, sizeof(errmsg), "%s", strerror(-err));
	client_respond(c, c->h.type, err, errmsg, &data);
	atomic_fetch_add(&srv->served, 1);
	nbpf_ctl_msg_free(&req);
	nbpf_ctl_buf_free(&data);
}

/* Reads what is available; dispatches once the frame is complete. 0 keep, -1 drop. */
static int client_read(struct nbpf_ctl_server *srv, struct ctl_client *c)
{
	for (;;) {
		uint8_t *dst;
		size_t want;
		ssize_t n;

		if (c->got < NBPF_CTL_HDR_SIZE) {
			dst = c->hdr + c->got;
			want = NBPF_CTL_HDR_SIZE - c->got;
		} else {
			dst = c->body + (c->got - NBPF_CTL_HDR_SIZE);
			want = NBPF_CTL_HDR_SIZE + c->h.len - c->got;
		}
		if (want) {
			n = recv(c->fd, dst, want, 0);
			if (n < 0)
				return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
			if (n == 0)
				return -1; /* peer closed before a whole frame: nothing to answer */
			c->got += (size_t)n;
		}
		if (c->got == NBPF_CTL_HDR_SIZE && !c->body) {
			int err = nbpf_ctl_hdr_decode(c->hdr, NBPF_CTL_MAX_REQUEST, &c->h);

			if (err) {
				atomic_fetch_add(&srv->bad_frames, 1);
				client_respond(c, c->h.type, err, ncclbpf_errmsg(), NULL);
				return 0;
			}
			c->body = malloc(c->h.len ? c->h.len : 1);
			if (!c->body)
				return -1;
		}
		if (c->body && c->got == NBPF_CTL_HDR_SIZE + c->h.len) {
			client_dispatch(srv, c);
			return 0;
		}
	}
}

/* Writes what the socket takes. 0 keep, 1 done, -1 drop. */
static int client_write(struct ctl_client *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);

		if (n < 0)
			return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
		c->out_off += (size_t)n;
	}
	return 1;
}

static void accept_clients(struct nbpf_ctl_server *srv)
{
	while (srv->n_clients < srv->max_clients) {
		int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct ctl_client *c;
		struct ucred cred;
		socklen_t len = sizeof(cred);

		if (fd < 0)
			return;
		atomic_fetch_add(&srv->accepted, 1);
		c = &srv->clients[srv->n_clients++];
		memset(c, 0, sizeof(*c));
		c->fd = fd;
		c->deadline_ms = now_ms() + srv->timeout_ms;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) || len != sizeof(cred) ||
		    cred.uid != geteuid()) {
			atomic_fetch_add(&srv->refused_cred, 1);
			nbpf_log(NCCLBPF_LOG_WARN,
				 "ncclbpf control: refused connection from pid %d uid %u (only uid %u may connect)",
				 (int)cred.pid, (unsigned)cred.uid, (unsigned)geteuid());
			client_respond(c, 0, -EPERM, "permission denied: peer uid differs from the process owner",
				       NULL);
		}
	}
}

static void *server_main(void *arg)
{
	struct nbpf_ctl_server *srv = arg;
	struct pollfd *pfd = calloc((size_t)srv->max_clients + 3, sizeof(*pfd));

	if (!pfd)
		return NULL;
	for (;;) {
		int64_t now = now_ms(), timeout = -1;
		int n = 0;

		pfd[n++] = (struct pollfd){ .fd = srv->stop_pipe[0], .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = srv->n_clients < srv->max_clients ? srv->listen_fd : -1,
					    .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = srv->on_extra ? srv->extra_fd : -1, .events = POLLIN };
		for (int i = 0; i < srv->n_clients; i++) {
			struct ctl_client *c = &srv->clients[i];
			int64_t left = c->deadline_ms - now;

			pfd[n++] = (struct pollfd){ .fd = c->fd,
						    .events = c->state == ST_READ ? POLLIN : POLLOUT };
			if (left < 0)
				left = 0;
			if (timeout < 0 || left < timeout)
				timeout = left;
		}
		if (poll(pfd, (nfds_t)n, (int)timeout) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents)
			break;
		/* Walk backwards: client_close moves the last client into the freed slot. */
		now = now_ms();
		for (int i = srv->n_clients - 1; i >= 0; i--) {
			struct ctl_client *c = &srv->clients[i];
			short rev = pfd[3 + i].revents;
			int r = 0;

			if (rev && c->state == ST_READ)
				r = client_read(srv, c);
			if (r == 0 && c->state == ST_WRITE && (rev || c->out_off == 0))
				r = client_write(c);
			if (r == 0 && (rev & (POLLERR | POLLNVAL)))
				r = -1;
			if (r == 0 && now >= c->deadline_ms) {
				atomic_fetch_add(&srv->timed_out, 1);
				r = -1;
			}
			if (r)
				client_close(srv, i);
		}
		if (pfd[1].revents & POLLIN)
			accept_clients(srv);
		if (pfd[2].revents & POLLIN)
			srv->on_extra(srv->user);
	}
	while (srv->n_clients)
		client_close(srv, srv->n_clients - 1);
	free(pfd);
	return NULL;
}

/*
 * Removes sockets of ours that nobody listens on any more.  Refused
 * connections prove it (a listening socket answers or, when its backlog is
 * full, says EAGAIN), whatever pid namespace the owner ran in; the name is
 * only linked after listen(), so a socket being set up is never refused.
 * Never blocks: the probe is non-blocking, and a live owner just sees one
 * connection that closes at once.
 */
static void reap_stale(const char *dir)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;
		int fd;

		if (!nbpf_ctl_sock_name(de->d_name, NULL) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISSOCK(st.st_mode) || st.st_uid != geteuid() ||
		    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, de->d_name) >=
			    (int)sizeof(sa.sun_path))
			continue;
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			break;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno == ECONNREFUSED)
			unlinkat(dirfd(d), de->d_name, 0);
		close(fd);
	}
	closedir(d);
}

/*
 * Binds <dir>/<instance>.sock.  The socket is bound under a temporary name
 * of this instance, listens, and only then gets its name with link(),
 * which fails rather than replace anything: no file of another process is
 * ever unlinked or taken over, and a reaper never sees it half set up.
 */
int nbpf_ctl_server_start(const struct nbpf_ctl_server_opts *opts, struct nbpf_ctl_server **out)
{
	struct nbpf_ctl_server *srv;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[4096];
	int err;

	*out = NULL;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return nbpf_err(-ENOMEM, "control: out of memory");
	srv->listen_fd = -1;
	srv->stop_pipe[0] = srv->stop_pipe[1] = -1;
	srv->handler = opts->handler;
	srv->user = opts->user;
	srv->extra_fd = opts->on_extra ? opts->extra_fd : -1;
	srv->on_extra = opts->on_extra;
	srv->timeout_ms = opts->client_timeout_ms > 0 ? opts->client_timeout_ms : 2000;
	srv->max_clients = opts->max_clients > 0 ? opts->max_clients : 16;
	srv->clients = calloc((size_t)srv->max_clients, sizeof(*srv->clients));
	if (!srv->clients) {
		err = nbpf_err(-ENOMEM, "control: out of memory");
		goto fail;
	}
	if (opts->dir) {
		snprintf(dir, sizeof(dir), "%s", opts->dir);
	} else if ((err = nbpf_ctl_runtime_dir(dir, sizeof(dir), true))) {
		goto fail;
	}
	if ((err = nbpf_ctl_sock_path(srv->path, sizeof(srv->path), dir, nbpf_instance_id())))
		goto fail;
	/* "<instance>.new" is shorter than "<instance>.sock", so it fits too. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.*s.new", (int)(strlen(srv->path) - 5),
		 srv->path);
	reap_stale(dir);
	srv->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (srv->listen_fd < 0) {
		err = nbpf_err(-errno, "control: socket: %s", strerror(errno));
		goto fail;
	}
	if (bind(srv->listen_fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = nbpf_err(-errno, "control: bind %s: %s", sa.sun_path, strerror(errno));
		goto fail;
	}
	if (chmod(sa.sun_path, 0600) || listen(srv->listen_fd, 64) || link(sa.sun_path, srv->path)) {
		err = nbpf_err(-errno, "control: %s: %s", srv->path, strerror(errno));
		unlink(sa.sun_path);
		goto fail;
	}
	unlink(sa.sun_path);
	if (pipe2(srv->stop_pipe, O_CLOEXEC)) {
		err = nbpf_err(-errno, "control: pipe: %s", strerror(errno));
		unlink(srv->path);
		goto fail;
	}
	err = -pthread_create(&srv->thread, NULL, server_main, srv);
	if (err) {
		nbpf_err(err, "control: cannot start thread: %s", strerror(-err));
		unlink(srv->path);
		goto fail;
	}
	*out = srv;
	return 0;
fail:
	if (srv->listen_fd >= 0)
		close(srv->listen_fd);
	if (srv->stop_pipe[0] >= 0) {
		close(srv->stop_pipe[0]);
		close(srv->stop_pipe[1]);
	}
	free(srv->clients);
	free(srv);
	return err;
}

void nbpf_ctl_server_stop(struct nbpf_ctl_server *srv)
{
	char b = 1;

	if (!srv)
		return;
	while (write(srv->stop_pipe[1], &b, 1) < 0 && errno == EINTR)
		;
	pthread_join(srv->thread, NULL);
	unlink(srv->path);
	close(srv->listen_fd);
	close(srv->stop_pipe[0]);
	close(srv->stop_pipe[1]);
	free(srv->clients);
	free(srv);
}

const char *nbpf_ctl_server_path(const struct nbpf_ctl_server *srv)
{
	return srv->path;
}

void nbpf_ctl_server_stats(const struct nbpf_ctl_server *srv, struct nbpf_ctl_server_stats *st)
{
	struct nbpf_ctl_server *s = (struct nbpf_ctl_server *)srv;

	st->accepted = atomic_load(&s->accepted);
	st->refused_cred = atomic_load(&s->refused_cred);
	st->timed_out = atomic_load(&s->timed_out);
	st->bad_frames = atomic_load(&s->bad_frames);
	st->served = atomic_load(&s->served);
}
