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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"
#include "net_core.h"
#include "net_peers.h"
#include "plugin.h"

#define NET_CTX_MAGIC 0x5854434eu

/*
 * The backend is chosen once per process (NCCLBPF_NET, read by the first
 * context): the socket transport, or the inner plugin it names.
 */
static pthread_mutex_t be_lock = PTHREAD_MUTEX_INITIALIZER;
static int be_refs;
static _Atomic(struct net_inner *) be_inner;

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
	case -ECONNABORTED:
	case -ETIMEDOUT:
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
		net_peer_error(c->peer);
		nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_NET, "net: %s peer %s failed (%s): %s",
			      c->magic == NET_OBJ_SEND ? "send to" : "receive from",
			      addr_str(nnet_comm_peer(c->tc), peer, sizeof(peer)), what,
			      err == -EMSGSIZE ? "message truncated (larger than the receive buffer)"
			      : err == -ECONNRESET ? "connection closed by the peer"
			      : err == -ETIMEDOUT ? "the peer took no data and gave no sign of life for "
						    "NCCLBPF_NET_TIMEOUT (a stopped or hung process, or its host gone)"
			      : strerror(-err));
	}
	return net_core_result(err);
}

/* ---- backend ---------------------------------------------------------------- */

/* Opens the process's backend on the first reference; *inner NULL = sockets. */
static int backend_open(struct net_inner **inner)
{
	const char *spec = getenv("NCCLBPF_NET");
	char err[600] = "";
	int rc = 0;

	*inner = NULL;
	pthread_mutex_lock(&be_lock);
	if (be_refs > 0) {
		*inner = atomic_load(&be_inner);
		if (!*inner || !net_inner_open("", inner, err, sizeof(err)))
			goto ok; /* the inner library is open: this takes one more reference */
		rc = -EIO;
		goto out;
	}
	if (spec && !strncmp(spec, "inner:", 6)) {
		rc = net_inner_open(spec + 6, inner, err, sizeof(err));
		if (rc) {
			nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_NET | NBPF_NCCL_INIT,
				      "net: NCCLBPF_NET=%s: %s; this plugin is skipped", spec, err);
			goto out;
		}
	} else if (spec && *spec && strcmp(spec, "socket")) {
		nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_NET | NBPF_NCCL_INIT,
			      "net: NCCLBPF_NET=%s: unknown backend (socket | inner:<name or path>); using socket",
			      spec);
	}
	if (!*inner) {
		rc = nnet_init();
		if (rc)
			goto out;
	}
	atomic_store(&be_inner, *inner);
ok:
	if (!*inner && be_refs > 0)
		rc = nnet_init();
	if (!rc)
		be_refs++;
out:
	pthread_mutex_unlock(&be_lock);
	return rc;
}

static void backend_close(struct net_inner *inner)
{
	pthread_mutex_lock(&be_lock);
	if (inner)
		net_inner_close(inner);
	else
		nnet_fini();
	if (be_refs > 0 && --be_refs == 0)
		atomic_store(&be_inner, NULL);
	pthread_mutex_unlock(&be_lock);
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
	nbpf_plugin_acquire(logger);
	err = backend_open(&ctx->inner);
	if (!err && ctx->inner) {
		nbpf_nccl_result_t res = net_inner_init(ctx->inner, &ctx->ictx, comm_id,
							traffic_class, prof);

		if (res) {
			nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_NET | NBPF_NCCL_INIT,
				      "net: inner plugin %s: init failed (%d)",
				      net_inner_name(ctx->inner), res);
			backend_close(ctx->inner);
			nbpf_plugin_release();
			free(ctx);
			return res;
		}
	}
	if (err) {
		nbpf_plugin_release();
		free(ctx);
		return NBPF_NCCL_SYSTEM_ERROR;
	}
	ctx->magic = NET_CTX_MAGIC;
	ctx->abi = abi;
	ctx->comm_id = comm_id;
	ctx->traffic_class = traffic_class;
	ctx->prof = prof;
	ctx->cm = nbpf_host_comm_add(NBPF_COMM_NET, abi, comm_id, -1, 0, 0);
	ctx->stats = nbpf_host_settings() && nbpf_host_settings()->stats;
	net_ctl_register();
	if (ctx->inner)
		nbpf_host_log(NBPF_NCCL_LOG_INFO, NBPF_NCCL_NET | NBPF_NCCL_INIT,
			      "net v%d ready (inner plugin %s, its v%d)", abi,
			      net_inner_name(ctx->inner), net_inner_version(ctx->inner));
	else
		nbpf_host_log(NBPF_NCCL_LOG_INFO, NBPF_NCCL_NET | NBPF_NCCL_INIT,
			      "net v%d ready (socket transport, %d device(s), %d x %d sockets per connection)",
			      abi, nnet_ndev(), nnet_settings()->nthreads,
			      nnet_settings()->nsocks_per_thread);
	*out = ctx;
	return NBPF_NCCL_SUCCESS;
}

