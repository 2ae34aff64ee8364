/*
 * ctl_handlers.h - answers to control requests, from the host's registry
 * and images (see ctl_proto.h for the record kinds each request returns).
 */
#ifndef NCCLBPF_CTL_HANDLERS_H
#define NCCLBPF_CTL_HANDLERS_H

#include <stddef.h>
#include <stdint.h>

#include "ctl_proto.h"

/* Fills resp; on failure returns a negative errno and writes errmsg. */
int nbpf_ctl_handle(const struct nbpf_ctl_msg *req, struct nbpf_ctl_buf *resp, char *errmsg,
		    size_t errlen);

/*
 * Loads spec (':'-separated objects), verifies and compiles it, and
 * publishes it to activate at at_call (0: at once).  deadline (CLOCK_REALTIME
 * ns, 0: none): refused with -ETIMEDOUT, nothing changed, when it has
 * passed before the publish.  On failure nothing changes and errmsg says
 * why.  resp may be NULL.
 */
int nbpf_ctl_reload(const char *spec, uint64_t at_call, uint64_t deadline,
		    struct nbpf_ctl_buf *resp, char *errmsg, size_t errlen);
/*
 * An extra source of telemetry records, registered by a layer above (the
 * net plugin's per-peer "npeer" records): called on the control thread for
 * each telemetry request, after the communicators' records.  NULL clears.
 */
typedef void (*nbpf_ctl_tele_source_t)(struct nbpf_ctl_buf *b);
void nbpf_ctl_set_tele_source(nbpf_ctl_tele_source_t fn);

/* The agreed-change requests: stage, commit, abort, changes, lease (ctl_change.c). */
int nbpf_ctl_handle_change(const struct nbpf_ctl_msg *req, struct nbpf_ctl_buf *resp,
			   char *errmsg, size_t errlen);

/* Highest tuner call number over this process's communicators. */
uint64_t nbpf_ctl_max_calls(void);

#endif
