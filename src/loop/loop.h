/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * loop.h - closed loop 1: profiler telemetry of every rank -> one plan ->
 * every rank's tuner, applied from an agreed call.
 *
 * Works with policies/adaptive_channels.bpf.c: each rank's profiler fills
 * `latency_ewma` (per channel count: samples and their sum), the tuner
 * reads `channel_plan` only.  The aggregator tries candidate channel
 * counts one after the other on every rank at once, measures each for a
 * window of samples, takes the worst rank's mean per count (a collective
 * is as slow as its slowest rank), and settles on the best count per key.
 * Every plan write carries the call from which it applies, chosen ahead
 * of every rank, so all ranks switch on the same collective.
 */
#ifndef NCCLBPF_LOOP_H
#define NCCLBPF_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ncclbpf_map;

#define NBPF_LOOP_MAX_CAND 16
#define NBPF_LOOP_MAX_CH   64
#define NBPF_LOOP_MAX_KEYS 8   /* keys (collective x size bucket) handled at once */
#define NBPF_LOOP_N_KEYS   (5 * 32)

/* The plan word of adaptive_channels: count from call `from` on, prev before. */
static inline uint64_t nbpf_loop_plan_word(unsigned ch, unsigned prev, uint64_t from)
{
	return (uint64_t)(ch & 0xff) | (uint64_t)(prev & 0xff) << 8 | from << 16;
}

/* What the policy's profiler keeps per key (must match the policy). */
struct nbpf_loop_tele {
	uint64_t samples, ewma_ns;
	uint64_t samples_by_ch[NBPF_LOOP_MAX_CH];
	uint64_t sum_by_ch_ns[NBPF_LOOP_MAX_CH];
};

struct nbpf_loop_opts {
	int cand[NBPF_LOOP_MAX_CAND]; /* channel counts to try, in order */
	int n_cand;
	uint64_t window;     /* samples per rank and key for each candidate */
	uint64_t margin;     /* calls ahead of the highest rank; 0: from the rate */
	double margin_s;     /* with margin 0: this many seconds of calls (+1000) */
	int ranks;           /* wait for this many local processes (0: those present) */
	const int *pids;     /* only these local processes (NULL: every one with the maps) */
	int n_pids;
	int timeout_ms;      /* per step: waiting for processes, samples or other nodes */
	/* Several nodes agree through a shared directory or etcd (xchg.h): both NULL for one node. */
	const char *share_dir;
	const char *etcd;    /* endpoints */
	const char *job;     /* the exchange's scope (NULL: "loop"): one per job */
	const char *node;    /* this node's name, unique in the job */
	int nodes;           /* aggregators taking part, this one included */
	bool take_over;      /* take the plan map's lease from a loop that died (kill -9) */
	FILE *log;           /* progress lines, or NULL */
};

struct nbpf_loop_key {
	uint32_t key;                         /* coll * 32 + size bucket */
	double mean_ns[NBPF_LOOP_MAX_CAND];   /* worst rank's mean per candidate; 0: no data */
	int best;                             /* chosen channel count */
};

struct nbpf_loop_result {
	int n_procs;                          /* local processes driven */
	int n_keys;
	struct nbpf_loop_key keys[NBPF_LOOP_MAX_KEYS];
	uint64_t step_call[NBPF_LOOP_MAX_CAND + 1]; /* activation call of each write */
	int n_steps;
	uint64_t final_call;                  /* the call from which the final plan applies */
	uint64_t late;                        /* writes that found a rank already past their call */
};

/*
 * Runs one exploration: every candidate in turn, then the best per key,
 * on every local process that has both maps (and, with share_dir, on
 * every node's through their aggregators).  0, or a negative errno with
 * a message through ncclbpf_errmsg().  res->late > 0 means some rank may
 * have switched on a different call: margin too small.
 */
int nbpf_loop_run(const struct nbpf_loop_opts *o, struct nbpf_loop_result *res);

/* ---- the local ranks, shared by every loop (loop_ranks.c) ---------------- */

#define NBPF_LOOP_MAX_MAPS 4

/* A map a loop reads or writes in every rank's policy, with its shape. */
struct nbpf_loop_map_spec {
	const char *name;
	uint32_t key_size, value_size;
	bool write;
};

struct nbpf_loop_rank {
	int pid;
	struct ncclbpf_map *map[NBPF_LOOP_MAX_MAPS]; /* in the order of the spec */
};

