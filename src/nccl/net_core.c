// SPDX-License-Identifier: Apache-2.0
/*
 * net_core.c - the version-free net plugin over our TCP transport
 * (src/net): contexts, comm objects, memory registration, the data path
 * and how transport errors become NCCL results.
 *
 * NCCL treats any non-success from connect or the data path as a fatal
 * comm error, so an error is returned only for real failures (peer gone,
 * message larger than the buffer, bad arguments) and is logged once per
 * comm with the peer's address; "not yet" is always success with a NULL
 * result, as the ABI asks.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "net_core.h"

#define NET_CTX_MAGIC 0x5854434eu

nbpf_nccl_result_t net_core_result(int err)
{
	switch (err) {
	case 0:
		return NBPF_NCCL_SUCCESS;
	case -EINVAL:
		return NBPF_NCCL_INVALID_ARGUMENT;
	case -EMSGSIZE:
		return NBPF_NCCL_INVALID_USAGE;
	case -ECONNRESET:
	case -EPROTO:
		return NBPF_NCCL_REMOTE_ERROR;
	default:
		return NBPF_NCCL_SYSTEM_ERROR;
	}
}

static const char *addr_str(const union nnet_addr *a, char *buf, size_t n)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (a && a->sa.sa_family == AF_INET6)
		inet_ntop(AF_INET6, &a->in6.sin6_addr, ip, sizeof(ip));
	else if (a && a->sa.sa_family == AF_INET)
		inet_ntop(AF_INET, &a->in.sin_addr, ip, sizeof(ip));
	snprintf(buf, n, "%s:%u", ip, a ? ntohs(a->in.sin_port) : 0);
	return buf;
}

static nbpf_nccl_result_t comm_error(struct net_comm *c, const char *what, int err)
{
	char peer[64];

	if (!c->warned) {
		c->warned = true;
		nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_NET, "net: %s peer %s failed (%s): %s",
			      c->magic == NET_OBJ_SEND ? "send to" : "receive from",
			      addr_str(nnet_comm_peer(c->tc), peer, sizeof(peer)), what,
			      err == -EMSGSIZE ? "message truncated (larger than the receive buffer)"
			      : err == -ECONNRESET ? "connection closed by the peer"
			      : strerror(-err));
	}
	return net_core_result(err);
}

/* ---- contexts -------------------------------------------------------------- */

nbpf_nccl_result_t net_ctx_create(struct net_ctx **out, int abi, uint64_t comm_id,
				  int traffic_class, nbpf_nccl_logger_t logger,
				  nbpf_net_prof_cb_t prof)
{
	struct net_ctx *ctx;
	int err;

	*out = NULL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return NBPF_NCCL_SYSTEM_ERROR;
	err = nnet_init();
	if (err) {
		free(ctx);
		return NBPF_NCCL_SYSTEM_ERROR;
	}
	nbpf_host_acquire(logger);
	ctx->magic = NET_CTX_MAGIC;
	ctx->abi = abi;
	ctx->comm_id = comm_id;
	ctx->traffic_class = traffic_class;
	ctx->prof = prof;
	ctx->cm = nbpf_host_comm_add(NBPF_COMM_NET, abi, comm_id, -1, 0, 0);
	nbpf_host_log(NBPF_NCCL_LOG_INFO, NBPF_NCCL_NET | NBPF_NCCL_INIT,
		      "net v%d ready (socket transport, %d device(s), %d x %d sockets per connection)",
		      abi, nnet_ndev(), nnet_settings()->nthreads, nnet_settings()->nsocks_per_thread);
	*out = ctx;
	return NBPF_NCCL_SUCCESS;
}

void net_ctx_destroy(struct net_ctx *ctx)
{
	if (!ctx || ctx->magic != NET_CTX_MAGIC)
		return;
	ctx->magic = 0;
	nbpf_host_comm_remove(ctx->cm);
	nbpf_host_release();
	nnet_fini();
	free(ctx);
}

/* ---- devices ------------------------------------------------------------------ */

nbpf_nccl_result_t net_core_devices(int *ndev)
{
	if (!ndev)
		return NBPF_NCCL_INVALID_ARGUMENT;
	*ndev = nnet_ndev();
	return NBPF_NCCL_SUCCESS;
}

nbpf_nccl_result_t net_core_props(int dev, nbpf_net_props_v12_t *p)
{
	const struct nnet_dev *d = nnet_dev_get(dev);

	if (!d || !p)
		return NBPF_NCCL_INVALID_ARGUMENT;
	memset(p, 0, sizeof(*p));
	p->name = (char *)d->name;
	p->pciPath = d->pci_path;
	p->guid = (uint64_t)dev;
	p->ptrSupport = NBPF_NET_PTR_HOST;
	p->regIsGlobal = 0;
	p->forceFlush = 0;
	p->speed = d->speed_mbps;
	p->port = 0;
	p->latency = 0;
	p->maxComms = 65536;
	p->maxRecvs = NET_CORE_MAX_RECVS;
	p->netDeviceType = NBPF_NET_DEVICE_HOST;
	p->netDeviceVersion = 0;
	p->vProps.ndevs = 1;
	p->vProps.devs[0] = dev;
	p->maxP2pBytes = NBPF_NET_MAX_SIZE_BYTES;
	p->maxCollBytes = NBPF_NET_MAX_SIZE_BYTES;
	p->maxMultiRequestSize = 1;
	p->railId = -1;
	p->planeId = -1;
	return NBPF_NCCL_SUCCESS;
}

