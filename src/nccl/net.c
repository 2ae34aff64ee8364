// SPDX-License-Identifier: Apache-2.0
/*
 * net.c - NCCL net plugin v6..v12: every ABI version mapped onto one set
 * of version-free entry points (net_core.h), which drive the backend.
 *
 * What differs between versions is only marshalling: int or size_t sizes,
 * the device-handle and config arguments, the properties layout, and
 * where the per-communicator context lives (v11+: init returns one per
 * communicator; v6-v10: one process-wide context created by the first
 * init and released when the library is unloaded, since those versions
 * have no finalize).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "abi_net.h"
#include "net_core.h"

/* ---- v6..v10: one context for the process ------------------------------- */

static pthread_mutex_t legacy_lock = PTHREAD_MUTEX_INITIALIZER;
static struct net_ctx *legacy_ctx;

static nbpf_nccl_result_t legacy_init(int abi, nbpf_nccl_logger_t logger, nbpf_net_prof_cb_t prof)
{
	nbpf_nccl_result_t res = NBPF_NCCL_SUCCESS;

	pthread_mutex_lock(&legacy_lock);
	if (!legacy_ctx)
		res = net_ctx_create(&legacy_ctx, abi, 0, -1, logger, prof);
	pthread_mutex_unlock(&legacy_lock);
	return res;
}

__attribute__((destructor)) static void legacy_unload(void)
{
	/* dlclose: nothing of ours may keep running once the code is unmapped. */
	if (legacy_ctx)
		net_ctx_destroy(legacy_ctx);
	legacy_ctx = NULL;
	/* One destructor, so the inner plugin goes after the contexts that use it. */
	net_inner_unload();
}

static struct net_ctx *legacy(void)
{
	struct net_ctx *c;

	pthread_mutex_lock(&legacy_lock);
	c = legacy_ctx;
	pthread_mutex_unlock(&legacy_lock);
	return c;
}

/* ---- properties ---------------------------------------------------------- */

#define COPY_BASE(dst, src) do { \
	(dst)->name = (src)->name; (dst)->pciPath = (src)->pciPath; (dst)->guid = (src)->guid; \
	(dst)->ptrSupport = (src)->ptrSupport; (dst)->speed = (src)->speed; \
	(dst)->port = (src)->port; (dst)->latency = (src)->latency; \
	(dst)->maxComms = (src)->maxComms; (dst)->maxRecvs = (src)->maxRecvs; } while (0)

static nbpf_nccl_result_t props_v12(int dev, nbpf_net_props_v12_t *p)
{
	return net_core_props(dev, p);
}

static nbpf_nccl_result_t props_v11(int dev, nbpf_net_props_v11_t *p)
{
	nbpf_net_props_v12_t q;
	nbpf_nccl_result_t res;

	if (!p)
		return NBPF_NCCL_INVALID_ARGUMENT;
	res = net_core_props(dev, &q);
	if (res)
		return res;
	memset(p, 0, sizeof(*p));
	COPY_BASE(p, &q);
	p->regIsGlobal = q.regIsGlobal;
	p->forceFlush = q.forceFlush;
	p->netDeviceType = q.netDeviceType;
	p->netDeviceVersion = q.netDeviceVersion;
	p->vProps.ndevs = q.vProps.ndevs < NBPF_NET_MAX_DEVS_PER_NIC ? q.vProps.ndevs
								     : NBPF_NET_MAX_DEVS_PER_NIC;
	memcpy(p->vProps.devs, q.vProps.devs, sizeof(p->vProps.devs));
	p->maxP2pBytes = q.maxP2pBytes;
	p->maxCollBytes = q.maxCollBytes;
	p->maxMultiRequestSize = q.maxMultiRequestSize;
	return NBPF_NCCL_SUCCESS;
}

static nbpf_nccl_result_t props_v9(int dev, nbpf_net_props_v9_t *p)
{
	nbpf_net_props_v11_t q;
	nbpf_nccl_result_t res;

	if (!p)
		return NBPF_NCCL_INVALID_ARGUMENT;
	res = props_v11(dev, &q);
	if (res)
		return res;
	memcpy(p, &q, sizeof(*p)); /* v9 is v11's prefix */
	return NBPF_NCCL_SUCCESS;
}

static nbpf_nccl_result_t props_v8(int dev, nbpf_net_props_v8_t *p)
{
	nbpf_net_props_v12_t q;
	nbpf_nccl_result_t res;

	if (!p)
		return NBPF_NCCL_INVALID_ARGUMENT;
	res = net_core_props(dev, &q);
	if (res)
		return res;
	memset(p, 0, sizeof(*p));
	COPY_BASE(p, &q);
	p->regIsGlobal = q.regIsGlobal;
	p->netDeviceType = q.netDeviceType;
	p->netDeviceVersion = q.netDeviceVersion;
	return NBPF_NCCL_SUCCESS;
}