nbpf_nccl_result_t net_ctx_destroy(struct net_ctx *ctx)
{
	nbpf_nccl_result_t res = NBPF_NCCL_SUCCESS;

	if (!ctx || ctx->magic != NET_CTX_MAGIC)
		return NBPF_NCCL_INVALID_ARGUMENT;
	ctx->magic = 0;
	nbpf_host_comm_remove(ctx->cm);
	if (ctx->inner)
		res = net_inner_finalize(ctx->inner, ctx->ictx);
	backend_close(ctx->inner);
	nbpf_plugin_release();
	free(ctx);
	return res; /* the inner plugin's answer; ours is released either way */
}

/* ---- devices ------------------------------------------------------------------ */

nbpf_nccl_result_t net_core_devices(int *ndev)
{
	struct net_inner *in = atomic_load(&be_inner);

	if (!ndev)
		return NBPF_NCCL_INVALID_ARGUMENT;
	if (in)
		return net_inner_devices(in, ndev);
	*ndev = nnet_ndev();
	return NBPF_NCCL_SUCCESS;
}

nbpf_nccl_result_t net_core_props(int dev, nbpf_net_props_v12_t *p)
{
	const struct nnet_dev *d = nnet_dev_get(dev);
	struct net_inner *in = atomic_load(&be_inner);

	if (in && p)
		return net_inner_props(in, dev, p);
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
	if (ctx->inner) {
		nbpf_nccl_result_t res = net_inner_listen(ctx->inner, ctx->ictx, dev, handle, &l->ilc);

		if (res) {
			free(l);
			return res;
		}
		l->magic = NET_OBJ_LISTEN;
		l->ctx = ctx;
		l->dev = dev;
		*lc = l;
		return NBPF_NCCL_SUCCESS;
	}
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

static nbpf_nccl_result_t close_backend_comm(struct net_ctx *ctx, bool send, struct nnet_comm *tc,
					     void *ic)
{
	if (tc)
		return net_core_result(nnet_close(tc));
	if (ic && send)
		return net_inner_close_send(ctx->inner, ic);
	if (ic)
		return net_inner_close_recv(ctx->inner, ic);
	return NBPF_NCCL_SUCCESS;
}

static nbpf_nccl_result_t comm_wrap(struct net_ctx *ctx, struct nnet_comm *tc, void *ic, bool send,
				    int dev, void **out)
{
	struct net_comm *c = calloc(1, sizeof(*c));

	if (c && ic && !(c->ireqs = net_wrap_pool_new(c))) {
		free(c);
		c = NULL;
	}
	if (!c) {
		close_backend_comm(ctx, send, tc, ic);
		return NBPF_NCCL_SYSTEM_ERROR;
	}
	c->magic = send ? NET_OBJ_SEND : NET_OBJ_RECV;
	c->ctx = ctx;
	c->tc = tc;
	c->ic = ic;
	c->dev = dev;
	c->peer = net_peer_attach(tc ? nnet_comm_peer(tc) : NULL);
	net_hook_comm_init(c);
	*out = c;
	return NBPF_NCCL_SUCCESS;
}

static nbpf_nccl_result_t inner_connect(struct net_ctx *ctx, int dev, int traffic_class,
					void *handle, void **sc, void **dc)
{
	void *ic = NULL;
	nbpf_nccl_result_t res;

	res = net_inner_connect(ctx->inner, ctx->ictx, dev, traffic_class, handle, &ic, dc);
	if (res || !ic)
		return res;
	return comm_wrap(ctx, NULL, ic, true, dev, sc);
}

nbpf_nccl_result_t net_core_connect(struct net_ctx *ctx, int dev, int traffic_class,
				    void *handle, void **sc, void **dc)
{
	struct nnet_conn_opts opts = { .nsocks = 0, .tos = -1, .priority = -1 };
	struct nnet_comm *tc = NULL;
	union nnet_addr peer;
	nbpf_nccl_result_t res;
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
	if (ctx->inner) {
		/*
		 * The inner handle is opaque: the event comes once the connection
		 * is made, without a peer, and its outputs cannot apply (counted).
		 */
		res = inner_connect(ctx, dev, traffic_class, handle, sc, dc);
		if (!res && *sc) {
			int tos = opts.tos;

			net_hook_connect(ctx, dev, NULL, &opts);
			if (opts.nsocks || opts.tos != tos || opts.priority >= 0 ||
			    nnet_weights_check(opts.weights, NNET_MAX_SOCKS) > 0)
				net_hook_refuse(ctx);
		}
		return res;
	}
	if (!nnet_handle_started(handle) && !nnet_handle_peer(handle, &peer))
		net_hook_connect(ctx, dev, &peer, &opts);
	err = nnet_connect(dev, handle, &opts, &tc);
	if (err) {
		nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_NET, "net: connect on device %d failed: %s",
			      dev, err == -EINVAL ? "not a handle of this plugin"
			      : err == -ECONNABORTED ? "the listener closed the connection before accepting it "
						       "(a peer of another ncclbpf wire version, or its "
						       "NCCLBPF_NET_HELLO_TIMEOUT passed first)"
			      : strerror(-err));
		return net_core_result(err);
	}
	if (!tc)
		return NBPF_NCCL_SUCCESS;
	return comm_wrap(ctx, tc, NULL, true, dev, sc);
}

