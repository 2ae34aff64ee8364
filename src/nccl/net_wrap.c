// SPDX-License-Identifier: Apache-2.0
/*
 * net_wrap.c - the inner backend's requests, wrapped: a FIFO pool of
 * wrappers per comm (a freed wrapper is reused last, so irecvConsumed
 * still finds a just-completed request), posting through the inner plugin
 * and testing it, with per-peer telemetry and SEC("net") events around.
 *
 * What NCCL gets back is exactly what the inner plugin answered: its
 * result, NULL where it posted nothing ("not now", or nothing to flush),
 * a wrapper around any request it returned, and at test its done flag and
 * sizes.  Every wrapper belongs to its comm from the pool's creation, so
 * one the inner plugin left unused goes back without looking anything up.
 *
 * irecvConsumed comes after the receive's test, when its wrapper is back
 * in the pool: a wrapper keeps the last receive it completed apart from
 * the one it carries, so it names the right inner request until it has
 * been reused for NET_IREQS more posts and completed again (NCCL consumes
 * within NCCL_STEPS).  NCCL has no irecvConsumed in our v6 table: there
 * the wrapper consumes a receive itself once it completes, which is when
 * a host-memory receive is consumed.
 */
#include <stdlib.h>

#include "host/host.h"
#include "net_core.h"
#include "net_peers.h"

#define NET_IREQ_MAGIC 0x51455249u
#define NET_FLUSH_EVENT UINT32_MAX

struct net_ireqs *net_wrap_pool_new(struct net_comm *c)
{
	struct net_ireqs *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	pthread_mutex_init(&q->mu, NULL);
	for (unsigned i = 0; i < NET_IREQS; i++) {
		q->free_idx[i] = (uint16_t)i;
		q->w[i].c = c;
	}
	q->tail = NET_IREQS;
	return q;
}

static struct net_ireq *ireq_get(struct net_comm *c)
{
	struct net_ireqs *q = c->ireqs;
	struct net_ireq *w = NULL;

	pthread_mutex_lock(&q->mu);
	if (q->head != q->tail)
		w = &q->w[q->free_idx[q->head++ % NET_IREQS]];
	pthread_mutex_unlock(&q->mu);
	return w;
}

static void ireq_put(struct net_ireq *w)
{
	struct net_ireqs *q = w->c->ireqs;

	pthread_mutex_lock(&q->mu);
	w->magic = 0;
	q->free_idx[q->tail++ % NET_IREQS] = (uint16_t)(w - q->w);
	pthread_mutex_unlock(&q->mu);
}

/* A failed call fails the comm for NCCL: counted once per comm, as our transport does. */
static nbpf_nccl_result_t comm_failed(struct net_comm *c, nbpf_nccl_result_t res)
{
	if (res && !c->warned) {
		c->warned = true;
		net_peer_error(c->peer);
	}
	return res;
}

/*
 * Posts to the inner plugin through a wrapper.  NCCL pre-sets only a
 * receive's request, to 0x1 (completion optional); net_inner_irecv hands
 * the inner plugin what NCCL's own adaptor would (NULL for v6-v8).
 */
nbpf_nccl_result_t net_wrap_post(struct net_comm *c, bool send, void **data, size_t *sizes,
				 int n, int *tags, void **mh, void **ph, void **req)
{
	void *in = !send && *req == NET_OPTIONAL_RECV ? NET_OPTIONAL_RECV : NULL;
	struct net_ireq *w;
	nbpf_nccl_result_t res;
	size_t bytes = 0;

	*req = NULL;
	w = ireq_get(c);
	if (!w)
		return NBPF_NCCL_SUCCESS; /* every wrapper in flight: NCCL retries */
	if (send)
		res = net_inner_isend(c->ctx->inner, c->ic, data[0], sizes[0], tags[0], mh[0],
				      ph ? ph[0] : NULL, &in);
	else
		res = net_inner_irecv(c->ctx->inner, c->ic, n, data, sizes, tags, mh, ph, &in);
	if (res || !in) {
		ireq_put(w);
		return comm_failed(c, res);
	}
	for (int i = 0; i < n; i++)
		bytes += sizes[i];
	w->magic = NET_IREQ_MAGIC;
	w->ireq = in;
	w->n = n;
	w->bytes = bytes;
	w->event = send ? NCCLBPF_NET_SEND_DONE : NCCLBPF_NET_RECV_DONE;
	*req = w;
	net_hook_msg(c, send ? NCCLBPF_NET_SEND_POST : NCCLBPF_NET_RECV_POST, bytes,
		     tags ? tags[0] : -1, 0);
	w->posted = nbpf_now_ns();
	return NBPF_NCCL_SUCCESS;
}