static nbpf_nccl_result_t props_v7(int dev, nbpf_net_props_v7_t *p)
{
	nbpf_net_props_v12_t q;
	nbpf_nccl_result_t res;

	if (!p)
		return NBPF_NCCL_INVALID_ARGUMENT;
	res = net_core_props(dev, &q);
	if (res)
		return res;
	memset(p, 0, sizeof(*p));
	COPY_BASE(p, &q);
	p->netDeviceType = q.netDeviceType;
	p->netDeviceVersion = q.netDeviceVersion;
	return NBPF_NCCL_SUCCESS;
}

static nbpf_nccl_result_t props_v6(int dev, nbpf_net_props_v6_t *p)
{
	nbpf_net_props_v12_t q;
	nbpf_nccl_result_t res;

	if (!p)
		return NBPF_NCCL_INVALID_ARGUMENT;
	res = net_core_props(dev, &q);
	if (res)
		return res;
	memset(p, 0, sizeof(*p));
	COPY_BASE(p, &q);
	return NBPF_NCCL_SUCCESS;
}

/* ---- shared entry points --------------------------------------------------- */

static nbpf_nccl_result_t e_devices(int *ndev)
{
	return net_core_devices(ndev);
}

static nbpf_nccl_result_t e_accept(void *lc, void **rc, nbpf_net_dev_handle_t **dc)
{
	return net_core_accept(lc, rc, (void **)dc);
}

static nbpf_nccl_result_t e_accept_v6(void *lc, void **rc)
{
	return net_core_accept(lc, rc, NULL);
}

static nbpf_nccl_result_t e_regmr(void *comm, void *data, size_t size, int type, void **mh)
{
	return net_core_regmr(comm, data, size, type, mh);
}

static nbpf_nccl_result_t e_regmr_int(void *comm, void *data, int size, int type, void **mh)
{
	if (size < 0)
		return NBPF_NCCL_INVALID_ARGUMENT;
	return net_core_regmr(comm, data, (size_t)size, type, mh);
}

static nbpf_nccl_result_t e_regmr_dmabuf(void *comm, void *data, size_t size, int type,
					 uint64_t offset, int fd, void **mh)
{
	return net_core_regmr_dmabuf(comm, data, size, type, offset, fd, mh);
}

static nbpf_nccl_result_t e_deregmr(void *comm, void *mh)
{
	return net_core_deregmr(comm, mh);
}

static nbpf_nccl_result_t e_isend(void *sc, void *data, size_t size, int tag, void *mh,
				  void *ph, void **req)
{
	return net_core_isend(sc, data, size, tag, mh, ph, req);
}

static nbpf_nccl_result_t e_isend_nop(void *sc, void *data, size_t size, int tag, void *mh,
				      void **req)
{
	return net_core_isend(sc, data, size, tag, mh, NULL, req);
}

static nbpf_nccl_result_t e_isend_int(void *sc, void *data, int size, int tag, void *mh,
				      void **req)
{
	if (size < 0) {
		if (req)
			*req = NULL;
		return NBPF_NCCL_INVALID_ARGUMENT;
	}
	return net_core_isend(sc, data, (size_t)size, tag, mh, NULL, req);
}

static nbpf_nccl_result_t e_irecv(void *rc, int n, void **data, size_t *sizes, int *tags,
				  void **mh, void **ph, void **req)
{
	return net_core_irecv(rc, n, data, sizes, tags, mh, ph, req);
}

static nbpf_nccl_result_t e_irecv_nop(void *rc, int n, void **data, size_t *sizes, int *tags,
				      void **mh, void **req)
{
	return net_core_irecv(rc, n, data, sizes, tags, mh, NULL, req);
}

/* v6-v8: NCCL's adaptor has cleared the optional-completion pre-set already. */
static nbpf_nccl_result_t e_irecv_int(void *rc, int n, void **data, int *sizes, int *tags,
				      void **mh, void **req)
{
	size_t s[NET_MAX_RECVS];

	if (req)
		*req = NULL;
	if (n < 1 || n > NET_MAX_RECVS || !sizes)
		return NBPF_NCCL_INVALID_ARGUMENT;
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0)
			return NBPF_NCCL_INVALID_ARGUMENT;
		s[i] = (size_t)sizes[i];
	}
	return net_core_irecv(rc, n, data, s, tags, mh, NULL, req);
}

static nbpf_nccl_result_t e_iflush(void *rc, int n, void **data, int *sizes, void **mh,
				   void **req)
{
	return net_core_iflush(rc, n, data, sizes, mh, req);
}

