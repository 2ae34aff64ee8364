/*
 * array.c - ARRAY and PERCPU_ARRAY maps (global data sections are ARRAYs
 * with one element).
 *
 * Values sit at data_off + (index * nr_slots + slot) * value_stride; the JIT
 * may inline lookups of plain arrays from map->array_base.  Whole-value
 * writes (update from a program or the host) go through a per-element
 * sequence lock kept apart from the values, so copy-out readers retry
 * instead of seeing a torn value; programs writing in place through a
 * lookup pointer bypass it (see docs/maps.md).
 */
#include <errno.h>
#include <string.h>

#include "epoch.h"
#include "error.h"
#include "lock.h"
#include "map_impl.h"

static inline uint8_t *values(const struct ncclbpf_map *map)
{
	return (uint8_t *)nbpf_priv(map)->hdr + nbpf_priv(map)->lay.data_off;
}

static inline nbpf_lock_t *seqs(const struct ncclbpf_map *map)
{
	return (nbpf_lock_t *)((uint8_t *)nbpf_priv(map)->hdr + nbpf_priv(map)->lay.aux_off);
}

static inline uint8_t *slot_value(const struct ncclbpf_map *map, uint32_t idx, uint32_t slot)
{
	const struct nbpf_map_layout *lay = &nbpf_priv(map)->lay;

	return values(map) + ((uint64_t)idx * lay->nr_slots + slot) * lay->value_stride;
}

/*
 * A writer died inside element idx (we hold its lock now): the value may be
 * any mix of old and new words and neither is known, so the element starts
 * over as zero, as a fresh array element does.
 */
static void repair_elem(struct ncclbpf_map *map, uint32_t idx)
{
	const struct nbpf_map_layout *lay = &nbpf_priv(map)->lay;
	uint32_t slot;

	for (slot = 0; slot < lay->nr_slots; slot++)
		nbpf_zero_shared(slot_value(map, idx, slot), map->value_size);
	nbpf_lock_count(map, &nbpf_priv(map)->hdr->lock_discarded);
}

/* Writer side of the element's sequence lock: 0 or -EBUSY. */
static int elem_lock(struct ncclbpf_map *map, uint32_t idx, enum nbpf_lock_mode mode)
{
	int r = nbpf_lock(map, &seqs(map)[idx], mode);

	if (r == 1) {
		repair_elem(map, idx);
		r = 0;
	}
	return r;
}

static int check_flags(uint64_t flags)
{
	if (flags > NCCLBPF_EXIST)
		return -EINVAL;
	/* Every index exists already. */
	if (flags == NCCLBPF_NOEXIST)
		return -EEXIST;
	return 0;
}

/* Keys come from program stacks at any byte offset: read them unaligned. */
static inline uint32_t key_index(const void *key)
{
	uint32_t idx;

	memcpy(&idx, key, sizeof(idx));
	return idx;
}

static void *array_lookup(struct ncclbpf_map *map, const void *key)
{
	uint32_t idx = key_index(key);

	if (idx >= map->max_entries)
		return NULL;
	return map->array_base + (uint64_t)idx * map->value_stride;
}

static void *percpu_array_lookup(struct ncclbpf_map *map, const void *key)
{
	uint32_t idx = key_index(key);

	if (idx >= map->max_entries)
		return NULL;
	return slot_value(map, idx, nbpf_epoch_thread_slot());
}

/* Program-side update: the whole value, or this thread's slot of it. */
static long array_update(struct ncclbpf_map *map, const void *key, const void *value,
			 uint64_t flags)
{
	uint32_t idx = key_index(key);
	bool percpu = map->type == NCCLBPF_MAP_PERCPU_ARRAY;
	int err = check_flags(flags);

	if (err)
		return err;
	if (idx >= map->max_entries)
		return -E2BIG;
	err = elem_lock(map, idx, NBPF_LOCK_PROG);
	if (err)
		return err;
	nbpf_copy_to_shared(slot_value(map, idx, percpu ? nbpf_epoch_thread_slot() : 0), value,
			    map->value_size);
	nbpf_unlock(&seqs(map)[idx]);
	return 0;
}

static long array_delete(struct ncclbpf_map *map, const void *key)
{
	return -EINVAL;
}