/* ---- connection setup --------------------------------------------------------- */

static bool ctx_ok(const struct net_ctx *ctx)
{
	return ctx && ctx->magic == NET_CTX_MAGIC;
}

nbpf_nccl_result_t net_core_listen(struct net_ctx *ctx, int dev, void *handle, void **lc)
{
	struct net_listen *l;
	int err;

	if (!lc)
		return NBPF_NCCL_INVALID_ARGUMENT;
	*lc = NULL;
	if (!ctx_ok(ctx) || !handle)
		return NBPF_NCCL_INVALID_ARGUMENT;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NBPF_NCCL_SYSTEM_ERROR;
	err = nnet_listen(dev, handle, &l->l);
	if (err) {
		free(l);
		nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_NET, "net: listen on device %d failed: %s",
			      dev, strerror(-err));
		return net_core_result(err);
	}
	l->magic = NET_OBJ_LISTEN;
	l->ctx = ctx;
	l->dev = dev;
	*lc = l;
	return NBPF_NCCL_SUCCESS;
}

static nbpf_nccl_result_t comm_wrap(struct net_ctx *ctx, struct nnet_comm *tc, bool send, int dev,
				    void **out)
{
	struct net_comm *c = calloc(1, sizeof(*c));

	if (!c) {
		nnet_close(tc);
		return NBPF_NCCL_SYSTEM_ERROR;
	}
	c->magic = send ? NET_OBJ_SEND : NET_OBJ_RECV;
	c->ctx = ctx;
	c->tc = tc;
	c->dev = dev;
	*out = c;
	return NBPF_NCCL_SUCCESS;
}

nbpf_nccl_result_t net_core_connect(struct net_ctx *ctx, int dev, int traffic_class,
				    void *handle, void **sc)
{
	struct nnet_conn_opts opts = { .nsocks = 0, .tos = -1, .priority = -1 };
	struct nnet_comm *tc = NULL;
	union nnet_addr peer;
	int err;

	if (!sc)
		return NBPF_NCCL_INVALID_ARGUMENT;
	*sc = NULL;
	if (!ctx_ok(ctx) || !handle)
		return NBPF_NCCL_INVALID_ARGUMENT;
	if (traffic_class < 0)
		traffic_class = ctx->traffic_class;
	/* NCCL's traffic class (NCCL_NET_TRAFFIC_CLASS) is, for sockets, the TOS byte. */
	if (traffic_class >= 0 && traffic_class <= 255)
		opts.tos = traffic_class;
	if (!nnet_handle_started(handle) && !nnet_handle_peer(handle, &peer))
		net_hook_connect(ctx, dev, &peer, &opts);
	err = nnet_connect(dev, handle, &opts, &tc);
	if (err) {
		nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_NET, "net: connect on device %d failed: %s",
			      dev, err == -EINVAL ? "not a handle of this plugin" : strerror(-err));
		return net_core_result(err);
	}
	if (!tc)
		return NBPF_NCCL_SUCCESS;
	return comm_wrap(ctx, tc, true, dev, sc);
}

nbpf_nccl_result_t net_core_accept(void *lcp, void **rc)
{
	struct net_listen *l = lcp;
	struct nnet_comm *tc = NULL;
	int err;

	if (!rc)
		return NBPF_NCCL_INVALID_ARGUMENT;
	*rc = NULL;
	if (!l || l->magic != NET_OBJ_LISTEN)
		return NBPF_NCCL_INVALID_ARGUMENT;
	err = nnet_accept(l->l, &tc);
	if (err)
		return net_core_result(err);
	if (!tc)
		return NBPF_NCCL_SUCCESS;
	if (comm_wrap(l->ctx, tc, false, l->dev, rc))
		return NBPF_NCCL_SYSTEM_ERROR;
	net_hook_accept(*rc);
	return NBPF_NCCL_SUCCESS;
}

nbpf_nccl_result_t net_core_close_listen(void *lcp)
{
	struct net_listen *l = lcp;

	if (!l)
		return NBPF_NCCL_SUCCESS;
	if (l->magic != NET_OBJ_LISTEN)
		return NBPF_NCCL_INVALID_ARGUMENT;
	l->magic = 0;
	nnet_close_listen(l->l);
	free(l);
	return NBPF_NCCL_SUCCESS;
}

static struct net_comm *comm_get(void *p, uint32_t kind)
{
	struct net_comm *c = p;

	return c && (c->magic == kind || (!kind && (c->magic == NET_OBJ_SEND ||
						     c->magic == NET_OBJ_RECV))) ? c : NULL;
}

