// SPDX-License-Identifier: Apache-2.0
/*
 * net_peers.c - the per-peer telemetry table (see net_peers.h).
 *
 * Entries are claimed, and comms attached and detached, under one mutex
 * when connections open and close (never on the data path).  Entries live
 * as long as the library: a peer that goes away keeps its totals (the
 * counters are monotonic, as Prometheus expects).
 */
#include "net_peers.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t peers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct net_peer peers[NET_PEERS + 1]; /* last: "other" */
static unsigned peers_used;

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

/* Entry for label (claimed on first use, "other" when full); lock held. */
static struct net_peer *entry_locked(const char *label)
{
	struct net_peer *p;

	for (unsigned i = 0; i < peers_used; i++)
		if (!strcmp(peers[i].label, label))
			return &peers[i];
	p = peers_used < NET_PEERS ? &peers[peers_used++] : &peers[NET_PEERS];
	if (!p->key) {
		snprintf(p->label, sizeof(p->label), "%s", p == &peers[NET_PEERS] ? "other" : label);
		p->key = 1;
	}
	return p;
}

struct net_peer_stats *net_peer_attach(const union nnet_addr *a)
{
	struct net_peer_stats *s = calloc(1, sizeof(*s));
	char label[48];

	if (!s)
		return NULL;
	label_of(a, label, sizeof(label));
	pthread_mutex_lock(&peers_lock);
	s->peer = entry_locked(label);
	s->next = s->peer->live;
	s->peer->live = s;
	pthread_mutex_unlock(&peers_lock);
	return s;
}

static uint64_t ld(const _Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

static void sum_into(struct net_peer_totals *t, const struct net_peer_stats *s)
{
	for (int d = 0; d < 2; d++) {
		t->msgs[d] += ld(&s->msgs[d]);
		t->bytes[d] += ld(&s->bytes[d]);
		t->sum_ns[d] += ld(&s->sum_ns[d]);
		for (int i = 0; i < NBPF_LAT_BUCKETS; i++)
			t->hist[d][i] += ld(&s->hist[d][i]);
	}
	t->errors += ld(&s->errors);
}

void net_peer_detach(struct net_peer_stats *s)
{
	struct net_peer_stats **pp;
	struct net_peer_totals t = { 0 };

	if (!s)
		return;
	pthread_mutex_lock(&peers_lock);
	for (pp = &s->peer->live; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	sum_into(&t, s);
	for (int d = 0; d < 2; d++) {
		net_peer_add(&s->peer->retired.msgs[d], t.msgs[d]);
		net_peer_add(&s->peer->retired.bytes[d], t.bytes[d]);
		net_peer_add(&s->peer->retired.sum_ns[d], t.sum_ns[d]);
		for (int i = 0; i < NBPF_LAT_BUCKETS; i++)
			net_peer_add(&s->peer->retired.hist[d][i], t.hist[d][i]);
	}
	net_peer_add(&s->peer->retired.errors, t.errors);
	pthread_mutex_unlock(&peers_lock);
	free(s);
}

int net_peers_foreach(int (*fn)(void *user, const struct net_peer_totals *t), void *user)
{
	int rc = 0;

	pthread_mutex_lock(&peers_lock);
	for (unsigned i = 0; i <= NET_PEERS && !rc; i++) {
		struct net_peer *p = &peers[i];
		struct net_peer_totals t = { .label = p->label };

		if (!p->key)
			continue;
		sum_into(&t, &p->retired);
		for (const struct net_peer_stats *s = p->live; s; s = s->next)
			sum_into(&t, s);
		rc = fn(user, &t);
	}
	pthread_mutex_unlock(&peers_lock);
	return rc;
}
