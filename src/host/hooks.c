/*
 * hooks.c - declares every hook once.  Offsets come from the structs in
 * include/ncclbpf/policy.h via offsetof, and the static asserts pin the
 * layout the BPF side compiles against, so the verifier can never check a
 * program against a layout other than the one it runs with.
 */
#include "hooks.h"

#include <stddef.h>
#include <string.h>

#include "ncclbpf/policy.h"
#include "runtime/helpers.h"

#define R   NCCLBPF_FIELD_READ
#define RW  (NCCLBPF_FIELD_READ | NCCLBPF_FIELD_WRITE)
#define INV NCCLBPF_FIELD_RANK_INVARIANT
#define DEC NCCLBPF_FIELD_DECISION

#define TF(f, acc, fl, d) \
	{ #f, offsetof(struct ncclbpf_tuner_ctx, f), \
	  sizeof(((struct ncclbpf_tuner_ctx *)0)->f), acc, fl, d }
#define CF(f, acc, fl, d) \
	{ #f, offsetof(struct ncclbpf_chunk_ctx, f), \
	  sizeof(((struct ncclbpf_chunk_ctx *)0)->f), acc, fl, d }
#define PF(f, d) \
	{ #f, offsetof(struct ncclbpf_coll_record, f), \
	  sizeof(((struct ncclbpf_coll_record *)0)->f), R, 0, d }

#define EF(f, d) \
	{ #f, offsetof(struct ncclbpf_prof_event, f), \
	  sizeof(((struct ncclbpf_prof_event *)0)->f), R, 0, d }

#define NF(f, acc, d) \
	{ #f, offsetof(struct ncclbpf_net_ctx, f), \
	  sizeof(((struct ncclbpf_net_ctx *)0)->f), acc, 0, d }

#define NFW(i) NF(sock_weight[i], RW, "output at CONNECT: share of data socket " #i " (weights start at 1 per socket)")
#define NFW8(a, b, c, d, e, f, g, h) \
	NFW(a), NFW(b), NFW(c), NFW(d), NFW(e), NFW(f), NFW(g), NFW(h)

_Static_assert(sizeof(struct ncclbpf_net_ctx) == 152, "net ctx layout");
_Static_assert(offsetof(struct ncclbpf_net_ctx, sock_weight) == 88, "net ctx layout");
_Static_assert(offsetof(struct ncclbpf_net_ctx, peer_addr) == 48, "net ctx layout");
_Static_assert(offsetof(struct ncclbpf_net_ctx, n_socks) == 68, "net ctx layout");
_Static_assert(sizeof(struct ncclbpf_tuner_ctx) == 88, "tuner ctx layout");
_Static_assert(offsetof(struct ncclbpf_tuner_ctx, coll_type) == 24, "tuner ctx layout");
_Static_assert(offsetof(struct ncclbpf_tuner_ctx, avail_mask) == 44, "tuner ctx layout");
_Static_assert(offsetof(struct ncclbpf_tuner_ctx, algo) == 72, "tuner ctx layout");
_Static_assert(offsetof(struct ncclbpf_tuner_ctx, n_channels) == 80, "tuner ctx layout");
_Static_assert(sizeof(struct ncclbpf_chunk_ctx) == 64, "chunk ctx layout");
_Static_assert(offsetof(struct ncclbpf_chunk_ctx, coll_type) == 24, "chunk ctx layout");
_Static_assert(offsetof(struct ncclbpf_chunk_ctx, nccl_chunk) == 48, "chunk ctx layout");
_Static_assert(offsetof(struct ncclbpf_chunk_ctx, chunk_size) == 60, "chunk ctx layout");
_Static_assert(sizeof(struct ncclbpf_coll_record) == 64, "coll record layout");
_Static_assert(sizeof(struct ncclbpf_prof_event) == 176, "profiler event layout");
_Static_assert(offsetof(struct ncclbpf_prof_event, type) == 72, "profiler event layout");
_Static_assert(offsetof(struct ncclbpf_prof_event, abi_version) == 172, "profiler event layout");
_Static_assert(offsetof(struct ncclbpf_coll_record, rank) == 32, "coll record layout");
_Static_assert(offsetof(struct ncclbpf_coll_record, gpu_timed) == 56, "coll record layout");

