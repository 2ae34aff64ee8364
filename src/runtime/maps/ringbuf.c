/*
 * ringbuf.c - RINGBUF maps: many producers, one consumer, kernel record
 * format.
 *
 * Producers serialise only to advance producer_pos (a short lock in the
 * shared header, as in the kernel; lock.h: bounded, and taken over when its
 * holder died); they fill and commit their records in parallel.  Each
 * record starts with an 8-byte header {len | BUSY | DISCARD, pg_off} and is
 * padded to 8 bytes.  The consumer stops at the
 * first record still BUSY, so records are delivered in reservation order.
 * The data pages are mapped twice in a row, so a record that wraps is
 * contiguous.  pg_off (pages from the mapping start to the header) lets
 * commit find the ring from the sample pointer alone, as
 * bpf_ringbuf_submit(data, flags) must.
 */
#include <errno.h>
#include <string.h>

#include "error.h"
#include "lock.h"
#include "map_impl.h"

#define RB_MAX_RECORD (UINT32_MAX >> 2)
#define RB_WAKEUP_FLAGS 3u /* BPF_RB_NO_WAKEUP | BPF_RB_FORCE_WAKEUP: no wakeups here */

void *nbpf_ringbuf_reserve(struct ncclbpf_map *map, uint64_t size, uint64_t flags)
{
	struct nbpf_map_priv *p;
	struct nbpf_shm_hdr *h;
	struct nbpf_rb_hdr *rec;
	uint64_t len, cons, prod, ring;

	if (!map || map->type != NCCLBPF_MAP_RINGBUF || flags || size == 0 || size > RB_MAX_RECORD)
		return NULL;
	p = nbpf_priv(map);
	if (!p->writable)
		return NULL;
	h = p->hdr;
	ring = p->lay.data_size;
	len = (size + NBPF_RB_HDR_SZ + 7) & ~7ull;
	if (len > ring) {
		atomic_fetch_add_explicit(&h->dropped, 1, memory_order_relaxed);
		return NULL;
	}
	/*
	 * A dead holder needs no repair: producer_pos moves by one store.  Only
	 * a record it reserved and never committed stays busy (docs/maps.md).
	 */
	if (nbpf_lock(map, &h->producer_lock, NBPF_LOCK_PROG) < 0) {
		atomic_fetch_add_explicit(&h->dropped, 1, memory_order_relaxed);
		return NULL;
	}
	cons = atomic_load_explicit(&h->consumer_pos, memory_order_acquire);
	prod = atomic_load_explicit(&h->producer_pos, memory_order_relaxed);
	if (prod + len - cons > ring) {
		nbpf_unlock(&h->producer_lock);
		atomic_fetch_add_explicit(&h->dropped, 1, memory_order_relaxed);
		return NULL;
	}
	rec = (struct nbpf_rb_hdr *)(p->rb_data + (prod & (ring - 1)));
	atomic_store_explicit(&rec->len, (uint32_t)size | NBPF_RB_BUSY, memory_order_relaxed);
	rec->pg_off = (uint32_t)(((uint8_t *)rec - (uint8_t *)p->rb_span) >> p->page_shift);
	atomic_store_explicit(&h->producer_pos, prod + len, memory_order_release);
	nbpf_unlock(&h->producer_lock);
	return rec + 1;
}

void nbpf_ringbuf_commit(void *sample, bool discard)
{
	struct nbpf_rb_hdr *rec = (struct nbpf_rb_hdr *)sample - 1;
	uint32_t len = atomic_load_explicit(&rec->len, memory_order_relaxed);

	len &= ~NBPF_RB_BUSY;
	if (discard)
		len |= NBPF_RB_DISCARD;
	atomic_store_explicit(&rec->len, len, memory_order_release);
}

long nbpf_ringbuf_output(struct ncclbpf_map *map, const void *data, uint64_t size,
			 uint64_t flags)
{
	void *rec;

	if (flags & ~(uint64_t)RB_WAKEUP_FLAGS)
		return -EINVAL;
	rec = nbpf_ringbuf_reserve(map, size, 0);
	if (!rec)
		return -EAGAIN;
	memcpy(rec, data, size);
	nbpf_ringbuf_commit(rec, false);
	return 0;
}

uint64_t nbpf_ringbuf_query(struct ncclbpf_map *map, uint64_t flags)
{
	struct nbpf_shm_hdr *h;
	uint64_t cons, prod;

	if (!map || map->type != NCCLBPF_MAP_RINGBUF)
		return 0;
	h = nbpf_priv(map)->hdr;
	cons = atomic_load_explicit(&h->consumer_pos, memory_order_acquire);
	prod = atomic_load_explicit(&h->producer_pos, memory_order_acquire);
	switch (flags) {
	case 0: return prod - cons;
	case 1: return nbpf_priv(map)->lay.data_size;
	case 2: return cons;
	case 3: return prod;
	default: return 0;
	}
}

