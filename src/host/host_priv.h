/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_priv.h - private to src/host: what host.c (images, publish, the
 * registry) and change.c (staged changes, leases, derived images) share.
 */
#ifndef NCCLBPF_HOST_PRIV_H
#define NCCLBPF_HOST_PRIV_H

#include <pthread.h>

#include "host.h"

/* g_load_lock (taken before g_lock, never after) and g_lock itself. */
void nbpf_host_load_lock(void);
void nbpf_host_load_unlock(void);
pthread_mutex_t *nbpf_host_mutex(void);

/* Publish with g_lock (and for changes g_load_lock) held. */
int nbpf_host_publish_locked(struct nbpf_image *img, const struct nbpf_host_publish_opts *o,
			     uint64_t *late);
/* The rollback target (g_lock held), and forgetting it once src was re-published. */
struct nbpf_image *nbpf_host_rollback_target_locked(void);
void nbpf_host_rollback_done_locked(const struct nbpf_image *src);
/* An unpublished record borrowing src's objects and maps (g_lock held). */
struct nbpf_image *nbpf_host_image_borrow(const struct nbpf_image *src);
/*
 * A derived image of base (g_load_lock held): base's object bytes, base's
 * maps except those named in fresh, which are new and empty.
 */
int nbpf_host_load_from(const struct nbpf_image *base, const char *const *fresh, uint32_t n_fresh,
			struct nbpf_image **out, char *errbuf, size_t errlen);

/* Fills img->dmaps (host_maps.c). */
void nbpf_host_find_dmaps(struct nbpf_image *img);

/* change.c, called by host.c with g_lock held. */
const struct nbpf_image *nbpf_change_staged_locked(void);
/* A tuner comm is being created: waits while a change is staged (releases g_lock meanwhile). */
void nbpf_change_wait_locked(void);
/* The last release: drops a staged change, decisions and leases. */
void nbpf_change_reset_locked(void);

#endif
