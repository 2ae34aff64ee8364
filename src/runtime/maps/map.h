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

#endif
