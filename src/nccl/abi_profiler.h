/*
 * abi_profiler.h - NCCL profiler plugin tables and event descriptors v1..v6
 * (docs/nccl-plugin-abi.md §3).  Every table is 48 bytes with the same
 * slots; only init's arguments and the descriptor layouts differ.
 */
#ifndef NCCLBPF_ABI_PROFILER_H
#define NCCLBPF_ABI_PROFILER_H

#include "abi_common.h"

/* Event type bits. */
#define NBPF_PROF_GROUP        0x1
#define NBPF_PROF_COLL         0x2
#define NBPF_PROF_P2P          0x4
#define NBPF_PROF_PROXY_OP     0x8
#define NBPF_PROF_PROXY_STEP   0x10
#define NBPF_PROF_PROXY_CTRL   0x20
#define NBPF_PROF_KERNEL_CH    0x40   /* v3+ */
#define NBPF_PROF_NET_PLUGIN   0x80   /* v3+ */
#define NBPF_PROF_GROUP_API    0x100  /* v5+ */
#define NBPF_PROF_COLL_API     0x200
#define NBPF_PROF_P2P_API      0x400
#define NBPF_PROF_KERNEL_LAUNCH 0x800

/* States (one enum for every version). */
#define NBPF_PROF_STATE_KERNEL_CH_STOP 22

/* ---- v1 ---- */
typedef struct {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name;
			uint64_t commHash;
			uint64_t seqNumber;
			uint8_t func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			uint8_t datatype;
			uint32_t op;
			size_t trafficBytes;
			uint8_t nMaxChannels;
			uint8_t nWarps;
			uint8_t algo;
			uint8_t proto;
			int isCollnet;
			int isNvls;
		} coll;
		struct {
			const char *name;
			uint64_t commHash;
			uint8_t func;
			void *buff;
			uint8_t datatype;
			size_t count;
			int peer;
		} p2p;
		struct {
			pid_t pid;
			uint8_t channelId;
			int peer;
			int nSteps;
			int chunkSize;
			int isSend;
		} proxyOp;
		struct {
			int step;
		} proxyStep;
	};
} nbpf_prof_descr_v1_t;

typedef union {
	struct {
		size_t transSize;
		int steps;
	} proxyOp;
	struct {
		int appendedProxyOps;
	} proxyCtrl;
} nbpf_prof_state_args_v1_t; /* also v2, v3 */

/* ---- v2 ---- */
typedef struct {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name;
			uint64_t commHash;
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			size_t trafficBytes;
			uint8_t nMaxChannels;
			uint8_t nWarps;
			const char *algo;
			const char *proto;
		} coll;
		struct {
			const char *name;
			uint64_t commHash;
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
		} p2p;
		struct {
			pid_t pid;
			uint8_t channelId;
			int peer;
			int nSteps;
			int chunkSize;
			int isSend;
		} proxyOp;
		struct {
			int step;
		} proxyStep;
	};
} nbpf_prof_descr_v2_t;

/* ---- v3 ---- */
typedef struct {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name;
			uint64_t commHash;
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nMaxChannels;
			uint8_t nWarps;
			const char *algo;
			const char *proto;
		} coll;
		struct {
			const char *name;
			uint64_t commHash;
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
		} p2p;
		struct {
			pid_t pid;
			uint8_t channelId;
			int peer;
			int nSteps;
			int chunkSize;
			int isSend;
		} proxyOp;
		struct {
			int step;
		} proxyStep;
		struct {
			uint8_t channelId;
		} kernelCh;
		struct {
			int64_t id;
			void *data;
		} netPlugin;
	};
} nbpf_prof_descr_v3_t;

/* ---- v4 ---- */
typedef struct {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nChannels;
			uint8_t nWarps;
			const char *algo;
			const char *proto;
		} coll;
		struct {
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
			uint8_t nChannels;
		} p2p;
		struct {
			pid_t pid;
			uint8_t channelId;
			int peer;
			int nSteps;
			int chunkSize;
			int isSend;
		} proxyOp;
		struct {
			int step;
		} proxyStep;
		struct {
			uint8_t channelId;
			uint64_t pTimer;
		} kernelCh;
		struct {
			int64_t id;
			void *data;
		} netPlugin;
	};
} nbpf_prof_descr_v4_t;

/* v4..v6 state args. */
typedef union {
	struct {
		size_t transSize;
	} proxyStep;
	struct {
		int appendedProxyOps;
	} proxyCtrl;
	struct {
		void *data;
	} netPlugin;
	struct {
		uint64_t pTimer;
	} kernelCh;
} nbpf_prof_state_args_v4_t;

