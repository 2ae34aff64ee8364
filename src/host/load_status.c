/* SPDX-License-Identifier: Apache-2.0 */
/*
 * load_status.c - the last NCCLBPF_STATUS_HISTORY load attempts, loaded or
 * refused, for the control plane's PS reply and the plugin's exported
 * status table (ncclbpf/status.h).
 *
 * Written by nbpf_host_load_image with the host lock held (so attempts are
 * numbered in the order they finish), read under the same lock.  Static
 * storage: recording never allocates, so even an attempt refused for lack
 * of memory is recorded.
 *
 * Beside the ring, monotonic counters of attempts, refusals and rollbacks
 * for the exporter: the ring forgets, an alert needs counts that only grow
 * for the life of the process (reloads and rollbacks never reset them).
 */
#include "load_status.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "host.h"

static struct ncclbpf_load_status g_hist[NCCLBPF_STATUS_HISTORY]; /* ring, under the host lock */
static uint64_t g_seq;                                           /* attempts so far */
static struct nbpf_load_counts g_counts;                         /* under the host lock */

static void copy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

static struct ncclbpf_load_status *next_slot(const char *spec)
{
	struct ncclbpf_load_status *s = &g_hist[g_seq % NCCLBPF_STATUS_HISTORY];
	struct timespec ts;

	memset(s, 0, sizeof(*s));
	s->seq = ++g_seq;
	clock_gettime(CLOCK_REALTIME, &ts);
	s->at = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	copy(s->spec, sizeof(s->spec), spec);
	return s;
}

/* Each map once: objects of one image share maps of the same shape. */
static void add_maps(struct ncclbpf_load_status *s, const struct nbpf_image *img)
{
	const struct ncclbpf_map *seen[256];
	size_t n_seen = 0;

	for (uint32_t o = 0; o < img->n_objs; o++) {
		size_t n = ncclbpf_object__map_count(img->objs[o]);

		for (size_t m = 0; m < n; m++) {
			const struct ncclbpf_map *map = ncclbpf_object__map(img->objs[o], m);
			struct ncclbpf_load_map *lm;
			bool dup = false;

			for (size_t k = 0; k < n_seen && !dup; k++)
				dup = seen[k] == map;
			if (!map || dup)
				continue;
			if (n_seen < sizeof(seen) / sizeof(seen[0]))
				seen[n_seen++] = map;
			if (s->n_maps++ >= NCCLBPF_STATUS_MAX_MAPS)
				continue;
			lm = &s->maps[s->n_maps - 1];
			copy(lm->name, sizeof(lm->name), ncclbpf_map__name(map));
			lm->type = (uint32_t)ncclbpf_map__type(map);
			lm->key_size = ncclbpf_map__key_size(map);
			lm->value_size = ncclbpf_map__value_size(map);
			lm->max_entries = ncclbpf_map__max_entries(map);
		}
	}
}

void nbpf_load_status_loaded_locked(const struct nbpf_image *img)
{
	struct ncclbpf_load_status *s = next_slot(img->spec);

	g_counts.attempts++;
	g_counts.loaded++;
	s->load_ns = img->load_ns;
	s->n_objs = img->n_objs;
	s->n_progs = img->n_progs;
	s->n_env = img->n_env;
	for (uint32_t i = 0; i < img->n_objs && i < NCCLBPF_STATUS_MAX_OBJS; i++) {
		copy(s->objs[i].name, sizeof(s->objs[i].name), ncclbpf_object__name(img->objs[i]));
		copy(s->objs[i].tag, sizeof(s->objs[i].tag), ncclbpf_object__tag(img->objs[i]));
	}
	for (uint32_t i = 0; i < img->n_progs && i < NCCLBPF_STATUS_MAX_PROGS; i++) {
		const struct nbpf_host_prog *p = &img->progs[i];
		struct ncclbpf_load_prog *lp = &s->progs[i];

		copy(lp->name, sizeof(lp->name), p->name);
		copy(lp->obj, sizeof(lp->obj), p->obj_name);
		copy(lp->hook, sizeof(lp->hook), ncclbpf_hooks[p->hook].name);
		lp->insns = p->insns;
		lp->jit = p->func != NULL;
		lp->warning = p->consistency_warning;
		copy(lp->tag, sizeof(lp->tag), p->tag);
	}
	add_maps(s, img);
	copy(s->message, sizeof(s->message), img->warnings);
}

void nbpf_load_status_refused_locked(const char *spec, int err, const char *obj,
				     const char *prog, const char *why, uint64_t load_ns)
{
	struct ncclbpf_load_status *s = next_slot(spec);

	g_counts.attempts++;
	/* -EACCES on a named program is the verifier's verdict; the rest is reading or loading. */
	if (err == -EACCES && prog)
		g_counts.refused_verifier++;
	else
		g_counts.refused_loader++;
	s->err = err < 0 ? err : -EINVAL;
	s->load_ns = load_ns;
	copy(s->refused_obj, sizeof(s->refused_obj), obj);
	copy(s->refused_prog, sizeof(s->refused_prog), prog);
	copy(s->message, sizeof(s->message), why);
}

int nbpf_host_load_status(unsigned back, struct ncclbpf_load_status *out, size_t size)
{
	int err = 0;

	if (!out)
		return -EINVAL;
	nbpf_host_lock();
	if (back >= NCCLBPF_STATUS_HISTORY || back >= g_seq)
		err = -ENOENT;
	else
		memcpy(out, &g_hist[(g_seq - 1 - back) % NCCLBPF_STATUS_HISTORY],
		       size < sizeof(*out) ? size : sizeof(*out));
	nbpf_host_unlock();
	return err;
}

void nbpf_load_status_rolled_back_locked(void)
{
	g_counts.rollbacks++;
}

void nbpf_host_load_counts(struct nbpf_load_counts *out)
{
	nbpf_host_lock();
	*out = g_counts;
	nbpf_host_unlock();
}
