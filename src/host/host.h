/*
 * host.h - per-process state of the NCCL plugin: the loaded policy "image",
 * the registry of live communicators and their counters and telemetry.
 *
 * Who calls what (the host calls none of them: it is the layer below):
 *   - the NCCL adapters (src/nccl: tuner.c, profiler.c, env.c) acquire and
 *     release the host around their contexts (through the plugin entry,
 *     plugin.c, which also starts the control plane), register
 *     communicators and run programs;
 *   - the control plane (src/control, its own thread) loads and publishes
 *     new images and reads counters through the iteration functions below.
 *
 * Concurrency model:
 *   - An image is immutable once loaded.  The one published image is held
 *     in one atomic pointer; the hot path does one acquire load inside
 *     nbpf_epoch_enter/exit, so a replaced image is freed only after a
 *     grace period (nbpf_host_publish does that).
 *   - Every counter lives in a struct nbpf_comm owned by one plugin context;
 *     the hot path writes it with relaxed atomics (plain load + store when
 *     only the owning thread writes it) and never takes a lock.  Readers on
 *     other threads get slightly stale but never torn values.
 *   - The registry (list of comms) and publishing are serialised by one
 *     internal mutex that the hot path never takes.
 */
#ifndef NCCLBPF_HOST_H
#define NCCLBPF_HOST_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hooks.h"
#include "ncclbpf/policy.h"
#include "ncclbpf/runtime.h"
#include "ncclbpf/status.h"
#include "telemetry/hist.h"

/* ---- limits ---------------------------------------------------------- */

#define NBPF_HOST_MAX_OBJS   16  /* objects in one NCCLBPF_POLICY */
#define NBPF_HOST_MAX_FILE   (256u << 20) /* bytes of one object file, as the loader allows */
#define NBPF_HOST_MAX_PROGS  32  /* programs in one image */
#define NBPF_HOST_MAX_ENV    64  /* env overrides in one image */
#define NBPF_HOST_ERRLEN     512
#define NBPF_HOST_MAX_DMAPS  16  /* decision maps of one image (maps its tuner reads) */
#define NBPF_HOST_CHANGE_ID  64  /* bytes of a change id, NUL included */
#define NBPF_HOST_OWNER      128 /* bytes of a change's or lease's owner text */
#define NBPF_PROF_EVENT_TYPES NCCLBPF_EV_TYPES /* NCCL's ncclProfile* type bits */

/* ---- logging ----------------------------------------------------------- */

/*
 * The logger the plugin gets from NCCL: ncclDebugLogger_t's shape
 * (level, flags, file, line, fmt, ...), declared here so the host needs no
 * NCCL header.
 */
typedef void (*nbpf_host_logger_t)(int level, unsigned long flags, const char *file, int line,
				   const char *fmt, ...);

/* NCCL log levels and subsystem flags we use. */
#define NBPF_NCCL_LOG_WARN   2
#define NBPF_NCCL_LOG_INFO   3
#define NBPF_NCCL_LOG_TRACE  5
#define NBPF_NCCL_INIT       0x1ul
#define NBPF_NCCL_TUNING     0x40ul
#define NBPF_NCCL_ENV        0x80ul
#define NBPF_NCCL_PROFILE    0x4000ul

/*
 * Logs through the NCCL logger the host was given (the first non-NULL
 * logger passed to any init), else stderr, filtered by NCCLBPF_LOG
 * (default: warn and info).  level is NBPF_NCCL_LOG_*.
 */
__attribute__((format(printf, 3, 4)))
void nbpf_host_log(int level, unsigned long flags, const char *fmt, ...);

/* ---- images -------------------------------------------------------------- */

/* One program of an image, attached to the hook its section names. */
struct nbpf_host_prog {
	struct ncclbpf_program *prog;
	enum ncclbpf_hook_id hook;
	ncclbpf_func_t func;         /* JIT entry; NULL when interpreted */
	const char *obj_name;        /* owned by the object */
	const char *obj_tag;         /* 16 hex digits of the object's content, owned by it */
	char tag[17];                /* the program's own: ncclbpf_program__tag */
	const char *name;            /* program name, owned by the object */
	uint32_t slot;               /* index in image->progs and in comm prog stats */
	uint32_t insns;
	bool consistency_warning;    /* the verifier flagged a rank-local decision */
};

