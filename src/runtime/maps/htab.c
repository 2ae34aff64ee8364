/*
 * htab.c - HASH, PERCPU_HASH and LRU_HASH maps.
 *
 * A preallocated element pool and a bucket array live in the map file.
 * Readers never lock: programs walk a bucket chain inside their epoch
 * section; host copy-out readers also validate a per-bucket and a
 * per-element sequence number, so they work from another process too.
 * Writers take the bucket's lock, whose sequence doubles as the bucket's
 * change counter (lock.h: it names its holder, waits are bounded, and a
 * dead holder's lock is taken over and the bucket repaired).  Deleted and
 * evicted elements go to a limbo list and return to the free list only
 * after an epoch grace period, so a value pointer a running program holds
 * is never reused under it.
 */
#include <errno.h>
#include <string.h>

#include "epoch.h"
#include "error.h"
#include "lock.h"
#include "map_impl.h"

#define LRU_SAMPLE 128u

struct htab {
	struct nbpf_shm_hdr *hdr;
	const struct nbpf_map_layout *lay;
	uint8_t *elems;
	struct nbpf_htab_bucket *buckets;
};

static inline struct htab H(const struct ncclbpf_map *map)
{
	struct nbpf_map_priv *p = nbpf_priv(map);

	return (struct htab){
		.hdr = p->hdr,
		.lay = &p->lay,
		.elems = (uint8_t *)p->hdr + p->lay.data_off,
		.buckets = (struct nbpf_htab_bucket *)((uint8_t *)p->hdr + p->lay.aux_off),
	};
}

/* Index + 1 to element; NULL for 0 or anything outside the pool (a corrupt file). */
static inline struct nbpf_htab_elem *elem_at(const struct htab *t, uint32_t idx1)
{
	if (!idx1 || idx1 > t->lay->pool_size)
		return NULL;
	return (struct nbpf_htab_elem *)(t->elems + (uint64_t)(idx1 - 1) * t->lay->elem_size);
}

static inline uint32_t elem_idx1(const struct htab *t, const struct nbpf_htab_elem *e)
{
	return (uint32_t)(((const uint8_t *)e - t->elems) / t->lay->elem_size) + 1;
}

static inline uint8_t *elem_key(struct nbpf_htab_elem *e)
{
	return (uint8_t *)e + NBPF_HTAB_ELEM_HDR;
}

static inline uint8_t *elem_value(const struct htab *t, struct nbpf_htab_elem *e, uint32_t slot)
{
	return elem_key(e) + t->lay->key_stride + (uint64_t)slot * t->lay->value_stride;
}