static nbpf_nccl_result_t e_test(void *req, int *done, int *sizes)
{
	return net_core_test(req, done, sizes);
}

static nbpf_nccl_result_t e_close_send(void *sc)
{
	return net_core_close(sc);
}

static nbpf_nccl_result_t e_close_recv(void *rc)
{
	return net_core_close(rc);
}

static nbpf_nccl_result_t e_close_listen(void *lc)
{
	return net_core_close_listen(lc);
}

static nbpf_nccl_result_t e_get_device_mr(void *comm, void *mh, void **dptr)
{
	return net_core_get_device_mr(comm, mh, dptr);
}

static nbpf_nccl_result_t e_irecv_consumed(void *rc, int n, void *req)
{
	return net_core_irecv_consumed(rc, n, req);
}

/* ---- per-version init / listen / connect ---------------------------------- */

static nbpf_nccl_result_t v6_init(nbpf_nccl_logger_t logger)
{
	return legacy_init(6, logger, NULL);
}

static nbpf_nccl_result_t v7_init(nbpf_nccl_logger_t logger)
{
	return legacy_init(7, logger, NULL);
}

static nbpf_nccl_result_t v8_init(nbpf_nccl_logger_t logger)
{
	return legacy_init(8, logger, NULL);
}

static nbpf_nccl_result_t v9_init(nbpf_nccl_logger_t logger)
{
	return legacy_init(9, logger, NULL);
}

static nbpf_nccl_result_t v10_init(nbpf_nccl_logger_t logger, nbpf_net_prof_cb_t prof)
{
	return legacy_init(10, logger, prof);
}

static nbpf_nccl_result_t legacy_listen(int dev, void *handle, void **lc)
{
	return net_core_listen(legacy(), dev, handle, lc);
}

static nbpf_nccl_result_t v6_connect(int dev, void *handle, void **sc)
{
	return net_core_connect(legacy(), dev, -1, handle, sc, NULL);
}

static nbpf_nccl_result_t v7_connect(int dev, void *handle, void **sc,
				     nbpf_net_dev_handle_t **dc)
{
	return net_core_connect(legacy(), dev, -1, handle, sc, (void **)dc);
}

static nbpf_nccl_result_t v10_connect(int dev, nbpf_net_comm_config_t *config, void *handle,
				      void **sc, nbpf_net_dev_handle_t **dc)
{
	return net_core_connect(legacy(), dev, config ? config->trafficClass : -1, handle, sc,
				(void **)dc);
}

static nbpf_nccl_result_t v11_init(void **ctx, uint64_t comm_id, nbpf_net_comm_config_t *config,
				   nbpf_nccl_logger_t logger, nbpf_net_prof_cb_t prof)
{
	struct net_ctx *c = NULL;
	nbpf_nccl_result_t res;

	if (!ctx)
		return NBPF_NCCL_INVALID_ARGUMENT;
	res = net_ctx_create(&c, 11, comm_id, config ? config->trafficClass : -1, logger, prof);
	*ctx = c;
	return res;
}

static nbpf_nccl_result_t v11_listen(void *ctx, int dev, void *handle, void **lc)
{
	return net_core_listen(ctx, dev, handle, lc);
}

static nbpf_nccl_result_t v11_connect(void *ctx, int dev, void *handle, void **sc,
				      nbpf_net_dev_handle_t **dc)
{
	return net_core_connect(ctx, dev, -1, handle, sc, (void **)dc);
}

static nbpf_nccl_result_t v11_finalize(void *ctx)
{
	/* 2.28.9 calls finalize on the unset context of a failed init: NULL is fine. */
	return ctx ? net_ctx_destroy(ctx) : NBPF_NCCL_SUCCESS;
}

static nbpf_nccl_result_t v11_set_net_attr(void *ctx, nbpf_net_attr_v11_t *attr)
{
	return net_core_set_attr(ctx, attr);
}

/* ---- the exported tables ----------------------------------------------------- */

NBPF_EXPORT const nbpf_net_v6_t ncclNetPlugin_v6 = {
	.name = NET_PLUGIN_NAME, .init = v6_init, .devices = e_devices, .getProperties = props_v6,
	.listen = legacy_listen, .connect = v6_connect, .accept = e_accept_v6,
	.regMr = e_regmr_int, .regMrDmaBuf = e_regmr_dmabuf, .deregMr = e_deregmr,
	.isend = e_isend_int, .irecv = e_irecv_int, .iflush = e_iflush, .test = e_test,
	.closeSend = e_close_send, .closeRecv = e_close_recv, .closeListen = e_close_listen,
};

