/*
 * ctl_server.h - the control socket's server: one background thread that
 * accepts owner-only connections on <runtime dir>/<pid>.<token>.sock, reads one
 * framed request per connection, hands it to a handler and writes the
 * response.  It never touches the hot path; the handler runs on this thread.
 *
 * Robustness: clients are multiplexed with poll(), all sockets are
 * non-blocking, and every connection has a deadline (default 2 s) covering
 * the whole exchange, so a client that stalls mid-frame or never reads its
 * response is dropped without delaying others.  Peer credentials
 * (SO_PEERCRED) are checked on every connection: another uid gets an error
 * frame, a WARN in the log, and is disconnected.
 */
#ifndef NCCLBPF_CTL_SERVER_H
#define NCCLBPF_CTL_SERVER_H

#include <stdint.h>

#include "ctl_proto.h"

struct nbpf_ctl_server;

/*
 * Fills resp with data records (the server prepends the status record) and
 * returns 0, or returns a negative errno with *errmsg (static or owned by
 * the handler until the next call) describing the failure.
 */
typedef int (*nbpf_ctl_handler_fn)(void *user, const struct nbpf_ctl_msg *req,
				   struct nbpf_ctl_buf *resp, char *errmsg, size_t errmsg_len);

struct nbpf_ctl_server_opts {
	const char *dir;        /* NULL: nbpf_ctl_runtime_dir() */
	nbpf_ctl_handler_fn handler;
	void *user;
	int client_timeout_ms;  /* 0: 2000 (the plugin passes NCCLBPF_CTL_TIMEOUT_MS) */
	int max_clients;        /* 0: 16 */
	/*
	 * Optional extra descriptor (e.g. inotify) polled by the same thread:
	 * on_extra runs on it when extra_fd is readable.  extra_fd < 0 or
	 * on_extra NULL: none.  The server does not close it.
	 */
	int extra_fd;
	void (*on_extra)(void *user);
};

/* Creates the socket and starts the thread. */
int nbpf_ctl_server_start(const struct nbpf_ctl_server_opts *opts, struct nbpf_ctl_server **out);
/* Stops and joins the thread, closes every connection and removes the socket file. */
void nbpf_ctl_server_stop(struct nbpf_ctl_server *srv);
const char *nbpf_ctl_server_path(const struct nbpf_ctl_server *srv);

/* Statistics, for tests: connections refused for credentials, dropped for timeouts, bad frames. */
struct nbpf_ctl_server_stats {
	uint64_t accepted, refused_cred, timed_out, bad_frames, served;
};
void nbpf_ctl_server_stats(const struct nbpf_ctl_server *srv, struct nbpf_ctl_server_stats *st);

#endif
