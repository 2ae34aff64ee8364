/*
 * ctl_client.h - the client side of the control socket (the ncclbpf
 * command, tests, benchmarks): find the processes running the plugin and
 * exchange one request/response with one of them (see ctl_proto.h for the
 * protocol).
 */
#ifndef NCCLBPF_CTL_CLIENT_H
#define NCCLBPF_CTL_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "ctl_proto.h"
#include "runtime/rundir.h"

/* Default time a whole exchange may take, in ms ($NCCLBPF_CTL_TIMEOUT_MS overrides). */
#define NBPF_CTL_CLIENT_TIMEOUT_MS 5000

/*
 * Sends one request (payload: record text, may be NULL) to the socket at
 * path and parses the response into resp (free with nbpf_ctl_msg_free,
 * also on failure).  Returns the response's status err (0 or a negative
 * errno, message in *errmsg, which points into resp), or a negative errno
 * for transport failures (message through ncclbpf_errmsg(), *errmsg set to
 * it as well).
 */
int nbpf_ctl_call_path(const char *path, int type, const char *payload,
		       struct nbpf_ctl_msg *resp, const char **errmsg);
/* Same, with the whole exchange bounded by timeout_ms instead of the default. */
int nbpf_ctl_call_path_ms(const char *path, int type, const char *payload, int timeout_ms,
			  struct nbpf_ctl_msg *resp, const char **errmsg);

/*
 * One request of nbpf_ctl_call_all.  In: path, type, payload.  Out: resp
 * (free with nbpf_ctl_msg_free), err (the process's answer, or a transport
 * error), errmsg, and answered: a whole response came back, so err is
 * what the process did; otherwise nothing is known of what it did with
 * the request (it may have read it, or may read it later).
 */
struct nbpf_ctl_call {
	const char *path;
	int type;
	const char *payload;
	struct nbpf_ctl_msg resp;
	int err;
	bool answered;
	bool sent;            /* the whole request reached the socket (else it cannot be read) */
	const char *errmsg;   /* points into resp or errbuf */
	char errbuf[256];
};

/*
 * Sends every request at once (one connection each) and waits for the
 * answers, all within timeout_ms: a process that is stopped or slow holds
 * up only its own call.  Returns how many were answered.
 */
int nbpf_ctl_call_all(struct nbpf_ctl_call *calls, int n, int timeout_ms);

/* The client's default exchange time ($NCCLBPF_CTL_TIMEOUT_MS, else NBPF_CTL_CLIENT_TIMEOUT_MS). */
int nbpf_ctl_client_timeout_ms(void);

/*
 * Same, to the process with this pid (as this process sees it), found by
 * its socket in the runtime directories.
 */
int nbpf_ctl_call_pid(int pid, int type, const char *payload, struct nbpf_ctl_msg *resp,
		      const char **errmsg);

/* A process answering on a control socket of ours. */
struct nbpf_ctl_proc {
	int pid;     /* as this process sees it (SO_PEERCRED); 0: in a pid namespace we cannot see */
	int ns_pid;  /* as the process sees itself (from the socket's name) */
	char path[108];
	char instance[NBPF_INSTANCE_MAX];
};

/*
 * Every process with a live socket of ours in the runtime directories (the
 * configured one and its private fallbacks), by pid.  Sockets nobody
 * listens on, and sockets of other users, are skipped.  Several processes
 * may share a socket name's pid (pid namespaces): each is told apart by
 * the pid this process sees.  *procs malloc'ed; returns the count or a
 * negative errno.
 */
int nbpf_ctl_list(struct nbpf_ctl_proc **procs);

/* The visible pids of nbpf_ctl_list, ascending; *pids malloc'ed. */
int nbpf_ctl_list_pids(int **pids);

/* Socket path of the process with this (visible) pid, scanning when needed: 0 or -ESRCH. */
int nbpf_ctl_pid_path(int pid, char *path, size_t n);

#endif