bool net_wrap_ok(const struct net_ireq *w)
{
	return w && ((uintptr_t)w & (_Alignof(struct net_ireq) - 1)) == 0 &&
	       (uintptr_t)w > 0x1000 && w->magic == NET_IREQ_MAGIC;
}

nbpf_nccl_result_t net_wrap_test(struct net_ireq *w, int *done, int *sizes)
{
	struct net_comm *c = w->c;
	nbpf_nccl_result_t res;
	int local[NET_MAX_RECVS], *sz = sizes ? sizes : local;
	size_t bytes = 0;

	/*
	 * NCCL zeroes the sizes it passes; a plugin that reports none (a
	 * receive answered with 0x1) then reads as 0 bytes, never as what the
	 * array held.  Without an array (NCCL's flush test) ours takes them.
	 */
	for (int i = 0; i < w->n; i++)
		sz[i] = 0;
	res = net_inner_test(c->ctx->inner, w->ireq, done, sz);
	if (res || !*done)
		return comm_failed(c, res);
	if (w->event != NET_FLUSH_EVENT) {
		uint64_t lat = w->posted ? nbpf_now_ns() - w->posted : 0;

		for (int i = 0; i < w->n; i++)
			bytes += sz[i] > 0 ? (size_t)sz[i] : 0;
		net_peer_msg(c->peer, w->event == NCCLBPF_NET_RECV_DONE, bytes, lat);
		net_hook_msg(c, w->event, bytes, -1, lat);
	}
	if (w->event == NCCLBPF_NET_RECV_DONE) {
		w->done_ireq = w->ireq;
		if (c->ctx->abi < 7)
			res = net_inner_irecv_consumed(c->ctx->inner, c->ic, w->n, w->ireq);
	}
	ireq_put(w);
	return comm_failed(c, res);
}

nbpf_nccl_result_t net_wrap_consumed(struct net_comm *c, int n, void *req)
{
	struct net_ireq *w = req;

	if (!w || w < c->ireqs->w || w >= c->ireqs->w + NET_IREQS ||
	    (uintptr_t)((char *)w - (char *)c->ireqs->w) % sizeof(*w))
		return NBPF_NCCL_INVALID_ARGUMENT; /* not a receive of this comm */
	return comm_failed(c, net_inner_irecv_consumed(c->ctx->inner, c->ic, n, w->done_ireq));
}

nbpf_nccl_result_t net_wrap_flush(struct net_comm *c, int n, void **data, int *sizes, void **mh,
				  void **req)
{
	struct net_ireq *w = ireq_get(c);
	nbpf_nccl_result_t res;
	void *in = NULL;

	*req = NULL;
	if (!w)
		return NBPF_NCCL_SUCCESS;
	res = net_inner_iflush(c->ctx->inner, c->ic, n, data, sizes, mh, &in);
	if (res || !in) {
		ireq_put(w);
		return comm_failed(c, res);
	}
	w->magic = NET_IREQ_MAGIC;
	w->ireq = in;
	w->n = n;
	w->bytes = 0;
	w->event = NET_FLUSH_EVENT;
	w->posted = 0;
	*req = w;
	return NBPF_NCCL_SUCCESS;
}