static const struct ncclbpf_ctx_field tuner_fields[] = {
	TF(n_bytes, R, INV, "bytes of the (aggregated) operation"),
	TF(comm_id, R, INV, "communicator hash, same on every rank"),
	TF(call_seq, R, INV, "per-communicator getCollInfo call number, from 0"),
	TF(coll_type, R, INV, "NCCLBPF_COLL_*"),
	TF(n_ranks, R, INV, "ranks in the communicator"),
	TF(n_nodes, R, INV, "nodes in the communicator"),
	TF(num_pipe_ops, R, INV, "pipelined operations in the group"),
	TF(reg_buff, R, INV, "1 if the buffers are registered"),
	TF(avail_mask, R, INV, "NCCLBPF_CELL(algo, proto) for each cell NCCL offers"),
	TF(nccl_algo, R, INV, "NCCL's own algorithm pick, -1 if none"),
	TF(nccl_proto, R, INV, "NCCL's own protocol pick, -1 if none"),
	TF(nvl_domains, R, INV, "NVLink domains (tuner v5+; 0 if unknown)"),
	TF(min_ranks_per_nvl_domain, R, INV, "smallest NVLink domain"),
	TF(max_ranks_per_nvl_domain, R, INV, "largest NVLink domain"),
	TF(abi_version, R, INV, "tuner ABI version NCCL loaded"),
	TF(algo, RW, DEC, "output: NCCLBPF_ALGO_* or NCCLBPF_KEEP"),
	TF(proto, RW, DEC, "output: NCCLBPF_PROTO_* or NCCLBPF_KEEP"),
	TF(n_channels, RW, DEC, "output: 1..64 or NCCLBPF_KEEP"),
	/* Readable so a program may copy the whole context; always 0. */
	TF(reserved, R, INV, "always 0"),
};

/*
 * NCCL plans every rank's collective the same way, so each getChunkSize
 * input is the same on every rank for the same call, and the chunk size is
 * a decision: ranks that disagree on it pipeline different steps and hang.
 */
static const struct ncclbpf_ctx_field chunk_fields[] = {
	CF(n_bytes, R, INV, "bytes of this call: one channel's part of the collective (CollNet: all of it)"),
	CF(comm_id, R, INV, "communicator hash, same on every rank"),
	CF(call_seq, R, INV, "getCollInfo calls the communicator has made so far"),
	CF(coll_type, R, INV, "NCCLBPF_COLL_*"),
	CF(n_ranks, R, INV, "ranks in the communicator"),
	CF(n_nodes, R, INV, "nodes in the communicator"),
	CF(algo, R, INV, "algorithm NCCL runs"),
	CF(proto, R, INV, "protocol NCCL runs"),
	CF(n_channels, R, INV, "channels of this call (1 per part; CollNet: the collective's)"),
	CF(nccl_chunk, R, INV, "chunk size NCCL computed, bytes"),
	CF(grain, R, INV, "protocol grain: NCCL rounds the chunk down to a multiple of it"),
	CF(abi_version, R, INV, "tuner ABI version NCCL loaded"),
	CF(chunk_size, RW, DEC, "output: bytes >= grain, or NCCLBPF_KEEP"),
};

static const struct ncclbpf_ctx_field profiler_fields[] = {
	PF(comm_id, "communicator hash"),
	PF(n_bytes, "bytes of the collective"),
	PF(seq, "per-communicator collective sequence number"),
	PF(latency_ns, "GPU time from KernelCh spans, else host time"),
	PF(rank, "this rank"),
	PF(n_ranks, "ranks in the communicator"),
	PF(coll_type, "NCCLBPF_COLL_*"),
	PF(algo, "algorithm NCCL ran, -1 if unknown"),
	PF(proto, "protocol NCCL ran, -1 if unknown"),
	PF(n_channels, "channels NCCL ran"),
	PF(gpu_timed, "1 if latency_ns came from GPU timestamps"),
	/* Readable so a program may copy the whole record (ring buffer); always 0. */
	PF(reserved, "always 0"),
};