static uint32_t hash_key(const void *key, uint32_t n, uint32_t seed)
{
	const uint8_t *p = key;
	uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ull), w;

	for (; n >= 8; n -= 8, p += 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	if (n) {
		w = 0;
		memcpy(&w, p, n);
		h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return (uint32_t)h;
}

static inline struct nbpf_htab_bucket *bucket_of(const struct htab *t, uint32_t hash)
{
	return &t->buckets[hash & (t->lay->n_buckets - 1)];
}

static inline uint32_t elem_hash(struct nbpf_htab_elem *e)
{
	return __atomic_load_n(&e->hash, __ATOMIC_RELAXED);
}

static void bucket_repair(struct ncclbpf_map *map, const struct htab *t,
			  struct nbpf_htab_bucket *b);

/* 0 (held), or -EBUSY when mode's budget ran out. */
static int bucket_lock(struct ncclbpf_map *map, const struct htab *t, struct nbpf_htab_bucket *b,
		       enum nbpf_lock_mode mode)
{
	int r = nbpf_lock(map, &b->lock, mode);

	if (r == 1) {
		bucket_repair(map, t, b);
		r = 0;
	}
	return r;
}

static inline void bucket_unlock(struct nbpf_htab_bucket *b)
{
	nbpf_unlock(&b->lock);
}

/*
 * Walks a chain for key.  Callers hold the bucket lock or are inside an
 * epoch section (so no element of the chain is recycled under them); the
 * step bound only matters for a corrupted file.
 */
static struct nbpf_htab_elem *chain_find(const struct htab *t, struct nbpf_htab_bucket *b,
					 const void *key, uint32_t ks, uint32_t hash)
{
	uint32_t idx1 = atomic_load_explicit(&b->head, memory_order_acquire), steps = 0;
	struct nbpf_htab_elem *e;

	while ((e = elem_at(t, idx1))) {
		if (elem_hash(e) == hash && !memcmp(elem_key(e), key, ks))
			return e;
		idx1 = atomic_load_explicit(&e->next, memory_order_acquire);
		if (++steps > t->lay->pool_size)
			break;
	}
	return NULL;
}

/* ---- element pool -------------------------------------------------------- */

static int htab_init(struct ncclbpf_map *map)
{
	struct htab t = H(map);
	uint32_t i, n = t.lay->pool_size;

	for (i = 0; i < n; i++) {
		struct nbpf_htab_elem *e = elem_at(&t, i + 1);

		atomic_store_explicit(&e->free_next, i + 1 < n ? i + 2 : 0, memory_order_relaxed);
		atomic_store_explicit(&e->state, NBPF_ELEM_FREE, memory_order_relaxed);
	}
	atomic_store_explicit(&t.hdr->free_head, 1, memory_order_release);
	return 0;
}

/* Lock-free stack with an ABA tag in the high half of the head. */
static struct nbpf_htab_elem *pop_free(const struct htab *t)
{
	uint64_t old = atomic_load_explicit(&t->hdr->free_head, memory_order_acquire), nw;
	struct nbpf_htab_elem *e;

	do {
		e = elem_at(t, (uint32_t)old);
		if (!e)
			return NULL;
		nw = (((old >> 32) + 1) << 32) |
		     atomic_load_explicit(&e->free_next, memory_order_relaxed);
	} while (!atomic_compare_exchange_weak_explicit(&t->hdr->free_head, &old, nw,
							memory_order_acq_rel,
							memory_order_acquire));
	return e;
}

static void push_free(const struct htab *t, struct nbpf_htab_elem *e)
{
	uint64_t old = atomic_load_explicit(&t->hdr->free_head, memory_order_relaxed), nw;

	atomic_store_explicit(&e->state, NBPF_ELEM_FREE, memory_order_relaxed);
	do {
		atomic_store_explicit(&e->free_next, (uint32_t)old, memory_order_relaxed);
		nw = (((old >> 32) + 1) << 32) | elem_idx1(t, e);
	} while (!atomic_compare_exchange_weak_explicit(&t->hdr->free_head, &old, nw,
							memory_order_release,
							memory_order_relaxed));
}

static void push_list(const struct htab *t, _Atomic uint32_t *head, struct nbpf_htab_elem *e)
{
	uint32_t old = atomic_load_explicit(head, memory_order_relaxed);

	do {
		atomic_store_explicit(&e->free_next, old, memory_order_relaxed);
	} while (!atomic_compare_exchange_weak_explicit(head, &old, elem_idx1(t, e),
							memory_order_release,
							memory_order_relaxed));
}

/*
 * Moves retired elements whose grace period is over to the free list.
 * Only the creating process does this: its epoch is the one that protects
 * program pointers.  Elements retired by another process get stamped here,
 * when we first see them (they were unlinked before, so that is safe).
 */
static void reclaim(const struct htab *t)
{
	struct nbpf_htab_elem *e;
	uint32_t idx1, next, keep = 0, steps = 0;
	uint64_t limit, stamp;

	if (atomic_exchange_explicit(&t->hdr->reclaim_busy, 1, memory_order_acquire))
		return;
	idx1 = atomic_exchange_explicit(&t->hdr->foreign_limbo, 0, memory_order_acquire);
	if (idx1) {
		stamp = nbpf_epoch_retire_stamp();
		for (; (e = elem_at(t, idx1)) && steps++ <= t->lay->pool_size; idx1 = next) {
			next = atomic_load_explicit(&e->free_next, memory_order_relaxed);
			atomic_store_explicit(&e->retired, stamp, memory_order_relaxed);
			push_list(t, &t->hdr->limbo_head, e);
		}
	}
	limit = nbpf_epoch_ready_limit();
	idx1 = atomic_exchange_explicit(&t->hdr->limbo_head, 0, memory_order_acquire);
	for (steps = 0; (e = elem_at(t, idx1)) && steps++ <= t->lay->pool_size; idx1 = next) {
		next = atomic_load_explicit(&e->free_next, memory_order_relaxed);
		if (atomic_load_explicit(&e->retired, memory_order_relaxed) <= limit) {
			push_free(t, e);
		} else {
			atomic_store_explicit(&e->free_next, keep, memory_order_relaxed);
			keep = elem_idx1(t, e);
		}
	}
	for (idx1 = keep; (e = elem_at(t, idx1)); idx1 = next) {
		next = atomic_load_explicit(&e->free_next, memory_order_relaxed);
		push_list(t, &t->hdr->limbo_head, e);
	}
	atomic_store_explicit(&t->hdr->reclaim_busy, 0, memory_order_release);
}

/* Unlinks e (bucket locked) and sends it to limbo once the lock is dropped. */
static void unlink_locked(const struct htab *t, struct nbpf_htab_bucket *b,
			  struct nbpf_htab_elem *e, _Atomic uint32_t *link)
{
	atomic_store_explicit(link, atomic_load_explicit(&e->next, memory_order_relaxed),
			      memory_order_release);
	atomic_store_explicit(&e->state, NBPF_ELEM_RETIRED, memory_order_relaxed);
	/* Invalidate copy-outs in flight. */
	atomic_fetch_add_explicit(&e->seq, 2, memory_order_release);
	atomic_fetch_sub_explicit(&t->hdr->count, 1, memory_order_relaxed);
}

/*
 * Sends an unlinked element to limbo.  Every RECLAIM_EVERY retires the
 * creator also reclaims (never blocking), which keeps the epoch moving so
 * limbo drains long before the spare elements run out, even when all
 * deletes happen inside program runs.
 */
#define RECLAIM_EVERY 16u
static void reclaim(const struct htab *t);
static void retire(const struct ncclbpf_map *map, const struct htab *t, struct nbpf_htab_elem *e)
{
	if (nbpf_priv(map)->owner) {
		atomic_store_explicit(&e->retired, nbpf_epoch_retire_stamp(), memory_order_relaxed);
		push_list(t, &t->hdr->limbo_head, e);
		if (atomic_fetch_add_explicit(&t->hdr->retire_ticks, 1, memory_order_relaxed) %
		    RECLAIM_EVERY == RECLAIM_EVERY - 1)
			reclaim(t);
	} else {
		push_list(t, &t->hdr->foreign_limbo, e);
	}
}

/* Finds e's link in its bucket (locked): the head or a predecessor's next. */
static _Atomic uint32_t *find_link(const struct htab *t, struct nbpf_htab_bucket *b,
				   struct nbpf_htab_elem *target)
{
	_Atomic uint32_t *link = &b->head;
	struct nbpf_htab_elem *e;
	uint32_t steps = 0;

	while ((e = elem_at(t, atomic_load_explicit(link, memory_order_relaxed)))) {
		if (e == target)
			return link;
		link = &e->next;
		if (++steps > t->lay->pool_size)
			break;
	}
	return NULL;
}

/*
 * Runs holding the lock of a bucket whose previous holder died inside it.
 * Links change by single stores, so the chain is whole; what a dead writer
 * can leave is the element whose value it was rewriting (odd sequence).
 * Neither its old nor its new value is known, so it is deleted.  A link
 * out of the pool, to an element that is not live or not of this bucket,
 * or closing a cycle (only a corrupted file has those) ends the chain.
 * Pool elements a dead writer had taken but not yet linked, or unlinked
 * but not yet retired, are not found here: each death leaks at most one.
 */
static void bucket_repair(struct ncclbpf_map *map, const struct htab *t,
			  struct nbpf_htab_bucket *b)
{
	_Atomic uint32_t *link = &b->head;
	struct nbpf_htab_elem *e;
	uint32_t idx1, s, steps = 0;

	while ((idx1 = atomic_load_explicit(link, memory_order_relaxed))) {
		e = elem_at(t, idx1);
		if (!e || ++steps > t->lay->pool_size ||
		    atomic_load_explicit(&e->state, memory_order_relaxed) != NBPF_ELEM_LIVE ||
		    bucket_of(t, elem_hash(e)) != b) {
			atomic_store_explicit(link, 0, memory_order_release);
			break;
		}
		s = atomic_load_explicit(&e->seq, memory_order_relaxed);
		if (s & 1) {
			atomic_store_explicit(&e->seq, s + 1, memory_order_relaxed);
			unlink_locked(t, b, e, link);
			retire(map, t, e);
			nbpf_lock_count(map, &t->hdr->lock_discarded);
			continue;
		}
		link = &e->next;
	}
}

/* Spreads sample positions over the pool (freed slots are reused LIFO, so
 * neighbouring slots tend to hold elements of the same age). */
static inline uint32_t mix32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

/*
 * LRU: evicts the least recently stamped live element among LRU_SAMPLE
 * pseudo-random pool slots, or among the whole pool when it is that small
 * (exact LRU for small maps).
 */
static int evict_one(struct ncclbpf_map *map, const struct htab *t, enum nbpf_lock_mode mode)
{
	uint32_t pool = t->lay->pool_size, i, start, pos;
	bool all = pool <= LRU_SAMPLE;
	struct nbpf_htab_elem *best = NULL, *e;
	uint64_t best_lru = UINT64_MAX, lru;
	struct nbpf_htab_bucket *b;
	_Atomic uint32_t *link;

	start = (uint32_t)atomic_fetch_add_explicit(&t->hdr->lru_cursor, LRU_SAMPLE,
						    memory_order_relaxed);
	for (i = 0; i < pool && (all || i < LRU_SAMPLE || !best); i++) {
		pos = all || i >= LRU_SAMPLE ? i : mix32(start + i) % pool;
		e = elem_at(t, pos + 1);
		if (atomic_load_explicit(&e->state, memory_order_acquire) != NBPF_ELEM_LIVE)
			continue;
		lru = atomic_load_explicit(&e->lru, memory_order_relaxed);
		if (lru < best_lru) {
			best_lru = lru;
			best = e;
		}
	}
	if (!best)
		return 0;
	b = bucket_of(t, elem_hash(best));
	if (bucket_lock(map, t, b, mode))
		return -EBUSY;
	link = find_link(t, b, best);
	if (link && atomic_load_explicit(&best->state, memory_order_relaxed) == NBPF_ELEM_LIVE) {
		unlink_locked(t, b, best, link);
		bucket_unlock(b);
		retire(map, t, best);
		return 0;
	}
	bucket_unlock(b);
	return 0;
}

/*
 * Reserves a live-element count and takes a pool element.  NULL when the
 * map is full (*err = -E2BIG), after LRU eviction and reclamation have been
 * tried, or when eviction could not lock a bucket in time (-EBUSY).
 * Outside an epoch section the creator may wait for a grace period.
 */
static struct nbpf_htab_elem *alloc_elem(struct ncclbpf_map *map, const struct htab *t,
					 enum nbpf_lock_mode mode, long *err)
{
	struct nbpf_htab_elem *e;
	uint32_t c = atomic_load_explicit(&t->hdr->count, memory_order_relaxed), tries = 0;
	bool owner = nbpf_priv(map)->owner;

	for (;;) {
		if (c < map->max_entries) {
			if (atomic_compare_exchange_weak_explicit(&t->hdr->count, &c, c + 1,
								  memory_order_relaxed,
								  memory_order_relaxed))
				break;
			continue;
		}
		*err = -E2BIG;
		if (map->type != NCCLBPF_MAP_LRU_HASH || ++tries > 64)
			return NULL;
		if (evict_one(map, t, mode)) {
			*err = -EBUSY;
			return NULL;
		}
		c = atomic_load_explicit(&t->hdr->count, memory_order_relaxed);
	}
	e = pop_free(t);
	if (!e && owner) {
		reclaim(t);
		e = pop_free(t);
		if (!e && !nbpf_epoch_in_section() && nbpf_epoch_synchronize() == 0) {
			reclaim(t);
			e = pop_free(t);
		}
	}
	if (!e) {
		atomic_fetch_sub_explicit(&t->hdr->count, 1, memory_order_relaxed);
		*err = -E2BIG;
	}
	return e;
}

/* An element that was never published goes straight back. */
static void unalloc_elem(const struct htab *t, struct nbpf_htab_elem *e)
{
	push_free(t, e);
	atomic_fetch_sub_explicit(&t->hdr->count, 1, memory_order_relaxed);
}

/* ---- value writes ------------------------------------------------------- */

enum { WRITE_ALL = -1 };

/*
 * Copies a value into e.  slot >= 0: per-thread maps from a program write
 * only that slot (a fresh element gets the others zeroed); WRITE_ALL:
 * value holds every slot at value_stride.
 */
static void write_slots(const struct ncclbpf_map *map, const struct htab *t,
			struct nbpf_htab_elem *e, const void *value, int slot, bool fresh)
{
	uint32_t i;

	for (i = 0; i < t->lay->nr_slots; i++) {
		if (slot == WRITE_ALL)
			nbpf_copy_to_shared(elem_value(t, e, i),
					    (const uint8_t *)value + (size_t)i * t->lay->value_stride,
					    map->value_size);
		else if ((uint32_t)slot == i)
			nbpf_copy_to_shared(elem_value(t, e, i), value, map->value_size);
		else if (fresh)
			nbpf_zero_shared(elem_value(t, e, i), map->value_size);
	}
}

/* Rewrites a linked element's value under its sequence counter (the bucket
 * lock is held, so there is one writer). */
static void write_value(const struct ncclbpf_map *map, const struct htab *t,
			struct nbpf_htab_elem *e, const void *value, int slot)
{
	uint32_t s = atomic_load_explicit(&e->seq, memory_order_relaxed);

	atomic_store_explicit(&e->seq, s + 1, memory_order_relaxed);
	write_slots(map, t, e, value, slot, false);
	atomic_store_explicit(&e->seq, s + 2, memory_order_release);
}

/* Fills a pool element before it is published; the odd sequence during the
 * fill fails any copy-out still looking at the element's previous life. */
static void fill_new(const struct ncclbpf_map *map, const struct htab *t,
		     struct nbpf_htab_elem *e, const void *key, uint32_t hash,
		     const void *value, int slot)
{
	uint32_t s = atomic_load_explicit(&e->seq, memory_order_relaxed) & ~1u;

	atomic_store_explicit(&e->seq, s + 1, memory_order_relaxed);
	nbpf_copy_to_shared(elem_key(e), key, map->key_size);
	__atomic_store_n(&e->hash, hash, __ATOMIC_RELAXED);
	atomic_store_explicit(&e->next, 0, memory_order_relaxed);
	write_slots(map, t, e, value, slot, true);
	atomic_store_explicit(&e->seq, s + 2, memory_order_release);
}

static void touch_update(const struct ncclbpf_map *map, const struct htab *t,
			 struct nbpf_htab_elem *e)
{
	if (map->type == NCCLBPF_MAP_LRU_HASH)
		atomic_store_explicit(&e->lru,
				      atomic_fetch_add_explicit(&t->hdr->lru_clock, 1,
								memory_order_relaxed) + 1,
				      memory_order_relaxed);
}

/* Common update; slot as in write_value.  Returns 0 or a negative errno. */
static long do_update(struct ncclbpf_map *map, const void *key, const void *value,
		      uint64_t flags, int slot)
{
	struct htab t = H(map);
	uint32_t ks = map->key_size, hash = hash_key(key, ks, t.hdr->hash_seed);
	struct nbpf_htab_bucket *b = bucket_of(&t, hash);
	enum nbpf_lock_mode mode = slot == WRITE_ALL ? NBPF_LOCK_HOST : NBPF_LOCK_PROG;
	struct nbpf_htab_elem *e, *ne;
	long err;

	if (flags > NCCLBPF_EXIST)
		return -EINVAL;
	if (bucket_lock(map, &t, b, mode))
		return -EBUSY;
	e = chain_find(&t, b, key, ks, hash);
	if (e) {
		if (flags == NCCLBPF_NOEXIST) {
			bucket_unlock(b);
			return -EEXIST;
		}
		write_value(map, &t, e, value, slot);
		touch_update(map, &t, e);
		bucket_unlock(b);
		return 0;
	}
	bucket_unlock(b);
	if (flags == NCCLBPF_EXIST)
		return -ENOENT;

	/* Allocate with no lock held: eviction locks other buckets, reclaim may wait. */
	ne = alloc_elem(map, &t, mode, &err);
	if (!ne)
		return err;
	fill_new(map, &t, ne, key, hash, value, slot);

	if (bucket_lock(map, &t, b, mode)) {
		unalloc_elem(&t, ne);
		return -EBUSY;
	}
	e = chain_find(&t, b, key, ks, hash);
	if (e) {
		/* Lost a race with another insert of the same key. */
		long ret = 0;

		if (flags == NCCLBPF_NOEXIST) {
			ret = -EEXIST;
		} else {
			write_value(map, &t, e, value, slot);
			touch_update(map, &t, e);
		}
		bucket_unlock(b);
		unalloc_elem(&t, ne);
		return ret;
	}
	touch_update(map, &t, ne);
	atomic_store_explicit(&ne->next, atomic_load_explicit(&b->head, memory_order_relaxed),
			      memory_order_relaxed);
	atomic_store_explicit(&ne->state, NBPF_ELEM_LIVE, memory_order_release);
	atomic_store_explicit(&b->head, elem_idx1(&t, ne), memory_order_release);
	bucket_unlock(b);
	return 0;
}

static long do_delete(struct ncclbpf_map *map, const void *key, enum nbpf_lock_mode mode)
{
	struct htab t = H(map);
	uint32_t ks = map->key_size, hash = hash_key(key, ks, t.hdr->hash_seed);
	struct nbpf_htab_bucket *b = bucket_of(&t, hash);
	struct nbpf_htab_elem *e;
	_Atomic uint32_t *link;

	if (bucket_lock(map, &t, b, mode))
		return -EBUSY;
	e = chain_find(&t, b, key, ks, hash);
	link = e ? find_link(&t, b, e) : NULL;
	if (!link) {
		bucket_unlock(b);
		return -ENOENT;
	}
	unlink_locked(&t, b, e, link);
	bucket_unlock(b);
	retire(map, &t, e);
	return 0;
}

/* ---- program side ------------------------------------------------------- */

static void *htab_lookup(struct ncclbpf_map *map, const void *key)
{
	struct htab t = H(map);
	uint32_t hash = hash_key(key, map->key_size, t.hdr->hash_seed);
	struct nbpf_htab_elem *e = chain_find(&t, bucket_of(&t, hash), key, map->key_size, hash);

	return e ? elem_value(&t, e, 0) : NULL;
}

static void *percpu_htab_lookup(struct ncclbpf_map *map, const void *key)
{
	struct htab t = H(map);
	uint32_t hash = hash_key(key, map->key_size, t.hdr->hash_seed);
	struct nbpf_htab_elem *e = chain_find(&t, bucket_of(&t, hash), key, map->key_size, hash);

	return e ? elem_value(&t, e, nbpf_epoch_thread_slot()) : NULL;
}

/* A lookup makes the element as recent as the latest update (no shared write
 * when it already is). */
static void *lru_htab_lookup(struct ncclbpf_map *map, const void *key)
{
	struct htab t = H(map);
	uint32_t hash = hash_key(key, map->key_size, t.hdr->hash_seed);
	struct nbpf_htab_elem *e = chain_find(&t, bucket_of(&t, hash), key, map->key_size, hash);
	uint64_t now;

	if (!e)
		return NULL;
	now = atomic_load_explicit(&t.hdr->lru_clock, memory_order_relaxed);
	if (atomic_load_explicit(&e->lru, memory_order_relaxed) != now)
		atomic_store_explicit(&e->lru, now, memory_order_relaxed);
	return elem_value(&t, e, 0);
}

static long htab_update(struct ncclbpf_map *map, const void *key, const void *value,
			uint64_t flags)
{
	return do_update(map, key, value, flags, 0);
}

static long percpu_htab_update(struct ncclbpf_map *map, const void *key, const void *value,
			       uint64_t flags)
{
	return do_update(map, key, value, flags, (int)nbpf_epoch_thread_slot());
}

static long htab_delete(struct ncclbpf_map *map, const void *key)
{
	return do_delete(map, key, NBPF_LOCK_PROG);
}

const struct nbpf_map_ops nbpf_htab_ops = {
	.lookup_elem = htab_lookup,
	.update_elem = htab_update,
	.delete_elem = htab_delete,
};

const struct nbpf_map_ops nbpf_percpu_htab_ops = {
	.lookup_elem = percpu_htab_lookup,
	.update_elem = percpu_htab_update,
	.delete_elem = htab_delete,
};

const struct nbpf_map_ops nbpf_lru_htab_ops = {
	.lookup_elem = lru_htab_lookup,
	.update_elem = htab_update,
	.delete_elem = htab_delete,
};

/* ---- host side ---------------------------------------------------------- */

/*
 * One copy-out attempt: 0, -ENOENT (a miss the bucket confirms) or -EAGAIN.
 * frozen: the bucket's holder died, so nothing moves until a writer takes
 * it over; a value the holder left half-written (odd sequence) reads as
 * absent, which is what the repair will make of it.
 */
static int try_lookup(struct ncclbpf_map *map, const struct htab *t, struct nbpf_htab_bucket *b,
		      const void *key, uint32_t hash, void *value, uint64_t bs, bool frozen)
{
	uint32_t ks = map->key_size, s1, i;
	uint8_t kbuf[NBPF_MAP_MAX_KEY];
	struct nbpf_htab_elem *e = chain_find(t, b, key, ks, hash);

	if (!e)
		return frozen || atomic_load_explicit(&b->lock, memory_order_acquire) == bs ?
		       -ENOENT : -EAGAIN;
	s1 = atomic_load_explicit(&e->seq, memory_order_acquire);
	if ((s1 & 1) || atomic_load_explicit(&e->state, memory_order_relaxed) != NBPF_ELEM_LIVE)
		return frozen ? -ENOENT : -EAGAIN;
	nbpf_copy_from_shared(kbuf, elem_key(e), ks);
	for (i = 0; i < t->lay->nr_slots; i++)
		nbpf_copy_from_shared((uint8_t *)value + (size_t)i * t->lay->value_stride,
				      elem_value(t, e, i), map->value_size);
	if (atomic_load_explicit(&e->seq, memory_order_acquire) != s1 || memcmp(kbuf, key, ks))
		return -EAGAIN;
	return 0;
}

/*
 * Copy-out lookup that is never torn and works across processes: the
 * element's sequence must be even and unchanged around the copy and its key
 * must still match; a miss counts only if the bucket did not change.
 * Waits at most NBPF_LOCK_HOST_WAIT_NS for a live writer (then -EBUSY); a
 * dead writer's bucket is repaired first when this handle may write, and
 * read as it stands otherwise.
 */
static int host_lookup(struct ncclbpf_map *map, const void *key, void *value)
{
	struct htab t = H(map);
	uint32_t hash = hash_key(key, map->key_size, t.hdr->hash_seed);
	struct nbpf_htab_bucket *b = bucket_of(&t, hash);
	struct nbpf_lock_wait w;
	bool frozen = false;
	uint64_t bs;
	int ret, r;

	nbpf_lock_wait_init(&w, NBPF_LOCK_HOST);
	nbpf_epoch_enter();
	for (;;) {
		bs = atomic_load_explicit(&b->lock, memory_order_acquire);
		if (!(bs & 1) || frozen) {
			ret = try_lookup(map, &t, b, key, hash, value, bs, frozen);
			if (ret != -EAGAIN)
				break;
		}
		r = nbpf_lock_wait(map, &w, bs);
		if (r == -EOWNERDEAD) {
			if (!nbpf_priv(map)->writable) {
				frozen = true;
			} else if (nbpf_lock_takeover(map, &b->lock, bs)) {
				bucket_repair(map, &t, b);
				bucket_unlock(b);
			}
		} else if (r) {
			nbpf_lock_count(map, &t.hdr->lock_timeouts);
			ret = -EBUSY;
			break;
		}
	}
	nbpf_epoch_exit();
	if (ret == -EBUSY)
		return nbpf_err(ret, "map %s: a writer holds the key's bucket for too long", map->name);
	return ret == -ENOENT ? nbpf_err(ret, "map %s: no such key", map->name) : ret;
}

static int host_update(struct ncclbpf_map *map, const void *key, const void *value,
		       uint64_t flags)
{
	long ret = do_update(map, key, value, flags, WRITE_ALL);

	switch (ret) {
	case 0: return 0;
	case -EEXIST: return nbpf_err(-EEXIST, "map %s: key exists (NOEXIST)", map->name);
	case -ENOENT: return nbpf_err(-ENOENT, "map %s: no such key (EXIST)", map->name);
	case -E2BIG: return nbpf_err(-E2BIG, "map %s: full (max_entries %u)", map->name,
				     map->max_entries);
	case -EBUSY: return nbpf_err(-EBUSY, "map %s: a writer holds the key's bucket for too long",
				     map->name);
	default: return nbpf_err((int)ret, "map %s: update failed", map->name);
	}
}

static int host_delete(struct ncclbpf_map *map, const void *key)
{
	long ret = do_delete(map, key, NBPF_LOCK_HOST);

	if (ret == -EBUSY)
		return nbpf_err(-EBUSY, "map %s: a writer holds the key's bucket for too long",
				map->name);
	return ret ? nbpf_err((int)ret, "map %s: no such key", map->name) : 0;
}

/*
 * Copies e's key (e is linked in bucket b).  An odd sequence means a value
 * write in progress; after many tries, if b's holder is dead, that write
 * will never end, and the key is not what it was writing (keys change only
 * before an element is linked), so it is copied anyway: a dump lists the
 * key and its lookup then reads it as absent.
 */
static int copy_key(struct ncclbpf_map *map, struct nbpf_htab_bucket *b,
		    struct nbpf_htab_elem *e, uint32_t ks, void *out, uint32_t tries)
{
	uint32_t s1 = atomic_load_explicit(&e->seq, memory_order_acquire);
	uint64_t bs;

	if (s1 & 1) {
		bs = atomic_load_explicit(&b->lock, memory_order_acquire);
		if (tries < 100 || !(bs & 1) ||
		    !nbpf_lock_holder_dead(map, nbpf_lock_holder_of(bs)))
			return -EAGAIN;
	}
	nbpf_copy_from_shared(out, elem_key(e), ks);
	return atomic_load_explicit(&e->seq, memory_order_acquire) == s1 ? 0 : -EAGAIN;
}

/*
 * Kernel order: the element after key in its bucket chain, then the heads of
 * later buckets; a missing key restarts from the first bucket.  Concurrent
 * changes may make an iteration skip or repeat keys, never crash.
 */
static int host_next_key(struct ncclbpf_map *map, const void *key, void *next_key)
{
	struct htab t = H(map);
	uint32_t ks = map->key_size, i = 0, tries;
	struct nbpf_htab_elem *e;
	unsigned spins = 0;
	int ret = -ENOENT;

	nbpf_epoch_enter();
	for (tries = 0; tries < 1000; tries++, nbpf_spin_pause(&spins)) {
		i = 0;
		if (key) {
			uint32_t hash = hash_key(key, ks, t.hdr->hash_seed);
			struct nbpf_htab_bucket *b = bucket_of(&t, hash);

			e = chain_find(&t, b, key, ks, hash);
			if (e) {
				e = elem_at(&t, atomic_load_explicit(&e->next, memory_order_acquire));
				if (e) {
					ret = copy_key(map, b, e, ks, next_key, tries);
					if (ret == -EAGAIN)
						continue;
					break;
				}
				i = (hash & (t.lay->n_buckets - 1)) + 1;
			}
		}
		ret = -ENOENT;
		for (; i < t.lay->n_buckets; i++) {
			e = elem_at(&t, atomic_load_explicit(&t.buckets[i].head, memory_order_acquire));
			if (e) {
				ret = copy_key(map, &t.buckets[i], e, ks, next_key, tries);
				break;
			}
		}
		if (ret != -EAGAIN)
			break;
	}
	nbpf_epoch_exit();
	return ret;
}

const struct nbpf_map_host_ops nbpf_htab_host_ops = {
	.lookup = host_lookup,
	.update = host_update,
	.del = host_delete,
	.next_key = host_next_key,
	.init = htab_init,
};
