/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net_inner.h - the "inner" backend (NCCLBPF_NET=inner:<name or path>):
 * another external net plugin, loaded as NCCL would load it, called at
 * the newest version it exports (v6..v12) through one size_t-based set of
 * calls.  net_core.c forwards every call through these and runs the hooks
 * around them.
 */
#ifndef NCCLBPF_NCCL_NET_INNER_H
#define NCCLBPF_NCCL_NET_INNER_H

#include "abi_net.h"

struct net_inner;

/*
 * Grouped receives we marshal (NCCL_PROXY_MAX_SUBS): an inner plugin's
 * maxRecvs is announced up to this.
 */
#define NET_MAX_RECVS 64
#define NET_OPTIONAL_RECV ((void *)0x1) /* NCCL_NET_OPTIONAL_RECV_COMPLETION */
#define NET_PLUGIN_NAME "ncclbpf"      /* our tables' name */

/*
 * Loads spec: dlopen(spec), then for a bare name libnccl-net-<spec>.so,
 * RTLD_NOW | RTLD_LOCAL.  Reference-counted per process (one inner
 * library).  0 or a negative errno, with a message in err: -ELOOP when
 * spec is this library itself (by name, path or link) or another copy of it.
 */
int net_inner_open(const char *spec, struct net_inner **out, char *err, size_t errlen);
void net_inner_close(struct net_inner *in);
/* At our own unload, after every context is gone: drops the library even if legacy. */
void net_inner_unload(void);
int net_inner_version(const struct net_inner *in);
const char *net_inner_name(const struct net_inner *in);

/* init per context (v11+) or once per process (v6..v10, first call only). */
nbpf_nccl_result_t net_inner_init(struct net_inner *in, void **ictx, uint64_t comm_id,
				  int traffic_class, nbpf_net_prof_cb_t prof);
nbpf_nccl_result_t net_inner_finalize(struct net_inner *in, void *ictx);
nbpf_nccl_result_t net_inner_devices(struct net_inner *in, int *ndev);
nbpf_nccl_result_t net_inner_props(struct net_inner *in, int dev, nbpf_net_props_v12_t *p);
nbpf_nccl_result_t net_inner_listen(struct net_inner *in, void *ictx, int dev, void *handle,
				    void **lc);
nbpf_nccl_result_t net_inner_connect(struct net_inner *in, void *ictx, int dev, int traffic_class,
				     void *handle, void **sc, void **dc);
nbpf_nccl_result_t net_inner_accept(struct net_inner *in, void *lc, void **rc, void **dc);
nbpf_nccl_result_t net_inner_regmr(struct net_inner *in, void *comm, void *data, size_t size,
				   int type, void **mh);
nbpf_nccl_result_t net_inner_regmr_dmabuf(struct net_inner *in, void *comm, void *data,
					  size_t size, int type, uint64_t offset, int fd,
					  void **mh);
nbpf_nccl_result_t net_inner_deregmr(struct net_inner *in, void *comm, void *mh);
nbpf_nccl_result_t net_inner_isend(struct net_inner *in, void *sc, void *data, size_t size,
				   int tag, void *mh, void *ph, void **req);
nbpf_nccl_result_t net_inner_irecv(struct net_inner *in, void *rc, int n, void **data,
				   size_t *sizes, int *tags, void **mh, void **ph, void **req);
nbpf_nccl_result_t net_inner_iflush(struct net_inner *in, void *rc, int n, void **data,
				    int *sizes, void **mh, void **req);
nbpf_nccl_result_t net_inner_test(struct net_inner *in, void *req, int *done, int *sizes);
nbpf_nccl_result_t net_inner_close_send(struct net_inner *in, void *sc);
nbpf_nccl_result_t net_inner_close_recv(struct net_inner *in, void *rc);
nbpf_nccl_result_t net_inner_close_listen(struct net_inner *in, void *lc);
nbpf_nccl_result_t net_inner_get_device_mr(struct net_inner *in, void *comm, void *mh,
					   void **dptr);
nbpf_nccl_result_t net_inner_irecv_consumed(struct net_inner *in, void *rc, int n, void *req);
nbpf_nccl_result_t net_inner_set_attr(struct net_inner *in, void *ictx, nbpf_net_attr_v11_t *a);

#endif