nbpf_nccl_result_t net_core_accept(void *lcp, void **rc, void **dc)
{
	struct net_listen *l = lcp;
	struct nnet_comm *tc = NULL;
	void *ic = NULL;
	int err;

	if (!rc)
		return NBPF_NCCL_INVALID_ARGUMENT;
	*rc = NULL;
	if (!l || l->magic != NET_OBJ_LISTEN)
		return NBPF_NCCL_INVALID_ARGUMENT;
	if (l->ilc) {
		nbpf_nccl_result_t res = net_inner_accept(l->ctx->inner, l->ilc, &ic, dc);

		if (res || !ic)
			return res;
		if (comm_wrap(l->ctx, NULL, ic, false, l->dev, rc))
			return NBPF_NCCL_SYSTEM_ERROR;
		net_hook_accept(*rc);
		return NBPF_NCCL_SUCCESS;
	}
	err = nnet_accept(l->l, &tc);
	if (err)
		return net_core_result(err);
	if (!tc)
		return NBPF_NCCL_SUCCESS;
	if (comm_wrap(l->ctx, tc, NULL, false, l->dev, rc))
		return NBPF_NCCL_SYSTEM_ERROR;
	net_hook_accept(*rc);
	return NBPF_NCCL_SUCCESS;
}

nbpf_nccl_result_t net_core_close_listen(void *lcp)
{
	struct net_listen *l = lcp;
	nbpf_nccl_result_t res;

	if (!l)
		return NBPF_NCCL_SUCCESS;
	if (l->magic != NET_OBJ_LISTEN)
		return NBPF_NCCL_INVALID_ARGUMENT;
	l->magic = 0;
	res = l->ilc ? net_inner_close_listen(l->ctx->inner, l->ilc)
		     : net_core_result(nnet_close_listen(l->l));
	free(l);
	return res;
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
	nbpf_nccl_result_t res;

	if (!p)
		return NBPF_NCCL_SUCCESS;
	if (!c)
		return NBPF_NCCL_INVALID_ARGUMENT;
	/* An inner plugin's error reaches NCCL; the comm is gone either way (NCCL won't retry). */
	res = close_backend_comm(c->ctx, c->magic == NET_OBJ_SEND, c->tc, c->ic);
	c->magic = 0;
	net_peer_detach(c->peer);
	if (c->ireqs) {
		pthread_mutex_destroy(&c->ireqs->mu);
		free(c->ireqs);
	}
	free(c);
	return res;
}