struct nbpf_env_override {
	char *name;
	char *value;
};

/*
 * A loaded, verified, compiled set of objects.  Immutable after
 * nbpf_host_load_image returns, except for the fields the publisher owns
 * (at_call, prev, which are written before the image is published).
 */
struct nbpf_image {
	uint64_t generation;          /* unique, increasing per process; 0 = never published */
	/*
	 * Written by the publisher only (atomics because the hot path reads
	 * them while a publish prunes a chain no live comm needs any more).
	 */
	_Atomic uint64_t at_call;     /* comms switch to it at this call number (0: at once) */
	struct nbpf_image *_Atomic prev; /* image comms below at_call keep using (may be NULL) */
	/*
	 * The communicators that follow at_call: sorted comm ids, fixed before
	 * publishing.  Every other communicator (one created after the
	 * change, whose id no process of the job held when it was agreed)
	 * starts on this image at its call 0.  Set by the publish: the ids
	 * the change was agreed for plus this process's tuner comms then.
	 */
	uint64_t *known;
	uint32_t n_known;
	uint64_t orig_at;             /* at_call as published (collect zeroes at_call) */
	/*
	 * Non-NULL for a record that rollback published: it borrows base's
	 * objects, maps and env strings (never a borrowed record itself), so
	 * re-publishing never re-links a record already in a chain.  base is
	 * freed only once no owned record borrows from it.
	 */
	struct nbpf_image *base;
	char change_id[NBPF_HOST_CHANGE_ID]; /* the agreed change that published it ("": none) */
	struct nbpf_image *owned_next;   /* host's list of every image it owns */
	uint64_t load_ns;             /* CLOCK_MONOTONIC time spent loading+verifying+JIT */
	uint64_t loaded_at;           /* CLOCK_REALTIME ns when loaded */
	char *spec;                   /* the ':'-separated path list it was loaded from */

	struct ncclbpf_object *objs[NBPF_HOST_MAX_OBJS];
	/*
	 * Each object's file as it was read (owned; a borrowed record uses
	 * its base's): a map write at an agreed call rebuilds the image from
	 * these bytes, never from a file that may have changed since.
	 */
	void *obj_buf[NBPF_HOST_MAX_OBJS];
	size_t obj_len[NBPF_HOST_MAX_OBJS];
	uint32_t n_objs;
	/*
	 * Decision maps: the maps the tuner program reads, less those the
	 * policy declares NCCLBPF_MAP_IMMEDIATE.  A write from outside must
	 * reach every rank at one agreed call (nbpf_host_load_derived).
	 */
	const struct ncclbpf_map *dmaps[NBPF_HOST_MAX_DMAPS];
	uint32_t n_dmaps;
	/* Map writes on the image it replaces: rollback's target stays what it was. */
	bool derived;
	struct nbpf_host_prog progs[NBPF_HOST_MAX_PROGS];
	uint32_t n_progs;

	/* Hook dispatch: the tuner program (first one found; others refused). */
	const struct nbpf_host_prog *tuner;
	/* The SEC("tuner/chunk") program, likewise the first one found. */
	const struct nbpf_host_prog *chunk;
	/* Every profiler program, in object order. */
	const struct nbpf_host_prog *profilers[NBPF_HOST_MAX_PROGS];
	uint32_t n_profilers;
	/* Every SEC("profiler/event") program, in object order. */
	const struct nbpf_host_prog *prof_events[NBPF_HOST_MAX_PROGS];
	uint32_t n_prof_events;

	/* Env overrides from `const char ncclbpf_env[]` in the objects (first wins). */
	struct nbpf_env_override env[NBPF_HOST_MAX_ENV];
	uint32_t n_env;

	/* Problems met while loading that did not stop it (refused programs...). */
	char warnings[NBPF_HOST_ERRLEN];
};

