// SPDX-License-Identifier: Apache-2.0
/*
 * inner_plugin.c - a stand-alone external net plugin for the wrapper tests
 * (NCCLBPF_NET=inner:...): our TCP transport (src/net) behind a plain
 * ncclNetPlugin table, built as libnccl-net-testinner{11,8}.so exporting
 * only v11 or only v8 (INNER_V), so the wrapper's marshalling to both a
 * size_t and an int generation is exercised.  Its device is named
 * "testinner" so a test can tell whose properties NCCL sees.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/abi_net.h"
#include "net/nnet.h"

static nbpf_nccl_result_t res(int err)
{
	return err == 0 ? 0 : err == -EINVAL ? NBPF_NCCL_INVALID_ARGUMENT
	       : err == -EMSGSIZE ? NBPF_NCCL_INVALID_USAGE
	       : err == -ECONNRESET ? NBPF_NCCL_REMOTE_ERROR : NBPF_NCCL_SYSTEM_ERROR;
}

static nbpf_nccl_result_t i_devices(int *n)
{
	*n = nnet_ndev();
	return 0;
}

static nbpf_nccl_result_t i_regmr(void *c, void *d, size_t s, int t, void **mh)
{
	*mh = NULL;
	return t == NBPF_NET_PTR_HOST ? 0 : NBPF_NCCL_INTERNAL_ERROR;
}

static nbpf_nccl_result_t i_dmabuf(void *c, void *d, size_t s, int t, uint64_t o, int fd, void **mh)
{
	return NBPF_NCCL_INTERNAL_ERROR;
}

static nbpf_nccl_result_t i_dereg(void *c, void *mh)
{
	return 0;
}

static nbpf_nccl_result_t i_flush(void *rc, int n, void **d, int *s, void **mh, void **req)
{
	*req = NULL;
	return NBPF_NCCL_INTERNAL_ERROR;
}

static nbpf_nccl_result_t i_test(void *req, int *done, int *sizes)
{
	size_t sz = 0;
	int err = nnet_test(req, done, &sz);

	if (!err && *done && sizes)
		sizes[0] = (int)sz;
	return res(err);
}

static nbpf_nccl_result_t i_close(void *c)
{
	return res(nnet_close(c));
}

static nbpf_nccl_result_t i_close_listen(void *l)
{
	return res(nnet_close_listen(l));
}

static nbpf_nccl_result_t i_listen(int dev, void *h, void **l)
{
	return res(nnet_listen(dev, h, (struct nnet_listen **)l));
}

static nbpf_nccl_result_t i_connect(int dev, void *h, void **s)
{
	return res(nnet_connect(dev, h, NULL, (struct nnet_comm **)s));
}

static nbpf_nccl_result_t i_accept(void *l, void **r)
{
	return res(nnet_accept(l, (struct nnet_comm **)r));
}

static void fill_common(int dev, char **name, char **pci, uint64_t *guid, int *ptr, int *speed,
			int *max_comms, int *max_recvs)
{
	*name = "testinner";
	*pci = NULL;
	*guid = 0x7e57;
	*ptr = NBPF_NET_PTR_HOST;
	*speed = 12345;
	*max_comms = 1024;
	*max_recvs = 1;
}

#if INNER_V == 11
static nbpf_nccl_result_t i_init(void **ctx, uint64_t id, nbpf_net_comm_config_t *cfg,
				 nbpf_nccl_logger_t log, nbpf_net_prof_cb_t prof)
{
	*ctx = malloc(1);
	return nnet_init() ? NBPF_NCCL_SYSTEM_ERROR : 0;
}

static nbpf_nccl_result_t i_fini(void *ctx)
{
	free(ctx);
	nnet_fini();
	return 0;
}

static nbpf_nccl_result_t i_props(int dev, nbpf_net_props_v11_t *p)
{
	if (!nnet_dev_get(dev))
		return NBPF_NCCL_INVALID_ARGUMENT;
	memset(p, 0, sizeof(*p));
	fill_common(dev, &p->name, &p->pciPath, &p->guid, &p->ptrSupport, &p->speed, &p->maxComms,
		    &p->maxRecvs);
	p->vProps.ndevs = 1;
	p->maxP2pBytes = p->maxCollBytes = 1ull << 31;
	p->maxMultiRequestSize = 1;
	return 0;
}

static nbpf_nccl_result_t i_listen11(void *ctx, int dev, void *h, void **l)
{
	return i_listen(dev, h, l);
}

static nbpf_nccl_result_t i_connect11(void *ctx, int dev, void *h, void **s, nbpf_net_dev_handle_t **dc)
{
	return i_connect(dev, h, s);
}

static nbpf_nccl_result_t i_accept11(void *l, void **r, nbpf_net_dev_handle_t **dc)
{
	return i_accept(l, r);
}

static nbpf_nccl_result_t i_isend(void *s, void *d, size_t n, int tag, void *mh, void *ph, void **req)
{
	return res(nnet_isend(s, d, n, req));
}

static nbpf_nccl_result_t i_irecv(void *r, int n, void **d, size_t *sz, int *tags, void **mh,
				  void **ph, void **req)
{
	*req = NULL;
	return n != 1 ? NBPF_NCCL_INVALID_ARGUMENT : res(nnet_irecv(r, d[0], sz[0], req));
}

__attribute__((visibility("default"))) const nbpf_net_v11_t ncclNetPlugin_v11 = {
	.name = "testinner", .init = i_init, .devices = i_devices, .getProperties = i_props,
	.listen = i_listen11, .connect = i_connect11, .accept = i_accept11, .regMr = i_regmr,
	.regMrDmaBuf = i_dmabuf, .deregMr = i_dereg, .isend = i_isend, .irecv = i_irecv,
	.iflush = i_flush, .test = i_test, .closeSend = i_close, .closeRecv = i_close,
	.closeListen = i_close_listen, .finalize = i_fini,
};
#else
static nbpf_nccl_result_t i_init(nbpf_nccl_logger_t log)
{
	return nnet_init() ? NBPF_NCCL_SYSTEM_ERROR : 0;
}

static nbpf_nccl_result_t i_props(int dev, nbpf_net_props_v8_t *p)
{
	if (!nnet_dev_get(dev))
		return NBPF_NCCL_INVALID_ARGUMENT;
	memset(p, 0, sizeof(*p));
	fill_common(dev, &p->name, &p->pciPath, &p->guid, &p->ptrSupport, &p->speed, &p->maxComms,
		    &p->maxRecvs);
	return 0;
}

static nbpf_nccl_result_t i_connect8(int dev, void *h, void **s, nbpf_net_dev_handle_t **dc)
{
	return i_connect(dev, h, s);
}

static nbpf_nccl_result_t i_accept8(void *l, void **r, nbpf_net_dev_handle_t **dc)
{
	return i_accept(l, r);
}

static nbpf_nccl_result_t i_isend(void *s, void *d, int n, int tag, void *mh, void **req)
{
	return res(nnet_isend(s, d, (size_t)n, req));
}

static nbpf_nccl_result_t i_irecv(void *r, int n, void **d, int *sz, int *tags, void **mh, void **req)
{
	*req = NULL;
	return n != 1 ? NBPF_NCCL_INVALID_ARGUMENT : res(nnet_irecv(r, d[0], (size_t)sz[0], req));
}

__attribute__((visibility("default"))) const nbpf_net_v8_t ncclNetPlugin_v8 = {
	.name = "testinner", .init = i_init, .devices = i_devices, .getProperties = i_props,
	.listen = i_listen, .connect = i_connect8, .accept = i_accept8, .regMr = i_regmr,
	.regMrDmaBuf = i_dmabuf, .deregMr = i_dereg, .isend = i_isend, .irecv = i_irecv,
	.iflush = i_flush, .test = i_test, .closeSend = i_close, .closeRecv = i_close,
	.closeListen = i_close_listen,
};
#endif
