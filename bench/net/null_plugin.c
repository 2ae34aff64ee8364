// SPDX-License-Identifier: Apache-2.0
/*
 * null_plugin.c - an inner net plugin that moves nothing: every request is
 * done at its first test.  Wrapped by NCCLBPF_NET=inner:..., it leaves
 * only the wrapper's and the hooks' own cost per message to measure.
 */
#include <stdlib.h>
#include <string.h>

#include "nccl/abi_net.h"

static int token;

static nbpf_nccl_result_t n_init(void **ctx, uint64_t id, nbpf_net_comm_config_t *c,
				 nbpf_nccl_logger_t l, nbpf_net_prof_cb_t p)
{
	*ctx = &token;
	return 0;
}
static nbpf_nccl_result_t n_fini(void *ctx) { return 0; }
static nbpf_nccl_result_t n_devices(int *n) { *n = 1; return 0; }
static nbpf_nccl_result_t n_props(int dev, nbpf_net_props_v11_t *p)
{
	memset(p, 0, sizeof(*p));
	p->name = "null";
	p->ptrSupport = NBPF_NET_PTR_HOST;
	p->speed = 100000;
	p->maxComms = 1024;
	p->maxRecvs = 1;
	p->maxP2pBytes = p->maxCollBytes = 1ull << 31;
	return 0;
}
static nbpf_nccl_result_t n_listen(void *ctx, int dev, void *h, void **l) { *l = &token; return 0; }
static nbpf_nccl_result_t n_connect(void *ctx, int dev, void *h, void **s, nbpf_net_dev_handle_t **d)
{
	*s = &token;
	return 0;
}
static nbpf_nccl_result_t n_accept(void *l, void **r, nbpf_net_dev_handle_t **d) { *r = &token; return 0; }
static nbpf_nccl_result_t n_regmr(void *c, void *d, size_t s, int t, void **mh) { *mh = NULL; return 0; }
static nbpf_nccl_result_t n_dereg(void *c, void *mh) { return 0; }
static nbpf_nccl_result_t n_isend(void *s, void *d, size_t n, int tag, void *mh, void *ph, void **req)
{
	*req = (void *)(uintptr_t)(0x1000 + n); /* never 0x1, the "optional" marker */
	return 0;
}
static nbpf_nccl_result_t n_irecv(void *r, int n, void **d, size_t *sz, int *tags, void **mh,
				  void **ph, void **req)
{
	*req = (void *)(uintptr_t)(0x1000 + sz[0]);
	return 0;
}
static nbpf_nccl_result_t n_test(void *req, int *done, int *sizes)
{
	*done = 1;
	if (sizes)
		sizes[0] = (int)((uintptr_t)req - 0x1000);
	return 0;
}
static nbpf_nccl_result_t n_close(void *c) { return 0; }

__attribute__((visibility("default"))) const nbpf_net_v11_t ncclNetPlugin_v11 = {
	.name = "null", .init = n_init, .devices = n_devices, .getProperties = n_props,
	.listen = n_listen, .connect = n_connect, .accept = n_accept, .regMr = n_regmr,
	.deregMr = n_dereg, .isend = n_isend, .irecv = n_irecv, .test = n_test,
	.closeSend = n_close, .closeRecv = n_close, .closeListen = n_close, .finalize = n_fini,
};