/*
 * Loads every object of paths (':'-separated; empty entries skipped),
 * attaches each program to the hook its section names, and prepares
 * (verifies + compiles) it with the engine and verifier options from the
 * settings.  Maps of the same name, type, key/value size and max_entries
 * are one map across the objects and are also shared with the currently
 * published image (so a reload keeps their contents); global-data maps
 * (.data/.rodata/.bss) are never shared.  Does not publish.
 *
 * All-or-nothing: a missing or malformed object or a rejected program
 * fails the whole load with a negative errno and errbuf (errlen bytes)
 * saying which object/program and why (the verifier's message with the
 * source line).  On success *out owns everything; free it with
 * nbpf_host_image_free if it is never published.  Programs of unknown
 * sections and extra tuner programs are skipped with a note in
 * image->warnings (not an error).  May be called from any thread.
 * Every call, loaded or refused, is recorded for nbpf_host_load_status.
 */
int nbpf_host_load_image(const char *paths, struct nbpf_image **out, char *errbuf,
			 size_t errlen);

/*
 * Load attempt back (0: the latest; NCCLBPF_STATUS_HISTORY are kept) as
 * ncclbpf/status.h describes it: what was loaded, or what was refused and
 * why.  Copies at most size bytes into out.  0, -ENOENT when there is no
 * such attempt, -EINVAL for a NULL out.  Takes the host lock (waits for a
 * load in progress); not from the hot path.
 */
int nbpf_host_load_status(unsigned back, struct ncclbpf_load_status *out, size_t size);

/*
 * Load attempts since the process started, never reset (reloads,
 * rollbacks and the last finalize keep them): what the exporter publishes
 * as ncclbpf_policy_* counters.  refused_verifier: a program the verifier
 * rejected (-EACCES); refused_loader: everything else that refused a load
 * (missing or malformed object, map conflict, memory).  rollbacks:
 * nbpf_host_rollback calls that re-published the previous image.
 */
struct nbpf_load_counts {
	uint64_t attempts, loaded, refused_verifier, refused_loader, rollbacks;
};
void nbpf_host_load_counts(struct nbpf_load_counts *out);

/* Frees an image that was never published (or was unpublished). NULL ok. */
void nbpf_host_image_free(struct nbpf_image *img);

/*
 * Publishes img (ownership passes to the host), replacing the current one.
 * at_call 0: every communicator uses it from its next call.  at_call N:
 * each communicator switches when its own call number reaches N (already
 * past N: next call), so all ranks of a communicator switch on the same
 * collective; until then it keeps using the image that was current.
 * img may be NULL to unload everything (with the same at_call rules).
 * Waits for a grace period before freeing images no communicator can reach
 * any more; the replaced image is kept for nbpf_host_rollback.  Returns 0,
 * or -EINVAL for an image that is already published.  Must not be called
 * from the hot path (program or adapter callback).
 */
int nbpf_host_publish(struct nbpf_image *img, uint64_t at_call);

/*
 * nbpf_host_publish with the communicators that follow at_call named:
 * known (n_known ids, any order) are the comm ids every process of the
 * job held when the change was agreed; this process's tuner comms now are
 * added.  A communicator whose id is in neither switches to img at once
 * (it was created after the change everywhere, so every rank starts it on
 * img).  *late (may be NULL): tuner comms already at or past at_call.
 */
struct nbpf_host_publish_opts {
	size_t sz;
	uint64_t at_call;
	const uint64_t *known;
	uint32_t n_known;
	const char *change_id;   /* recorded on img (NULL: none) */
};
int nbpf_host_publish_opts(struct nbpf_image *img, const struct nbpf_host_publish_opts *o,
			   uint64_t *late);

/*
 * Re-publishes the image that the last publish replaced (with at_call as
 * above), as it was: its programs and the maps it held (a decision map
 * written since has a new copy that it does not see).  -ENOENT if there is
 * none.  The current one becomes the rollback target in turn; publishing
 * map writes (a derived image) does not change the rollback target.
 */
int nbpf_host_rollback(uint64_t at_call);