/* ---- memory registration (host memory only) ----------------------------------- */

nbpf_nccl_result_t net_core_regmr(void *comm, void *data, size_t size, int type, void **mh)
{
	struct net_comm *c = comm_get(comm, 0);

	if (!mh)
		return NBPF_NCCL_INVALID_ARGUMENT;
	*mh = NULL;
	if (!c)
		return NBPF_NCCL_INVALID_ARGUMENT;
	if (c->ic)
		return net_inner_regmr(c->ctx->inner, c->ic, data, size, type, mh);
	/* Sockets read and write host memory directly; nothing to pin or map. */
	return type == NBPF_NET_PTR_HOST ? NBPF_NCCL_SUCCESS : NBPF_NCCL_INTERNAL_ERROR;
}

nbpf_nccl_result_t net_core_regmr_dmabuf(void *comm, void *data, size_t size, int type,
					 uint64_t offset, int fd, void **mh)
{
	struct net_comm *c = comm_get(comm, 0);

	if (mh)
		*mh = NULL;
	if (c && c->ic)
		return net_inner_regmr_dmabuf(c->ctx->inner, c->ic, data, size, type, offset, fd, mh);
	return NBPF_NCCL_INTERNAL_ERROR; /* ptrSupport has no DMABUF: NCCL never asks */
}

nbpf_nccl_result_t net_core_deregmr(void *comm, void *mh)
{
	struct net_comm *c = comm_get(comm, 0);

	if (c && c->ic)
		return net_inner_deregmr(c->ctx->inner, c->ic, mh);
	return c ? NBPF_NCCL_SUCCESS : NBPF_NCCL_INVALID_ARGUMENT;
}

/* ---- data path ------------------------------------------------------------------ */

/*
 * Request words: [0] post time (0: not timed), [1] the comm, for test(),
 * [2] NCCL's profiler event handle (NULL: none started).  The profiler
 * bridge (net v10+): one NetPlugin event per message, from post to
 * completion, described as NCCL's Socket transport describes its own.
 */
static void req_posted(struct net_comm *c, void *req, uint32_t event, size_t bytes, int tag,
		       void *ph)
{
	uint64_t *u = nnet_req_user(req);

	u[1] = (uintptr_t)c;
	if (c->ctx->prof && ph) {
		nbpf_net_prof_sock_descr_t d = { .type = NBPF_NET_PROF_SOCKET };
		void *eh = NULL;

		d.sock.fd = nnet_comm_fd(c->tc, -1);
		d.sock.op = event == NCCLBPF_NET_SEND_POST ? 0 : 1;
		d.sock.length = bytes;
		c->ctx->prof(&eh, NBPF_NET_PROF_START, ph,
			     NBPF_NET_PROF_SOCK_ID | NBPF_NET_PROF_SOCK_VER, &d);
		u[2] = (uintptr_t)eh;
	}
	net_hook_msg(c, event, bytes, tag, 0);
	u[0] = nbpf_now_ns(); /* per-peer latency telemetry, and the DONE event's */
}


nbpf_nccl_result_t net_core_isend(void *sc, void *data, size_t size, int tag, void *mh,
				  void *ph, void **req)
{
	struct net_comm *c = comm_get(sc, NET_OBJ_SEND);
	int err;

	if (!req)
		return NBPF_NCCL_INVALID_ARGUMENT;
	if (c && c->ic) {
		*req = NULL; /* NCCL pre-sets nothing for a send */
		return net_wrap_post(c, true, &data, &size, 1, &tag, &mh, &ph, req);
	}
	*req = NULL;
	if (!c)
		return NBPF_NCCL_INVALID_ARGUMENT;
	err = nnet_isend(c->tc, data, size, req);
	if (err)
		return comm_error(c, "post", err);
	if (*req)
		req_posted(c, *req, NCCLBPF_NET_SEND_POST, size, tag, ph);
	return NBPF_NCCL_SUCCESS;
}