/* Every field is the rank's own observation: rank-local, read-only. */
static const struct ncclbpf_ctx_field prof_event_fields[] = {
	EF(comm_id, "communicator hash"),
	EF(start_ns, "host time at startEvent"),
	EF(dur_ns, "host time from startEvent to stopEvent"),
	EF(gpu_start_ns, "KernelCh, KernelPhase: GPU time at start"),
	EF(gpu_stop_ns, "KernelCh, KernelPhase: GPU time at stop"),
	EF(seq, "Coll, CeColl: NCCL's sequence number"),
	EF(count, "elements (CeBatch: copies)"),
	EF(n_bytes, "bytes (x ranks for AllGather/ReduceScatter)"),
	EF(user_tag, "the application's per-call tag (v7)"),
	EF(type, "NCCLBPF_EV_*"),
	EF(parent_type, "NCCLBPF_EV_* of the parent, 0 if untracked"),
	EF(rank, "rank, -1 if none"),
	EF(coll_type, "NCCLBPF_COLL_* or NCCL's ncclFunc_t"),
	EF(algo, "Coll: algorithm NCCL ran, -1 unknown"),
	EF(proto, "Coll: protocol NCCL ran, -1 unknown"),
	EF(peer, "P2p, ProxyOp: peer rank"),
	EF(root, "Coll, CollApi, CeColl: root"),
	EF(n_channels, "Coll, P2p: channels"),
	EF(n_warps, "Coll: warps"),
	EF(channel, "ProxyOp, KernelCh, KernelPhase: channel"),
	EF(n_steps, "ProxyOp: network steps"),
	EF(chunk_size, "ProxyOp: bytes per step"),
	EF(is_send, "ProxyOp: 1 send, 0 receive"),
	EF(step, "ProxyStep: step number"),
	EF(states, "bit s: state s recorded"),
	EF(last_state, "last state recorded, 0xffffffff if none"),
	EF(flags, "NCCLBPF_EVF_*"),
	EF(group_depth, "GroupApi: group depth"),
	EF(phase, "KernelPhase: 0 initial sync, 1 compute, 2 final sync"),
	EF(ce_batch_size, "CeColl: batch size"),
	EF(ce_num_batches, "CeColl: batches"),
	EF(ce_seq, "CeColl: copy-engine sequence number"),
	EF(n_ranks, "ranks of the communicator"),
	EF(appended, "ProxyCtrl: appended proxy ops"),
	EF(abi_version, "profiler ABI version NCCL loaded"),
};

/* Net outputs are not rank decisions: ranks may differ without hanging NCCL. */
static const struct ncclbpf_ctx_field net_fields[] = {
	NF(comm_id, R, "NCCL's commHash (net v11+; 0 before)"),
	NF(bytes, R, "POST: size or capacity; DONE: bytes moved"),
	NF(latency_ns, R, "DONE: post to completion"),
	NF(peer_key, R, "peer address as one key"),
	NF(event, R, "NCCLBPF_NET_*"),
	NF(dev, R, "device index"),
	NF(peer_family, R, "2 IPv4, 10 IPv6"),
	NF(peer_port, R, "peer port"),
	NF(peer_addr[0], R, "peer address word 0 (IPv4 address)"),
	NF(peer_addr[1], R, "peer address word 1"),
	NF(peer_addr[2], R, "peer address word 2"),
	NF(peer_addr[3], R, "peer address word 3"),
	NF(tag, R, "POST: NCCL's tag, else -1"),
	NF(n_socks, RW, "data sockets; output at CONNECT: 1..64"),
	NF(tos, RW, "output at CONNECT/ACCEPT: IP TOS byte 0..255 or NCCLBPF_KEEP"),
	NF(priority, RW, "output at CONNECT/ACCEPT: SO_PRIORITY 0..6 or NCCLBPF_KEEP"),
	NF(abi_version, R, "net ABI version"),
	NF(reserved, R, "always 0"),
	/* One byte each, so a program may store any of them (or 8 at once). */
	NFW8(0, 1, 2, 3, 4, 5, 6, 7), NFW8(8, 9, 10, 11, 12, 13, 14, 15),
	NFW8(16, 17, 18, 19, 20, 21, 22, 23), NFW8(24, 25, 26, 27, 28, 29, 30, 31),
	NFW8(32, 33, 34, 35, 36, 37, 38, 39), NFW8(40, 41, 42, 43, 44, 45, 46, 47),
	NFW8(48, 49, 50, 51, 52, 53, 54, 55), NFW8(56, 57, 58, 59, 60, 61, 62, 63),
};
_Static_assert(NCCLBPF_NET_MAX_SOCKS == 64, "one sock_weight field per socket above");