/* ---- agreed changes: stage everywhere, then commit or abort -------------- */

/*
 * A change (a new image, a rollback, or map writes) is first staged:
 * loaded, verified and compiled, kept unpublished until `hold`
 * (CLOCK_REALTIME ns, set by whoever coordinates the change, so it means
 * the same on every node).  Then the coordinator commits it everywhere at
 * one agreed call, or aborts it everywhere.  One change is staged at a
 * time per process: a second one is refused with -EBUSY naming the first.
 * While a change is staged, a tuner communicator created in this process
 * waits (at most until hold) for the decision, so that a communicator
 * whose ranks are created on both sides of a commit still starts on one
 * image everywhere.  A staged change not decided by hold is aborted.
 */
enum nbpf_change_state {
	NBPF_CHANGE_STAGED = 1,
	NBPF_CHANGE_COMMITTED,
	NBPF_CHANGE_ABORTED,
	NBPF_CHANGE_EXPIRED,   /* hold passed before a decision: aborted here */
};

#define NBPF_CHANGE_KNOWN_MAX 256 /* known ids a committed change's record keeps */

struct nbpf_change_info {
	char id[NBPF_HOST_CHANGE_ID];
	char owner[NBPF_HOST_OWNER];
	char what[256];        /* "reload SPEC", "rollback", "map NAME: N writes" */
	enum nbpf_change_state state;
	uint64_t staged_at, hold, decided_at; /* CLOCK_REALTIME ns */
	uint64_t at_call;      /* committed: the agreed call */
	uint64_t gen;          /* committed: the image generation it published */
	uint64_t late;         /* committed: tuner comms already past at_call */
	/*
	 * committed: the communicators that follow at_call (as published),
	 * so a coordinator that died mid-commit can be completed with the
	 * same set (`ncclbpf change commit ID`); n_known > NBPF_CHANGE_KNOWN_MAX:
	 * too many to keep, give them again.
	 */
	uint64_t known[NBPF_CHANGE_KNOWN_MAX];
	uint32_t n_known;
};

const char *nbpf_change_state_name(enum nbpf_change_state s);

/*
 * Stages img (ownership passes to the host) as change id.  -EBUSY when
 * another change is staged, -EEXIST when id was staged before (a change id
 * is used once), -ETIMEDOUT when hold has passed, -EINVAL when it is more
 * than 120 s ahead.  On error img is freed and errbuf says why.
 */
int nbpf_host_stage(const char *id, const char *owner, const char *what,
		    struct nbpf_image *img, uint64_t hold, char *errbuf, size_t errlen);
/*
 * Stages a rollback (the image the last publish replaced); -ENOENT without
 * one.  *target: a digest of that image's objects as read, the same in
 * every process that rolls back to the same policy (the coordinator
 * refuses a rollback whose processes would go back to different ones).
 */
int nbpf_host_stage_rollback(const char *id, const char *owner, uint64_t hold, uint64_t *target,
			     char *errbuf, size_t errlen);
/*
 * Publishes staged change id with o (change_id is taken from id).  A
 * commit is never refused for time: once every process staged it, the
 * decision is the coordinator's.  -ENOENT for an id never staged here,
 * -ESTALE when it was aborted or expired (info says when), -EALREADY when
 * it is committed already (a retry: info has the result).  info may be NULL.
 */
int nbpf_host_commit(const char *id, const struct nbpf_host_publish_opts *o,
		     struct nbpf_change_info *info);
/*
 * Drops staged change id: 0 (also for an id never staged here: it is
 * spent, so a stage of it that comes later is refused), -ESTALE (aborted
 * or expired already) or -EALREADY (committed: info says how).
 */
int nbpf_host_abort(const char *id, struct nbpf_change_info *info);
/*
 * The staged change (if any) then the latest decided ones, newest first:
 * fills at most max records, returns how many.  Expires a staged change
 * whose hold passed.
 */
int nbpf_host_changes(struct nbpf_change_info *out, int max);
/*
 * Tuner comms of this process (comm id and call number), for a stage
 * reply: what the coordinator merges into the agreed call and the known
 * set.  Fills at most max, returns the total.
 */
