/* SPDX-License-Identifier: Apache-2.0 */
/*
 * load_status.h - private to src/host: recording load attempts
 * (ncclbpf/status.h; read through nbpf_host_load_status in host.h).
 */
#ifndef NCCLBPF_HOST_LOAD_STATUS_H
#define NCCLBPF_HOST_LOAD_STATUS_H

#include <stdint.h>

struct nbpf_image;

/* A loaded image (not yet published); the host lock is held. */
void nbpf_load_status_loaded_locked(const struct nbpf_image *img);
/*
 * A refused load of spec: obj and prog name what failed (NULL: not known),
 * why is the message the loader or verifier gave.  Host lock held.
 */
void nbpf_load_status_refused_locked(const char *spec, int err, const char *obj,
				     const char *prog, const char *why, uint64_t load_ns);
/* A rollback that re-published the previous image.  Host lock held. */
void nbpf_load_status_rolled_back_locked(void);

#endif
