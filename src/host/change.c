/* SPDX-License-Identifier: Apache-2.0 */
/*
 * change.c - agreed changes (see host.h): a change is staged (loaded,
 * verified, compiled, unpublished) until its coordinator commits it at
 * one agreed call or aborts it, and expires at its hold time; a lease
 * gives one writer (a loop) a map; a derived image carries map writes.
 *
 * Why a comm created while a change is staged waits for the decision:
 * the commit names the communicators that follow the agreed call (those
 * some process held when the change was staged); any other starts on the
 * new image at once.  A rank created between this process's stage and its
 * commit could not know yet which image it starts on, while a rank of the
 * same communicator created after the commit elsewhere starts on the new
 * one.  Waiting (bounded by hold) makes it start after the decision too.
 *
 * Everything here runs under the host lock (g_lock), and under the load
 * lock first where an image is built or published.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host_priv.h"
#include "load_status.h"

#define N_DONE   32 /* decided changes remembered, for retries and status */
/* A staged change holds new tuner communicators back: never for longer than this. */
#define MAX_HOLD_NS (120ull * 1000000000ull)
#define N_LEASES 16

static struct {
	bool on;
	struct nbpf_change_info info;
	struct nbpf_image *img;
	const struct nbpf_image *rollback_src; /* a staged rollback: what it re-publishes */
} g_st;

static struct nbpf_change_info g_done[N_DONE]; /* ring, g_n_done entries ever */
static unsigned g_n_done;
static pthread_cond_t g_decided = PTHREAD_COND_INITIALIZER;

static struct lease {
	char name[64];
	char owner[NBPF_HOST_OWNER];
	uint64_t until;
} g_leases[N_LEASES];

const char *nbpf_change_state_name(enum nbpf_change_state s)
{
	switch (s) {
	case NBPF_CHANGE_STAGED: return "staged";
	case NBPF_CHANGE_COMMITTED: return "committed";
	case NBPF_CHANGE_ABORTED: return "aborted";
	case NBPF_CHANGE_EXPIRED: return "expired";
	}
	return "?";
}

static void lock(void) { pthread_mutex_lock(nbpf_host_mutex()); }
static void unlock(void) { pthread_mutex_unlock(nbpf_host_mutex()); }

/* "HH:MM:SS.mmm" (UTC) of a CLOCK_REALTIME time, for messages. */
static const char *clock_str(uint64_t ns, char *buf, size_t n)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(buf, n, "%02d:%02d:%02d.%03u UTC", tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned)(ns / 1000000ull % 1000));
	return buf;
}

static const struct nbpf_change_info *done_find(const char *id)
{
	unsigned n = g_n_done < N_DONE ? g_n_done : N_DONE;

	for (unsigned k = 1; k <= n; k++) {
		const struct nbpf_change_info *d = &g_done[(g_n_done - k) % N_DONE];

		if (!strcmp(d->id, id))
			return d;
	}
	return NULL;
}

/* Ends the staged change with state; frees its image (never published). */
static void decide_locked(enum nbpf_change_state state)
{
	g_st.info.state = state;
	g_st.info.decided_at = nbpf_realtime_ns();
	g_done[g_n_done++ % N_DONE] = g_st.info;
	if (state != NBPF_CHANGE_COMMITTED)
		nbpf_host_image_free(g_st.img);
	if (state == NBPF_CHANGE_EXPIRED)
		nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_INIT,
			      "change %s (%s) expired undecided: dropped, nothing changed",
			      g_st.info.id, g_st.info.what);
	memset(&g_st, 0, sizeof(g_st));
	pthread_cond_broadcast(&g_decided);
}

static void expire_locked(void)
{
	if (g_st.on && nbpf_realtime_ns() >= g_st.info.hold)
		decide_locked(NBPF_CHANGE_EXPIRED);
}

const struct nbpf_image *nbpf_change_staged_locked(void)
{
	return g_st.on ? g_st.img : NULL;
}

void nbpf_change_wait_locked(void)
{
	while (g_st.on) {
		uint64_t hold = g_st.info.hold;
		struct timespec ts = { .tv_sec = (time_t)(hold / 1000000000ull),
				       .tv_nsec = (long)(hold % 1000000000ull) };

		if (nbpf_realtime_ns() >= hold) {
			expire_locked();
			break;
		}
		pthread_cond_timedwait(&g_decided, nbpf_host_mutex(), &ts);
	}
}

