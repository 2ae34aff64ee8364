/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net_peers.h - per-peer network telemetry of the net plugin: one entry
 * per remote address (at most NET_PEERS per process; later peers share
 * the "other" entry, so the exported label set stays bounded), counting
 * messages, bytes and post-to-completion latency per direction.
 */
#ifndef NCCLBPF_NCCL_NET_PEERS_H
#define NCCLBPF_NCCL_NET_PEERS_H

#include <stdatomic.h>
#include <stdint.h>

#include "host.h"
#include "net/nnet.h"

#define NET_PEERS 32

struct net_peer {
	char label[48];                   /* "10.0.0.2", "[fd00::2]", "inner", "other" */
	uint64_t key;                     /* immutable once the entry is visible */
	_Atomic uint64_t msgs[2];         /* [0] sent, [1] received */
	_Atomic uint64_t bytes[2];
	_Atomic uint64_t sum_ns[2];       /* post-to-completion time, summed */
	_Atomic uint64_t errors;
	_Atomic uint64_t hist[2][NBPF_LAT_BUCKETS];
};

/* The entry for a peer address (NULL: the inner backend's "inner"); never NULL. */
struct net_peer *net_peer_get(const union nnet_addr *a);
void net_peer_msg(struct net_peer *p, int recv, uint64_t bytes, uint64_t latency_ns);
void net_peer_error(struct net_peer *p);
/* Calls fn for every entry in use; stops at a nonzero return. */
int net_peers_foreach(int (*fn)(void *user, const struct net_peer *p), void *user);

#endif
