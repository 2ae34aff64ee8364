/*
 * abi_profiler.h - NCCL profiler plugin tables and event descriptors v1..v7
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
#define NBPF_PROF_CE_COLL      0x1000 /* v6+ */
#define NBPF_PROF_CE_SYNC      0x2000
#define NBPF_PROF_CE_BATCH     0x4000
#define NBPF_PROF_KERNEL_PHASE 0x8000 /* v7 */

/* States (one enum for every version). */
#define NBPF_PROF_STATE_KERNEL_CH_STOP    22
#define NBPF_PROF_STATE_KERNEL_PHASE_STOP 31 /* v7: args as KernelCh's */

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

#define NBPF_PROF_DESCR_V6_CE \
	struct { bool isComplete; int nRanks; } ceCollSync; \
	struct { int numOps; size_t totalBytes; bool useIntraSync; } ceCollBatch;

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
		NBPF_PROF_DESCR_V6_CE
	};
} nbpf_prof_descr_v6_t;

/*
 * ---- v7 (NCCL's profiler_v7.h) ----
 * userTag at the end of the API, Coll, P2p and CeColl members, the kernel
 * variant and a symmetric flag on Coll, and the KernelPhase member.  The
 * state args keep v4's shape (a phase's stop uses kernelCh.pTimer).
 */
typedef struct {
	uint64_t type;
	void *parentObj;
	int rank;
	union {
		struct { bool graphCaptured; int groupDepth; } groupApi;
		struct { const char *func; size_t count; const char *datatype; int root;
			 void *stream; bool graphCaptured; uint64_t userTag; } collApi;
		struct { const char *func; size_t count; const char *datatype; void *stream;
			 bool graphCaptured; uint64_t userTag; } p2pApi;
		struct { void *stream; } kernelLaunch;
		struct { uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff;
			 size_t count; int root; const char *datatype; uint8_t nChannels;
			 uint8_t nWarps; const char *algo; const char *proto; void *parentGroup;
			 const char *kernelVariant; bool isSymColl; uint64_t userTag; } coll;
		struct { const char *func; void *buff; const char *datatype; size_t count; int peer;
			 uint8_t nChannels; void *parentGroup; uint64_t userTag; } p2p;
		struct { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize;
			 int isSend; } proxyOp;
		struct { int step; } proxyStep;
		struct { uint8_t channelId; uint64_t pTimer; } kernelCh;
		struct { int64_t id; void *data; } netPlugin;
		struct { uint64_t seqNumber; const char *func; const void *sendBuff;
			 void *recvBuff; size_t count; int root; const char *datatype;
			 const char *syncStrategy; bool intraBatchSync; uint32_t batchSize;
			 uint32_t numBatches; uint32_t ceSeqNum; void *stream; uint64_t userTag; } ceColl;
		NBPF_PROF_DESCR_V6_CE
		struct { uint8_t channelId; uint8_t phaseId; const char *phaseName;
			 uint64_t pTimer; } kernelPhase;
	};
} nbpf_prof_descr_v7_t;

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
NBPF_PROF_TABLE(v7, NBPF_PROF_INIT_V5, nbpf_prof_descr_v7_t, nbpf_prof_state_args_v4_t);

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
NBPF_PROF_TABLE_ASSERTS(nbpf_profiler_v7_t);

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
NBPF_PROF_HDR_ASSERTS(nbpf_prof_descr_v7_t);
NBPF_ABI_ASSERT_SIZE(nbpf_prof_descr_v1_t, 120);
NBPF_ABI_ASSERT_SIZE(nbpf_prof_descr_v2_t, 128);
NBPF_ABI_ASSERT_SIZE(nbpf_prof_descr_v3_t, 120);
NBPF_ABI_ASSERT_SIZE(nbpf_prof_descr_v4_t, 104);
NBPF_ABI_ASSERT_SIZE(nbpf_prof_descr_v5_t, 112);
NBPF_ABI_ASSERT_SIZE(nbpf_prof_descr_v6_t, 112);
NBPF_ABI_ASSERT_SIZE(nbpf_prof_descr_v7_t, 136);

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
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, collApi.root, 48);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, p2pApi.stream, 48);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, p2pApi.graphCaptured, 56);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, p2p.datatype, 40);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, p2p.count, 48);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, proxyOp.peer, 32);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, proxyOp.nSteps, 36);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v5_t, proxyOp.chunkSize, 40);
/* v6: the CE members (compiled from NCCL's profiler_v6.h, 2.30.7) */
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v6_t, ceColl.syncStrategy, 80);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v6_t, ceColl.intraBatchSync, 88);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v6_t, ceColl.batchSize, 92);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v6_t, ceColl.numBatches, 96);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v6_t, ceColl.ceSeqNum, 100);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v6_t, ceColl.stream, 104);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v6_t, ceCollSync.nRanks, 28);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v6_t, ceCollBatch.totalBytes, 32);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v6_t, ceCollBatch.useIntraSync, 40);
/* v7 (NCCL's profiler_v7.h) */
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v7_t, collApi.userTag, 72);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v7_t, p2pApi.userTag, 64);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v7_t, coll.proto, 96);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v7_t, coll.parentGroup, 104);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v7_t, coll.kernelVariant, 112);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v7_t, coll.isSymColl, 120);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v7_t, coll.userTag, 128);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v7_t, p2p.userTag, 72);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v7_t, ceColl.stream, 104);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v7_t, ceColl.userTag, 112);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v7_t, ceCollBatch.totalBytes, 32);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v7_t, kernelCh.pTimer, 32);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v7_t, kernelPhase.phaseId, 25);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v7_t, kernelPhase.phaseName, 32);
NBPF_ABI_ASSERT_OFF(nbpf_prof_descr_v7_t, kernelPhase.pTimer, 40);
NBPF_ABI_ASSERT_SIZE(nbpf_prof_state_args_v1_t, 16);
NBPF_ABI_ASSERT_SIZE(nbpf_prof_state_args_v4_t, 8);

#endif
