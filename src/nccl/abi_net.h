/* SPDX-License-Identifier: Apache-2.0 */
/*
 * abi_net.h - NCCL net plugin tables v6..v12 (docs/nccl-plugin-abi.md §4),
 * the project's own declarations.  Every struct size and the property
 * offsets the doc lists are pinned; the tables' sizes pin the function
 * order (v6 136 B, v7-v8 152, v9-v10 160, v11-v12 176).
 */
#ifndef NCCLBPF_ABI_NET_H
#define NCCLBPF_ABI_NET_H

#include "abi_common.h"

#define NBPF_NET_HANDLE_MAXSIZE   128
#define NBPF_NET_MAX_REQUESTS     32
#define NBPF_NET_PTR_HOST         0x1
#define NBPF_NET_PTR_CUDA         0x2
#define NBPF_NET_PTR_DMABUF       0x4
#define NBPF_NET_MAX_DEVS_PER_NIC 4
#define NBPF_NET_MAX_DEVS_PER_NIC_V12 8
#define NBPF_NET_MAX_SIZE_BYTES   (1ull << 40) /* NCCL_MAX_NET_SIZE_BYTES */
#define NBPF_NET_DEVICE_HOST      0

#define NBPF_NCCL_INVALID_USAGE   5
#define NBPF_NCCL_REMOTE_ERROR    6
#define NBPF_NCCL_IN_PROGRESS     7

/* Net type in the profiler's pluginId (IB 1 << 16, SOCK 2 << 16) | version. */
#define NBPF_NET_PROF_SOCK_ID     (2 << 16)

/* Profiler event a socket transport reports (NCCL's ncclProfilerNetSockDescr_v1_t). */
#define NBPF_NET_PROF_SOCK_VER   1
#define NBPF_NET_PROF_SOCKET     1 /* ncclProfileSocket */
#define NBPF_NET_PROF_START      0
#define NBPF_NET_PROF_STOP       1
typedef struct {
	uint8_t type;
	union {
		struct {
			int fd;
			int op;      /* 0 send, 1 receive (NCCL_SOCKET_SEND/RECV) */
			size_t length;
		} sock;
	};
} nbpf_net_prof_sock_descr_t;
NBPF_ABI_ASSERT_SIZE(nbpf_net_prof_sock_descr_t, 24);
NBPF_ABI_ASSERT_OFF(nbpf_net_prof_sock_descr_t, sock.length, 16);

/* Profiler callback given to net v10+ (type 0 start, 1 stop, 2 update, 3 update+stop). */
typedef nbpf_nccl_result_t (*nbpf_net_prof_cb_t)(void **eHandle, int type, void *pHandle,
						 int64_t pluginId, void *extData);

typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
} nbpf_net_props_v6_t;

typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	int netDeviceType;
	int netDeviceVersion;
} nbpf_net_props_v7_t;

typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int regIsGlobal;
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	int netDeviceType;
	int netDeviceVersion;
} nbpf_net_props_v8_t;

typedef struct {
	int ndevs;
	int devs[NBPF_NET_MAX_DEVS_PER_NIC];
} nbpf_net_vprops_v9_t;

typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int regIsGlobal;
	int forceFlush;
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	int netDeviceType;
	int netDeviceVersion;
	nbpf_net_vprops_v9_t vProps;
	size_t maxP2pBytes;
	size_t maxCollBytes;
} nbpf_net_props_v9_t; /* v10 is the same */

typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int regIsGlobal;
	int forceFlush;
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	int netDeviceType;
	int netDeviceVersion;
	nbpf_net_vprops_v9_t vProps;
	size_t maxP2pBytes;
	size_t maxCollBytes;
	int maxMultiRequestSize;
} nbpf_net_props_v11_t;

typedef struct {
	int ndevs;
	int devs[NBPF_NET_MAX_DEVS_PER_NIC_V12];
} nbpf_net_vprops_v12_t;

typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int regIsGlobal;
	int forceFlush;
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	int netDeviceType;
	int netDeviceVersion;
	nbpf_net_vprops_v12_t vProps;
	size_t maxP2pBytes;
	size_t maxCollBytes;
	int maxMultiRequestSize;
	int16_t railId;
	int16_t planeId;
} nbpf_net_props_v12_t;

