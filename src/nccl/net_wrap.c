// SPDX-License-Identifier: Apache-2.0
/*
 * net_wrap.c - the inner backend's requests, wrapped: a FIFO pool of
 * wrappers per comm (a freed wrapper is reused last, so irecvConsumed
 * still finds a just-completed request), posting through the inner plugin
 * and testing it, with per-peer telemetry and SEC("net") events around.
 */
#include <stdlib.h>

#include "host/host.h"
#include "net_core.h"
#include "net_peers.h"

#define NET_IREQ_MAGIC 0x51455249u
#define NET_FLUSH_EVENT UINT32_MAX

struct net_ireqs *net_wrap_pool_new(void)
{
	struct net_ireqs *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	pthread_mutex_init(&q->mu, NULL);
	for (unsigned i = 0; i < NET_IREQS; i++)
		q->free_idx[i] = (uint16_t)i;
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

/*
 * Posts to the inner plugin through a wrapper.  *req may arrive pre-set
 * (v9+: 0x1, "completion optional"): the inner plugin sees the same value,
 * and a request it hands back unchanged is passed through unwrapped.
 */
nbpf_nccl_result_t net_wrap_post(struct net_comm *c, bool send, void **data, size_t *sizes,
				 int n, int *tags, void **mh, void **ph, void **req)
{
	void *in = *req;
	struct net_ireq *w;
	nbpf_nccl_result_t res;

	w = ireq_get(c);
	if (!w) {
		*req = NULL; /* every wrapper in flight: NCCL retries */
		return NBPF_NCCL_SUCCESS;
	}
	if (send)
		res = net_inner_isend(c->ctx->inner, c->ic, data[0], sizes[0], tags[0], mh[0],
				      ph ? ph[0] : NULL, &in);
	else
		res = net_inner_irecv(c->ctx->inner, c->ic, n, data, sizes, tags, mh, ph, &in);
	if (res || !in || in == *req) {
		ireq_put(w);
		*req = res ? NULL : in;
		return res;
	}
	w->magic = NET_IREQ_MAGIC;
	w->c = c;
	w->ireq = in;
	w->event = send ? NCCLBPF_NET_SEND_DONE : NCCLBPF_NET_RECV_DONE;
	*req = w;
	net_hook_msg(c, send ? NCCLBPF_NET_SEND_POST : NCCLBPF_NET_RECV_POST, sizes[0],
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
	int sz[8] = { 0 };

	res = net_inner_test(c->ctx->inner, w->ireq, done, sizes ? sizes : sz);
	if (res) {
		if (!c->warned) {
			c->warned = true;
			net_peer_error(c->peer);
		}
		return res;
	}
	if (!*done)
		return res;
	if (w->event != NET_FLUSH_EVENT) {
		uint64_t lat = w->posted ? nbpf_now_ns() - w->posted : 0;
		size_t n = (size_t)(sizes ? sizes[0] : sz[0]);

		net_peer_msg(c->peer, w->event == NCCLBPF_NET_RECV_DONE, n, lat);
		net_hook_msg(c, w->event, n, -1, lat);
	}
	ireq_put(w);
	return NBPF_NCCL_SUCCESS;
}

nbpf_nccl_result_t net_wrap_flush(struct net_comm *c, int n, void **data, int *sizes, void **mh,
				  void **req)
{
	struct net_ireq *w = ireq_get(c);
	nbpf_nccl_result_t res;
	void *in = NULL;

	if (!w)
		return NBPF_NCCL_SUCCESS;
	res = net_inner_iflush(c->ctx->inner, c->ic, n, data, sizes, mh, &in);
	if (res || !in) {
		ireq_put(w);
		return res;
	}
	w->magic = NET_IREQ_MAGIC;
	w->c = c;
	w->ireq = in;
	w->event = NET_FLUSH_EVENT;
	w->posted = 0;
	*req = w;
	return NBPF_NCCL_SUCCESS;
}