/* ---- v5 and v6 (v6 adds CE members to the union) ---- */
#define NBPF_PROF_DESCR_V5_MEMBERS \
	struct { bool graphCaptured; int groupDepth; } groupApi; \
	struct { const char *func; size_t count; const char *datatype; int root; \
		 void *stream; bool graphCaptured; } collApi; \
	struct { const char *func; size_t count; const char *datatype; void *stream; \
		 bool graphCaptured; } p2pApi; \
	struct { void *stream; } kernelLaunch; \
	struct { uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff; \
		 size_t count; int root; const char *datatype; uint8_t nChannels; \
		 uint8_t nWarps; const char *algo; const char *proto; void *parentGroup; } coll; \
	struct { const char *func; void *buff; const char *datatype; size_t count; int peer; \
		 uint8_t nChannels; void *parentGroup; } p2p; \
	struct { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize; \
		 int isSend; } proxyOp; \
	struct { int step; } proxyStep; \
	struct { uint8_t channelId; uint64_t pTimer; } kernelCh; \
	struct { int64_t id; void *data; } netPlugin;

typedef struct {
	uint64_t type;
	void *parentObj;
	int rank;
	union {
		NBPF_PROF_DESCR_V5_MEMBERS
	};
} nbpf_prof_descr_v5_t;

typedef struct {
	uint64_t type;
	void *parentObj;
	int rank;
	union {
		NBPF_PROF_DESCR_V5_MEMBERS
		struct { uint64_t seqNumber; const char *func; const void *sendBuff;
			 void *recvBuff; size_t count; int root; const char *datatype;
			 const char *syncStrategy; bool intraBatchSync; uint32_t batchSize;
			 uint32_t numBatches; uint32_t ceSeqNum; void *stream; } ceColl;
		struct { bool isComplete; int nRanks; } ceCollSync;
		struct { int numOps; size_t totalBytes; bool useIntraSync; } ceCollBatch;
	};
} nbpf_prof_descr_v6_t;

/* ---- tables ---- */
#define NBPF_PROF_TABLE(ver, init_args, descr_t, args_t) \
	typedef struct { \
		const char *name; \
		nbpf_nccl_result_t (*init) init_args; \
		nbpf_nccl_result_t (*startEvent)(void *ctx, void **eHandle, descr_t *descr); \
		nbpf_nccl_result_t (*stopEvent)(void *eHandle); \
		nbpf_nccl_result_t (*recordEventState)(void *eHandle, int state, args_t *args); \
		nbpf_nccl_result_t (*finalize)(void *ctx); \
	} nbpf_profiler_##ver##_t

#define NBPF_PROF_INIT_V1 (void **ctx, int *eActivationMask)
#define NBPF_PROF_INIT_V4 (void **ctx, int *eActivationMask, const char *commName, \
			   uint64_t commHash, int nNodes, int nRanks, int rank, \
			   nbpf_nccl_logger_t logger)
#define NBPF_PROF_INIT_V5 (void **ctx, uint64_t commId, int *eActivationMask, \
			   const char *commName, int nNodes, int nRanks, int rank, \
			   nbpf_nccl_logger_t logger)
NBPF_PROF_TABLE(v1, NBPF_PROF_INIT_V1, nbpf_prof_descr_v1_t, nbpf_prof_state_args_v1_t);
NBPF_PROF_TABLE(v2, NBPF_PROF_INIT_V1, nbpf_prof_descr_v2_t, nbpf_prof_state_args_v1_t);
NBPF_PROF_TABLE(v3, NBPF_PROF_INIT_V1, nbpf_prof_descr_v3_t, nbpf_prof_state_args_v1_t);
NBPF_PROF_TABLE(v4, NBPF_PROF_INIT_V4, nbpf_prof_descr_v4_t, nbpf_prof_state_args_v4_t);
NBPF_PROF_TABLE(v5, NBPF_PROF_INIT_V5, nbpf_prof_descr_v5_t, nbpf_prof_state_args_v4_t);
NBPF_PROF_TABLE(v6, NBPF_PROF_INIT_V5, nbpf_prof_descr_v6_t, nbpf_prof_state_args_v4_t);

/* ---- layout pins (docs/nccl-plugin-abi.md §3.3) ---- */
#define NBPF_PROF_TABLE_ASSERTS(t) \
	NBPF_ABI_ASSERT_SIZE(t, 48); \
	NBPF_ABI_ASSERT_OFF(t, init, 8); \
	NBPF_ABI_ASSERT_OFF(t, startEvent, 16); \
	NBPF_ABI_ASSERT_OFF(t, stopEvent, 24); \
	NBPF_ABI_ASSERT_OFF(t, recordEventState, 32); \
	NBPF_ABI_ASSERT_OFF(t, finalize, 40)
