/*
 * emu.h - a small NCCL emulator: loads a plugin library the way NCCL does
 * and replays NCCL's calls with realistic cost tables.  Used by the
 * emulator tests and by `ncclbpf sim` / `ncclbpf bench`; never linked into
 * the plugin itself.
 */
#ifndef NCCLBPF_EMU_H
#define NCCLBPF_EMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nccl/abi_env.h"
#include "nccl/abi_profiler.h"
#include "nccl/abi_tuner.h"
#include "ncclbpf/status.h"

/* ---- the cost model ----------------------------------------------------- */

struct emu_topo {
	int n_ranks;
	int n_nodes;    /* ranks are spread evenly; 1 GPU per node enables PAT */
	bool nvls;      /* NVLink SHARP enabled (NVSwitch and NCCL_NVLS_ENABLE=1) */
	bool collnet;   /* unused: CollNet is never offered (collnetEnable=0) */
	/*
	 * The NIC is reached through the CPU, without GPUDirect RDMA (NCCL's
	 * Socket transport, a host-memory net plugin such as ours): NCCL then
	 * offers no LL128 across nodes (its LL128 rule wants the inter-node
	 * path no farther than a PCIe switch), as recorded from 2.28.3 and
	 * 2.28.9 over sockets (tests/traces).
	 */
	bool host_net;
};

/* One node of 8 Hopper GPUs on NVSwitch, NVLS off as operators run it. */
#define EMU_TOPO_DEFAULT ((struct emu_topo){ .n_ranks = 8, .n_nodes = 1 })

/*
 * Fills table[algo][proto] (us) as NCCL 2.28 does for Hopper GPUs on topo
 * (emu_model.c): NCCL's tune model (default tuner constants, typical
 * topology graphs: NVSwitch within a node, one 400 Gb/s NIC per GPU across
 * nodes) and its per-call time, latency + bytes / bandwidth.  Cells NCCL
 * would not offer are IGNORE (-1.0): Tree only for AllReduce, NVLS only
 * Simple and only when enabled (NVLS within a node, NVLS Tree across
 * nodes), PAT only for AllGather/ReduceScatter with one GPU per node,
 * CollNet never.  Pure and cheap (a few hundred flops).
 */
void emu_cost_table(const struct emu_topo *topo, int coll, uint64_t n_bytes,
		    float table[NBPF_NCCL_NUM_ALGORITHMS][NBPF_NCCL_NUM_PROTOCOLS]);

/* NCCL's own pick from a table (2.28.x scan); -1/-1 when nothing is selectable. */
/*
 * Channels of the topology graph NCCL would run algo on (the model's
 * presets), before NCCL's own reduction for small messages.
 */
int emu_channels(const struct emu_topo *topo, int algo);
void emu_pick(const float table[NBPF_NCCL_NUM_ALGORITHMS][NBPF_NCCL_NUM_PROTOCOLS],
	      int *algo, int *proto);

/* ---- the chunk size (tuner v6+ getChunkSize) ------------------------------- */

#define EMU_MAX_CHUNK_CALLS 3

/* One getChunkSize NCCL makes while it plans a collective. */
struct emu_chunk_call {
	uint64_t n_bytes;     /* the part's bytes */
	int n_channels;       /* 1: one channel's part */
	int n_parts;          /* channels that run a part this size (the middle ones: several) */
	uint32_t nccl_chunk;  /* the chunk NCCL computed and proposes */
	uint32_t max_chunk;   /* NCCL's buffer limit: a larger answer is lowered to it */
};

/*
 * The getChunkSize calls NCCL 2.30 makes for one collective alone in its
 * plan (emu_chunk.c): its channels (n_channels: the tuner's answer, 0 for
 * NCCL's own count for the size), its bytes cut into the first, last and
 * middle channels' parts, in that order, and per part the chunk NCCL
 * computes.  Returns the number of calls (0..3; 0 when there is no cell).
 */
