/*
 * ctl_client.h - the client side of the control socket (the ncclbpf
 * command, tests, benchmarks): find the processes running the plugin and
 * exchange one request/response with one of them (see ctl_proto.h for the
 * protocol).
 */
#ifndef NCCLBPF_CTL_CLIENT_H
#define NCCLBPF_CTL_CLIENT_H

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

#endif
