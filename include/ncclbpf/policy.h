/*
 * ncclbpf/policy.h - the BPF-side API for ncclbpf policies.
 *
 * Policies are libbpf-style BPF C compiled by stock clang:
 *
 *     #include <ncclbpf/policy.h>
 *     SEC("tuner") int pick(struct ncclbpf_tuner_ctx *ctx) { ...; return 0; }
 *
 *     clang -O2 -g -target bpf -I include -c policy.bpf.c -o policy.bpf.o
 *
 * The layouts below are the hooks' contexts.  Their sizes, offsets and
 * per-field rights are declared once, in src/host/hooks.c, which is what the
 * verifier checks programs against; a static assert there pins every offset
 * used here.  This header is also compiled by the host (C11) so both sides
 * share one definition.
 */
#ifndef NCCLBPF_POLICY_H
#define NCCLBPF_POLICY_H

#if defined(__bpf__)
/* Identical typedefs may repeat in C11, so this coexists with <linux/types.h>. */
typedef unsigned char __u8;
typedef signed char __s8;
typedef unsigned short __u16;
typedef short __s16;
typedef unsigned int __u32;
typedef int __s32;
typedef unsigned long long __u64;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u64 __be64;
typedef __u32 __wsum;
/*
 * <linux/bpf.h> cannot be included for the BPF target without the host's
 * multiarch include path, so the few names policies need from it are
 * defined here (kernel values).  When it was included first, use its own.
 */
#if !defined(_UAPI__LINUX_BPF_H__) && !defined(__LINUX_BPF_H__)
#define _UAPI__LINUX_BPF_H__
#define __LINUX_BPF_H__
enum bpf_map_type {
	BPF_MAP_TYPE_UNSPEC = 0,
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_HASH = 5,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_RINGBUF = 27,
};
enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
	BPF_F_LOCK = 4,
};
enum {
	BPF_F_NO_PREALLOC = (1U << 0),
	BPF_F_RDONLY_PROG = (1U << 7),
};
enum {
	BPF_RB_NO_WAKEUP = (1ULL << 0),
	BPF_RB_FORCE_WAKEUP = (1ULL << 1),
};
enum {
	BPF_RB_AVAIL_DATA = 0,
	BPF_RB_RING_SIZE = 1,
	BPF_RB_CONS_POS = 2,
	BPF_RB_PROD_POS = 3,
};
#endif
#include <bpf/bpf_helpers.h>
#else
#include <stdint.h>
typedef uint8_t __u8;
typedef int8_t __s8;
typedef uint16_t __u16;
typedef int16_t __s16;
typedef uint32_t __u32;
typedef int32_t __s32;
typedef uint64_t __u64;
typedef int64_t __s64;
#endif

/* ---- NCCL's numbering ------------------------------------------------- */

/* Algorithms (NCCL_ALGO_*). */
#define NCCLBPF_ALGO_TREE           0
#define NCCLBPF_ALGO_RING           1
#define NCCLBPF_ALGO_COLLNET_DIRECT 2
#define NCCLBPF_ALGO_COLLNET_CHAIN  3
#define NCCLBPF_ALGO_NVLS           4
#define NCCLBPF_ALGO_NVLS_TREE      5
#define NCCLBPF_ALGO_PAT            6
#define NCCLBPF_NUM_ALGOS           7

/* Protocols (NCCL_PROTO_*). */
#define NCCLBPF_PROTO_LL     0
#define NCCLBPF_PROTO_LL128  1
#define NCCLBPF_PROTO_SIMPLE 2
#define NCCLBPF_NUM_PROTOS   3

/* Collectives (ncclFunc_t); tuners only ever see 0..4. */
#define NCCLBPF_COLL_BROADCAST     0
#define NCCLBPF_COLL_REDUCE        1
#define NCCLBPF_COLL_ALLGATHER     2
#define NCCLBPF_COLL_REDUCESCATTER 3
#define NCCLBPF_COLL_ALLREDUCE     4
#define NCCLBPF_NUM_COLLS          5

/* Output value meaning "keep NCCL's choice". */
#define NCCLBPF_KEEP (-1)

/* Bit of a cell in ncclbpf_tuner_ctx.avail_mask. */
#define NCCLBPF_CELL(algo, proto) (1u << ((algo) * NCCLBPF_NUM_PROTOS + (proto)))

