/*
 * prom.h - telemetry aggregated over communicators (and processes), and its
 * Prometheus text exposition (format 0.0.4).  Shared by the plugin and the
 * ncclbpf command; knows nothing about sockets or the host registry.
 *
 * Aggregation key: (communicator id, collective, size class).  Several
 * ranks of one communicator, in one or several local processes, merge into
 * one series, so label sets stay bounded: communicator, collective, size
 * bucket, algorithm, protocol (no pid or rank labels).
 */
#ifndef NCCLBPF_PROM_H
#define NCCLBPF_PROM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hist.h"

#define NBPF_TELE_REFUSE 6  /* NBPF_REFUSE_COUNT (host.h) */

/* Completed collectives of one (communicator, collective, size class). */
struct nbpf_tele_cell {
	uint64_t comm_id;
	uint32_t n_ranks;
	int coll;      /* 0..NBPF_TELE_COLLS-1 */
	int size_cls;  /* 0..NBPF_SIZE_CLASSES-1 */
	uint32_t contributors; /* ranks merged into this cell */
	uint64_t count, bytes, sum_ns, gpu_timed;
	uint64_t hist[NBPF_LAT_BUCKETS];  /* bucket i: [2^i, 2^(i+1)) ns */
	uint64_t mix[NBPF_TELE_ALGOS][NBPF_TELE_PROTOS];
};

/* Tuner decisions of one communicator (summed over its ranks). */
struct nbpf_tele_tuner {
	uint64_t comm_id;
	uint32_t n_ranks;
	uint64_t calls, applied, skipped;
	uint64_t coll_calls[NBPF_TELE_COLLS];
	uint64_t refused[NBPF_TELE_REFUSE];
};

/* Profiler events NCCL started for one communicator (summed over its ranks), by type bit. */
#define NBPF_TELE_EVENTS 16
struct nbpf_tele_events {
	uint64_t comm_id;
	uint64_t n[NBPF_TELE_EVENTS];
};

struct nbpf_tele_prog {
	char name[64], hook[16], tag[20];
	uint64_t runs, ns;
};

/* Lock health of the maps of one name (summed over processes). */
struct nbpf_tele_map {
	char name[64];
	uint64_t lock_timeouts, lock_recoveries, lock_discarded;
};

/*
 * Net plugin traffic with one peer address (summed over processes).  The
 * label set is bounded: each process reports at most 32 peers plus
 * "other", and a merged set keeps at most NBPF_TELE_MAX_PEERS labels,
 * folding the rest into "other".
 */
#define NBPF_TELE_MAX_PEERS 64
struct nbpf_tele_peer {
	char peer[48];
	uint64_t msgs[2], bytes[2], sum_ns[2], errors;   /* [0] send, [1] receive */
	uint64_t hist[2][NBPF_LAT_BUCKETS];
};

/*
 * Policy load counters of one process (never reset while it runs).  Kept
 * per pid, not summed: a sum would drop when a process exits, which
 * Prometheus reads as a counter reset and increase() as new refusals.
 */
struct nbpf_tele_loads {
	uint64_t pid;
	uint64_t attempts, refused_verifier, refused_loader, rollbacks;
	/* Net policy outputs refused, by reason, over the process's net contexts. */
	uint64_t net_refused[NBPF_TELE_REFUSE];
	bool net; /* the process has net contexts: its net series are written */
};

struct nbpf_tele_set {
	struct nbpf_tele_cell *cells;
	size_t n_cells, cap_cells;
	struct nbpf_tele_tuner *tuners;
	size_t n_tuners, cap_tuners;
	struct nbpf_tele_prog *progs;
	size_t n_progs, cap_progs;
	struct nbpf_tele_map *maps;
	size_t n_maps, cap_maps;
	struct nbpf_tele_peer *peers;
	size_t n_peers, cap_peers;
	struct nbpf_tele_loads *loads;
	size_t n_loads, cap_loads;
	struct nbpf_tele_events *events;
	size_t n_events, cap_events;
	uint32_t processes;
};

/* The cell for a key, created zeroed on first use; NULL on allocation failure. */
struct nbpf_tele_cell *nbpf_tele_cell(struct nbpf_tele_set *s, uint64_t comm_id, int coll,
				      int size_cls);
struct nbpf_tele_tuner *nbpf_tele_tuner(struct nbpf_tele_set *s, uint64_t comm_id);
/* Program entries merge by (name, tag, hook). */
struct nbpf_tele_prog *nbpf_tele_prog(struct nbpf_tele_set *s, const char *name,
				      const char *hook, const char *tag);
struct nbpf_tele_map *nbpf_tele_map(struct nbpf_tele_set *s, const char *name);
/* The entry for a peer label ("other" once NBPF_TELE_MAX_PEERS are in use). */
struct nbpf_tele_peer *nbpf_tele_peer(struct nbpf_tele_set *s, const char *peer);
/* The entry for a process, created zeroed on first use; NULL on allocation failure. */
struct nbpf_tele_loads *nbpf_tele_loads(struct nbpf_tele_set *s, uint64_t pid);
/* The profiler events of a communicator, created zeroed on first use; NULL on allocation failure. */
struct nbpf_tele_events *nbpf_tele_events(struct nbpf_tele_set *s, uint64_t comm_id);
/* NCCL's name of event type bit i ("Coll", "CeColl", ...). */
const char *nbpf_tele_event_name(int bit);
void nbpf_tele_free(struct nbpf_tele_set *s);

/* Labels: "AllReduce", "RING", "LL128", "4M" ("other"/"unknown" for the last slots). */
const char *nbpf_tele_coll_name(int coll);
/* Why an output was refused: "cell", "range", "channels", ... */
const char *nbpf_tele_refuse_name(int reason);
const char *nbpf_tele_algo_name(int algo);
const char *nbpf_tele_proto_name(int proto);
const char *nbpf_tele_size_name(int cls);

/* Quantile q (0..1) of a log2 histogram in ns, interpolated inside the bucket; 0 if empty. */
double nbpf_tele_quantile_ns(const uint64_t *hist, size_t n, double q);
/* nccl-tests bus-bandwidth factor: 2(n-1)/n AllReduce, (n-1)/n AllGather/ReduceScatter, 1 else. */
double nbpf_tele_busbw_factor(int coll, uint32_t n_ranks);

/* Histogram buckets exported: le = 2^(i+1) ns for i in [FIRST, LAST], then +Inf. */
#define NBPF_PROM_FIRST_BUCKET 7   /* 256 ns */
#define NBPF_PROM_LAST_BUCKET  37  /* ~275 s */

/*
 * Writes the whole exposition: # HELP / # TYPE for each family, latency
 * histograms in seconds, byte and call counters.  Returns 0 or -EIO.
 */
int nbpf_prom_write(FILE *f, const struct nbpf_tele_set *s);
/* The per-peer net families only (prom_net.c); nbpf_prom_write includes them. */
int nbpf_prom_write_net(FILE *f, const struct nbpf_tele_set *s);
/* The policy load families only (prom_loads.c); nbpf_prom_write includes them. */
int nbpf_prom_write_loads(FILE *f, const struct nbpf_tele_set *s);

#endif
