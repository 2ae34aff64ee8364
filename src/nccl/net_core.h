/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net_core.h - the version-free net plugin: what net.c's per-version
 * tables call after marshalling, and what the hooks (net_hooks.c) see.
 *
 * Object rules: every listen/send/recv comm handed to NCCL starts with a
 * magic word, checked on entry, so a NULL, closed or foreign comm is
 * refused (ncclInvalidArgument) rather than followed.
 */
#ifndef NCCLBPF_NCCL_NET_CORE_H
#define NCCLBPF_NCCL_NET_CORE_H

#include <pthread.h>

#include "abi_net.h"
#include "ncclbpf/policy.h"
#include "net/nnet.h"
#include "net_inner.h"

#define NET_CORE_MAX_RECVS 1 /* maxRecvs our transport announces */
#define NBPF_NCCL_NET 0x10ul /* NCCL_NET log subsystem */

/* One init context: per communicator from v11, per process before. */
struct net_ctx {
	uint32_t magic;
	int abi;
	uint64_t comm_id;        /* NCCL's commHash (v11+), else 0 */
	int traffic_class;       /* ncclNetCommConfig.trafficClass, -1: undefined */
	nbpf_net_prof_cb_t prof; /* v10+: NCCL's profiler callback, may be NULL */
	struct nbpf_comm *cm;    /* registry entry (role "net"): messages, program runs, refusals */
	bool stats;              /* NCCLBPF_STATS=1: time every program run */
	struct net_inner *inner; /* NCCLBPF_NET=inner:...: the plugin we wrap, else NULL */
	void *ictx;              /* the inner plugin's context (v11+) */
};

enum net_obj_kind { NET_OBJ_LISTEN = 0x4c53544e, NET_OBJ_SEND = 0x444e4553, NET_OBJ_RECV = 0x56434552 };

struct net_listen {
	uint32_t magic;          /* NET_OBJ_LISTEN while open */
	struct net_ctx *ctx;
	struct nnet_listen *l;   /* socket backend */
	void *ilc;               /* inner backend */
	int dev;
};

#define NET_IREQS 256 /* request wrappers per inner comm (32 in flight x grouped receives) */

/* An inner plugin's request, wrapped so completion can be timed and hooked. */
struct net_ireq {
	uint32_t magic;          /* NET_IREQ_MAGIC while in flight */
	uint32_t event;          /* NCCLBPF_NET_*_DONE, or UINT32_MAX for a flush */
	struct net_comm *c;      /* the comm whose pool holds it, for its whole life */
	void *ireq;              /* the inner plugin's request (0x1 too, if it answered so) */
	void *done_ireq;         /* the last receive it completed, for irecvConsumed */
	int n;                   /* grouped receives (1 for a send) */
	size_t bytes;            /* posted: size, or the receives' capacities summed */
	uint64_t posted;         /* post time (0: not timed) */
};

struct net_ireqs {
	pthread_mutex_t mu;
	unsigned head, tail;     /* FIFO of free slots: a freed wrapper is reused last */
	uint16_t free_idx[NET_IREQS];
	struct net_ireq w[NET_IREQS];
};

struct net_comm {
	uint32_t magic;          /* NET_OBJ_SEND / NET_OBJ_RECV while open */
	struct net_ctx *ctx;
	struct nnet_comm *tc;    /* socket backend */
	void *ic;                /* inner backend */
	struct net_ireqs *ireqs; /* inner backend */
	int dev;
	bool warned;             /* one WARN per failed comm */
	struct net_peer_stats *peer; /* this comm's per-peer counters (net_peers.h), may be NULL */
	struct ncclbpf_net_ctx hook; /* its events' context but event, bytes, tag, latency */
};

nbpf_nccl_result_t net_ctx_create(struct net_ctx **out, int abi, uint64_t comm_id,
				  int traffic_class, nbpf_nccl_logger_t logger,
				  nbpf_net_prof_cb_t prof);
nbpf_nccl_result_t net_ctx_destroy(struct net_ctx *ctx);

nbpf_nccl_result_t net_core_devices(int *ndev);
nbpf_nccl_result_t net_core_props(int dev, nbpf_net_props_v12_t *p);
nbpf_nccl_result_t net_core_listen(struct net_ctx *ctx, int dev, void *handle, void **lc);
nbpf_nccl_result_t net_core_connect(struct net_ctx *ctx, int dev, int traffic_class,
				    void *handle, void **sc, void **dc);
nbpf_nccl_result_t net_core_accept(void *lc, void **rc, void **dc);
nbpf_nccl_result_t net_core_regmr(void *comm, void *data, size_t size, int type, void **mh);
nbpf_nccl_result_t net_core_regmr_dmabuf(void *comm, void *data, size_t size, int type,
					 uint64_t offset, int fd, void **mh);
nbpf_nccl_result_t net_core_deregmr(void *comm, void *mh);
nbpf_nccl_result_t net_core_isend(void *sc, void *data, size_t size, int tag, void *mh,
				  void *ph, void **req);
nbpf_nccl_result_t net_core_irecv(void *rc, int n, void **data, size_t *sizes, int *tags,
				  void **mh, void **ph, void **req);
nbpf_nccl_result_t net_core_iflush(void *rc, int n, void **data, int *sizes, void **mh,
				   void **req);
nbpf_nccl_result_t net_core_test(void *req, int *done, int *sizes);
nbpf_nccl_result_t net_core_close(void *comm);
nbpf_nccl_result_t net_core_close_listen(void *lc);
nbpf_nccl_result_t net_core_get_device_mr(void *comm, void *mh, void **dptr);
nbpf_nccl_result_t net_core_irecv_consumed(void *rc, int n, void *req);
nbpf_nccl_result_t net_core_set_attr(void *ctx, nbpf_net_attr_v11_t *attr);

/* net_wrap.c: the inner backend's requests. */
struct net_ireqs *net_wrap_pool_new(struct net_comm *c);
nbpf_nccl_result_t net_wrap_post(struct net_comm *c, bool send, void **data, size_t *sizes,
				 int n, int *tags, void **mh, void **ph, void **req);
/* Whether req looks like one of our wrappers in flight. */
bool net_wrap_ok(const struct net_ireq *w);
nbpf_nccl_result_t net_wrap_test(struct net_ireq *w, int *done, int *sizes);
nbpf_nccl_result_t net_wrap_flush(struct net_comm *c, int n, void **data, int *sizes, void **mh,
				  void **req);
nbpf_nccl_result_t net_wrap_consumed(struct net_comm *c, int n, void *req);

/* net_hooks.c: SEC("net") programs around the calls. */
struct nbpf_comm;
uint64_t net_peer_key(const union nnet_addr *a);
void net_hook_connect(struct net_ctx *ctx, int dev, const union nnet_addr *peer,
		      struct nnet_conn_opts *opts);
/* Fills c->hook once its backend comm exists. */
void net_hook_comm_init(struct net_comm *c);
void net_hook_accept(struct net_comm *c);
/* Counts an output the backend cannot apply. */
void net_hook_refuse(struct net_ctx *ctx);
/* Returns whether a program ran (so the caller times the message). */
bool net_hook_msg(struct net_comm *c, uint32_t event, size_t bytes, int tag, uint64_t latency_ns);

/* ncclResult_t for a transport error (negative errno). */
nbpf_nccl_result_t net_core_result(int err);

#endif