NBPF_ABI_ASSERT_SIZE(nbpf_net_props_v6_t, 48);
NBPF_ABI_ASSERT_SIZE(nbpf_net_props_v7_t, 56);
NBPF_ABI_ASSERT_SIZE(nbpf_net_props_v8_t, 64);
NBPF_ABI_ASSERT_SIZE(nbpf_net_props_v9_t, 104);
NBPF_ABI_ASSERT_SIZE(nbpf_net_props_v11_t, 112);
NBPF_ABI_ASSERT_OFF(nbpf_net_props_v11_t, ptrSupport, 24);
NBPF_ABI_ASSERT_OFF(nbpf_net_props_v11_t, speed, 36);
NBPF_ABI_ASSERT_OFF(nbpf_net_props_v11_t, latency, 44);
NBPF_ABI_ASSERT_OFF(nbpf_net_props_v11_t, netDeviceType, 56);
NBPF_ABI_ASSERT_OFF(nbpf_net_props_v11_t, vProps, 64);
NBPF_ABI_ASSERT_OFF(nbpf_net_props_v11_t, maxP2pBytes, 88);
NBPF_ABI_ASSERT_OFF(nbpf_net_props_v11_t, maxCollBytes, 96);
NBPF_ABI_ASSERT_OFF(nbpf_net_props_v11_t, maxMultiRequestSize, 104);
NBPF_ABI_ASSERT_OFF(nbpf_net_props_v12_t, maxP2pBytes, 104);
NBPF_ABI_ASSERT_OFF(nbpf_net_props_v12_t, railId, 124);
NBPF_ABI_ASSERT_SIZE(nbpf_net_props_v12_t, 128);

typedef struct {
	int trafficClass; /* -1: undefined */
} nbpf_net_comm_config_t;

typedef struct {
	int32_t maxConcurrentPeers;
	int32_t minConcurrentPeers;
	int32_t maxFlowsPerPeer;
	int32_t minFlowsPerPeer;
} nbpf_net_comm_attr_v11_t;

typedef struct {
	nbpf_net_comm_attr_v11_t sendCommAttr;
	nbpf_net_comm_attr_v11_t recvCommAttr;
	uint32_t op;
	uint32_t algo;
	uint32_t proto;
} nbpf_net_attr_v11_t;
NBPF_ABI_ASSERT_SIZE(nbpf_net_attr_v11_t, 44);

/* ncclNetDeviceHandle*: opaque here, we never offload (HOST device type). */
typedef void nbpf_net_dev_handle_t;

#define NBPF_NET_COMMON_TAIL                                                     \
	nbpf_nccl_result_t (*iflush)(void *recvComm, int n, void **data, int *sizes,       \
				     void **mhandles, void **request);                     \
	nbpf_nccl_result_t (*test)(void *request, int *done, int *sizes);                 \
	nbpf_nccl_result_t (*closeSend)(void *sendComm);                                  \
	nbpf_nccl_result_t (*closeRecv)(void *recvComm);                                  \
	nbpf_nccl_result_t (*closeListen)(void *listenComm);

typedef struct {
	const char *name;
	nbpf_nccl_result_t (*init)(nbpf_nccl_logger_t logger);
	nbpf_nccl_result_t (*devices)(int *ndev);
	nbpf_nccl_result_t (*getProperties)(int dev, nbpf_net_props_v6_t *props);
	nbpf_nccl_result_t (*listen)(int dev, void *handle, void **listenComm);
	nbpf_nccl_result_t (*connect)(int dev, void *handle, void **sendComm);
	nbpf_nccl_result_t (*accept)(void *listenComm, void **recvComm);
	nbpf_nccl_result_t (*regMr)(void *comm, void *data, int size, int type, void **mhandle);
	nbpf_nccl_result_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type,
					  uint64_t offset, int fd, void **mhandle);
	nbpf_nccl_result_t (*deregMr)(void *comm, void *mhandle);
	nbpf_nccl_result_t (*isend)(void *sendComm, void *data, int size, int tag, void *mhandle,
				    void **request);
	nbpf_nccl_result_t (*irecv)(void *recvComm, int n, void **data, int *sizes, int *tags,
				    void **mhandles, void **request);
	NBPF_NET_COMMON_TAIL
} nbpf_net_v6_t;

