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
#include "map_impl.h"

static inline uint8_t *values(const struct ncclbpf_map *map)
{
	return (uint8_t *)nbpf_priv(map)->hdr + nbpf_priv(map)->lay.data_off;
}

static inline _Atomic uint32_t *seqs(const struct ncclbpf_map *map)
{
	return (_Atomic uint32_t *)((uint8_t *)nbpf_priv(map)->hdr + nbpf_priv(map)->lay.aux_off);
}

static inline uint8_t *slot_value(const struct ncclbpf_map *map, uint32_t idx, uint32_t slot)
{
	const struct nbpf_map_layout *lay = &nbpf_priv(map)->lay;

	return values(map) + ((uint64_t)idx * lay->nr_slots + slot) * lay->value_stride;
}

/* Writer side of the element's sequence lock (also serialises writers). */
static uint32_t seq_lock(_Atomic uint32_t *seq)
{
	uint32_t s = atomic_load_explicit(seq, memory_order_relaxed);
	unsigned spins = 0;

	for (;;) {
		if (!(s & 1) && atomic_compare_exchange_weak_explicit(seq, &s, s + 1,
								       memory_order_acquire,
								       memory_order_relaxed))
			break;
		nbpf_spin_pause(&spins);
		s = atomic_load_explicit(seq, memory_order_relaxed);
	}
	return s + 1;
}

static void seq_unlock(_Atomic uint32_t *seq, uint32_t s)
{
	atomic_store_explicit(seq, s + 1, memory_order_release);
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
	uint32_t idx = key_index(key), s;
	bool percpu = map->type == NCCLBPF_MAP_PERCPU_ARRAY;
	int err = check_flags(flags);

	if (err)
		return err;
	if (idx >= map->max_entries)
		return -E2BIG;
	s = seq_lock(&seqs(map)[idx]);
	nbpf_copy_to_shared(slot_value(map, idx, percpu ? nbpf_epoch_thread_slot() : 0), value,
			    map->value_size);
	seq_unlock(&seqs(map)[idx], s);
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

/* Copies one element out (all slots for per-thread maps), retrying while a writer is active. */
static int host_lookup(struct ncclbpf_map *map, const void *key, void *value)
{
	const struct nbpf_map_layout *lay = &nbpf_priv(map)->lay;
	uint32_t idx = key_index(key), s1, slot;
	unsigned spins = 0;

	if (idx >= map->max_entries)
		return nbpf_err(-ENOENT, "map %s: index %u out of range (max_entries %u)", map->name,
				idx, map->max_entries);
	for (;;) {
		s1 = atomic_load_explicit(&seqs(map)[idx], memory_order_acquire);
		if (!(s1 & 1)) {
			for (slot = 0; slot < lay->nr_slots; slot++)
				nbpf_copy_from_shared((uint8_t *)value + (size_t)slot * lay->value_stride,
						      slot_value(map, idx, slot), map->value_size);
			if (atomic_load_explicit(&seqs(map)[idx], memory_order_acquire) == s1)
				return 0;
		}
		nbpf_spin_pause(&spins);
	}
}

static int host_update(struct ncclbpf_map *map, const void *key, const void *value,
		       uint64_t flags)
{
	const struct nbpf_map_layout *lay = &nbpf_priv(map)->lay;
	uint32_t idx = key_index(key), s, slot;

	if (flags == NCCLBPF_NOEXIST)
		return nbpf_err(-EEXIST, "map %s: array elements always exist (NOEXIST)", map->name);
	if (idx >= map->max_entries)
		return nbpf_err(-E2BIG, "map %s: index %u out of range (max_entries %u)", map->name,
				idx, map->max_entries);
	s = seq_lock(&seqs(map)[idx]);
	for (slot = 0; slot < lay->nr_slots; slot++)
		nbpf_copy_to_shared(slot_value(map, idx, slot),
				    (const uint8_t *)value + (size_t)slot * lay->value_stride,
				    map->value_size);
	seq_unlock(&seqs(map)[idx], s);
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