struct nbpf_comm_calls {
	uint64_t comm_id, calls;
};
int nbpf_host_comm_calls(struct nbpf_comm_calls *out, int max);

/*
 * A lease on a name (a map a loop writes): one owner at a time until
 * `until` (CLOCK_REALTIME ns); the owner renews by asking again, until 0
 * releases.  -EBUSY with holder (owner and expiry) when another owner holds
 * it; take = true takes it over anyway.  Map writes staged by another
 * owner while it is held are refused.
 */
int nbpf_host_lease(const char *name, const char *owner, uint64_t until, bool take,
		    char *holder, size_t n);

/* One write of a staged map change. */
struct nbpf_host_map_op {
	const char *map;
	const void *key;      /* key_len bytes: the map's key size */
	const void *value;    /* value_len bytes: its value size (x NCCLBPF_NR_SLOTS
			       * for a per-thread map); NULL: delete the key */
	size_t key_len, value_len;
};

/*
 * The published image rebuilt from the same object bytes, with a fresh
 * copy of every map the ops name (its entries copied, then the ops
 * applied) and every other map shared: published at an agreed call, the
 * writes take effect on every rank at that call, while calls before it
 * keep reading the old copy.  Refused (-EBUSY) when a lease on one of the
 * maps is held by someone other than owner.  Nothing is published.
 */
int nbpf_host_load_derived(const struct nbpf_host_map_op *ops, uint32_t n_ops,
			   const char *owner, struct nbpf_image **out, char *errbuf,
			   size_t errlen);

/* Whether map is a decision map of img (see nbpf_image.dmaps). */
bool nbpf_host_map_decides(const struct nbpf_image *img, const struct ncclbpf_map *map);

/* CLOCK_REALTIME in ns: the clock agreed changes' deadlines are written in. */
uint64_t nbpf_realtime_ns(void);

/*
 * The currently published image (acquire load), or NULL.  Only valid
 * inside nbpf_epoch_enter/exit, or while the caller holds the host lock
 * (nbpf_host_lock).  Adapters use nbpf_host_image_for() instead.
 */
struct nbpf_image *nbpf_host_current(void);

/*
 * Host lock: serialises publish, registry changes and iteration.  The
 * control plane may hold it to read the current image consistently
 * (e.g. to list programs and maps).  Never taken on the hot path.
 */
void nbpf_host_lock(void);
void nbpf_host_unlock(void);

/* ---- lifetime -------------------------------------------------------------- */

/*
 * Every plugin context holds one reference.  The first acquire reads the
 * settings, warns about unknown NCCLBPF_* variables (names in
 * extra_settings, a NULL-terminated list of what the layers above read,
 * are known too; NULL for none) and loads NCCLBPF_POLICY (fail-open: a
 * problem logs one WARN and leaves no image); the last release frees every
 * image, map and communicator, so dlclose leaves nothing behind.  Whoever
 * runs threads that call into the host (the control plane) stops them
 * before the last release.  logger may be NULL.  Never fails.
 */
void nbpf_host_acquire(nbpf_host_logger_t logger, const char *const *extra_settings);
void nbpf_host_release(void);

/* ---- settings ------------------------------------------------------------ */

struct nbpf_settings {
	char policy[4096];          /* NCCLBPF_POLICY */
	enum ncclbpf_engine engine; /* NCCLBPF_ENGINE=jit|interp (default: jit where available) */
	bool strict_consistency;    /* NCCLBPF_STRICT_CONSISTENCY=1 */
	int log_level;              /* NCCLBPF_LOG=none|warn|info|debug (2..5) */
	bool stats;                 /* NCCLBPF_STATS=1: time every program run */
	char map_dir[1024];         /* NCCLBPF_MAP_DIR ("" = runtime default) */
	int profiler_mask;          /* NCCLBPF_PROFILER_MASK override, -1 = automatic */
};

/* Settings read at the first acquire (valid while the host is acquired). */
const struct nbpf_settings *nbpf_host_settings(void);