NBPF_PROF_TABLE_ASSERTS(nbpf_profiler_v1_t);
NBPF_PROF_TABLE_ASSERTS(nbpf_profiler_v2_t);
NBPF_PROF_TABLE_ASSERTS(nbpf_profiler_v3_t);
NBPF_PROF_TABLE_ASSERTS(nbpf_profiler_v4_t);
NBPF_PROF_TABLE_ASSERTS(nbpf_profiler_v5_t);
NBPF_PROF_TABLE_ASSERTS(nbpf_profiler_v6_t);

#define NBPF_PROF_HDR_ASSERTS(t) \
	NBPF_ABI_ASSERT_OFF(t, parentObj, 8); \
	NBPF_ABI_ASSERT_OFF(t, rank, 16); \
	NBPF_ABI_ASSERT_OFF(t, coll, 24)
NBPF_PROF_HDR_ASSERTS(nbpf_prof_descr_v1_t);
NBPF_PROF_HDR_ASSERTS(nbpf_prof_descr_v2_t);
NBPF_PROF_HDR_ASSERTS(nbpf_prof_descr_v3_t);
NBPF_PROF_HDR_ASSERTS(nbpf_prof_descr_v4_t);
NBPF_PROF_HDR_ASSERTS(nbpf_prof_descr_v5_t);
NBPF_PROF_HDR_ASSERTS(nbpf_prof_descr_v6_t);
NBPF_ABI_ASSERT_SIZE(nbpf_prof_descr_v1_t, 120);
NBPF_ABI_ASSERT_SIZE(nbpf_prof_descr_v2_t, 128);
NBPF_ABI_ASSERT_SIZE(nbpf_prof_descr_v3_t, 120);
NBPF_ABI_ASSERT_SIZE(nbpf_prof_descr_v4_t, 104);
NBPF_ABI_ASSERT_SIZE(nbpf_prof_descr_v5_t, 112);
NBPF_ABI_ASSERT_SIZE(nbpf_prof_descr_v6_t, 112);

/* v1: name 24, commHash 32, seqNumber 40, func 48, count 72, nMaxChannels 104, algo 106, proto 107. */
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v1_t, coll.seqNumber, 40);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v1_t, coll.func, 48);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v1_t, coll.count, 72);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v1_t, coll.trafficBytes, 96);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v1_t, coll.nMaxChannels, 104);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v1_t, coll.algo, 106);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v1_t, coll.proto, 107);
/* v2 */
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v2_t, coll.seqNumber, 40);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v2_t, coll.func, 48);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v2_t, coll.count, 72);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v2_t, coll.datatype, 88);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v2_t, coll.trafficBytes, 96);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v2_t, coll.nMaxChannels, 104);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v2_t, coll.algo, 112);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v2_t, coll.proto, 120);
/* v3 */
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v3_t, coll.seqNumber, 40);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v3_t, coll.count, 72);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v3_t, coll.nMaxChannels, 96);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v3_t, coll.algo, 104);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v3_t, coll.proto, 112);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v3_t, kernelCh.channelId, 24);
/* v4 */
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v4_t, coll.seqNumber, 24);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v4_t, coll.func, 32);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v4_t, coll.count, 56);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v4_t, coll.datatype, 72);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v4_t, coll.nChannels, 80);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v4_t, coll.algo, 88);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v4_t, coll.proto, 96);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v4_t, kernelCh.pTimer, 32);
/* v5 (docs table) */
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, groupApi.groupDepth, 28);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, collApi.graphCaptured, 64);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, coll.seqNumber, 24);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, coll.func, 32);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, coll.sendBuff, 40);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, coll.recvBuff, 48);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, coll.count, 56);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, coll.root, 64);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, coll.datatype, 72);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, coll.nChannels, 80);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, coll.nWarps, 81);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, coll.algo, 88);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, coll.proto, 96);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, coll.parentGroup, 104);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, p2p.peer, 56);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, p2p.nChannels, 60);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, p2p.parentGroup, 64);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, proxyOp.channelId, 28);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, proxyOp.isSend, 44);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, kernelCh.channelId, 24);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, kernelCh.pTimer, 32);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, netPlugin.data, 32);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v6_t, coll.proto, 96);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v6_t, kernelCh.pTimer, 32);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v6_t, ceColl.stream, 104);
NBPF_ABI_ASSERT_SIZE(nbpf_prof_state_args_v1_t, 16);
NBPF_ABI_ASSERT_SIZE(nbpf_prof_state_args_v4_t, 8);

#endif
