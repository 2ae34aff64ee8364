/*
 * map_impl.h - private to src/runtime/maps: the shared-memory file layout
 * and the per-type implementation hooks.
 *
 * File layout (all offsets from the start of the file, never pointers):
 *   [0, data_off)        struct nbpf_shm_hdr (first page(s))
 *   ARRAY/PERCPU_ARRAY:  data: values (max_entries * nr_slots * value_stride),
 *                        aux:  one lock word (nbpf_lock_t) per element
 *   HASH/PERCPU/LRU:     data: element pool (pool_size * elem_size),
 *                        aux:  n_buckets * struct nbpf_htab_bucket
 *   RINGBUF:             data: max_entries bytes (mapped twice in a row by
 *                        every process so records never wrap)
 */
#ifndef NCCLBPF_MAP_IMPL_H
#define NCCLBPF_MAP_IMPL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "map.h"

#define NBPF_SHM_MAGIC   0x314d46504242434eull /* "NCBBPFM1" little-endian */
#define NBPF_SHM_VERSION 2u
#define NBPF_SHM_RDONLY_PROG 1u

/* Refuse maps whose file would exceed this (sizes are fixed at creation). */
#define NBPF_MAP_MAX_BYTES   (1ull << 32)
#define NBPF_MAP_MAX_KEY     512u
#define NBPF_MAP_MAX_VALUE   (1u << 24)
#define NBPF_MAP_MAX_PERCPU_VALUE 32768u
#define NBPF_MAP_NAME_MAX    63u

/*
 * A lock in shared memory (lock.h): low half a sequence, odd while held;
 * high half the holder (slot + 1 | generation << 8).
 */
typedef _Atomic uint64_t nbpf_lock_t;

/* Writable handles that may hold a map's locks at once. */
#define NBPF_LOCK_SLOTS 64u
/* File offset of slot 0's liveness byte (an OFD lock, far past the data). */
#define NBPF_LOCK_BYTE0 (1ll << 40)

struct nbpf_lock_slot {
	_Atomic uint32_t gen;   /* bumped by each claim; part of the holder id */
	_Atomic int32_t pid;    /* claimer's pid in its own namespace (diagnostics only) */
};

struct nbpf_shm_hdr {
	uint64_t magic;
	uint32_t version, hdr_size;
	uint32_t type, key_size, value_size, max_entries;
	uint32_t map_flags, flags;
	uint32_t nr_slots, value_stride;
	uint64_t total_size;
	uint64_t data_off, data_size;
	uint64_t aux_off, aux_size;
	uint32_t n_buckets, elem_size, pool_size, hash_seed;
	int32_t owner_pid;
	uint32_t page_size;
	char name[NBPF_MAP_NAME_MAX + 1];

	/* Mutable shared state, each group on its own cache line. */
	_Alignas(64) _Atomic uint64_t free_head;   /* hash: (aba tag << 32) | (idx + 1) */
	_Atomic uint32_t limbo_head;               /* hash: retired, awaiting grace */
	_Atomic uint32_t foreign_limbo;            /* hash: retired by another process */
	_Atomic uint32_t count;                    /* hash: live elements */
	_Atomic uint32_t reclaim_busy;
	_Atomic uint32_t retire_ticks;             /* hash: reclaim every few retires */
	_Alignas(64) _Atomic uint64_t lru_clock;
	_Atomic uint64_t lru_cursor;
	_Alignas(64) _Atomic uint64_t consumer_pos; /* ringbuf */
	_Atomic uint32_t consumer_busy;             /* ringbuf: consumer's holder id, 0 = none */
	_Alignas(64) _Atomic uint64_t producer_pos;
	nbpf_lock_t producer_lock;
	_Alignas(64) _Atomic uint64_t dropped;
	/* Locks: operations that failed for want of a lock in time, locks taken
	 * over from dead holders, values those holders left half-written and
	 * recovery discarded. */
	_Alignas(64) _Atomic uint64_t lock_timeouts;
	_Atomic uint64_t lock_recoveries;
	_Atomic uint64_t lock_discarded;
	_Alignas(64) struct nbpf_lock_slot holders[NBPF_LOCK_SLOTS];
};

/* Hash bucket: lock is a sequence lock (odd = a writer holds it). */
struct nbpf_htab_bucket {
	nbpf_lock_t lock;
	_Atomic uint32_t head;   /* element index + 1, 0 = empty */
	uint32_t pad;
};

enum { NBPF_ELEM_FREE = 0, NBPF_ELEM_LIVE = 1, NBPF_ELEM_RETIRED = 2 };