struct nbpf_loop_ranks {
	const struct nbpf_loop_opts *o;
	const struct nbpf_loop_map_spec *spec;
	int n_maps;
	struct nbpf_loop_rank *r;
	int n;
	uint64_t last_calls;
	double last_t, rate;   /* calls per second of the fastest rank */
	char why[256];         /* why the last process passed over was */
	/*
	 * The loop owns the maps it writes on every rank (a lease in each
	 * process, renewed every step): a second loop is refused, naming this
	 * one.  Its plan writes are agreed changes (agree.h), with the other
	 * nodes through x when there are any.
	 */
	char owner[128];
	uint64_t started;      /* this instance: its change ids differ from any earlier one's */
	struct nbpf_xchg *x;
	int changes;
};

double nbpf_loop_now_s(void);

/*
 * Finds o->ranks local processes (o->pids, or every process with a
 * control socket) whose policy has every map of spec with its shape,
 * waiting up to o->timeout_ms.  Processes without them are passed over
 * (they run another policy); if too few are found the error names the
 * maps and why the last process was passed over (no such map, another
 * key or value size).  Then takes the lease of every map the loop writes
 * on every one (-EBUSY naming the loop that holds one), and opens the
 * exchange with the other nodes.  On failure nothing is left open.
 */
int nbpf_loop_ranks_find(struct nbpf_loop_ranks *s, const struct nbpf_loop_opts *o,
			 const struct nbpf_loop_map_spec *spec, int n_maps);
void nbpf_loop_ranks_close(struct nbpf_loop_ranks *s);
/*
 * Highest and lowest tuner call count over the ranks that have a tuner
 * (0 and 0 when none has); updates the rate.
 */
int nbpf_loop_ranks_calls(struct nbpf_loop_ranks *s, uint64_t *max, uint64_t *min);
/*
 * Writes, into map m of every rank, the plan word of each key (want[k]),
 * as one agreed change (agree.h): every rank of this node and, through the
 * exchange, of every node switches to it at one call, the highest any
 * rank reported when staging plus o->margin, or o->margin_s seconds of
 * calls at the fastest rate measured plus 1000; or, when a rank or node
 * could not stage it, no rank does (an error).  *late: a rank was already
 * past the call when it committed, so its ranks may disagree.
 */
int nbpf_loop_ranks_activate(struct nbpf_loop_ranks *s, int m, const uint32_t *keys,
			     const int *want, int n_keys, uint64_t *at, bool *late);
/*
 * The plan value every rank runs now for each key (read from the map the
 * rank's current image holds); -EPROTO when ranks run different plans.
 */
int nbpf_loop_ranks_plan(struct nbpf_loop_ranks *s, int m, const uint32_t *keys, int n_keys,
			 int *cur);

/* ---- shared-file exchange (loop_share.c) ---------------------------------- */

/* One aggregator's contribution to a step. */
struct nbpf_loop_share {
	uint64_t calls;   /* highest call of its ranks */
	double rate;      /* calls per second, fastest rank */
	int n_keys;
	uint32_t key[NBPF_LOOP_MAX_KEYS];
	double mean_ns[NBPF_LOOP_MAX_KEYS]; /* worst rank's mean for the step's measured candidate */
};

/*
 * Writes this node's record for step into the exchange, waits until every
 * node's record of the step is there, and merges them into out: calls and
 * rate are the maxima, keys the union, means the worst.  Every node reads
 * the same records, so every node computes the same plan.  0, -ETIMEDOUT,
 * or a negative errno.
 */
struct nbpf_xchg;
int nbpf_loop_share_step(struct nbpf_xchg *x, int step, const struct nbpf_loop_share *mine,
			 struct nbpf_loop_share *out);


/* ---- closed loop 2: kernel signals -> net policy and tuner (kfeed.c) ----- */

#define NBPF_KFEED_MAX_PEERS 64    /* peers written to the policy's map (the worst first) */
#define NBPF_KFEED_MAX_TRACK 1024  /* peers whose counters are remembered between steps */

/* One TCP socket of the job as the kernel's probes count it (cumulative). */
struct nbpf_kfeed_sock {
	uint16_t family;     /* AF_INET or AF_INET6; others are ignored */
	uint8_t addr[16];    /* the peer's address, network order; IPv4 in the first 4 bytes */
	uint64_t retrans;    /* retransmits since the probes were attached */
	uint64_t bytes_sent; /* bytes the job sent on it since then */
	uint32_t srtt_us;    /* the kernel's smoothed RTT, last seen; 0: unknown */
};

/*
 * What the loop keeps per peer in the policy's peer map (`kernel_peer`),
 * keyed by the peer as SEC("net") programs see it (ctx->peer_key: the
 * IPv4 address, or the IPv6 address folded to 64 bits with the top bit
 * set; nbpf_kfeed_peer_key).  Must match the policy's value type.
 */