NBPF_EXPORT const nbpf_net_v7_t ncclNetPlugin_v7 = {
	.name = NET_PLUGIN_NAME, .init = v7_init, .devices = e_devices, .getProperties = props_v7,
	.listen = legacy_listen, .connect = v7_connect, .accept = e_accept,
	.regMr = e_regmr_int, .regMrDmaBuf = e_regmr_dmabuf, .deregMr = e_deregmr,
	.isend = e_isend_int, .irecv = e_irecv_int, .iflush = e_iflush, .test = e_test,
	.closeSend = e_close_send, .closeRecv = e_close_recv, .closeListen = e_close_listen,
	.getDeviceMr = e_get_device_mr, .irecvConsumed = e_irecv_consumed,
};

NBPF_EXPORT const nbpf_net_v8_t ncclNetPlugin_v8 = {
	.name = NET_PLUGIN_NAME, .init = v8_init, .devices = e_devices, .getProperties = props_v8,
	.listen = legacy_listen, .connect = v7_connect, .accept = e_accept,
	.regMr = e_regmr, .regMrDmaBuf = e_regmr_dmabuf, .deregMr = e_deregmr,
	.isend = e_isend_int, .irecv = e_irecv_int, .iflush = e_iflush, .test = e_test,
	.closeSend = e_close_send, .closeRecv = e_close_recv, .closeListen = e_close_listen,
	.getDeviceMr = e_get_device_mr, .irecvConsumed = e_irecv_consumed,
};

NBPF_EXPORT const nbpf_net_v9_t ncclNetPlugin_v9 = {
	.name = NET_PLUGIN_NAME, .init = v9_init, .devices = e_devices, .getProperties = props_v9,
	.listen = legacy_listen, .connect = v7_connect, .accept = e_accept,
	.regMr = e_regmr, .regMrDmaBuf = e_regmr_dmabuf, .deregMr = e_deregmr,
	.isend = e_isend_nop, .irecv = e_irecv_nop, .iflush = e_iflush, .test = e_test,
	.closeSend = e_close_send, .closeRecv = e_close_recv, .closeListen = e_close_listen,
	.getDeviceMr = e_get_device_mr, .irecvConsumed = e_irecv_consumed, .makeVDevice = NULL,
};

NBPF_EXPORT const nbpf_net_v10_t ncclNetPlugin_v10 = {
	.name = NET_PLUGIN_NAME, .init = v10_init, .devices = e_devices, .getProperties = props_v9,
	.listen = legacy_listen, .connect = v10_connect, .accept = e_accept,
	.regMr = e_regmr, .regMrDmaBuf = e_regmr_dmabuf, .deregMr = e_deregmr,
	.isend = e_isend, .irecv = e_irecv, .iflush = e_iflush, .test = e_test,
	.closeSend = e_close_send, .closeRecv = e_close_recv, .closeListen = e_close_listen,
	.getDeviceMr = e_get_device_mr, .irecvConsumed = e_irecv_consumed, .makeVDevice = NULL,
};

NBPF_EXPORT const nbpf_net_v11_t ncclNetPlugin_v11 = {
	.name = NET_PLUGIN_NAME, .init = v11_init, .devices = e_devices, .getProperties = props_v11,
	.listen = v11_listen, .connect = v11_connect, .accept = e_accept,
	.regMr = e_regmr, .regMrDmaBuf = e_regmr_dmabuf, .deregMr = e_deregmr,
	.isend = e_isend, .irecv = e_irecv, .iflush = e_iflush, .test = e_test,
	.closeSend = e_close_send, .closeRecv = e_close_recv, .closeListen = e_close_listen,
	.getDeviceMr = e_get_device_mr, .irecvConsumed = e_irecv_consumed,
	.makeVDevice = NULL, .finalize = v11_finalize, .setNetAttr = v11_set_net_attr,
};

NBPF_EXPORT const nbpf_net_v12_t ncclNetPlugin_v12 = {
	.name = NET_PLUGIN_NAME, .init = v11_init, .devices = e_devices, .getProperties = props_v12,
	.listen = v11_listen, .connect = v11_connect, .accept = e_accept,
	.regMr = e_regmr, .regMrDmaBuf = e_regmr_dmabuf, .deregMr = e_deregmr,
	.isend = e_isend, .irecv = e_irecv, .iflush = e_iflush, .test = e_test,
	.closeSend = e_close_send, .closeRecv = e_close_recv, .closeListen = e_close_listen,
	.getDeviceMr = e_get_device_mr, .irecvConsumed = e_irecv_consumed,
	.makeVDevice = NULL, .finalize = v11_finalize, .setNetAttr = v11_set_net_attr,
};