/* Element header; key (rounded to 8) then nr_slots values follow. */
struct nbpf_htab_elem {
	_Atomic uint32_t seq;        /* odd while the value is being written */
	_Atomic uint32_t next;       /* bucket chain, index + 1 */
	_Atomic uint32_t free_next;  /* free list / limbo chain, index + 1 */
	_Atomic uint32_t state;
	uint32_t hash;
	uint32_t pad;
	_Atomic uint64_t lru;        /* LRU stamp */
	_Atomic uint64_t retired;    /* epoch stamp while in limbo */
};
#define NBPF_HTAB_ELEM_HDR ((uint32_t)sizeof(struct nbpf_htab_elem))

/* Ring buffer record header (kernel layout). */
#define NBPF_RB_BUSY    (1u << 31)
#define NBPF_RB_DISCARD (1u << 30)
#define NBPF_RB_HDR_SZ  8u
struct nbpf_rb_hdr {
	_Atomic uint32_t len;
	uint32_t pg_off;
};

/* Sizes of every region, computed from the shape only (one source of truth
 * for create and open_path). */
struct nbpf_map_layout {
	uint32_t nr_slots, value_stride, key_stride;
	uint32_t n_buckets, elem_size, pool_size;
	uint64_t data_off, data_size, aux_off, aux_size, total_size;
};

int nbpf_map_layout(enum ncclbpf_map_type type, uint32_t key_size, uint32_t value_size,
		    uint32_t max_entries, uint32_t page_size, struct nbpf_map_layout *lay);

/* Process-local state behind map->impl. */
struct nbpf_map_priv {
	struct nbpf_shm_hdr *hdr;
	struct nbpf_map_layout lay;
	bool owner;        /* created here: unlink on last put, runs reclamation */
	bool writable;
	/* The mapped descriptor: the creator's liveness flock; lock holders'
	 * liveness is asked through it (lock.c). */
	int lock_fd;
	int holder_fd;             /* a second, unmapped description: our slot's OFD lock */
	_Atomic uint32_t holder;   /* lock holder id, 0 until registered */
	_Atomic uint64_t claim_after; /* no slot was free: program calls retry after this */
	/* The last lock a program call gave up on while its holder lived, and
	 * until when later program calls that find it unchanged fail at once. */
	_Atomic(nbpf_lock_t *) stuck_lock;
	_Atomic uint64_t stuck_word, stuck_until;
	struct nbpf_map_priv *next_handle;
	uint32_t page_shift;
	/* ringbuf: the reserved span (header + data mapped twice) */
	void *rb_span;
	size_t rb_span_size;
	uint8_t *rb_data;
};

static inline struct nbpf_map_priv *nbpf_priv(const struct ncclbpf_map *map)
{
	return map->impl;
}

/* Host-side per-type operations (copy in/out). */
struct nbpf_map_host_ops {
	int (*lookup)(struct ncclbpf_map *map, const void *key, void *value);
	int (*update)(struct ncclbpf_map *map, const void *key, const void *value,
		      uint64_t flags);
	int (*del)(struct ncclbpf_map *map, const void *key);
	int (*next_key)(struct ncclbpf_map *map, const void *key, void *next_key);
	int (*init)(struct ncclbpf_map *map); /* fresh file, creator only */
};

extern const struct nbpf_map_ops nbpf_array_ops, nbpf_percpu_array_ops;
extern const struct nbpf_map_ops nbpf_htab_ops, nbpf_percpu_htab_ops, nbpf_lru_htab_ops;
extern const struct nbpf_map_ops nbpf_ringbuf_ops;
extern const struct nbpf_map_host_ops nbpf_array_host_ops, nbpf_htab_host_ops,
	nbpf_ringbuf_host_ops;

/*
 * Word-wise copies that never tear an aligned 8-byte word (the shared side
 * must be 8-byte aligned).  Loads are acquire and stores release (plain
 * moves on x86-64), which is what orders them against the sequence
 * counters around them: the counter re-read after a copy-out cannot pass
 * the copy, and a writer's odd counter is visible before any new word.
 */
void nbpf_copy_from_shared(void *dst, const void *shared, size_t n);
void nbpf_copy_to_shared(void *shared, const void *src, size_t n);
void nbpf_zero_shared(void *shared, size_t n);

/* Spin politely. */
void nbpf_spin_pause(unsigned *spins);

/* Shared-memory files (shm.c). */
int nbpf_shm_dir(const char *dir, char *out, size_t out_sz);
int nbpf_shm_create(const char *dir, const char *name, uint64_t size, char **path, int *fd);

/*
 * Truncation guard (guard.c): [start, start + len) maps the map file fd of
 * file_size bytes, whose header is already written; path (kept by the
 * caller) names it in the one warning.  -ENOSPC when every slot is taken
 * (the mapping is then unguarded).  Deleted before the range is unmapped.
 */
int nbpf_map_guard_add(void *start, size_t len, int fd, uint64_t file_size, bool writable,
		       const char *path);
void nbpf_map_guard_del(void *start);
/* Truncations repaired in this process so far. */
uint64_t nbpf_map_guard_repairs(void);

#endif