void nbpf_change_reset_locked(void)
{
	if (g_st.on)
		decide_locked(NBPF_CHANGE_ABORTED);
	memset(g_done, 0, sizeof(g_done));
	g_n_done = 0;
	memset(g_leases, 0, sizeof(g_leases));
}

static int stage_locked(const char *id, const char *owner, const char *what,
			struct nbpf_image *img, uint64_t hold, char *errbuf, size_t errlen)
{
	char t[32];

	expire_locked();
	if (!id || !*id || strlen(id) >= NBPF_HOST_CHANGE_ID) {
		snprintf(errbuf, errlen, "a change id is 1 to %d bytes", NBPF_HOST_CHANGE_ID - 1);
		return -EINVAL;
	}
	if (g_st.on) {
		snprintf(errbuf, errlen,
			 "change %s (%s, by %s) is staged here until %s: it must be committed or aborted first",
			 g_st.info.id, g_st.info.what, g_st.info.owner,
			 clock_str(g_st.info.hold, t, sizeof(t)));
		return -EBUSY;
	}
	if (done_find(id)) {
		snprintf(errbuf, errlen, "change %s was staged here before: a change id is used once", id);
		return -EEXIST;
	}
	if (hold <= nbpf_realtime_ns()) {
		snprintf(errbuf, errlen, "change %s: its hold time %s has passed: nothing staged", id,
			 clock_str(hold, t, sizeof(t)));
		return -ETIMEDOUT;
	}
	if (hold - nbpf_realtime_ns() > MAX_HOLD_NS) {
		snprintf(errbuf, errlen,
			 "change %s: a hold of more than %llu s would hold communicator creation back that long",
			 id, MAX_HOLD_NS / 1000000000ull);
		return -EINVAL;
	}
	g_st.on = true;
	g_st.img = img;
	snprintf(g_st.info.id, sizeof(g_st.info.id), "%s", id);
	snprintf(g_st.info.owner, sizeof(g_st.info.owner), "%s", owner && *owner ? owner : "-");
	snprintf(g_st.info.what, sizeof(g_st.info.what), "%s", what ? what : "");
	g_st.info.state = NBPF_CHANGE_STAGED;
	g_st.info.staged_at = nbpf_realtime_ns();
	g_st.info.hold = hold;
	return 0;
}

int nbpf_host_stage(const char *id, const char *owner, const char *what,
		    struct nbpf_image *img, uint64_t hold, char *errbuf, size_t errlen)
{
	int err;

	lock();
	err = stage_locked(id, owner, what, img, hold, errbuf, errlen);
	unlock();
	if (err)
		nbpf_host_image_free(img);
	return err;
}

/* FNV-1a over the objects' bytes: what a process's history does not change. */
static uint64_t image_digest(const struct nbpf_image *img)
{
	const struct nbpf_image *o = img->base ? img->base : img;
	uint64_t h = 0xcbf29ce484222325ull;

	for (uint32_t i = 0; i < o->n_objs; i++)
		for (size_t k = 0; k < o->obj_len[i]; k++)
			h = (h ^ ((const unsigned char *)o->obj_buf[i])[k]) * 0x100000001b3ull;
	return h;
}

int nbpf_host_stage_rollback(const char *id, const char *owner, uint64_t hold, uint64_t *target,
			     char *errbuf, size_t errlen)
{
	struct nbpf_image *src, *img;
	int err;

	lock();
	src = nbpf_host_rollback_target_locked();
	if (src)
		*target = image_digest(src);
	if (!src) {
		snprintf(errbuf, errlen, "rollback: no previous image");
		err = -ENOENT;
	} else if (!(img = nbpf_host_image_borrow(src))) {
		snprintf(errbuf, errlen, "out of memory");
		err = -ENOMEM;
	} else if ((err = stage_locked(id, owner, "rollback", img, hold, errbuf, errlen))) {
		nbpf_host_image_free(img);
	} else {
		g_st.rollback_src = src;
	}
	unlock();
	return err;
}

/* A decided change's answer to a commit or abort that comes again. */
static int decided(const char *id, struct nbpf_change_info *info)
{
	const struct nbpf_change_info *d = done_find(id);

	if (!d)
		return -ENOENT;
	if (info)
		*info = *d;
	return d->state == NBPF_CHANGE_COMMITTED ? -EALREADY : -ESTALE;
}

