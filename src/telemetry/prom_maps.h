/* SPDX-License-Identifier: MIT */
/*
 * prom_maps.h - a policy's own maps as Prometheus metrics, the way the
 * policy declares them (NCCLBPF_EXPORT in ncclbpf/policy.h; the model is
 * cloudflare's ebpf_exporter: key fields become labels, the value a counter,
 * a gauge or a histogram).
 *
 * This file knows nothing of maps or processes: the caller parses each
 * declaration, reads the map's entries and hands them over as bytes; entries
 * with the same labels from several processes (ranks) merge (counters and
 * histograms add, gauges keep the largest), so label sets stay bounded.
 */
#ifndef NCCLBPF_PROM_MAPS_H
#define NCCLBPF_PROM_MAPS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define NBPF_EXPORT_MAX_FIELDS  8
#define NBPF_EXPORT_MAX_BUCKETS 64

enum nbpf_export_type {
	NBPF_EXPORT_COUNTER,
	NBPF_EXPORT_GAUGE,
	NBPF_EXPORT_HISTOGRAM,
};

enum nbpf_export_kind {
	NBPF_EXPORT_U8,
	NBPF_EXPORT_U16,
	NBPF_EXPORT_U32,
	NBPF_EXPORT_U64,
	NBPF_EXPORT_HEX,   /* a __u64 as 0x%016x (communicator ids) */
	NBPF_EXPORT_COLL,  /* __u32, NCCL's collective names */
	NBPF_EXPORT_ALGO,  /* __s32, NCCL's algorithm names */
	NBPF_EXPORT_PROTO, /* __s32, NCCL's protocol names */
};

struct nbpf_export_field {
	char label[32];    /* "_": padding, no label */
	enum nbpf_export_kind kind;
	uint32_t off, size;
};

struct nbpf_export_spec {
	char map[64], name[128], help[256];
	enum nbpf_export_type type;
	struct nbpf_export_field fields[NBPF_EXPORT_MAX_FIELDS];
	uint32_t n_fields;
	uint32_t key_size; /* the key struct's size, C layout of the fields */
};

/*
 * Parses one declaration ("map=NAME;type=...;name=...;help=...;key=...").
 * 0, or -EINVAL with the reason in err.
 */
int nbpf_export_spec_parse(const char *text, struct nbpf_export_spec *spec, char *err,
			   size_t errlen);
/* Whether a value of val_size bytes fits the declaration: 0 or -EINVAL with err. */
int nbpf_export_value_check(const struct nbpf_export_spec *spec, uint32_t val_size, char *err,
			    size_t errlen);

struct nbpf_export_series {
	char labels[384];  /* rendered label pairs, without braces */
	uint64_t value;    /* counter, gauge; histogram: the sum */
	uint64_t buckets[NBPF_EXPORT_MAX_BUCKETS];
};

struct nbpf_export_family {
	struct nbpf_export_spec spec;
	uint32_t n_buckets;
	struct nbpf_export_series *series;
	size_t n, cap;
};

struct nbpf_export_set {
	struct nbpf_export_family *fams;
	size_t n, cap;
};

/*
 * Adds one entry: key has spec->key_size bytes, val val_size (checked with
 * nbpf_export_value_check).  A second declaration of one metric name with
 * another type, label set or bucket count is refused (-EEXIST).  0 or a negative errno.
 */
int nbpf_export_add(struct nbpf_export_set *s, const struct nbpf_export_spec *spec,
		    const void *key, const void *val, uint32_t val_size);
/*
 * Creates the family of a declaration without entries yet, so an empty map
 * still shows its HELP and TYPE.  0, -EINVAL or -EEXIST as nbpf_export_add.
 */
int nbpf_export_declare(struct nbpf_export_set *s, const struct nbpf_export_spec *spec,
			uint32_t val_size);
/* Writes every family in the text format 0.0.4. */
int nbpf_export_write(FILE *f, const struct nbpf_export_set *s);
void nbpf_export_free(struct nbpf_export_set *s);

#endif