static const int32_t common_helpers[] = {
	NBPF_HELPER_MAP_LOOKUP, NBPF_HELPER_MAP_UPDATE, NBPF_HELPER_MAP_DELETE,
	NBPF_HELPER_KTIME_GET_NS, NBPF_HELPER_TRACE_PRINTK, NBPF_HELPER_PRANDOM_U32,
	NBPF_HELPER_SMP_PROC_ID, NBPF_HELPER_RINGBUF_OUTPUT, NBPF_HELPER_RINGBUF_RESERVE,
	NBPF_HELPER_RINGBUF_SUBMIT, NBPF_HELPER_RINGBUF_DISCARD, NBPF_HELPER_RINGBUF_QUERY,
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

const struct ncclbpf_hook_desc ncclbpf_hooks[NCCLBPF_HOOK_COUNT] = {
	[NCCLBPF_HOOK_TUNER] = {
		.name = "tuner",
		.section = "tuner",
		.ctx_type = "struct ncclbpf_tuner_ctx",
		.ctx_size = sizeof(struct ncclbpf_tuner_ctx),
		.fields = tuner_fields,
		.n_fields = ARRAY_LEN(tuner_fields),
		.helpers = common_helpers,
		.n_helpers = ARRAY_LEN(common_helpers),
		.ret_min = NCCLBPF_TUNER_APPLY,
		.ret_max = NCCLBPF_TUNER_SKIP,
		.ret_doc = "0 (NCCLBPF_TUNER_APPLY): apply the outputs; 1 (NCCLBPF_TUNER_SKIP): leave the call to NCCL",
		.doc = "Runs on every getCollInfo; picks algorithm, protocol and channel count.",
		/* typed only: `void *` would hide a program written for the other hook */
		.ctx_check = NCCLBPF_CTX_CHECK_TYPE,
	},
	[NCCLBPF_HOOK_CHUNK] = {
		.name = "chunk",
		.section = "tuner/chunk",
		.ctx_type = "struct ncclbpf_chunk_ctx",
		.ctx_size = sizeof(struct ncclbpf_chunk_ctx),
		.fields = chunk_fields,
		.n_fields = ARRAY_LEN(chunk_fields),
		.helpers = common_helpers,
		.n_helpers = ARRAY_LEN(common_helpers),
		.ret_min = NCCLBPF_CHUNK_APPLY,
		.ret_max = NCCLBPF_CHUNK_SKIP,
		.ret_doc = "0 (NCCLBPF_CHUNK_APPLY): apply chunk_size; 1 (NCCLBPF_CHUNK_SKIP): leave the call to NCCL",
		.doc = "Runs on every getChunkSize (tuner v6+), after NCCL chose the cell: sets the pipeline chunk size.",
		.ctx_check = NCCLBPF_CTX_CHECK_TYPE,
	},
	[NCCLBPF_HOOK_PROFILER] = {
		.name = "profiler",
		.section = "profiler",
		.ctx_type = "struct ncclbpf_coll_record",
		.ctx_size = sizeof(struct ncclbpf_coll_record),
		.fields = profiler_fields,
		.n_fields = ARRAY_LEN(profiler_fields),
		.helpers = common_helpers,
		.n_helpers = ARRAY_LEN(common_helpers),
		.ret_min = 0,
		.ret_max = 0,
		.ret_doc = "0",
		.doc = "Runs once per completed collective with its measured latency.",
		.ctx_check = NCCLBPF_CTX_CHECK_TYPE,
	},
	[NCCLBPF_HOOK_PROF_EVENT] = {
		.name = "profiler_event",
		.section = "profiler/event",
		.ctx_type = "struct ncclbpf_prof_event",
		.ctx_size = sizeof(struct ncclbpf_prof_event),
		.fields = prof_event_fields,
		.n_fields = ARRAY_LEN(prof_event_fields),
		.helpers = common_helpers,
		.n_helpers = ARRAY_LEN(common_helpers),
		.ret_min = 0,
		.ret_max = 0,
		.ret_doc = "0",
		.doc = "Runs once per profiler event NCCL stops, of every type, with its descriptor.",
		.ctx_check = NCCLBPF_CTX_CHECK_TYPE,
	},
	[NCCLBPF_HOOK_NET] = {
		.name = "net",
		.section = "net",
		.ctx_type = "struct ncclbpf_net_ctx",
		.ctx_size = sizeof(struct ncclbpf_net_ctx),
		.fields = net_fields,
		.n_fields = ARRAY_LEN(net_fields),
		.helpers = common_helpers,
		.n_helpers = ARRAY_LEN(common_helpers),
		.ret_min = NCCLBPF_NET_APPLY,
		.ret_max = NCCLBPF_NET_SKIP,
		.ret_doc = "0 (NCCLBPF_NET_APPLY): apply n_socks/tos/priority/sock_weight; 1 (NCCLBPF_NET_SKIP): leave the connection as configured",
		.doc = "Runs on net connect/accept and every message post and completion; may set sockets per connection, TOS, priority and each socket's share of the traffic.",
	},
};

const struct ncclbpf_hook_desc *ncclbpf_hook_find_section(const char *sec)
{
	if (!sec)
		return NULL;
	for (size_t i = 0; i < NCCLBPF_HOOK_COUNT; i++) {
		const char *s = ncclbpf_hooks[i].section;
		size_t len = strlen(s);

		if (len && s[len - 1] == '/' ? !strncmp(sec, s, len) : !strcmp(sec, s))
			return &ncclbpf_hooks[i];
	}
	return NULL;
}

const struct ncclbpf_hook_desc *ncclbpf_hook_find(const char *name)
{
	for (size_t i = 0; name && i < NCCLBPF_HOOK_COUNT; i++)
		if (!strcmp(ncclbpf_hooks[i].name, name))
			return &ncclbpf_hooks[i];
	return NULL;
}