int nbpf_host_commit(const char *id, const struct nbpf_host_publish_opts *o,
		     struct nbpf_change_info *info)
{
	struct nbpf_host_publish_opts po = *o;
	uint64_t late = 0;
	int err;

	po.change_id = id;
	nbpf_host_load_lock();
	lock();
	expire_locked();
	if (!g_st.on || strcmp(g_st.info.id, id)) {
		err = decided(id, info);
		goto out;
	}
	err = nbpf_host_publish_locked(g_st.img, &po, &late);
	if (err)
		goto out;
	if (g_st.rollback_src) {
		nbpf_load_status_rolled_back_locked();
		nbpf_host_rollback_done_locked(g_st.rollback_src);
	}
	g_st.info.at_call = o->at_call;
	g_st.info.gen = g_st.img->generation;
	g_st.info.late = late;
	g_st.info.n_known = g_st.img->n_known;
	if (g_st.img->n_known) /* at call 0 nobody follows: no list */
		memcpy(g_st.info.known, g_st.img->known,
		       (g_st.img->n_known < NBPF_CHANGE_KNOWN_MAX ? g_st.img->n_known
								   : NBPF_CHANGE_KNOWN_MAX) * sizeof(uint64_t));
	decide_locked(NBPF_CHANGE_COMMITTED);
	if (info)
		*info = g_done[(g_n_done - 1) % N_DONE];
out:
	unlock();
	nbpf_host_load_unlock();
	return err;
}

int nbpf_host_abort(const char *id, struct nbpf_change_info *info)
{
	int err = 0;

	lock();
	expire_locked();
	if (g_st.on && !strcmp(g_st.info.id, id)) {
		decide_locked(NBPF_CHANGE_ABORTED);
		if (info)
			*info = g_done[(g_n_done - 1) % N_DONE];
	} else if ((err = decided(id, info)) == -ENOENT && strlen(id) < NBPF_HOST_CHANGE_ID) {
		/*
		 * Not staged (yet): its stage may still be queued behind this
		 * abort, and must not stage it afterwards.  The id is spent.
		 */
		struct nbpf_change_info *d = &g_done[g_n_done++ % N_DONE];

		memset(d, 0, sizeof(*d));
		snprintf(d->id, sizeof(d->id), "%s", id);
		snprintf(d->what, sizeof(d->what), "aborted before it was staged");
		d->state = NBPF_CHANGE_ABORTED;
		d->decided_at = nbpf_realtime_ns();
		if (info)
			*info = *d;
		err = 0;
	}
	unlock();
	return err;
}

int nbpf_host_changes(struct nbpf_change_info *out, int max)
{
	unsigned n_done;
	int n = 0;

	lock();
	expire_locked();
	if (g_st.on && n < max)
		out[n++] = g_st.info;
	n_done = g_n_done < N_DONE ? g_n_done : N_DONE;
	for (unsigned k = 1; k <= n_done && n < max; k++)
		out[n++] = g_done[(g_n_done - k) % N_DONE];
	unlock();
	return n;
}

struct calls_walk {
	struct nbpf_comm_calls *out;
	int max, n;
};

static int calls_fn(void *user, const struct nbpf_comm *c)
{
	struct calls_walk *w = user;

	if (c->kind != NBPF_COMM_TUNER)
		return 0;
	if (w->n < w->max) {
		w->out[w->n].comm_id = c->comm_id;
		w->out[w->n].calls = atomic_load_explicit(&c->calls, memory_order_relaxed);
	}
	w->n++;
	return 0;
}

int nbpf_host_comm_calls(struct nbpf_comm_calls *out, int max)
{
	struct calls_walk w = { .out = out, .max = max };

	nbpf_host_comm_foreach(calls_fn, &w);
	return w.n;
}

/* ---- leases ----------------------------------------------------------------- */

static struct lease *lease_find(const char *name)
{
	for (int i = 0; i < N_LEASES; i++)
		if (g_leases[i].name[0] && !strcmp(g_leases[i].name, name))
			return &g_leases[i];
	return NULL;
}

