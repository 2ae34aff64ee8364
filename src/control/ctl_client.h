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
/* Same, to process pid's socket in the runtime directory. */
int nbpf_ctl_call_pid(int pid, int type, const char *payload, struct nbpf_ctl_msg *resp,
		      const char **errmsg);

/*
 * Pids with a socket in the runtime directory whose process is alive,
 * ascending (stale sockets of dead processes are skipped).  *pids is
 * malloc'ed.  Returns the count or a negative errno.
 */
int nbpf_ctl_list_pids(int **pids);

#endif