const struct nbpf_map_ops nbpf_array_ops = {
	.lookup_elem = array_lookup,
	.update_elem = array_update,
	.delete_elem = array_delete,
};

const struct nbpf_map_ops nbpf_percpu_array_ops = {
	.lookup_elem = percpu_array_lookup,
	.update_elem = array_update,
	.delete_elem = array_delete,
};

/*
 * Copies one element out (all slots for per-thread maps), retrying while a
 * writer is active, for at most NBPF_LOCK_HOST_WAIT_NS.  An element whose
 * writer died is repaired first when this handle may write; a read-only
 * handle cannot, and gets -EBUSY.
 */
static int host_lookup(struct ncclbpf_map *map, const void *key, void *value)
{
	const struct nbpf_map_layout *lay = &nbpf_priv(map)->lay;
	uint32_t idx = key_index(key), slot;
	struct nbpf_lock_wait w;
	uint64_t s1;
	int r;

	if (idx >= map->max_entries)
		return nbpf_err(-ENOENT, "map %s: index %u out of range (max_entries %u)", map->name,
				idx, map->max_entries);
	nbpf_lock_wait_init(&w, NBPF_LOCK_HOST);
	for (;;) {
		s1 = atomic_load_explicit(&seqs(map)[idx], memory_order_acquire);
		if (!(s1 & 1)) {
			for (slot = 0; slot < lay->nr_slots; slot++)
				nbpf_copy_from_shared((uint8_t *)value + (size_t)slot * lay->value_stride,
						      slot_value(map, idx, slot), map->value_size);
			if (atomic_load_explicit(&seqs(map)[idx], memory_order_acquire) == s1)
				return 0;
		}
		r = nbpf_lock_wait(map, &w, s1);
		if (r == -EOWNERDEAD && nbpf_priv(map)->writable) {
			if (nbpf_lock_takeover(map, &seqs(map)[idx], s1)) {
				repair_elem(map, idx);
				nbpf_unlock(&seqs(map)[idx]);
			}
		} else if (r) {
			nbpf_lock_count(map, &nbpf_priv(map)->hdr->lock_timeouts);
			return nbpf_err(-EBUSY, "map %s: index %u: %s", map->name, idx,
					r == -EOWNERDEAD ? "its writer died mid-update; the next writer resets it"
							 : "a writer holds it for too long");
		}
	}
}

static int host_update(struct ncclbpf_map *map, const void *key, const void *value,
		       uint64_t flags)
{
	const struct nbpf_map_layout *lay = &nbpf_priv(map)->lay;
	uint32_t idx = key_index(key), slot;

	if (flags == NCCLBPF_NOEXIST)
		return nbpf_err(-EEXIST, "map %s: array elements always exist (NOEXIST)", map->name);
	if (idx >= map->max_entries)
		return nbpf_err(-E2BIG, "map %s: index %u out of range (max_entries %u)", map->name,
				idx, map->max_entries);
	if (elem_lock(map, idx, NBPF_LOCK_HOST))
		return nbpf_err(-EBUSY, "map %s: index %u: a writer holds it for too long",
				map->name, idx);
	for (slot = 0; slot < lay->nr_slots; slot++)
		nbpf_copy_to_shared(slot_value(map, idx, slot),
				    (const uint8_t *)value + (size_t)slot * lay->value_stride,
				    map->value_size);
	nbpf_unlock(&seqs(map)[idx]);
	return 0;
}

static int host_delete(struct ncclbpf_map *map, const void *key)
{
	return nbpf_err(-EINVAL, "map %s: array elements cannot be deleted", map->name);
}

static int host_next_key(struct ncclbpf_map *map, const void *key, void *next_key)
{
	uint32_t idx = key ? key_index(key) : UINT32_MAX;

	/* Like the kernel: a missing or out-of-range key restarts at 0. */
	if (idx >= map->max_entries)
		idx = 0;
	else if (idx + 1 >= map->max_entries)
		return -ENOENT;
	else
		idx++;
	memcpy(next_key, &idx, sizeof(idx));
	return 0;
}

const struct nbpf_map_host_ops nbpf_array_host_ops = {
	.lookup = host_lookup,
	.update = host_update,
	.del = host_delete,
	.next_key = host_next_key,
};
