/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net_peers.h - per-peer network telemetry of the net plugin: one entry
 * per remote address (at most NET_PEERS per process; later peers share
 * the "other" entry, so the exported label set stays bounded), counting
 * messages, bytes and post-to-completion latency per direction.
 *
 * Each comm owns a struct net_peer_stats that only its driving thread
 * writes (relaxed load + store, no locked instruction on the data path);
 * an entry's totals are its retired comms' sums plus its live comms',
 * added up by the reader under the table's lock.
 */
#ifndef NCCLBPF_NCCL_NET_PEERS_H
#define NCCLBPF_NCCL_NET_PEERS_H

#include <stdatomic.h>
#include <stdint.h>

#include "host/host.h"
#include "net/nnet.h"

#define NET_PEERS 32

struct net_peer_stats {
	_Atomic uint64_t msgs[2];         /* [0] sent, [1] received */
	_Atomic uint64_t bytes[2];
	_Atomic uint64_t sum_ns[2];       /* post-to-completion time, summed */
	_Atomic uint64_t errors;
	_Atomic uint64_t hist[2][NBPF_LAT_BUCKETS];
	struct net_peer_stats *next;      /* the entry's live list, under the table lock */
	struct net_peer *peer;
};

struct net_peer {
	char label[48];                   /* "10.0.0.2", "[fd00::2]", "inner", "other" */
	uint64_t key;                     /* immutable once the entry is visible */
	struct net_peer_stats retired;    /* sums of closed comms, under the table lock */
	struct net_peer_stats *live;
};

/* Totals of one entry, as the reader sees them. */
struct net_peer_totals {
	const char *label;
	uint64_t msgs[2], bytes[2], sum_ns[2], errors;
	uint64_t hist[2][NBPF_LAT_BUCKETS];
};

/*
 * Stats for a new comm with a peer address (NULL: the inner backend,
 * "inner"), linked to its entry; NULL only when out of memory.
 */
struct net_peer_stats *net_peer_attach(const union nnet_addr *a);
/* Folds a closing comm's counts into its entry and frees them.  NULL ok. */
void net_peer_detach(struct net_peer_stats *s);

static inline void net_peer_add(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
			      memory_order_relaxed);
}

static inline void net_peer_msg(struct net_peer_stats *s, int recv, uint64_t bytes,
				uint64_t latency_ns)
{
	unsigned b = latency_ns ? 63u - (unsigned)__builtin_clzll(latency_ns) : 0;

	if (!s)
		return;
	net_peer_add(&s->msgs[recv], 1);
	net_peer_add(&s->bytes[recv], bytes);
	net_peer_add(&s->sum_ns[recv], latency_ns);
	net_peer_add(&s->hist[recv][b < NBPF_LAT_BUCKETS ? b : NBPF_LAT_BUCKETS - 1], 1);
}

static inline void net_peer_error(struct net_peer_stats *s)
{
	if (s)
		net_peer_add(&s->errors, 1);
}

/* Calls fn with every entry's totals (table lock held: keep fn short). */
int net_peers_foreach(int (*fn)(void *user, const struct net_peer_totals *t), void *user);

/* net_ctl.c: makes the control plane's telemetry answer carry the peers. */
void net_ctl_register(void);

#endif
