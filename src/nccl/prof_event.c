/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prof_event.c - decoding NCCL's profiler event descriptors into struct
 * ncclbpf_prof_event (see prof_event.h).
 *
 * Layouts: the header (type, parentObj, rank) and the start of every
 * union member are at the same offsets in the versions that have them
 * (pinned in abi_profiler.h), and later versions only append fields to a
 * member or add members: v5 and v6 share v5's members, v7 appends userTag
 * (and Coll's kernel variant) after them.  So one reader per member
 * layout serves several versions, and v7's additions are read through
 * v7's struct alone.
 */
#include "prof_event.h"

#include <string.h>
#include <strings.h>

/* ncclFunc_t in NCCL's order, as ncclFuncToString spells it. */
static const char *const func_names[] = {
	"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce", "SendRecv", "Send",
	"Recv", "AlltoAll", "Scatter", "Gather", "AllGatherV", "PutSignal", "Signal",
	"WaitSignal",
};

static int func_from_name(const char *s)
{
	for (size_t i = 0; s && i < sizeof(func_names) / sizeof(func_names[0]); i++)
		if (!strcasecmp(s, func_names[i]))
			return (int)i;
	return -1;
}

static int name_index(const char *const *names, int n, const char *s)
{
	for (int i = 0; s && i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

static const char *const algo_names[NCCLBPF_NUM_ALGOS] = {
	"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT",
};
static const char *const proto_names[NCCLBPF_NUM_PROTOS] = { "LL", "LL128", "SIMPLE" };

int nbpf_prof_dtype_size_name(const char *s)
{
	static const struct { const char *n; int sz; } t[] = {
		{ "ncclInt8", 1 }, { "ncclUint8", 1 }, { "ncclInt32", 4 }, { "ncclUint32", 4 },
		{ "ncclInt64", 8 }, { "ncclUint64", 8 }, { "ncclFloat16", 2 }, { "ncclFloat32", 4 },
		{ "ncclFloat64", 8 }, { "ncclBfloat16", 2 }, { "ncclFloat8e4m3", 1 },
		{ "ncclFloat8e5m2", 1 },
	};

	for (size_t i = 0; s && i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(s, t[i].n))
			return t[i].sz;
	return 1;
}

int nbpf_prof_dtype_size_enum(unsigned v)
{
	static const int sz[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };

	return v < sizeof(sz) / sizeof(sz[0]) ? sz[v] : 1;
}

uint32_t nbpf_prof_types_of(int abi)
{
	return abi >= 7 ? 0xffffu : abi == 6 ? 0x7fffu : abi == 5 ? 0xfffu : abi >= 3 ? 0xffu : 0x3fu;
}

/* count elements of func in bytes, as the tuner's n_bytes. */
static void set_count(struct ncclbpf_prof_event *ev, int func, uint64_t count, int dsize,
		      uint32_t n_ranks)
{
	ev->coll_type = func;
	ev->count = count;
	ev->n_bytes = count * (uint64_t)dsize;
	if ((func == NCCLBPF_COLL_ALLGATHER || func == NCCLBPF_COLL_REDUCESCATTER) && n_ranks)
		ev->n_bytes *= n_ranks;
}

static void set_cell(struct ncclbpf_prof_event *ev, const char *algo, const char *proto)
{
	ev->algo = name_index(algo_names, NCCLBPF_NUM_ALGOS, algo);
	ev->proto = name_index(proto_names, NCCLBPF_NUM_PROTOS, proto);
}

/* Members whose layout did not change since v1 (proxyOp, proxyStep). */
static void decode_proxy(uint32_t type, const nbpf_prof_descr_v1_t *x, struct ncclbpf_prof_event *ev)
{
	if (type == NBPF_PROF_PROXY_OP) {
		ev->channel = x->proxyOp.channelId;
		ev->peer = x->proxyOp.peer;
		ev->n_steps = x->proxyOp.nSteps > 0 ? (uint32_t)x->proxyOp.nSteps : 0;
		ev->chunk_size = x->proxyOp.chunkSize > 0 ? (uint32_t)x->proxyOp.chunkSize : 0;
		ev->is_send = x->proxyOp.isSend ? 1 : 0;
	} else if (type == NBPF_PROF_PROXY_STEP) {
		ev->step = x->proxyStep.step > 0 ? (uint32_t)x->proxyStep.step : 0;
	}
}

static void decode_v1(uint32_t type, const nbpf_prof_descr_v1_t *x, uint32_t n_ranks,
		      struct ncclbpf_prof_event *ev)
{
	if (type == NBPF_PROF_COLL) {
		ev->seq = x->coll.seqNumber;
		set_count(ev, x->coll.func, x->coll.count, nbpf_prof_dtype_size_enum(x->coll.datatype),
			  n_ranks);
		ev->root = x->coll.root;
		ev->n_channels = x->coll.nMaxChannels;
		ev->n_warps = x->coll.nWarps;
		ev->algo = x->coll.algo < NCCLBPF_NUM_ALGOS ? x->coll.algo : -1;
		ev->proto = x->coll.proto < NCCLBPF_NUM_PROTOS ? x->coll.proto : -1;
	} else if (type == NBPF_PROF_P2P) {
		set_count(ev, x->p2p.func, x->p2p.count, nbpf_prof_dtype_size_enum(x->p2p.datatype),
			  n_ranks);
		ev->peer = x->p2p.peer;
	}
}

/*
 * Coll and P2p of v2 and later, whose members have the same names in every
 * version (v3 dropped trafficBytes, v4 renamed nMaxChannels to nChannels
 * and gave P2p channels: different offsets, one reader per layout).
 */
#define DECODE_COLL_P2P(x, coll_nch)                                                         \
	do {                                                                                 \
		if (type == NBPF_PROF_COLL) {                                                \
			ev->seq = (x)->coll.seqNumber;                                       \
			set_count(ev, func_from_name((x)->coll.func), (x)->coll.count,       \
				  nbpf_prof_dtype_size_name((x)->coll.datatype), n_ranks);   \
			ev->root = (x)->coll.root;                                           \
			ev->n_channels = (x)->coll.coll_nch;                                 \
			ev->n_warps = (x)->coll.nWarps;                                      \
			set_cell(ev, (x)->coll.algo, (x)->coll.proto);                       \
		} else if (type == NBPF_PROF_P2P) {                                          \
			set_count(ev, func_from_name((x)->p2p.func), (x)->p2p.count,         \
				  nbpf_prof_dtype_size_name((x)->p2p.datatype), n_ranks);    \
			ev->peer = (x)->p2p.peer;                                            \
		}                                                                            \
	} while (0)

/* v4's members, and v5..v7's (which start with v4's Coll, P2p and KernelCh fields). */
#define DECODE_V4(x)                                                                         \
	do {                                                                                 \
		DECODE_COLL_P2P(x, nChannels);                                               \
		if (type == NBPF_PROF_P2P) {                                                 \
			ev->n_channels = (x)->p2p.nChannels;                                 \
		} else if (type == NBPF_PROF_KERNEL_CH) {                                    \
			ev->channel = (x)->kernelCh.channelId;                               \
			ev->gpu_start_ns = (x)->kernelCh.pTimer;                             \
		}                                                                            \
	} while (0)

static void decode_v5(uint32_t type, const nbpf_prof_descr_v5_t *x, uint32_t n_ranks,
		      struct ncclbpf_prof_event *ev)
{
	DECODE_V4(x);
	switch (type) {
	case NBPF_PROF_GROUP_API:
		ev->flags |= x->groupApi.graphCaptured ? NCCLBPF_EVF_GRAPH_CAPTURED : 0;
		ev->group_depth = x->groupApi.groupDepth > 0 ? (uint32_t)x->groupApi.groupDepth : 0;
		break;
	case NBPF_PROF_COLL_API:
		set_count(ev, func_from_name(x->collApi.func), x->collApi.count,
			  nbpf_prof_dtype_size_name(x->collApi.datatype), n_ranks);
		ev->root = x->collApi.root;
		ev->flags |= x->collApi.graphCaptured ? NCCLBPF_EVF_GRAPH_CAPTURED : 0;
		break;
	case NBPF_PROF_P2P_API:
		set_count(ev, func_from_name(x->p2pApi.func), x->p2pApi.count,
			  nbpf_prof_dtype_size_name(x->p2pApi.datatype), n_ranks);
		ev->flags |= x->p2pApi.graphCaptured ? NCCLBPF_EVF_GRAPH_CAPTURED : 0;
		break;
	}
}

/* The copy-engine members: v6's, and v7's (which append userTag to CeColl). */
static void decode_ce(uint32_t type, const nbpf_prof_descr_v6_t *x, uint32_t n_ranks,
		      struct ncclbpf_prof_event *ev)
{
	if (type == NBPF_PROF_CE_COLL) {
		ev->seq = x->ceColl.seqNumber;
		set_count(ev, func_from_name(x->ceColl.func), x->ceColl.count,
			  nbpf_prof_dtype_size_name(x->ceColl.datatype), n_ranks);
		ev->root = x->ceColl.root;
		ev->flags |= (x->ceColl.intraBatchSync ? NCCLBPF_EVF_INTRA_SYNC : 0) |
			     (x->ceColl.syncStrategy && !strcmp(x->ceColl.syncStrategy, "MC") ?
			      NCCLBPF_EVF_MULTICAST : 0);
		ev->ce_batch_size = x->ceColl.batchSize;
		ev->ce_num_batches = x->ceColl.numBatches;
		ev->ce_seq = x->ceColl.ceSeqNum;
	} else if (type == NBPF_PROF_CE_SYNC) {
		ev->flags |= x->ceCollSync.isComplete ? NCCLBPF_EVF_COMPLETE : 0;
		ev->n_ranks = x->ceCollSync.nRanks > 0 ? (uint32_t)x->ceCollSync.nRanks : 0;
	} else if (type == NBPF_PROF_CE_BATCH) {
		ev->count = x->ceCollBatch.numOps > 0 ? (uint64_t)x->ceCollBatch.numOps : 0;
		ev->n_bytes = x->ceCollBatch.totalBytes;
		ev->flags |= x->ceCollBatch.useIntraSync ? NCCLBPF_EVF_INTRA_SYNC : 0;
	}
}

static void decode_v7(uint32_t type, const nbpf_prof_descr_v7_t *x, struct ncclbpf_prof_event *ev)
{
	switch (type) {
	case NBPF_PROF_COLL:
		ev->user_tag = x->coll.userTag;
		if (x->coll.isSymColl) {
			/* algo is then the kernel variant's suffix, proto empty: not NCCL's cells */
			ev->flags |= NCCLBPF_EVF_SYMMETRIC;
			ev->algo = ev->proto = -1;
		}
		break;
	case NBPF_PROF_P2P: ev->user_tag = x->p2p.userTag; break;
	case NBPF_PROF_COLL_API: ev->user_tag = x->collApi.userTag; break;
	case NBPF_PROF_P2P_API: ev->user_tag = x->p2pApi.userTag; break;
	case NBPF_PROF_CE_COLL: ev->user_tag = x->ceColl.userTag; break;
	case NBPF_PROF_KERNEL_PHASE:
		ev->channel = x->kernelPhase.channelId;
		ev->phase = x->kernelPhase.phaseId;
		ev->gpu_start_ns = x->kernelPhase.pTimer;
		break;
	}
}

void nbpf_prof_event_decode(int abi, const void *d, uint32_t n_ranks,
			    struct ncclbpf_prof_event *ev)
{
	const nbpf_prof_descr_v5_t *h5 = d;
	const nbpf_prof_descr_v1_t *h1 = d;
	uint32_t type = abi >= 5 ? (uint32_t)h5->type : h1->type;

	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->rank = h1->rank;
	ev->coll_type = ev->algo = ev->proto = ev->peer = ev->root = -1;
	ev->last_state = UINT32_MAX;
	ev->n_ranks = n_ranks;
	ev->abi_version = (uint32_t)abi;
	decode_proxy(type, d, ev);
	switch (abi) {
	case 1:
		decode_v1(type, d, n_ranks, ev);
		break;
	case 2: {
		const nbpf_prof_descr_v2_t *x = d;

		DECODE_COLL_P2P(x, nMaxChannels);
		break;
	}
	case 3: {
		const nbpf_prof_descr_v3_t *x = d;

		DECODE_COLL_P2P(x, nMaxChannels);
		if (type == NBPF_PROF_KERNEL_CH)
			ev->channel = x->kernelCh.channelId;
		break;
	}
	case 4: {
		const nbpf_prof_descr_v4_t *x = d;

		DECODE_V4(x);
		break;
	}
	default:
		decode_v5(type, d, n_ranks, ev);
		if (abi >= 6)
			decode_ce(type, d, n_ranks, ev);
		if (abi >= 7)
			decode_v7(type, d, ev);
		break;
	}
}