/* Held by someone else than owner (and not expired): says who in holder. */
static bool lease_other_locked(const char *name, const char *owner, char *holder, size_t n)
{
	struct lease *l = lease_find(name);
	char t[32];

	if (!l || l->until <= nbpf_realtime_ns() || (owner && !strcmp(l->owner, owner)))
		return false;
	snprintf(holder, n, "%s holds %s until %s", l->owner, name, clock_str(l->until, t, sizeof(t)));
	return true;
}

int nbpf_host_lease(const char *name, const char *owner, uint64_t until, bool take,
		    char *holder, size_t n)
{
	struct lease *l;
	int err = 0;

	if (!name || !*name || strlen(name) >= sizeof(l->name) || !owner || !*owner ||
	    strlen(owner) >= NBPF_HOST_OWNER) {
		snprintf(holder, n, "a lease needs a name under 64 bytes and an owner");
		return -EINVAL;
	}
	lock();
	if (!take && lease_other_locked(name, owner, holder, n)) {
		err = -EBUSY;
		goto out;
	}
	l = lease_find(name);
	if (!until) {
		if (l)
			memset(l, 0, sizeof(*l));
		goto out;
	}
	for (int i = 0; !l && i < N_LEASES; i++)
		if (!g_leases[i].name[0] || g_leases[i].until <= nbpf_realtime_ns())
			l = &g_leases[i];
	if (!l) {
		snprintf(holder, n, "more than %d leases held", N_LEASES);
		err = -ENOSPC;
		goto out;
	}
	snprintf(l->name, sizeof(l->name), "%s", name);
	snprintf(l->owner, sizeof(l->owner), "%s", owner);
	l->until = until;
out:
	unlock();
	return err;
}

/* ---- derived images: map writes at an agreed call ------------------------------ */

static struct ncclbpf_map *image_map(const struct nbpf_image *img, uint32_t obj, const char *name)
{
	return obj < img->n_objs ? ncclbpf_object__find_map(img->objs[obj], name) : NULL;
}

static bool per_thread(const struct ncclbpf_map *m)
{
	return ncclbpf_map__type(m) == NCCLBPF_MAP_PERCPU_ARRAY ||
	       ncclbpf_map__type(m) == NCCLBPF_MAP_PERCPU_HASH;
}

/* Every entry of src into dst (same shape). */
static int map_copy(struct ncclbpf_map *dst, struct ncclbpf_map *src)
{
	size_t ks = ncclbpf_map__key_size(src);
	size_t vs = (size_t)ncclbpf_map__value_size(src) * (per_thread(src) ? NCCLBPF_NR_SLOTS : 1);
	uint8_t *key = malloc(ks + 1), *next = malloc(ks + 1), *val = malloc(vs + 1);
	const uint8_t *prev = NULL;
	int err = -ENOMEM;

	if (!key || !next || !val || ncclbpf_map__type(src) == NCCLBPF_MAP_RINGBUF) {
		err = key && next && val ? 0 : -ENOMEM; /* a ring buffer's records are not state */
		goto out;
	}
	while (!(err = ncclbpf_map__next_key(src, prev, next))) {
		memcpy(key, next, ks);
		prev = key;
		err = ncclbpf_map__lookup(src, key, val);
		if (err == -ENOENT)
			continue; /* deleted meanwhile */
		if (err || (err = ncclbpf_map__update(dst, key, val, NCCLBPF_ANY)))
			goto out;
	}
	if (err == -ENOENT)
		err = 0;
out:
	free(key);
	free(next);
	free(val);
	return err;
}

/* Checks every op against base's maps and leases; fills the list of maps to copy. */
static int check_ops(const struct nbpf_image *base, const struct nbpf_host_map_op *ops,
		     uint32_t n_ops, const char *owner, const char **fresh, uint32_t *n_fresh,
		     char *errbuf, size_t errlen)
{
	*n_fresh = 0;
	for (uint32_t i = 0; i < n_ops; i++) {
		const struct ncclbpf_map *m = NULL;
		char holder[256];
		bool dup = false;

		for (uint32_t o = 0; o < base->n_objs && !m; o++)
			m = image_map(base, o, ops[i].map);
		if (!m) {
			snprintf(errbuf, errlen, "the policy has no map '%s'", ops[i].map);
			return -ENOENT;
		}
		if (ops[i].key_len != ncclbpf_map__key_size(m) ||
		    (ops[i].value && ops[i].value_len != (size_t)ncclbpf_map__value_size(m) *
							 (per_thread(m) ? NCCLBPF_NR_SLOTS : 1))) {
			snprintf(errbuf, errlen, "map %s: a key of %u bytes and a value of %u bytes are needed",
				 ops[i].map, ncclbpf_map__key_size(m), ncclbpf_map__value_size(m));
			return -EINVAL;
		}
		if (lease_other_locked(ops[i].map, owner, holder, sizeof(holder))) {
			snprintf(errbuf, errlen, "map %s is leased: %s", ops[i].map, holder);
			return -EBUSY;
		}
		for (uint32_t k = 0; k < *n_fresh && !dup; k++)
			dup = !strcmp(fresh[k], ops[i].map);
		if (!dup)
			fresh[(*n_fresh)++] = ops[i].map;
	}
	return 0;
}

