/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * etcd.h - a minimal etcd v3 client over the JSON gateway (etcd.c): what
 * the node exchange needs (xchg.h), nothing more.  Functions return 0 or a
 * negative errno with a message through ncclbpf_errmsg().
 */
#ifndef NCCLBPF_LOOP_ETCD_H
#define NCCLBPF_LOOP_ETCD_H

#include <stdint.h>

struct nbpf_etcd;

struct nbpf_etcd_kv {
	char *key, *value;
};

/* endpoints: "http://h:2379,h2:2379,..." (no scheme: http); each call tries them in turn. */
int nbpf_etcd_open(const char *endpoints, int timeout_ms, struct nbpf_etcd **out);
void nbpf_etcd_close(struct nbpf_etcd *e);
/* A lease of ttl_s seconds: keys put with it vanish when it expires. */
int nbpf_etcd_lease(struct nbpf_etcd *e, int ttl_s, int64_t *id);
int nbpf_etcd_put(struct nbpf_etcd *e, const char *key, const char *val, int64_t lease);
/* Every key under prefix (which ends in '/'); *kvs malloc'ed, free with nbpf_etcd_kvs_free. */
int nbpf_etcd_range_prefix(struct nbpf_etcd *e, const char *prefix, struct nbpf_etcd_kv **kvs,
			   int *n);
void nbpf_etcd_kvs_free(struct nbpf_etcd_kv *kvs, int n);
/*
 * Puts key = val only if key was never created: 0 when this call created
 * it, 1 when it existed (*existing: its value, malloc'ed).
 */
int nbpf_etcd_create(struct nbpf_etcd *e, const char *key, const char *val, int64_t lease,
		     char **existing);

#endif