/*
 * One parser for every NCCLBPF_* value, so each layer's settings accept the
 * same spellings.  A boolean is 0/1, no/yes, off/on or false/true (any
 * case); an integer is decimal within [min, max].  Unset or empty gives
 * def; anything else logs one WARN naming the setting and gives def.
 */
bool nbpf_host_setting_bool(const char *name, bool def);
long long nbpf_host_setting_int(const char *name, long long min, long long max, long long def);

/* ---- communicators --------------------------------------------------------- */

enum nbpf_comm_kind {
	NBPF_COMM_TUNER = 1,
	NBPF_COMM_PROFILER = 2,
	NBPF_COMM_NET = 3,       /* a net plugin context (src/nccl/net_core.c) */
};

/* Why an output was not applied (counted per communicator). */
enum nbpf_refuse {
	NBPF_REFUSE_CELL = 0,      /* algo/proto names a cell NCCL did not offer */
	NBPF_REFUSE_RANGE,         /* algo/proto out of range */
	NBPF_REFUSE_CHANNELS,      /* n_channels outside 1..64 */
	NBPF_REFUSE_COLLNET_CHANNELS, /* n_channels with a CollNet algorithm (not applied) */
	NBPF_REFUSE_RETURN,        /* program returned neither APPLY nor SKIP */
	NBPF_REFUSE_ERROR,         /* program failed to run (interpreter error) */
	NBPF_REFUSE_COUNT,
};

struct nbpf_prog_stats {
	_Atomic uint64_t runs;
	_Atomic uint64_t ns;     /* only with NCCLBPF_STATS=1, in nbpf_stats_stamp units */
};

/*
 * One plugin context (a tuner or profiler context of one rank of one
 * communicator).  Created by the adapters at init, removed at finalize.
 * The counters are written only by the thread(s) driving that context.
 */
struct nbpf_comm {
	/* identity (immutable after registration) */
	uint64_t id;             /* registry id, unique per process */
	uint64_t comm_id;        /* NCCL's commId/commHash; 0 when the ABI gives none */
	int rank;                /* -1 when the ABI gives none (tuner) */
	uint32_t n_ranks, n_nodes;
	enum nbpf_comm_kind kind;
	int abi_version;
	uint64_t created_at;     /* CLOCK_REALTIME ns */

	/* tuner counters */
	_Atomic uint64_t calls;                       /* getCollInfo calls = next call_seq */
	_Atomic uint64_t coll_calls[NCCLBPF_NUM_COLLS + 1]; /* last: other types */
	_Atomic uint64_t applied;                     /* calls where an output changed the table */
	_Atomic uint64_t skipped;                     /* program returned SKIP */
	_Atomic uint64_t refused[NBPF_REFUSE_COUNT];
	_Atomic uint64_t image_gen;                   /* generation of the image last used */
	_Atomic uint64_t chunk_calls;                 /* getChunkSize calls (tuner v6+) */
	_Atomic uint64_t chunk_applied;               /* ... where the program's chunk size was applied */

	/* per-program stats for the image whose generation is stats_gen */
	_Atomic uint64_t stats_gen;
	struct nbpf_prog_stats prog[NBPF_HOST_MAX_PROGS];

	/* profiler telemetry, [coll type (last: other)][size class] */
	_Atomic uint64_t colls_seen;                  /* completed collectives */
	_Atomic uint64_t events_dropped;              /* pool full: event not tracked */
	_Atomic uint64_t colls_abandoned;             /* Coll never stopped: dropped by the sweep */
	_Atomic uint64_t colls_unrun;                 /* left at finalize past the program budget */
	/*
	 * Profiler events NCCL started, by type (bit i of NCCL's type in [.][i]):
	 * [0] the types launching threads raise, [1] those of the proxy and
	 * profiler threads (ProxyOp/Step/Ctrl, KernelCh, NetPlugin,
	 * KernelPhase), each on its own cache lines.  Read: the sum of both.
	 */
	struct { _Alignas(64) _Atomic uint64_t n[NBPF_PROF_EVENT_TYPES]; } prof_events[2];
	struct nbpf_telemetry tele[NCCLBPF_NUM_COLLS + 1][NBPF_SIZE_CLASSES];