int emu_chunk_calls(const struct emu_topo *topo, int coll, uint64_t n_bytes, int algo, int proto,
		    int n_channels, struct emu_chunk_call calls[EMU_MAX_CHUNK_CALLS]);
/* NCCL's protocol grain (16, 1920, 512 bytes); 0 for an unknown protocol. */
uint32_t emu_proto_grain(int proto);
/* What NCCL makes of a plugin's answer: lowered to max_chunk, rounded down to the grain. */
uint32_t emu_chunk_final(int proto, uint32_t max_chunk, size_t answer);

/* ---- loading ------------------------------------------------------------ */

enum emu_kind { EMU_TUNER, EMU_PROFILER, EMU_ENV };

struct emu_plugin {
	void *dl;
	enum emu_kind kind;
	int version;            /* ABI version found */
	const void *table;      /* the exported struct */
};

/*
 * Resolves value as NCCL does for kind (dlopen(value), then, for a short
 * name, libnccl-<kind>-<value>.so), with RTLD_NOW | RTLD_LOCAL, then looks
 * up the version symbols newest first starting at max_version (NCCL
 * 2.28.9: tuner 5, profiler 5, env 1; 2.30.7: 6, 6, 2; the newest NCCL
 * sources: tuner 7, profiler 7).
 * negative errno with a message in err.
 */
int emu_open(struct emu_plugin *p, enum emu_kind kind, const char *value, int max_version,
	     char *err, size_t errlen);
void emu_close(struct emu_plugin *p);

/*
 * The plugin's load attempt back (0: the latest) through the status table
 * it exports (ncclbpf/status.h), so a caller learns whether its policy
 * loaded without reading log text.  0, -ENOENT (no such attempt: no policy
 * was set), -ENOSYS (the library has no status table).
 */
int emu_load_status(const struct emu_plugin *p, unsigned back, struct ncclbpf_load_status *out);

/* ---- tuner calls -------------------------------------------------------- */

struct emu_tuner {
	const struct emu_plugin *pl;
	void *ctx;
};

struct emu_decision {
	int algo, proto;      /* what NCCL runs after the plugin's edits */
	int nccl_algo, nccl_proto; /* NCCL's pick without the plugin */
	int n_channels;       /* 0: NCCL's own */
	int nccl_channels;    /* the channels NCCL's graph gives its own pick (emu_channels) */
	/* getChunkSize calls (tuner v6+, for the cell NCCL runs): per part NCCL's chunk and
	 * the chunk NCCL uses after the plugin's answer */
	int n_chunks;
	struct emu_chunk_call chunks[EMU_MAX_CHUNK_CALLS];
	uint32_t chunk[EMU_MAX_CHUNK_CALLS];
};

/* NCCL's logger signature, for init. */
typedef void (*emu_logger_t)(int level, unsigned long flags, const char *file, int line,
			     const char *fmt, ...);

/* Tuner init for any version; returns NCCL's result code. */
int emu_tuner_init(struct emu_tuner *t, const struct emu_plugin *pl, uint64_t comm_id,
		   const struct emu_topo *topo, emu_logger_t logger);
int emu_tuner_fini(struct emu_tuner *t);
/*
 * One getCollInfo as NCCL makes it (cost table built from topo, nChannels
 * preset to 0), then NCCL's selection over the edited table, then (v6+)
 * the getChunkSize calls NCCL makes while it plans that cell.  Returns
 * NCCL's result code (the first failure).
 */
int emu_tuner_call(struct emu_tuner *t, const struct emu_topo *topo, int coll,
		   uint64_t n_bytes, struct emu_decision *d);

/* ---- names ---------------------------------------------------------------- */

const char *emu_algo_name(int algo);
const char *emu_proto_name(int proto);
const char *emu_coll_name(int coll);
int emu_coll_from_name(const char *s);
/* "8", "1K", "4M", "1G" (binary units): 0 or -EINVAL. */
int emu_parse_size(const char *s, uint64_t *out);

#endif