/* Tuner program return values. */
#define NCCLBPF_TUNER_APPLY 0 /* apply algo/proto/n_channels (each may be KEEP) */
#define NCCLBPF_TUNER_SKIP  1 /* leave this call entirely to NCCL */

/* ---- SEC("tuner") ------------------------------------------------------ */

/*
 * One call per NCCL getCollInfo.  Inputs are read-only and identical on
 * every rank of the communicator for the same call; outputs start as
 * NCCLBPF_KEEP.  The adapter applies an output only if it names a cell NCCL
 * offers (avail_mask) and a channel count within safe bounds; anything else
 * is refused, counted, and NCCL's choice stands.
 */
struct ncclbpf_tuner_ctx {
	/* inputs */
	__u64 n_bytes;        /* bytes of the (aggregated) operation */
	__u64 comm_id;        /* communicator hash, same on every rank */
	__u64 call_seq;       /* per-communicator getCollInfo call number, from 0 */
	__u32 coll_type;      /* NCCLBPF_COLL_* */
	__u32 n_ranks;
	__u32 n_nodes;
	__u32 num_pipe_ops;
	__u32 reg_buff;       /* 1 if the buffers are registered */
	__u32 avail_mask;     /* NCCLBPF_CELL(a, p) set for every cell NCCL offers */
	__s32 nccl_algo;      /* NCCL's own pick (lowest cost), -1 if none */
	__s32 nccl_proto;
	__u32 nvl_domains;    /* NVLink domains (tuner v5+; 0 if unknown) */
	__u32 min_ranks_per_nvl_domain;
	__u32 max_ranks_per_nvl_domain;
	__u32 abi_version;    /* tuner ABI version NCCL loaded (2..7) */
	/* outputs */
	__s32 algo;           /* NCCLBPF_ALGO_* or NCCLBPF_KEEP */
	__s32 proto;          /* NCCLBPF_PROTO_* or NCCLBPF_KEEP */
	__s32 n_channels;     /* 1..64, or NCCLBPF_KEEP */
	__u32 reserved;
};

/* ---- SEC("tuner/chunk") ------------------------------------------------ */

/* Chunk program return values (as the tuner's). */
#define NCCLBPF_CHUNK_APPLY 0 /* apply chunk_size (NCCLBPF_KEEP: NCCL's) */
#define NCCLBPF_CHUNK_SKIP  1 /* leave this call to NCCL */

/*
 * One call per NCCL getChunkSize (tuner v6+), made once NCCL has chosen a
 * collective's algorithm, protocol and channels: for Ring, Tree, NVLS and
 * PAT once per part of the collective one channel runs (n_channels 1,
 * n_bytes that part's bytes: the collective is split over its channels),
 * for CollNet once per collective with its channel count.  Inputs are
 * read-only and identical on every rank for the same call; chunk_size
 * starts as NCCLBPF_KEEP.  The adapter applies a chunk_size of at least
 * grain bytes (NCCL rounds it down to a multiple of grain and lowers it to
 * what its buffers hold); anything else is refused, counted, and NCCL's
 * chunk stands.
 */
struct ncclbpf_chunk_ctx {
	/* inputs */
	__u64 n_bytes;        /* bytes of this call: one channel's part, or the collective (CollNet) */
	__u64 comm_id;        /* communicator hash, same on every rank */
	__u64 call_seq;       /* getCollInfo calls the communicator has made so far */
	__u32 coll_type;      /* NCCLBPF_COLL_* */
	__u32 n_ranks;
	__u32 n_nodes;
	__s32 algo;           /* NCCLBPF_ALGO_* NCCL runs */
	__s32 proto;          /* NCCLBPF_PROTO_* NCCL runs */
	__u32 n_channels;     /* channels of this call */
	__u32 nccl_chunk;     /* the chunk size NCCL computed (bytes) */
	__u32 grain;          /* the protocol's grain: LL 16, LL128 1920, Simple 512 bytes */
	__u32 abi_version;    /* tuner ABI version NCCL loaded (6..7) */
	/* output */
	__s32 chunk_size;     /* bytes >= grain, or NCCLBPF_KEEP */
};

/* ---- SEC("profiler") --------------------------------------------------- */