/* Every map of img that is not src's own gets src's entries, when src has one of its name. */
static int copy_unshared(struct nbpf_image *img, const struct nbpf_image *src, char *errbuf,
			 size_t errlen)
{
	int err;

	for (uint32_t o = 0; o < img->n_objs; o++)
		for (size_t k = 0; k < ncclbpf_object__map_count(img->objs[o]); k++) {
			struct ncclbpf_map *m = ncclbpf_object__map(img->objs[o], k);
			struct ncclbpf_map *b = image_map(src, o, ncclbpf_map__name(m));
			bool first = true;

			/* A map shared by two objects is copied once (by the first). */
			for (uint32_t p = 0; p < o && first; p++)
				first = image_map(img, p, ncclbpf_map__name(m)) != m;
			if (!b || b == m || !first || ncclbpf_map__type(b) != ncclbpf_map__type(m) ||
			    ncclbpf_map__key_size(b) != ncclbpf_map__key_size(m) ||
			    ncclbpf_map__value_size(b) != ncclbpf_map__value_size(m))
				continue;
			if ((err = map_copy(m, b))) {
				snprintf(errbuf, errlen, "map %s: copying its entries: %s",
					 ncclbpf_map__name(m), ncclbpf_errmsg());
				return err;
			}
		}
	return 0;
}

/* The maps img does not share with base get base's entries, then the ops apply. */
static int fill_derived(struct nbpf_image *img, const struct nbpf_image *base,
			const struct nbpf_host_map_op *ops, uint32_t n_ops, char *errbuf,
			size_t errlen)
{
	int err = copy_unshared(img, base, errbuf, errlen);

	for (uint32_t i = 0; !err && i < n_ops; i++) {
		struct ncclbpf_map *m = NULL;

		for (uint32_t o = 0; o < img->n_objs && !m; o++)
			m = image_map(img, o, ops[i].map);
		err = ops[i].value ? ncclbpf_map__update(m, ops[i].key, ops[i].value, NCCLBPF_ANY)
				   : ncclbpf_map__delete(m, ops[i].key);
		if (err == -ENOENT && !ops[i].value)
			err = 0; /* deleting a key that is not there */
		else if (err)
			snprintf(errbuf, errlen, "map %s: %s", ops[i].map, ncclbpf_errmsg());
	}
	return err;
}

int nbpf_host_load_derived(const struct nbpf_host_map_op *ops, uint32_t n_ops,
			   const char *owner, struct nbpf_image **out, char *errbuf,
			   size_t errlen)
{
	const char *fresh[64];
	struct nbpf_image *base, *img = NULL;
	uint32_t n_fresh = 0;
	int err;

	*out = NULL;
	if (!n_ops || n_ops > 64) {
		snprintf(errbuf, errlen, "1 to 64 map writes per change");
		return -EINVAL;
	}
	/* The load lock keeps the published image (the base) alive and unchanged. */
	nbpf_host_load_lock();
	lock();
	base = nbpf_host_current();
	err = base ? check_ops(base, ops, n_ops, owner, fresh, &n_fresh, errbuf, errlen) : -ENOENT;
	if (!base)
		snprintf(errbuf, errlen, "no policy is loaded: there is no map to write");
	unlock();
	if (!err)
		err = nbpf_host_load_from(base, fresh, n_fresh, &img, errbuf, errlen);
	if (!err)
		err = fill_derived(img, base, ops, n_ops, errbuf, errlen);
	nbpf_host_load_unlock();
	if (err) {
		nbpf_host_image_free(img);
		return err;
	}
	img->derived = true;
	*out = img;
	return 0;
}