struct nbpf_kfeed_peer_val {
	uint64_t retrans;        /* over the job's sockets to the peer */
	uint32_t retrans_per_s;  /* during the last interval */
	uint32_t srtt_us;        /* largest smoothed RTT over its sockets */
	uint32_t lossy;          /* 1 while the loop holds the peer lossy */
	uint32_t retrans_per_gib; /* retransmits per GiB sent during the last interval */
};

/* Keys of the tuner's plan map (`kernel_plan`): plan words as loop 1's. */
#define NBPF_KFEED_PLAN_CHANNELS 0  /* count while degraded; 0: NCCL's own */
#define NBPF_KFEED_PLAN_PROTO    1  /* NCCLBPF_PROTO_* + 1 while degraded; 0: NCCL's own */

struct nbpf_kfeed_opts {
	const char *peer_map;   /* NULL: "kernel_peer" */
	const char *plan_map;   /* NULL: "kernel_plan"; "": no tuner side */
	double retrans_per_s;   /* a peer is lossy at or above this rate; 0: not used */
	double retrans_per_mib; /* ... or this many per MiB sent (at least 1 MiB); 0: not used */
	uint32_t srtt_us;       /* ... or at or above this smoothed RTT; 0: not used */
	double hold_s;          /* and stays lossy until this long below both */
	int lossy_channels;     /* tuner plan while any peer of the job is lossy: 1..64, 0: keep */
	int lossy_proto;        /* NCCLBPF_PROTO_*, or -1: keep */
};

struct nbpf_kfeed_peer {
	uint64_t key;
	uint16_t family;
	uint8_t addr[16];
	uint64_t retrans, bytes_sent;
	double rate;             /* retransmits per second, last interval */
	double per_mib;          /* retransmits per MiB sent, last interval (0: under 1 MiB sent) */
	uint32_t srtt_us;
	bool lossy;
	double last_bad;         /* when it last crossed a bound (nbpf_loop_now_s clock) */
};

/* What one step saw and did. */
struct nbpf_kfeed_report {
	int n_peers;                          /* peers written to every rank's map */
	const struct nbpf_kfeed_peer *peers;  /* those, the worst first; valid until the next step */
	int n_lossy;
	int not_fed;                          /* peers beyond NBPF_KFEED_MAX_PEERS (or untracked) */
	bool degraded;                        /* the job's plan is the lossy one (from `at` on) */
	bool switched;                        /* this step wrote a new plan */
	bool deferred;                        /* a switch waits: a rank is not past the last one */
	uint64_t at;                          /* its activation call */
	bool late;                            /* a rank was already past it */
};

struct nbpf_kfeed;

/* ctx->peer_key of a SEC("net") program for that address (0 for other families). */
uint64_t nbpf_kfeed_peer_key(uint16_t family, const uint8_t addr[16]);

/*
 * Finds the local ranks whose policy has the peer map (and the plan map
 * unless ko->plan_map is ""), with the value shapes above; lo gives the
 * ranks, pids, timeout, margins, log and the shared directory (several
 * nodes agree on the tuner plan through it, one exchange per step).
 * Both are copied; the strings and pids they point to must outlive the
 * feed.  0, or a negative errno with the reason in ncclbpf_errmsg().
 */
int nbpf_kfeed_open(const struct nbpf_loop_opts *lo, const struct nbpf_kfeed_opts *ko,
		    struct nbpf_kfeed **out);
/* The processes the feed writes to (the kernel source's targets). */
int nbpf_kfeed_pids(const struct nbpf_kfeed *f, int *pids, int max);
/*
 * One interval: the kernel's per-socket records now (cumulative), at time
 * now (nbpf_loop_now_s clock).  Computes each peer's retransmit rate since
 * the last step, writes the worst NBPF_KFEED_MAX_PEERS peers into every
 * rank's peer map (and deletes peers it wrote before that are gone), and,
 * when whether any peer of the job is lossy changed, writes the tuner plan
 * with an agreed activation call.  A plan word holds one switch, so a new
 * one waits (rep->deferred) until every rank is past the last one: written
 * earlier, it would change the value that ranks not yet at the last call
 * use, and ranks reading the two words at the same call would disagree.
 */
int nbpf_kfeed_step(struct nbpf_kfeed *f, const struct nbpf_kfeed_sock *socks, int n, double now,
		    struct nbpf_kfeed_report *rep);
void nbpf_kfeed_close(struct nbpf_kfeed *f);

#endif
