/*
 * map.h - the runtime's view of a map, shared by helpers, engines and the
 * verifier.  struct ncclbpf_map is the public opaque handle.
 *
 * Storage is a shared-memory file (owner-only) whose layout uses offsets,
 * never pointers, so another process can map it.  Engines only use the
 * ops table, except that the JIT may inline lookups of array maps using
 * array_base/value_stride/max_entries (valid for the map's lifetime).
 */
#ifndef NCCLBPF_MAP_H
#define NCCLBPF_MAP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ncclbpf/runtime.h"

struct ncclbpf_map;

struct nbpf_map_ops {
	/* Program-side: pointer to the value (this thread's slot for percpu), or NULL. */
	void *(*lookup_elem)(struct ncclbpf_map *map, const void *key);
	long (*update_elem)(struct ncclbpf_map *map, const void *key, const void *value,
			    uint64_t flags);
	long (*delete_elem)(struct ncclbpf_map *map, const void *key);
	/* Host-side copy helpers are in the map implementation files. */
};

struct ncclbpf_map {
	const struct nbpf_map_ops *ops;
	char *name;
	char *path;               /* shared-memory file, NULL if anonymous */
	enum ncclbpf_map_type type;
	uint32_t key_size, value_size, max_entries, map_flags;
	bool readonly_prog;       /* .rodata: programs may not write */
	bool writable_by_prog;    /* set by the verifier/host when a program writes it */
	atomic_int refcnt;
	/* Mapping of the shared-memory file. */
	void *shm;
	uint64_t shm_size;
	/* Array maps (and global data): value i at array_base + i * value_stride. */
	uint8_t *array_base;
	uint32_t value_stride;
	void *impl;               /* type-specific state */
};

/* Address of byte off of the value at index 0 (global data / lddw map value), or NULL. */
void *nbpf_map_value_addr(struct ncclbpf_map *map, uint32_t off);

/*
 * Bytes of the value buffer ncclbpf_map__lookup/update use: value_size, or
 * for per-thread maps NCCLBPF_NR_SLOTS values each at a multiple of
 * round_up(value_size, 8) (value_stride), as the kernel does for per-CPU maps.
 */
size_t nbpf_map_host_value_size(const struct ncclbpf_map *map);

/*
 * Ring buffer producer side (the bpf_ringbuf_* helpers).  reserve returns
 * size bytes (8-byte aligned, contiguous even across the wrap) or NULL when
 * the buffer is full (counted as a drop) or the request is invalid; every
 * reservation must be committed exactly once (discard = skip it).  Any
 * number of threads may produce at once.
 */
void *nbpf_ringbuf_reserve(struct ncclbpf_map *map, uint64_t size, uint64_t flags);
void nbpf_ringbuf_commit(void *sample, bool discard);
long nbpf_ringbuf_output(struct ncclbpf_map *map, const void *data, uint64_t size,
			 uint64_t flags);
/* BPF_RB_AVAIL_DATA (0), BPF_RB_RING_SIZE (1), BPF_RB_CONS_POS (2), BPF_RB_PROD_POS (3). */
uint64_t nbpf_ringbuf_query(struct ncclbpf_map *map, uint64_t flags);

#endif