/* One call per completed collective, on the rank that ran it. */
struct ncclbpf_coll_record {
	__u64 comm_id;
	__u64 n_bytes;
	__u64 seq;            /* per-communicator collective sequence number */
	__u64 latency_ns;     /* GPU time from KernelCh spans, else host time */
	__u32 rank;
	__u32 n_ranks;
	__u32 coll_type;      /* NCCLBPF_COLL_* */
	__s32 algo;           /* NCCLBPF_ALGO_*, -1 if unknown */
	__s32 proto;          /* NCCLBPF_PROTO_*, -1 if unknown */
	__u32 n_channels;
	__u32 gpu_timed;      /* 1 if latency_ns came from GPU timestamps */
	__u32 reserved;
};

/* ---- SEC("profiler/event") --------------------------------------------- */

/* Event types: NCCL's ncclProfile* bits (ncclbpf_prof_event.type holds one). */
#define NCCLBPF_EV_GROUP         0x1
#define NCCLBPF_EV_COLL          0x2
#define NCCLBPF_EV_P2P           0x4
#define NCCLBPF_EV_PROXY_OP      0x8
#define NCCLBPF_EV_PROXY_STEP    0x10
#define NCCLBPF_EV_PROXY_CTRL    0x20
#define NCCLBPF_EV_KERNEL_CH     0x40    /* profiler v3+ */
#define NCCLBPF_EV_NET_PLUGIN    0x80    /* v3+ */
#define NCCLBPF_EV_GROUP_API     0x100   /* v5+ */
#define NCCLBPF_EV_COLL_API      0x200
#define NCCLBPF_EV_P2P_API       0x400
#define NCCLBPF_EV_KERNEL_LAUNCH 0x800
#define NCCLBPF_EV_CE_COLL       0x1000  /* v6+: copy-engine collective */
#define NCCLBPF_EV_CE_SYNC       0x2000
#define NCCLBPF_EV_CE_BATCH      0x4000
#define NCCLBPF_EV_KERNEL_PHASE  0x8000  /* v7: a kernel's barrier phase */
#define NCCLBPF_EV_TYPES         16

/* ncclbpf_prof_event.flags */
#define NCCLBPF_EVF_GRAPH_CAPTURED 0x1 /* GroupApi, CollApi, P2pApi */
#define NCCLBPF_EVF_SYMMETRIC      0x2 /* Coll: a symmetric kernel ran (v7; algo/proto -1) */
#define NCCLBPF_EVF_INTRA_SYNC     0x4 /* CeColl intraBatchSync, CeBatch useIntraSync */
#define NCCLBPF_EVF_MULTICAST      0x8 /* CeColl: syncStrategy "MC" (else "UC") */
#define NCCLBPF_EVF_COMPLETE       0x10 /* CeSync: isComplete */
#define NCCLBPF_EVF_GPU_TIMED      0x20 /* gpu_start_ns and gpu_stop_ns are both set */

/*
 * One call per profiler event NCCL stops, of every type the activation mask
 * lets NCCL raise (docs/policy-guide.md), on the thread that stops it: the
 * event's descriptor as it started (pointers and strings left out: names
 * become numbers), the states NCCL recorded on it, and host times.
 * Read-only, and rank-local: each rank sees its own events.  Fields that do
 * not apply to a type are 0 (-1 for the signed ones).
 */