typedef struct {
	const char *name;
	nbpf_nccl_result_t (*init)(nbpf_nccl_logger_t logger);
	nbpf_nccl_result_t (*devices)(int *ndev);
	nbpf_nccl_result_t (*getProperties)(int dev, nbpf_net_props_v7_t *props);
	nbpf_nccl_result_t (*listen)(int dev, void *handle, void **listenComm);
	nbpf_nccl_result_t (*connect)(int dev, void *handle, void **sendComm,
				      nbpf_net_dev_handle_t **sendDevComm);
	nbpf_nccl_result_t (*accept)(void *listenComm, void **recvComm,
				     nbpf_net_dev_handle_t **recvDevComm);
	nbpf_nccl_result_t (*regMr)(void *comm, void *data, int size, int type, void **mhandle);
	nbpf_nccl_result_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type,
					  uint64_t offset, int fd, void **mhandle);
	nbpf_nccl_result_t (*deregMr)(void *comm, void *mhandle);
	nbpf_nccl_result_t (*isend)(void *sendComm, void *data, int size, int tag, void *mhandle,
				    void **request);
	nbpf_nccl_result_t (*irecv)(void *recvComm, int n, void **data, int *sizes, int *tags,
				    void **mhandles, void **request);
	NBPF_NET_COMMON_TAIL
	nbpf_nccl_result_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	nbpf_nccl_result_t (*irecvConsumed)(void *recvComm, int n, void *request);
} nbpf_net_v7_t;

typedef struct {
	const char *name;
	nbpf_nccl_result_t (*init)(nbpf_nccl_logger_t logger);
	nbpf_nccl_result_t (*devices)(int *ndev);
	nbpf_nccl_result_t (*getProperties)(int dev, nbpf_net_props_v8_t *props);
	nbpf_nccl_result_t (*listen)(int dev, void *handle, void **listenComm);
	nbpf_nccl_result_t (*connect)(int dev, void *handle, void **sendComm,
				      nbpf_net_dev_handle_t **sendDevComm);
	nbpf_nccl_result_t (*accept)(void *listenComm, void **recvComm,
				     nbpf_net_dev_handle_t **recvDevComm);
	nbpf_nccl_result_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
	nbpf_nccl_result_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type,
					  uint64_t offset, int fd, void **mhandle);
	nbpf_nccl_result_t (*deregMr)(void *comm, void *mhandle);
	nbpf_nccl_result_t (*isend)(void *sendComm, void *data, int size, int tag, void *mhandle,
				    void **request);
	nbpf_nccl_result_t (*irecv)(void *recvComm, int n, void **data, int *sizes, int *tags,
				    void **mhandles, void **request);
	NBPF_NET_COMMON_TAIL
	nbpf_nccl_result_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	nbpf_nccl_result_t (*irecvConsumed)(void *recvComm, int n, void *request);
} nbpf_net_v8_t;

typedef struct {
	const char *name;
	nbpf_nccl_result_t (*init)(nbpf_nccl_logger_t logger);
	nbpf_nccl_result_t (*devices)(int *ndev);
	nbpf_nccl_result_t (*getProperties)(int dev, nbpf_net_props_v9_t *props);
	nbpf_nccl_result_t (*listen)(int dev, void *handle, void **listenComm);
	nbpf_nccl_result_t (*connect)(int dev, void *handle, void **sendComm,
				      nbpf_net_dev_handle_t **sendDevComm);
	nbpf_nccl_result_t (*accept)(void *listenComm, void **recvComm,
				     nbpf_net_dev_handle_t **recvDevComm);
	nbpf_nccl_result_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
	nbpf_nccl_result_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type,
					  uint64_t offset, int fd, void **mhandle);
	nbpf_nccl_result_t (*deregMr)(void *comm, void *mhandle);
	nbpf_nccl_result_t (*isend)(void *sendComm, void *data, size_t size, int tag,
				    void *mhandle, void **request);
	nbpf_nccl_result_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags,
				    void **mhandles, void **request);
	NBPF_NET_COMMON_TAIL
	nbpf_nccl_result_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	nbpf_nccl_result_t (*irecvConsumed)(void *recvComm, int n, void *request);
	nbpf_nccl_result_t (*makeVDevice)(int *d, nbpf_net_vprops_v9_t *props);
} nbpf_net_v9_t;

