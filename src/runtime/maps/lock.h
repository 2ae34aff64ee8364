/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lock.h - private to src/runtime/maps: locks in a map's shared memory that
 * survive the death of the process holding them, with bounded waits.
 *
 * A lock word is 64 bits: the low half is a sequence (odd while held, so
 * it doubles as a seqlock for readers), the high half names the holder, a
 * slot of the map's holder table plus that slot's generation.  A handle
 * claims a slot the first time it locks, by taking an OFD lock on the
 * slot's byte of the map file with its own open file description; the
 * kernel drops that lock when the process dies, whatever pid namespace it
 * is in, so "slot byte unlocked, or slot since claimed by a newer
 * generation" means the holder is dead.  A waiter that finds a holder dead
 * takes the lock over with one compare-and-swap (so exactly one process
 * recovers), repairs what the lock guards and releases it as usual.
 *
 * Waits are bounded: program calls (map helpers run on NCCL's threads)
 * give up after NBPF_LOCK_PROG_WAIT_NS, host calls after
 * NBPF_LOCK_HOST_WAIT_NS; both return -EBUSY and count it in the map's
 * shared lock_timeouts counter.  The uncontended path is one load of the
 * handle's holder id and the compare-and-swap the lock always took.
 */
#ifndef NCCLBPF_MAP_LOCK_H
#define NCCLBPF_MAP_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "map_impl.h"

/* Program calls: spin and yield this long, then check the holder once and fail. */
#define NBPF_LOCK_PROG_WAIT_NS 100000ull
/* Host calls (the job's own host API, the CLI): wait this long in all ... */
#define NBPF_LOCK_HOST_WAIT_NS 1000000000ull
/* ... checking the holder's liveness this often. */
#define NBPF_LOCK_CHECK_NS 1000000ull

enum nbpf_lock_mode { NBPF_LOCK_PROG, NBPF_LOCK_HOST };

/* One waiter's budget. */
struct nbpf_lock_wait {
	enum nbpf_lock_mode mode;
	unsigned spins;
	uint64_t start, next_check;
};

static inline uint32_t nbpf_lock_holder_of(uint64_t word)
{
	return (uint32_t)(word >> 32);
}

int nbpf_lock_slow(struct ncclbpf_map *map, nbpf_lock_t *l, enum nbpf_lock_mode mode);

/*
 * Takes l.  Returns 0 when held; 1 when held after taking it over from a
 * dead holder (the caller repairs what l guards before using it); -EBUSY
 * when the budget of mode ran out (counted).
 */
static inline int nbpf_lock(struct ncclbpf_map *map, nbpf_lock_t *l, enum nbpf_lock_mode mode)
{
	uint64_t me = atomic_load_explicit(&nbpf_priv(map)->holder, memory_order_relaxed);
	uint64_t s = atomic_load_explicit(l, memory_order_relaxed);

	if (__builtin_expect(me && !(s & 1), 1) &&
	    atomic_compare_exchange_weak_explicit(l, &s, (me << 32) | (uint32_t)(s + 1),
						  memory_order_acquire, memory_order_relaxed))
		return 0;
	return nbpf_lock_slow(map, l, mode);
}

/* Releases l: the next even sequence, no holder.  Only the holder writes l. */
static inline void nbpf_unlock(nbpf_lock_t *l)
{
	uint64_t s = atomic_load_explicit(l, memory_order_relaxed);

	atomic_store_explicit(l, (uint32_t)(s + 1), memory_order_release);
}

/*
 * One step of a bounded wait on a word someone else holds (or that keeps
 * changing): 0 to try again, -EOWNERDEAD when word is held by a dead
 * holder, -EBUSY when the budget is spent (not counted: the caller knows
 * whether it failed an operation).
 */
void nbpf_lock_wait_init(struct nbpf_lock_wait *w, enum nbpf_lock_mode mode);
int nbpf_lock_wait(struct ncclbpf_map *map, struct nbpf_lock_wait *w, uint64_t word);

/* Takes over l, seen as word held by a dead holder: true if we won (recovery counted). */
bool nbpf_lock_takeover(struct ncclbpf_map *map, nbpf_lock_t *l, uint64_t word);

/* True when holder (a lock word's high half) is known dead. */
bool nbpf_lock_holder_dead(struct ncclbpf_map *map, uint32_t holder);

/* This handle's holder id, claiming a slot first if needed; 0 if none is free. */
uint32_t nbpf_lock_holder_id(struct ncclbpf_map *map);

/* Every handle goes on a process-wide list so a forked child re-registers. */
void nbpf_lock_handle_add(struct nbpf_map_priv *p);
void nbpf_lock_handle_del(struct nbpf_map_priv *p);

void nbpf_lock_count(struct ncclbpf_map *map, _Atomic uint64_t *counter);

#endif