struct ncclbpf_prof_event {
	__u64 comm_id;
	__u64 start_ns;       /* host CLOCK_MONOTONIC at startEvent */
	__u64 dur_ns;         /* host time from startEvent to stopEvent */
	__u64 gpu_start_ns;   /* KernelCh, KernelPhase: GPU globaltimer at their start */
	__u64 gpu_stop_ns;    /* ... at their stop (recordEventState), else 0 */
	__u64 seq;            /* Coll, CeColl: NCCL's sequence number */
	__u64 count;          /* Coll, P2p, CollApi, P2pApi, CeColl: elements; CeBatch: copies */
	__u64 n_bytes;        /* the same in bytes (x ranks for AllGather/ReduceScatter, as the
			       * tuner's n_bytes); CeBatch: its bytes; ProxyStep, ProxyOp (v1..v3):
			       * the bytes of its last recorded state */
	__u64 user_tag;       /* v7: the application's per-call tag (0: none) */
	__u32 type;           /* NCCLBPF_EV_* */
	__u32 parent_type;    /* NCCLBPF_EV_* of its parent, when the adapter tracks it; else 0 */
	__s32 rank;           /* rank of the event (-1 when NCCL gives none) */
	__s32 coll_type;      /* NCCLBPF_COLL_*, or NCCL's ncclFunc_t number (Send 6, Recv 7, ...) */
	__s32 algo;           /* Coll: NCCLBPF_ALGO_* NCCL ran, -1 unknown */
	__s32 proto;          /* Coll: NCCLBPF_PROTO_* NCCL ran, -1 unknown */
	__s32 peer;           /* P2p, ProxyOp */
	__s32 root;           /* Coll, CollApi, CeColl */
	__u32 n_channels;     /* Coll, P2p */
	__u32 n_warps;        /* Coll */
	__u32 channel;        /* ProxyOp, KernelCh, KernelPhase */
	__u32 n_steps;        /* ProxyOp */
	__u32 chunk_size;     /* ProxyOp: bytes per network step */
	__u32 is_send;        /* ProxyOp */
	__u32 step;           /* ProxyStep */
	__u32 states;         /* bit s: NCCL recorded state s (its state numbers, 0..31) */
	__u32 last_state;     /* the last state recorded, 0xffffffff if none */
	__u32 flags;          /* NCCLBPF_EVF_* */
	__u32 group_depth;    /* GroupApi */
	__u32 phase;          /* KernelPhase: 0 initial sync, 1 compute, 2 final sync */
	__u32 ce_batch_size;  /* CeColl */
	__u32 ce_num_batches; /* CeColl */
	__u32 ce_seq;         /* CeColl: its copy-engine sequence number */
	__u32 n_ranks;        /* the communicator's (CeSync: as NCCL reports it) */
	__u32 appended;       /* ProxyCtrl: appendedProxyOps of its last state */
	__u32 abi_version;    /* profiler ABI version NCCL loaded */
};

/* ---- SEC("net") -------------------------------------------------------- */

/* What happened (ctx->event).  Outputs are read back only for CONNECT and ACCEPT. */
#define NCCLBPF_NET_CONNECT   0 /* a send connection is being opened: n_socks, tos, priority, sock_weight apply */
#define NCCLBPF_NET_ACCEPT    1 /* a receive connection has arrived: tos, priority apply */
#define NCCLBPF_NET_SEND_POST 2 /* isend posted: bytes = size */
#define NCCLBPF_NET_RECV_POST 3 /* irecv posted: bytes = buffer capacity */
#define NCCLBPF_NET_SEND_DONE 4 /* isend complete: bytes moved, latency_ns post -> done */
#define NCCLBPF_NET_RECV_DONE 5 /* irecv complete: bytes received, latency_ns post -> done */

#define NCCLBPF_NET_MAX_SOCKS 64 /* data sockets per connection, and sock_weight's length */

#define NCCLBPF_NET_APPLY 0     /* apply the outputs (each may be NCCLBPF_KEEP) */
#define NCCLBPF_NET_SKIP  1     /* leave the connection as configured */

/*
 * One call per connection event and per message post and completion, on
 * NCCL's proxy threads (the rank's own view: rank-local data).  Outputs:
 * n_socks (1..64, CONNECT only; starts at the configured count), tos (the
 * IP TOS / IPv6 traffic-class byte, 0..255: DSCP << 2) and priority
 * (SO_PRIORITY 0..6); both start as NCCLBPF_KEEP.  sock_weight (CONNECT
 * only) is data socket i's relative share of the connection's bytes; it
 * starts at 1 for each configured socket (equal shares) and is applied when
 * a program changes it: at least one non-zero weight, none beyond the
 * connection's n_socks, else equal shares and a counted refusal.  Store
 * with constant indices (the verifier refuses a variable context offset).
 * At the other events it shows the connection's weights (equal: 1 each).
 */