nbpf_nccl_result_t net_core_irecv(void *rc, int n, void **data, size_t *sizes, int *tags,
				  void **mh, void **ph, void **req)
{
	struct net_comm *c = comm_get(rc, NET_OBJ_RECV);
	int err;

	if (!req)
		return NBPF_NCCL_INVALID_ARGUMENT;
	if (c && c->ic && data && sizes && n >= 1 && n <= NET_MAX_RECVS)
		return net_wrap_post(c, false, data, sizes, n, tags, mh, ph, req);
	*req = NULL; /* v9+ may pre-set 0x1; always overwrite */
	if (!c || n != 1 || !data || !sizes)
		return NBPF_NCCL_INVALID_ARGUMENT;
	err = nnet_irecv(c->tc, data[0], sizes[0], req);
	if (err)
		return comm_error(c, "post", err);
	if (*req)
		req_posted(c, *req, NCCLBPF_NET_RECV_POST, sizes[0], tags ? tags[0] : -1,
			   ph ? ph[0] : NULL);
	return NBPF_NCCL_SUCCESS;
}

nbpf_nccl_result_t net_core_iflush(void *rc, int n, void **data, int *sizes, void **mh,
				   void **req)
{
	struct net_comm *c = comm_get(rc, NET_OBJ_RECV);

	if (req)
		*req = NULL;
	if (!c || !c->ic || !req || n < 1 || n > NET_MAX_RECVS)
		return NBPF_NCCL_INTERNAL_ERROR; /* host memory: NCCL never flushes */
	return net_wrap_flush(c, n, data, sizes, mh, req);
}

nbpf_nccl_result_t net_core_test(void *req, int *done, int *sizes)
{
	uint64_t *user;
	struct net_comm *c;
	uint64_t posted;
	void *ev;
	size_t size = 0;
	int err;

	if (!done)
		return NBPF_NCCL_INVALID_ARGUMENT;
	if (atomic_load(&be_inner)) {
		*done = 0;
		if (!net_wrap_ok(req)) {
			nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_NET,
				      "net: test on a request that is not in flight (%p)", req);
			return NBPF_NCCL_INVALID_ARGUMENT;
		}
		return net_wrap_test(req, done, sizes);
	}
	user = nnet_req_user(req);
	c = user ? (struct net_comm *)(uintptr_t)user[1] : NULL;
	posted = user ? user[0] : 0;
	ev = user ? (void *)(uintptr_t)user[2] : NULL;
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
	if (ev && c)
		c->ctx->prof(&ev, NBPF_NET_PROF_STOP, NULL, 0, NULL);
	if (c) {
		uint64_t lat = posted ? nbpf_now_ns() - posted : 0;

		net_peer_msg(c->peer, c->magic == NET_OBJ_RECV, size, lat);
		net_hook_msg(c, c->magic == NET_OBJ_SEND ? NCCLBPF_NET_SEND_DONE : NCCLBPF_NET_RECV_DONE,
			     size, -1, lat);
	}
	return NBPF_NCCL_SUCCESS;
}

nbpf_nccl_result_t net_core_get_device_mr(void *comm, void *mh, void **dptr)
{
	struct net_comm *c = comm_get(comm, 0);

	if (c && c->ic)
		return net_inner_get_device_mr(c->ctx->inner, c->ic, mh, dptr);
	return NBPF_NCCL_INTERNAL_ERROR; /* HOST device type: NCCL never asks */
}

nbpf_nccl_result_t net_core_irecv_consumed(void *rc, int n, void *req)
{
	struct net_comm *c = comm_get(rc, NET_OBJ_RECV);

	if (!c || !c->ic)
		return NBPF_NCCL_SUCCESS;
	return net_wrap_consumed(c, n, req);
}

nbpf_nccl_result_t net_core_set_attr(void *p, nbpf_net_attr_v11_t *attr)
{
	struct net_ctx *ctx = p;

	if (ctx_ok(ctx) && ctx->inner)
		return net_inner_set_attr(ctx->inner, ctx->ictx, attr);
	return NBPF_NCCL_SUCCESS; /* a hint; the socket transport has nothing to tune with it */
}