nbpf_nccl_result_t net_core_close(void *p)
{
	struct net_comm *c = comm_get(p, 0);

	if (!p)
		return NBPF_NCCL_SUCCESS;
	if (!c)
		return NBPF_NCCL_INVALID_ARGUMENT;
	c->magic = 0;
	nnet_close(c->tc);
	free(c);
	return NBPF_NCCL_SUCCESS;
}

/* ---- memory registration (host memory only) ----------------------------------- */

nbpf_nccl_result_t net_core_regmr(void *comm, void *data, size_t size, int type, void **mh)
{
	if (!mh)
		return NBPF_NCCL_INVALID_ARGUMENT;
	*mh = NULL;
	if (!comm_get(comm, 0))
		return NBPF_NCCL_INVALID_ARGUMENT;
	/* Sockets read and write host memory directly; nothing to pin or map. */
	return type == NBPF_NET_PTR_HOST ? NBPF_NCCL_SUCCESS : NBPF_NCCL_INTERNAL_ERROR;
}

nbpf_nccl_result_t net_core_regmr_dmabuf(void *comm, void *data, size_t size, int type,
					 uint64_t offset, int fd, void **mh)
{
	if (mh)
		*mh = NULL;
	return NBPF_NCCL_INTERNAL_ERROR; /* ptrSupport has no DMABUF: NCCL never asks */
}

nbpf_nccl_result_t net_core_deregmr(void *comm, void *mh)
{
	return comm_get(comm, 0) ? NBPF_NCCL_SUCCESS : NBPF_NCCL_INVALID_ARGUMENT;
}

/* ---- data path ------------------------------------------------------------------ */

/* Request words: [0] post time (0: not timed), [1] the comm, for test(). */
static void req_posted(struct net_comm *c, void *req, uint32_t event, size_t bytes, int tag)
{
	uint64_t *u = nnet_req_user(req);

	u[1] = (uintptr_t)c;
	if (net_hook_msg(c, event, bytes, tag, 0))
		u[0] = nbpf_now_ns();
}

nbpf_nccl_result_t net_core_isend(void *sc, void *data, size_t size, int tag, void *mh,
				  void *ph, void **req)
{
	struct net_comm *c = comm_get(sc, NET_OBJ_SEND);
	int err;

	if (!req)
		return NBPF_NCCL_INVALID_ARGUMENT;
	*req = NULL;
	if (!c)
		return NBPF_NCCL_INVALID_ARGUMENT;
	err = nnet_isend(c->tc, data, size, req);
	if (err)
		return comm_error(c, "post", err);
	if (*req)
		req_posted(c, *req, NCCLBPF_NET_SEND_POST, size, tag);
	return NBPF_NCCL_SUCCESS;
}

nbpf_nccl_result_t net_core_irecv(void *rc, int n, void **data, size_t *sizes, int *tags,
				  void **mh, void **ph, void **req)
{
	struct net_comm *c = comm_get(rc, NET_OBJ_RECV);
	int err;

	if (!req)
		return NBPF_NCCL_INVALID_ARGUMENT;
	*req = NULL; /* v9+ may pre-set 0x1; always overwrite */
	if (!c || n != 1 || !data || !sizes)
		return NBPF_NCCL_INVALID_ARGUMENT;
	err = nnet_irecv(c->tc, data[0], sizes[0], req);
	if (err)
		return comm_error(c, "post", err);
	if (*req)
		req_posted(c, *req, NCCLBPF_NET_RECV_POST, sizes[0], tags ? tags[0] : -1);
	return NBPF_NCCL_SUCCESS;
}

nbpf_nccl_result_t net_core_iflush(void *rc, int n, void **data, int *sizes, void **mh,
				   void **req)
{
	if (req)
		*req = NULL;
	return NBPF_NCCL_INTERNAL_ERROR; /* host memory: NCCL never flushes */
}

nbpf_nccl_result_t net_core_test(void *req, int *done, int *sizes)
{
	uint64_t *user = nnet_req_user(req);
	struct net_comm *c = user ? (struct net_comm *)(uintptr_t)user[1] : NULL;
	uint64_t posted = user ? user[0] : 0;
	size_t size = 0;
	int err;

	if (!done)
		return NBPF_NCCL_INVALID_ARGUMENT;
	err = nnet_test(req, done, &size);
	if (err == -EINVAL || (err && !c)) {
		nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_NET,
			      "net: test on a request that is not in flight (%p)", req);
		return net_core_result(err);
	}
	if (err)
		return comm_error(c, "transfer", err);
	if (!*done)
		return NBPF_NCCL_SUCCESS;
	if (sizes)
		sizes[0] = size > INT_MAX ? INT_MAX : (int)size;
	if (c)
		net_hook_msg(c, c->magic == NET_OBJ_SEND ? NCCLBPF_NET_SEND_DONE : NCCLBPF_NET_RECV_DONE,
			     size, -1, posted ? nbpf_now_ns() - posted : 0);
	return NBPF_NCCL_SUCCESS;
}