struct ncclbpf_net_ctx {
	__u64 comm_id;        /* NCCL's commHash (net v11+; 0 before) */
	__u64 bytes;          /* see the events */
	__u64 latency_ns;     /* *_DONE: post to completion, else 0 */
	__u64 peer_key;       /* the peer's address as one key: IPv4 address, or IPv6 folded */
	__u32 event;          /* NCCLBPF_NET_* */
	__u32 dev;            /* the plugin's device index */
	__u32 peer_family;    /* 2 (IPv4) or 10 (IPv6) */
	__u32 peer_port;      /* host byte order */
	__u32 peer_addr[4];   /* network byte order; IPv4 in [0] */
	__s32 tag;            /* *_POST: NCCL's tag (the peer rank), else -1 */
	__u32 n_socks;        /* data sockets of the connection; output at CONNECT */
	__s32 tos;            /* output: 0..255 or NCCLBPF_KEEP */
	__s32 priority;       /* output: 0..6 or NCCLBPF_KEEP */
	__u32 abi_version;    /* net ABI version NCCL loaded */
	__u32 reserved;
	__u8 sock_weight[NCCLBPF_NET_MAX_SOCKS]; /* output at CONNECT: share of socket i */
};

/*
 * Size buckets shared by policies and the tools that read their maps, so
 * map keys agree: bucket b holds messages of [2^b, 2^(b+1)) bytes (0 and 1
 * byte in bucket 0), the last bucket everything from 2^31 bytes up.
 */
#define NCCLBPF_SIZE_BUCKETS 32

/*
 * Exporting a map as Prometheus metrics (`ncclbpf export`, modelled on
 * ebpf_exporter): one string per map in the object's ".ncclbpf.export"
 * section, `key=value` fields separated by ';':
 *
 *   NCCLBPF_EXPORT(coll_calls, "type=counter;name=ncclbpf_policy_calls_total;"
 *                  "help=Collectives seen;key=collective:coll,size:u32");
 *
 * type: counter or gauge (value: one __u32 or __u64) or histogram (value:
 * __u64 sum, then __u64 bucket counts, bucket i = [2^i, 2^(i+1)) ns,
 * exported in seconds).  key: the key struct's fields in order, each
 * label:kind with kind u8, u16, u32, u64 (decimal), hex (a __u64 as
 * 0x%016x, e.g. a communicator id), coll, algo or proto (NCCL's names).
 * docs/policy-guide.md, "Exporting maps", has the rules.
 */
#define NCCLBPF_EXPORT(map, spec)                                                   \
	static const char ___ncclbpf_export_##map[]                                 \
		__attribute__((section(".ncclbpf.export"), used, aligned(1))) =     \
			"map=" #map ";" spec

/*
 * A map the tuner reads is a decision map: a write from outside (`ncclbpf
 * map update`) reaches every rank at one agreed call, through a new copy
 * of the map (docs/operations.md).  NCCLBPF_MAP_IMMEDIATE(map) opts a map
 * out: writes land at once, as in any other map.  For a map whose values
 * carry their own activation call (a plan word that says from which call
 * it applies), or one the tuner reads for something that decides nothing.
 */
#define NCCLBPF_MAP_IMMEDIATE(map)                                                  \
	static const char ___ncclbpf_immediate_##map[]                              \
		__attribute__((section(".ncclbpf.immediate"), used, aligned(1))) = #map

#if defined(__bpf__)
#define NCCLBPF_INLINE static __always_inline
#else
#define NCCLBPF_INLINE static inline
#endif

/* floor(log2(v)), 0 for v <= 1; branch ladder (BPF has no clz). */
NCCLBPF_INLINE __u32 ncclbpf_log2(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8)  { v >>= 8;  r += 8; }
	if (v >> 4)  { v >>= 4;  r += 4; }
	if (v >> 2)  { v >>= 2;  r += 2; }
	if (v >> 1)  { r += 1; }
	return r;
}

NCCLBPF_INLINE __u32 ncclbpf_size_bucket(__u64 n_bytes)
{
	__u32 b = ncclbpf_log2(n_bytes);

	return b < NCCLBPF_SIZE_BUCKETS ? b : NCCLBPF_SIZE_BUCKETS - 1;
}

#if defined(__bpf__)
static __always_inline int ncclbpf_cell_offered(const struct ncclbpf_tuner_ctx *ctx,
						int algo, int proto)
{
	return (ctx->avail_mask & NCCLBPF_CELL(algo, proto)) != 0;
}
#endif

#endif