typedef struct {
	const char *name;
	nbpf_nccl_result_t (*init)(nbpf_nccl_logger_t logger, nbpf_net_prof_cb_t profCb);
	nbpf_nccl_result_t (*devices)(int *ndev);
	nbpf_nccl_result_t (*getProperties)(int dev, nbpf_net_props_v9_t *props);
	nbpf_nccl_result_t (*listen)(int dev, void *handle, void **listenComm);
	nbpf_nccl_result_t (*connect)(int dev, nbpf_net_comm_config_t *config, void *handle,
				      void **sendComm, nbpf_net_dev_handle_t **sendDevComm);
	nbpf_nccl_result_t (*accept)(void *listenComm, void **recvComm,
				     nbpf_net_dev_handle_t **recvDevComm);
	nbpf_nccl_result_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
	nbpf_nccl_result_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type,
					  uint64_t offset, int fd, void **mhandle);
	nbpf_nccl_result_t (*deregMr)(void *comm, void *mhandle);
	nbpf_nccl_result_t (*isend)(void *sendComm, void *data, size_t size, int tag,
				    void *mhandle, void *phandle, void **request);
	nbpf_nccl_result_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags,
				    void **mhandles, void **phandles, void **request);
	NBPF_NET_COMMON_TAIL
	nbpf_nccl_result_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	nbpf_nccl_result_t (*irecvConsumed)(void *recvComm, int n, void *request);
	nbpf_nccl_result_t (*makeVDevice)(int *d, nbpf_net_vprops_v9_t *props);
} nbpf_net_v10_t;

/* v11 and v12 differ only in the properties (and vProps) types. */
#define NBPF_NET_V11_TABLE(props_t, vprops_t)                                              \
	struct {                                                                           \
	const char *name;                                                                  \
	nbpf_nccl_result_t (*init)(void **ctx, uint64_t commId,                           \
				   nbpf_net_comm_config_t *config,                        \
				   nbpf_nccl_logger_t logger, nbpf_net_prof_cb_t profCb); \
	nbpf_nccl_result_t (*devices)(int *ndev);                                         \
	nbpf_nccl_result_t (*getProperties)(int dev, props_t *props);                    \
	nbpf_nccl_result_t (*listen)(void *ctx, int dev, void *handle, void **listenComm); \
	nbpf_nccl_result_t (*connect)(void *ctx, int dev, void *handle, void **sendComm,  \
				      nbpf_net_dev_handle_t **sendDevComm);               \
	nbpf_nccl_result_t (*accept)(void *listenComm, void **recvComm,                   \
				     nbpf_net_dev_handle_t **recvDevComm);                \
	nbpf_nccl_result_t (*regMr)(void *comm, void *data, size_t size, int type,        \
				    void **mhandle);                                      \
	nbpf_nccl_result_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type,  \
					  uint64_t offset, int fd, void **mhandle);       \
	nbpf_nccl_result_t (*deregMr)(void *comm, void *mhandle);                         \
	nbpf_nccl_result_t (*isend)(void *sendComm, void *data, size_t size, int tag,     \
				    void *mhandle, void *phandle, void **request);        \
	nbpf_nccl_result_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes,    \
				    int *tags, void **mhandles, void **phandles,          \
				    void **request);                                      \
	NBPF_NET_COMMON_TAIL                                                    \
	nbpf_nccl_result_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle); \
	nbpf_nccl_result_t (*irecvConsumed)(void *recvComm, int n, void *request);        \
	nbpf_nccl_result_t (*makeVDevice)(int *d, vprops_t *props);                      \
	nbpf_nccl_result_t (*finalize)(void *ctx);                                        \
	nbpf_nccl_result_t (*setNetAttr)(void *ctx, nbpf_net_attr_v11_t *netAttr);        \
	}

typedef NBPF_NET_V11_TABLE(nbpf_net_props_v11_t, nbpf_net_vprops_v9_t) nbpf_net_v11_t;
typedef NBPF_NET_V11_TABLE(nbpf_net_props_v12_t, nbpf_net_vprops_v12_t) nbpf_net_v12_t;

NBPF_ABI_ASSERT_SIZE(nbpf_net_v6_t, 136);
NBPF_ABI_ASSERT_SIZE(nbpf_net_v7_t, 152);
NBPF_ABI_ASSERT_SIZE(nbpf_net_v8_t, 152);
NBPF_ABI_ASSERT_SIZE(nbpf_net_v9_t, 160);
NBPF_ABI_ASSERT_SIZE(nbpf_net_v10_t, 160);
NBPF_ABI_ASSERT_SIZE(nbpf_net_v11_t, 176);
NBPF_ABI_ASSERT_SIZE(nbpf_net_v12_t, 176);
NBPF_ABI_ASSERT_OFF(nbpf_net_v6_t, isend, 80);
NBPF_ABI_ASSERT_OFF(nbpf_net_v6_t, test, 104);
NBPF_ABI_ASSERT_OFF(nbpf_net_v11_t, finalize, 160);

#endif