	struct nbpf_comm *next;  /* registry list, under the host lock */
};

/*
 * Allocates and registers a comm (zeroed counters).  NULL on allocation
 * failure (the adapter then runs without counters).  Free with
 * nbpf_host_comm_remove.
 */
struct nbpf_comm *nbpf_host_comm_add(enum nbpf_comm_kind kind, int abi_version,
				     uint64_t comm_id, int rank, uint32_t n_ranks,
				     uint32_t n_nodes);
/*
 * Unregisters c (NULL ok) and frees it after an epoch grace period, so a
 * callback of another thread still counting into it is safe.  Not inside
 * a section unless the caller can afford a leak when the deferral cannot
 * be queued (out of memory).
 */
void nbpf_host_comm_remove(struct nbpf_comm *c);

/* Whether comm_id follows img's at_call (is in its known set). */
static inline bool nbpf_host_image_follows(const struct nbpf_image *img, uint64_t comm_id)
{
	uint32_t lo = 0, hi = img->n_known;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (img->known[mid] == comm_id)
			return true;
		if (img->known[mid] < comm_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/*
 * The image communicator comm_id must use for its call number call: the
 * published one, or along its ->prev chain the newest that applies to it
 * (at_call <= call, or comm_id not among the ones it was agreed for).
 * Call inside nbpf_epoch_enter/exit; the pointer is valid until exit.
 * *until (when not NULL) receives the lowest at_call that was skipped:
 * the answer is the same for every call below it while the chain does not
 * change.  A pure function of the chain, the id and the call: never of
 * which communicators this process happens to hold.
 */
static inline const struct nbpf_image *nbpf_host_image_walk(struct nbpf_image *cur,
							    uint64_t call, uint64_t comm_id,
							    uint64_t *until)
{
	uint64_t lim = UINT64_MAX;

	while (cur) {
		uint64_t at = atomic_load_explicit(&cur->at_call, memory_order_relaxed);

		if (call >= at || !nbpf_host_image_follows(cur, comm_id))
			break;
		if (at < lim)
			lim = at;
		cur = atomic_load_explicit(&cur->prev, memory_order_acquire);
	}
	if (until)
		*until = lim;
	return cur;
}

static inline const struct nbpf_image *nbpf_host_image_for(struct nbpf_image *cur,
							   uint64_t call, uint64_t comm_id)
{
	return nbpf_host_image_walk(cur, call, comm_id, NULL);
}

/* Published image pointer (what nbpf_host_current returns), for inlining. */
extern _Atomic(struct nbpf_image *) nbpf_host_published;

/*
 * Chain version: bumped (release) after every change of the published
 * pointer or of any at_call/prev in its chain, and before any image the
 * change made unreachable is retired.  On its own cache line: written only
 * by publish/collect, read by every decision.
 */
struct nbpf_host_chain_ver {
	_Alignas(64) _Atomic uint64_t v;
	char pad[64 - sizeof(uint64_t)];
};
extern struct nbpf_host_chain_ver nbpf_host_chain;

/*
 * Per-communicator resolution cache, owned by one serialised caller (a
 * tuner context).  Valid while the chain version equals ver and the call
 * number is below until; then img is exactly what nbpf_host_image_for
 * would return, so every rank still switches on the same call.
 */
struct nbpf_image_cache {
	uint64_t ver;                 /* chain version it was filled at (0: empty) */
	uint64_t comm_id;             /* whose cache: set once by the owner (the walk needs it) */
	uint64_t until;               /* first call number it does not cover */
	const struct nbpf_image *img; /* resolved image (NULL: none) */
	/* img's tuner program, its JIT entry and img's generation, so a hit
	 * needs no load through img or the program */
	const struct nbpf_host_prog *tuner;
	ncclbpf_func_t func;
	uint64_t gen;
	/* img's chunk program and its JIT entry (getChunkSize) */
	const struct nbpf_host_prog *chunk;
	ncclbpf_func_t chunk_func;
};

/* Refills cache for call; out of line (once per publish and per activation). */
const struct nbpf_image *nbpf_host_image_fill(struct nbpf_image_cache *cache, uint64_t call);

/*
 * The image for call through cache: in the common case one load of the
 * chain version and two compares.  Call inside an epoch section; the
 * pointer is valid until it is left.  Memory safety: a cached image can
 * only be retired after the version changes, and the reclaimer's grace
 * period orders that change before this section's loads (or waits for
 * this section), so an unchanged version means the image is alive.
 */
static inline bool nbpf_host_cache_hit(const struct nbpf_image_cache *cache, uint64_t call)
{
	return __builtin_expect(atomic_load_explicit(&nbpf_host_chain.v, memory_order_acquire) ==
				cache->ver && call < cache->until, 1);
}

static inline const struct nbpf_image *nbpf_host_image_cached(struct nbpf_image_cache *cache,
							      uint64_t call)
{
	if (nbpf_host_cache_hit(cache, call))
		return cache->img;
	return nbpf_host_image_fill(cache, call);
}

/*
 * Calls fn for every registered comm with the host lock held (so fn must
 * not publish or add/remove comms; keep it short: it delays other comms'
 * init and finalize, never their hot path).  Counters read inside fn may be
 * slightly stale.  Stops early and returns fn's value when it is nonzero.
 */
int nbpf_host_comm_foreach(int (*fn)(void *user, const struct nbpf_comm *c), void *user);

/*
 * Drops ->prev chains that no live tuner communicator can reach any more
 * (all have passed the at_call of the image above) and frees them after a
 * grace period.  publish does this too; the control plane may call it
 * periodically.  Not from the hot path.  A communicator created after a
 * chain was dropped starts on the published image at call 0.
 */
void nbpf_host_collect(void);

/*
 * Image records the host owns now (published, pending, rollback target,
 * bases borrowed from); lock held by the caller.  For diagnostics and the
 * tests that check old images are freed.
 */
unsigned nbpf_host_image_records_locked(void);

/* Sums per-program stats over all comms for the current image. */
void nbpf_host_prog_totals(uint32_t slot, uint64_t *runs, uint64_t *ns);

/* Names as NCCL spells them ("RING", "LL128", "AllReduce"); "?" when out of range. */
const char *nbpf_algo_name(int algo);
const char *nbpf_proto_name(int proto);
const char *nbpf_coll_name(int coll);
/* Reverse lookups, case-insensitive: -1 when unknown. */
int nbpf_algo_from_name(const char *s);
int nbpf_proto_from_name(const char *s);
int nbpf_coll_from_name(const char *s);

/* ---- env overrides ------------------------------------------------------ */

/*
 * Value for an NCCL variable from the current image's env overrides, or
 * NULL.  Copies into buf (size n) inside an epoch section (no lock: a
 * reload that is loading or verifying never delays it), so the caller's
 * buffer stays valid whatever is published later.  Returns buf or NULL.
 */
const char *nbpf_host_env_lookup(const char *name, char *buf, size_t n);

/* Monotonic clock in ns. */
uint64_t nbpf_now_ns(void);

/*
 * NCCLBPF_STATS's time stamps around a program run: the time stamp
 * counter on x86-64 (ordered after the instructions before it), else
 * nbpf_now_ns.  A call that comes tens of milliseconds after the last
 * finds clock_gettime's code and data page cold: two such reads cost more
 * than the program they bracket, and the second lands inside the span.
 * The stamps are converted to ns only where totals are read
 * (nbpf_host_prog_totals), against the monotonic clock since the host was
 * acquired (an invariant TSC, as every x86-64 server CPU has).
 */
static inline uint64_t nbpf_stats_stamp(void)
{
#if defined(__x86_64__)
	uint32_t lo, hi;

	__asm__ volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
	return (uint64_t)hi << 32 | lo;
#else
	return nbpf_now_ns();
#endif
}

/* A sum of nbpf_stats_stamp differences in ns. */
uint64_t nbpf_stats_to_ns(uint64_t stamps);

#endif