/*
 * Claims the consumer role: consumer_busy holds the consumer's holder id,
 * so a consumer that died mid-consume is replaced (consumer_pos only moves
 * past records it has delivered, so nothing is lost or repeated beyond the
 * record in its hands).
 */
static bool claim_consumer(struct ncclbpf_map *map, struct nbpf_shm_hdr *h)
{
	uint32_t me = nbpf_lock_holder_id(map), cur = 0;

	if (!me)
		return false;
	if (atomic_compare_exchange_strong_explicit(&h->consumer_busy, &cur, me,
						    memory_order_acquire, memory_order_relaxed))
		return true;
	if (!nbpf_lock_holder_dead(map, cur) ||
	    !atomic_compare_exchange_strong_explicit(&h->consumer_busy, &cur, me,
						     memory_order_acquire, memory_order_relaxed))
		return false;
	nbpf_lock_count(map, &h->lock_recoveries);
	return true;
}

/*
 * Delivers committed records in order and frees their space.  One consumer
 * at a time (-EBUSY otherwise, also across processes).  A negative return
 * from fn stops consumption after that record and is returned.  A record
 * header that cannot be right (a corrupted file) stops with -EINVAL.
 */
int ncclbpf_ringbuf__consume(struct ncclbpf_map *map, ncclbpf_ringbuf_fn fn, void *user)
{
	struct nbpf_map_priv *p;
	struct nbpf_shm_hdr *h;
	uint64_t cons, prod, ring;
	int n = 0, ret = 0;

	if (!map || !fn)
		return nbpf_err(-EINVAL, "ncclbpf_ringbuf__consume: map and fn are required");
	if (map->type != NCCLBPF_MAP_RINGBUF)
		return nbpf_err(-EINVAL, "map %s: not a ring buffer", map->name);
	p = nbpf_priv(map);
	if (!p->writable)
		return nbpf_err(-EPERM, "map %s: consuming needs a writable mapping", map->name);
	h = p->hdr;
	ring = p->lay.data_size;
	if (!claim_consumer(map, h))
		return nbpf_err(-EBUSY, "map %s: another consumer is active", map->name);
	cons = atomic_load_explicit(&h->consumer_pos, memory_order_relaxed);
	for (;;) {
		struct nbpf_rb_hdr *rec;
		uint32_t len, sz;
		uint64_t adv;

		prod = atomic_load_explicit(&h->producer_pos, memory_order_acquire);
		if (cons >= prod)
			break;
		rec = (struct nbpf_rb_hdr *)(p->rb_data + (cons & (ring - 1)));
		len = atomic_load_explicit(&rec->len, memory_order_acquire);
		if (len & NBPF_RB_BUSY)
			break;
		sz = len & ~(NBPF_RB_BUSY | NBPF_RB_DISCARD);
		adv = ((uint64_t)sz + NBPF_RB_HDR_SZ + 7) & ~7ull;
		if (adv > prod - cons) {
			ret = nbpf_err(-EINVAL, "map %s: corrupt record at %llu", map->name,
				       (unsigned long long)cons);
			break;
		}
		if (!(len & NBPF_RB_DISCARD)) {
			int rc = fn(user, rec + 1, sz);

			n++;
			if (rc < 0) {
				ret = rc;
				cons += adv;
				atomic_store_explicit(&h->consumer_pos, cons, memory_order_release);
				break;
			}
		}
		cons += adv;
		atomic_store_explicit(&h->consumer_pos, cons, memory_order_release);
	}
	atomic_store_explicit(&h->consumer_busy, 0, memory_order_release);
	return ret < 0 ? ret : n;
}

uint64_t ncclbpf_ringbuf__dropped(const struct ncclbpf_map *map)
{
	if (!map || map->type != NCCLBPF_MAP_RINGBUF)
		return 0;
	return atomic_load_explicit(&nbpf_priv(map)->hdr->dropped, memory_order_relaxed);
}

static void *rb_lookup(struct ncclbpf_map *map, const void *key)
{
	return NULL;
}

static long rb_update(struct ncclbpf_map *map, const void *key, const void *value, uint64_t flags)
{
	return -EINVAL;
}

static long rb_delete(struct ncclbpf_map *map, const void *key)
{
	return -EINVAL;
}

const struct nbpf_map_ops nbpf_ringbuf_ops = {
	.lookup_elem = rb_lookup,
	.update_elem = rb_update,
	.delete_elem = rb_delete,
};

static int host_none(struct ncclbpf_map *map, const void *key, void *value)
{
	return nbpf_err(-EINVAL, "map %s: ring buffers have no elements", map->name);
}

static int host_update_none(struct ncclbpf_map *map, const void *key, const void *value,
			    uint64_t flags)
{
	return host_none(map, key, NULL);
}

static int host_delete_none(struct ncclbpf_map *map, const void *key)
{
	return host_none(map, key, NULL);
}

const struct nbpf_map_host_ops nbpf_ringbuf_host_ops = {
	.lookup = host_none,
	.update = host_update_none,
	.del = host_delete_none,
	.next_key = host_none,
};
