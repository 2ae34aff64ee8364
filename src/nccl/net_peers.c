// SPDX-License-Identifier: Apache-2.0
/*
 * net_peers.c - the per-peer telemetry table (see net_peers.h).
 *
 * Entries are claimed under a mutex when a connection is made (never on
 * the data path) and published with a release store of the count, so
 * readers (the control thread) walk only complete entries without a
 * lock.  The data path does relaxed atomic adds on its peer's entry:
 * comms to the same peer share that entry's cache lines, the price of a
 * per-peer view that needs no aggregation thread.  Entries live as long
 * as the library: a peer that goes away keeps its totals (counters are
 * monotonic, as Prometheus expects).
 */
#include "net_peers.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t peers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct net_peer peers[NET_PEERS + 1]; /* last: "other" */
static _Atomic unsigned peers_used;

static void label_of(const union nnet_addr *a, char *buf, size_t n)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (!a) {
		snprintf(buf, n, "inner");
	} else if (a->sa.sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &a->in6.sin6_addr, ip, sizeof(ip));
		snprintf(buf, n, "[%s]", ip);
	} else {
		inet_ntop(AF_INET, &a->in.sin_addr, ip, sizeof(ip));
		snprintf(buf, n, "%s", ip);
	}
}

static uint64_t key_of(const union nnet_addr *a)
{
	uint64_t k = 1; /* 1: inner; addresses never fold to 1 in practice, and a clash only merges series */
	const unsigned char *b;
	size_t len;

	if (!a)
		return k;
	b = a->sa.sa_family == AF_INET6 ? (const unsigned char *)&a->in6.sin6_addr
					: (const unsigned char *)&a->in.sin_addr;
	len = a->sa.sa_family == AF_INET6 ? 16 : 4;
	k = 1469598103934665603ull; /* FNV-1a */
	for (size_t i = 0; i < len; i++)
		k = (k ^ b[i]) * 1099511628211ull;
	return k | 2;
}

struct net_peer *net_peer_get(const union nnet_addr *a)
{
	uint64_t key = key_of(a);
	unsigned n = atomic_load_explicit(&peers_used, memory_order_acquire);
	struct net_peer *p = NULL;

	for (unsigned i = 0; i < n; i++)
		if (peers[i].key == key)
			return &peers[i];
	pthread_mutex_lock(&peers_lock);
	n = atomic_load_explicit(&peers_used, memory_order_relaxed);
	for (unsigned i = 0; i < n && !p; i++)
		if (peers[i].key == key)
			p = &peers[i];
	if (!p && n < NET_PEERS) {
		p = &peers[n];
		p->key = key;
		label_of(a, p->label, sizeof(p->label));
		atomic_store_explicit(&peers_used, n + 1, memory_order_release);
	}
	if (!p) {
		p = &peers[NET_PEERS];
		if (!p->key) {
			snprintf(p->label, sizeof(p->label), "other");
			p->key = UINT64_MAX;
		}
	}
	pthread_mutex_unlock(&peers_lock);
	return p;
}

static unsigned lat_bucket(uint64_t ns)
{
	unsigned b = ns ? 63u - (unsigned)__builtin_clzll(ns) : 0;

	return b < NBPF_LAT_BUCKETS ? b : NBPF_LAT_BUCKETS - 1;
}

void net_peer_msg(struct net_peer *p, int recv, uint64_t bytes, uint64_t latency_ns)
{
	atomic_fetch_add_explicit(&p->msgs[recv], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&p->bytes[recv], bytes, memory_order_relaxed);
	atomic_fetch_add_explicit(&p->sum_ns[recv], latency_ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&p->hist[recv][lat_bucket(latency_ns)], 1, memory_order_relaxed);
}

void net_peer_error(struct net_peer *p)
{
	atomic_fetch_add_explicit(&p->errors, 1, memory_order_relaxed);
}

int net_peers_foreach(int (*fn)(void *user, const struct net_peer *p), void *user)
{
	unsigned n = atomic_load_explicit(&peers_used, memory_order_acquire);
	int rc = 0;

	for (unsigned i = 0; i < n && !rc; i++)
		rc = fn(user, &peers[i]);
	pthread_mutex_lock(&peers_lock);
	if (!rc && peers[NET_PEERS].key)
		rc = fn(user, &peers[NET_PEERS]);
	pthread_mutex_unlock(&peers_lock);
	return rc;
}
