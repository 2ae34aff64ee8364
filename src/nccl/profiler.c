/*
 * profiler.c - NCCL profiler plugin v1..v7: tracks NCCL's events natively,
 * measures each collective and hands SEC("profiler") programs a completed
 * struct ncclbpf_coll_record; hands SEC("profiler/event") programs every
 * event NCCL stops, with its descriptor (prof_event.c); fills the host
 * telemetry and counts the events NCCL starts, by type.
 *
 * Handles.  Neither the context NCCL holds nor an event handle is a
 * pointer.  A context is named by its serial, a 32-bit number that is never
 * 0 and never repeats among the last 2^32 inits of the process; an event
 * handle is
 *     [63:32] context serial   [31:11] slot generation (21 bits, never 0)
 *     [10:0]  event slot
 * so a late recordEventState after stopEvent, a duplicate stop, a handle or
 * a context of a finalized context (however many contexts came and went
 * since), NULL or a foreign value all resolve to "no such event": a no-op.
 *
 * Slot word.  Each slot's generation, state and, for a Coll, its pending
 * references live in one atomic word, so every transition is one CAS that
 * also checks the generation: a thread holding a stale view of a slot that
 * was completed and reused can never stop, complete or decrement its new
 * occupant.  A channel folding its GPU span into its Coll marks it busy
 * first (the sweep skips busy Colls), so those stores never land in a
 * reused slot either.
 *
 * Lifetime of a Coll.  It holds one reference for itself (dropped at its
 * stop) and one per KernelCh channel it announces (coll.nChannels, when
 * KernelCh timing is on, v4+), dropped when that channel's KernelCh stops.
 * Whoever drops the last reference completes it: latency = max(KernelCh
 * stop) - min(KernelCh start) (GPU clock, ns) when both exist, else host
 * time between Coll start and stop.  A stopped Coll whose channels stop
 * reporting for PROF_STALE_NS is completed with what is known by a sweep;
 * a Coll never stopped for PROF_ABANDON_NS is dropped (counted, no program
 * run); finalize completes what is left.
 *
 * Bounded work.  The sweep is a clock hand that advances on every Coll
 * start while the pool is low (under a quarter free) and on every
 * PROF_SWEEP_EVERY-th otherwise: each step looks at PROF_SWEEP_SCAN slots
 * and runs programs for at most PROF_SWEEP_RUNS stale records (more stale
 * ones wait for later steps), so a callback never costs more than a few
 * program runs whatever the pool holds, and every stale record is handed
 * over eventually.  Finalize runs programs
 * for at most PROF_FINAL_RUNS leftover records; the rest reach the
 * telemetry only and are counted (colls_unrun).
 *
 * Threads.  Group/Coll events come from the launching thread, KernelCh from
 * the proxy thread, and NCCL may still call in from its proxy thread while
 * another thread finalizes the context.  Every callback runs inside an
 * epoch section and finds its context through the table by serial;
 * finalize unpublishes the context and retires it (and its communicator
 * record) through the epoch, so nothing a callback holds is freed under it.
 * The free list is a tagged lock-free stack.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "abi_profiler.h"
#include "epoch.h"
#include "host/host.h"
#include "plugin.h"
#include "prof_event.h"

#define PROF_POOL         2048u  /* slots per context: PROF_SLOT_BITS wide */
#define PROF_SLOT_BITS    11
#define PROF_GEN_MASK     0x1fffffu /* 21 bits of generation in a handle */
#define PROF_MAX_CTX      1024u
#define PROF_NONE         UINT32_MAX
#define PROF_STALE_NS     1000000000ull  /* stopped Coll waiting this long for channels */
#define PROF_ABANDON_NS   60000000000ull /* Coll never stopped after this long: dropped */
#define PROF_SWEEP_SCAN   32u    /* slots one Coll start looks at while the pool is low */
#define PROF_SWEEP_RUNS   2u     /* stale records one Coll start hands to programs */
#define PROF_SWEEP_EVERY  64u    /* pool not low: one sweep step per this many Coll starts */
#define PROF_FINAL_RUNS   64u    /* leftover records finalize hands to programs */

_Static_assert(PROF_POOL == 1u << PROF_SLOT_BITS, "slot field of a handle");

/*
 * Slot word: [63:32] generation   [27:20] channels folding in their span
 *            [15:8] KernelCh references left   [4] the Coll's own reference
 *            [1:0] state
 */
enum { EV_FREE = 0, EV_LIVE = 1, EV_STOPPED = 2 };
#define W_STATE(w)  ((uint32_t)(w) & 3u)
#define W_SELF      (1u << 4)
#define W_KCH(w)    (((uint32_t)(w) >> 8) & 0xffu)
#define W_KCH1      (1u << 8)
#define W_REFS(w)   ((uint32_t)(w) & (W_SELF | 0xff00u))
#define W_BUSY(w)   (((uint32_t)(w) >> 20) & 0xffu)
#define W_BUSY1     (1u << 20)
#define W_GEN(w)    ((uint32_t)((w) >> 32))
#define W_MAKE(g, low) ((uint64_t)(g) << 32 | (uint32_t)(low))

struct pev {
	_Atomic uint64_t w;        /* slot word, see above */
	_Atomic uint32_t type;     /* NBPF_PROF_* bit */
	_Atomic uint32_t next_free; /* free-list link, written by pushers */
	uint64_t parent;           /* KernelCh: parent Coll handle */
	/* Coll */
	uint64_t seq, bytes;
	int32_t coll, algo, proto;
	uint32_t nch;
	int32_t rank;              /* from the Coll descriptor (v1..v3 contexts know none) */
	/* rec is filled (an image with SEC("profiler/event") programs was published
	 * at start); here, beside what every callback touches, not with rec.
	 * Atomic: a late record on a stale handle may read it while a start reuses
	 * the slot. */
	_Atomic bool has_rec;
	_Atomic uint64_t host_start; /* read by the sweep, which may race with a reuse */
	_Atomic uint64_t host_stop;
	_Atomic uint64_t gpu_start, gpu_stop;
	/* KernelCh (and KernelPhase) */
	uint64_t k_start;
	_Atomic uint64_t k_stop;
	/*
	 * For SEC("profiler/event") programs (has_rec): the descriptor as
	 * decoded at start, and what recordEventState added since.
	 */
	struct ncclbpf_prof_event rec;
	_Atomic uint32_t st_mask, st_last, st_appended;
	_Atomic uint64_t st_bytes;
};

struct pctx {
	int abi;
	uint32_t serial;           /* never 0; table index = serial % PROF_MAX_CTX */
	uint64_t comm_id;
	int rank;
	uint32_t n_ranks;
	int *mask_ptr;             /* NCCL's process-global activation mask */
	bool kch_timing;           /* KernelCh carries timestamps (v4+) */
	struct nbpf_comm *comm;
	_Alignas(64) _Atomic uint64_t free_head; /* (aba tag << 32) | (slot + 1), 0 = empty */
	_Atomic uint32_t n_free;
	_Atomic uint32_t hand;     /* sweep cursor */
	_Atomic uint32_t starts;   /* Coll starts, paces the sweep while the pool is not low */
	struct pev ev[PROF_POOL];
};

static pthread_mutex_t g_tab_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(struct pctx *) g_tab[PROF_MAX_CTX];
/* Under g_tab_lock.  Starts at a clock-derived value (never 0) the first
 * time, so a context of an earlier load of this library (dlclose, then
 * dlopen again) is unlikely to share a serial with one of this load. */
static uint32_t g_next_serial;

/* ---- contexts, handles and the pool ------------------------------------- */

static inline void *ctx_handle(const struct pctx *p)
{
	return (void *)(uintptr_t)((uint64_t)p->serial << 32);
}

/* The live context a serial names, or NULL.  Inside an epoch section. */
static struct pctx *ctx_find(uint32_t serial)
{
	struct pctx *p;

	if (!serial)
		return NULL;
	p = atomic_load_explicit(&g_tab[serial % PROF_MAX_CTX], memory_order_acquire);
	return p && p->serial == serial ? p : NULL;
}

static struct pctx *ctx_get(const void *ctx)
{
	uint64_t h = (uint64_t)(uintptr_t)ctx;

	return (uint32_t)h ? NULL : ctx_find((uint32_t)(h >> 32));
}

static inline void *handle_make(const struct pctx *p, uint32_t idx, uint32_t gen)
{
	uint64_t h = (uint64_t)p->serial << 32 | (uint64_t)(gen & PROF_GEN_MASK) << PROF_SLOT_BITS |
		     idx;

	return (void *)(uintptr_t)h;
}

static inline uint32_t handle_gen(const void *handle)
{
	return (uint32_t)((uintptr_t)handle >> PROF_SLOT_BITS) & PROF_GEN_MASK;
}

/*
 * Resolves a handle to its live context and slot, and the slot word seen
 * (generation matching, not free); NULL when stale or foreign.  Inside an
 * epoch section.
 */
static struct pev *handle_get(const void *handle, struct pctx **out, uint64_t *wout)
{
	uint64_t h = (uint64_t)(uintptr_t)handle, w;
	struct pctx *p = ctx_find((uint32_t)(h >> 32));
	struct pev *e;

	if (!p)
		return NULL;
	e = &p->ev[h & (PROF_POOL - 1)];
	w = atomic_load_explicit(&e->w, memory_order_acquire);
	if (W_GEN(w) != handle_gen(handle) || W_STATE(w) == EV_FREE)
		return NULL;
	*out = p;
	*wout = w;
	return e;
}

static uint32_t pool_pop(struct pctx *p)
{
	uint64_t head = atomic_load_explicit(&p->free_head, memory_order_acquire);

	for (;;) {
		uint32_t slot = (uint32_t)head, nf;
		uint64_t next;

		if (!slot)
			return PROF_NONE;
		/* May read a link its new owner is not using: the tag then fails the CAS. */
		nf = atomic_load_explicit(&p->ev[slot - 1].next_free, memory_order_relaxed);
		next = ((head >> 32) + 1) << 32 | (nf == PROF_NONE ? 0 : nf + 1);
		if (atomic_compare_exchange_weak_explicit(&p->free_head, &head, next,
							  memory_order_acquire, memory_order_acquire)) {
			atomic_fetch_sub_explicit(&p->n_free, 1, memory_order_relaxed);
			return slot - 1;
		}
	}
}

/*
 * Retires a slot its caller owns (it won the transition that ended the
 * event): bumps its generation, so stale handles stop matching and stale
 * CASes fail, and frees it.
 */
static void pool_push(struct pctx *p, uint32_t idx)
{
	struct pev *e = &p->ev[idx];
	uint32_t g = (W_GEN(atomic_load_explicit(&e->w, memory_order_relaxed)) + 1) & PROF_GEN_MASK;
	uint64_t head;

	if (!g)
		g = 1;
	atomic_store_explicit(&e->w, W_MAKE(g, EV_FREE), memory_order_release);
	head = atomic_load_explicit(&p->free_head, memory_order_relaxed);
	do {
		uint32_t slot = (uint32_t)head;

		atomic_store_explicit(&e->next_free, slot ? slot - 1 : PROF_NONE,
				      memory_order_relaxed);
	} while (!atomic_compare_exchange_weak_explicit(&p->free_head, &head,
							((head >> 32) + 1) << 32 | (idx + 1),
							memory_order_release, memory_order_relaxed));
	atomic_fetch_add_explicit(&p->n_free, 1, memory_order_relaxed);
}

/* ---- descriptor decoding ----------------------------------------------- */

/* What the adapter needs from a Coll descriptor, whatever the version. */
struct coll_info {
	uint64_t seq, count, comm_hash;
	int coll, algo, proto, dsize;
	uint32_t nch;
};

static void coll_from_strings(struct coll_info *ci, const char *func, const char *dt,
			      const char *algo, const char *proto)
{
	ci->coll = nbpf_coll_from_name(func);
	ci->dsize = nbpf_prof_dtype_size_name(dt);
	ci->algo = nbpf_algo_from_name(algo);
	ci->proto = nbpf_proto_from_name(proto);
}

static void decode_coll(int abi, const void *d, struct coll_info *ci)
{
	memset(ci, 0, sizeof(*ci));
	switch (abi) {
	case 1: {
		const nbpf_prof_descr_v1_t *x = d;

		ci->seq = x->coll.seqNumber;
		ci->count = x->coll.count;
		ci->comm_hash = x->coll.commHash;
		ci->coll = x->coll.func < NCCLBPF_NUM_COLLS ? x->coll.func : -1;
		ci->dsize = nbpf_prof_dtype_size_enum(x->coll.datatype);
		ci->algo = x->coll.algo < NCCLBPF_NUM_ALGOS ? x->coll.algo : -1;
		ci->proto = x->coll.proto < NCCLBPF_NUM_PROTOS ? x->coll.proto : -1;
		ci->nch = x->coll.nMaxChannels;
		break;
	}
	case 2: {
		const nbpf_prof_descr_v2_t *x = d;

		ci->seq = x->coll.seqNumber;
		ci->count = x->coll.count;
		ci->comm_hash = x->coll.commHash;
		coll_from_strings(ci, x->coll.func, x->coll.datatype, x->coll.algo, x->coll.proto);
		ci->nch = x->coll.nMaxChannels;
		break;
	}
	case 3: {
		const nbpf_prof_descr_v3_t *x = d;

		ci->seq = x->coll.seqNumber;
		ci->count = x->coll.count;
		ci->comm_hash = x->coll.commHash;
		coll_from_strings(ci, x->coll.func, x->coll.datatype, x->coll.algo, x->coll.proto);
		ci->nch = x->coll.nMaxChannels;
		break;
	}
	case 4: {
		const nbpf_prof_descr_v4_t *x = d;

		ci->seq = x->coll.seqNumber;
		ci->count = x->coll.count;
		coll_from_strings(ci, x->coll.func, x->coll.datatype, x->coll.algo, x->coll.proto);
		ci->nch = x->coll.nChannels;
		break;
	}
	default: { /* v5, v6: same coll member */
		const nbpf_prof_descr_v5_t *x = d;

		ci->seq = x->coll.seqNumber;
		ci->count = x->coll.count;
		coll_from_strings(ci, x->coll.func, x->coll.datatype, x->coll.algo, x->coll.proto);
		ci->nch = x->coll.nChannels;
		break;
	}
	}
}

static uint32_t descr_type(int abi, const void *d)
{
	return abi >= 5 ? (uint32_t)((const nbpf_prof_descr_v5_t *)d)->type
			: ((const nbpf_prof_descr_v1_t *)d)->type;
}

/* Header fields are at the same offsets in every version (pinned in abi_profiler.h). */
static void *descr_parent(const void *d)
{
	return ((const nbpf_prof_descr_v4_t *)d)->parentObj;
}

static uint64_t descr_kch_start(int abi, const void *d)
{
	if (abi == 4)
		return ((const nbpf_prof_descr_v4_t *)d)->kernelCh.pTimer;
	if (abi >= 5)
		return ((const nbpf_prof_descr_v5_t *)d)->kernelCh.pTimer;
	return 0;
}

/* ---- completion -------------------------------------------------------- */

static void telemetry_add(struct nbpf_comm *cm, const struct ncclbpf_coll_record *r)
{
	unsigned coll = r->coll_type < NCCLBPF_NUM_COLLS ? r->coll_type : NCCLBPF_NUM_COLLS;
	struct nbpf_telemetry *t = &cm->tele[coll][nbpf_size_class(r->n_bytes)];
	unsigned b = r->latency_ns ? 63u - (unsigned)__builtin_clzll(r->latency_ns) : 0;
	int a = r->algo >= 0 && r->algo < NCCLBPF_NUM_ALGOS ? r->algo : NCCLBPF_NUM_ALGOS;
	int p = r->proto >= 0 && r->proto < NCCLBPF_NUM_PROTOS ? r->proto : NCCLBPF_NUM_PROTOS;

	if (b >= NBPF_LAT_BUCKETS)
		b = NBPF_LAT_BUCKETS - 1;
	atomic_fetch_add_explicit(&t->count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&t->bytes, r->n_bytes, memory_order_relaxed);
	atomic_fetch_add_explicit(&t->sum_ns, r->latency_ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&t->hist[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&t->mix[a][p], 1, memory_order_relaxed);
	if (r->gpu_timed)
		atomic_fetch_add_explicit(&t->gpu_timed, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&cm->colls_seen, 1, memory_order_relaxed);
}

/*
 * Runs progs (n of them, of the current image img) on ctx (len bytes) and
 * counts the runs; caller is in an epoch section.  Per-program counters
 * restart when the comm first runs a new image.
 */
static void run_progs(struct pctx *p, const struct nbpf_image *img,
		      const struct nbpf_host_prog *const *progs, uint32_t n, void *ctx, size_t len)
{
	struct nbpf_comm *cm = p->comm;
	bool stats = nbpf_host_settings()->stats;

	if (cm && atomic_load_explicit(&cm->stats_gen, memory_order_relaxed) != img->generation) {
		uint64_t old = atomic_load_explicit(&cm->stats_gen, memory_order_relaxed);

		/* Several threads may race here; one wins the reset, the rest just count. */
		if (atomic_compare_exchange_strong(&cm->stats_gen, &old, img->generation)) {
			for (uint32_t i = 0; i < NBPF_HOST_MAX_PROGS; i++) {
				atomic_store_explicit(&cm->prog[i].runs, 0, memory_order_relaxed);
				atomic_store_explicit(&cm->prog[i].ns, 0, memory_order_relaxed);
			}
			atomic_store_explicit(&cm->image_gen, img->generation, memory_order_relaxed);
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct nbpf_host_prog *hp = progs[i];
		uint64_t t0 = stats ? nbpf_stats_stamp() : 0, ret;

		if (hp->func)
			hp->func(ctx, len);
		else
			ncclbpf_program__run(hp->prog, ctx, len, &ret);
		if (cm) {
			atomic_fetch_add_explicit(&cm->prog[hp->slot].runs, 1, memory_order_relaxed);
			if (stats)
				atomic_fetch_add_explicit(&cm->prog[hp->slot].ns, nbpf_stats_stamp() - t0,
							  memory_order_relaxed);
		}
	}
}

/* Runs every profiler program of the current image; caller is in an epoch section. */
static void run_programs(struct pctx *p, struct ncclbpf_coll_record *r)
{
	struct nbpf_image *img = atomic_load_explicit(&nbpf_host_published, memory_order_acquire);

	if (img)
		run_progs(p, img, img->profilers, img->n_profilers, r, sizeof(*r));
}

/* Runs every SEC("profiler/event") program of the current image; in an epoch section. */
static void run_event_programs(struct pctx *p, struct ncclbpf_prof_event *ev)
{
	struct nbpf_image *img = atomic_load_explicit(&nbpf_host_published, memory_order_acquire);

	if (img && img->n_prof_events)
		run_progs(p, img, img->prof_events, img->n_prof_events, ev, sizeof(*ev));
}

/*
 * A completion comes milliseconds after the last one: the programs' code
 * and the telemetry record it adds to are cold.  Ask for them before the
 * record is built, so those misses overlap each other and that work (see
 * tuner_prefetch in tuner.c).  Inside the caller's epoch section.
 */
static void complete_prefetch(const struct pctx *p, const struct pev *e, bool run)
{
	const struct nbpf_image *img = atomic_load_explicit(&nbpf_host_published, memory_order_acquire);
	const struct nbpf_telemetry *t;
	unsigned coll;

	for (uint32_t i = 0; run && img && i < img->n_profilers && i < 4; i++)
		__builtin_prefetch((const void *)img->profilers[i]->func);
	if (!p->comm)
		return;
	coll = e->coll >= 0 && e->coll < NCCLBPF_NUM_COLLS ? (unsigned)e->coll : NCCLBPF_NUM_COLLS;
	t = &p->comm->tele[coll][nbpf_size_class(e->bytes)];
	__builtin_prefetch(&t->count, 1);
	__builtin_prefetch(&t->mix[0][0], 1);
	__builtin_prefetch(&p->comm->prog[0], 1);
}

/*
 * Completes a Coll whose last reference the caller dropped (it owns the
 * slot now): builds the record, hands it to the programs when run is set
 * (else counts it in colls_unrun), adds it to the telemetry, frees the slot.
 */
static void coll_complete(struct pctx *p, uint32_t idx, bool run)
{
	struct pev *e = &p->ev[idx];
	struct ncclbpf_coll_record r;
	uint64_t gs, gt, hs, h0;

	complete_prefetch(p, e, run);
	gs = atomic_load_explicit(&e->gpu_start, memory_order_acquire);
	gt = atomic_load_explicit(&e->gpu_stop, memory_order_acquire);
	hs = atomic_load_explicit(&e->host_stop, memory_order_acquire);
	h0 = atomic_load_explicit(&e->host_start, memory_order_relaxed);
	if (!hs) /* its stopper won the stop but has not stored the time yet */
		hs = nbpf_now_ns();
	memset(&r, 0, sizeof(r));
	r.comm_id = p->comm_id;
	r.n_bytes = e->bytes;
	r.seq = e->seq;
	r.rank = e->rank >= 0 ? (uint32_t)e->rank : p->rank >= 0 ? (uint32_t)p->rank : 0;
	r.n_ranks = p->n_ranks;
	r.coll_type = e->coll >= 0 ? (uint32_t)e->coll : NCCLBPF_NUM_COLLS;
	r.algo = e->algo;
	r.proto = e->proto;
	r.n_channels = e->nch;
	if (gs != UINT64_MAX && gt && gt >= gs) {
		r.latency_ns = gt - gs;
		r.gpu_timed = 1;
	} else {
		r.latency_ns = hs > h0 ? hs - h0 : 0;
	}
	if (run)
		run_programs(p, &r);
	else if (p->comm)
		atomic_fetch_add_explicit(&p->comm->colls_unrun, 1, memory_order_relaxed);
	if (p->comm)
		telemetry_add(p->comm, &r);
	pool_push(p, idx);
}

/*
 * Marks a channel of the Coll in slot word w (generation gen) as folding in
 * its span: it keeps its reference meanwhile, and the sweep leaves a busy
 * Coll alone, so the slot cannot be completed and reused under the
 * channel's timestamp stores.  False when the slot no longer holds that
 * Coll or it has no channel reference left.
 */
static bool coll_busy(struct pev *e, uint64_t w, uint32_t gen)
{
	do {
		if (W_GEN(w) != gen || W_STATE(w) == EV_FREE || !W_KCH(w))
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&e->w, &w, w + W_BUSY1,
							memory_order_acq_rel, memory_order_acquire));
	return true;
}

/* Ends coll_busy and drops that channel's reference; true when it was the last. */
static bool coll_put_kch(struct pev *e)
{
	uint64_t w = atomic_load_explicit(&e->w, memory_order_relaxed), nw;

	do {
		nw = w - W_BUSY1 - W_KCH1;
	} while (!atomic_compare_exchange_weak_explicit(&e->w, &w, nw, memory_order_acq_rel,
							memory_order_relaxed));
	return W_REFS(nw) == 0;
}

/*
 * Takes every reference left of the Coll in slot idx if it is still in the
 * slot word w (same generation and state, references left): the caller
 * then owns the slot.  Used by the sweep and by finalize.
 */
static bool coll_take(struct pev *e, uint64_t w)
{
	return atomic_compare_exchange_strong_explicit(&e->w, &w,
						       W_MAKE(W_GEN(w), EV_STOPPED),
						       memory_order_acq_rel, memory_order_relaxed);
}

/*
 * Looks at one slot for the sweep: a stopped Coll whose channels stopped
 * reporting PROF_STALE_NS ago is completed (with programs while *runs <
 * max_runs, else left for a later call, or at finalize counted as unrun);
 * a Coll never stopped for PROF_ABANDON_NS is dropped and counted.  At
 * finalize (final) every stopped Coll is stale.
 */
static void sweep_slot(struct pctx *p, uint32_t i, uint64_t now, uint32_t *runs,
		       uint32_t max_runs, bool final)
{
	struct pev *e = &p->ev[i];
	uint64_t w = atomic_load_explicit(&e->w, memory_order_acquire), hs;
	bool run;

	if (W_STATE(w) == EV_FREE || !W_REFS(w) || W_BUSY(w) ||
	    atomic_load_explicit(&e->type, memory_order_relaxed) != NBPF_PROF_COLL)
		return;
	if (W_STATE(w) == EV_LIVE) {
		uint64_t h0 = atomic_load_explicit(&e->host_start, memory_order_relaxed);

		if (final || now < h0 || now - h0 < PROF_ABANDON_NS || !coll_take(e, w))
			return;
		if (p->comm)
			atomic_fetch_add_explicit(&p->comm->colls_abandoned, 1, memory_order_relaxed);
		pool_push(p, i);
		return;
	}
	hs = atomic_load_explicit(&e->host_stop, memory_order_acquire);
	if (!final && (!hs || now < hs || now - hs <= PROF_STALE_NS))
		return;
	run = *runs < max_runs;
	if (!run && !final)
		return; /* this call's budget is spent: a later one completes it */
	if (!coll_take(e, w))
		return;
	if (run)
		(*runs)++;
	coll_complete(p, i, run);
}

/* One step of the clock hand: PROF_SWEEP_SCAN slots, at most PROF_SWEEP_RUNS programs runs. */
static void sweep_step(struct pctx *p)
{
	uint32_t at = atomic_fetch_add_explicit(&p->hand, PROF_SWEEP_SCAN, memory_order_relaxed);
	uint64_t now = nbpf_now_ns();
	uint32_t runs = 0;

	for (uint32_t k = 0; k < PROF_SWEEP_SCAN; k++)
		sweep_slot(p, (at + k) & (PROF_POOL - 1), now, &runs, PROF_SWEEP_RUNS, false);
}

/* ---- callbacks --------------------------------------------------------- */

/*
 * Activation mask the current image needs (or NCCLBPF_PROFILER_MASK), for
 * profiler ABI version abi: Coll for the telemetry; KernelCh too for
 * SEC("profiler") programs (GPU time); with SEC("profiler/event")
 * programs every type the version knows except the ones NCCL raises per
 * proxy step or progress loop (NBPF_PROF_CHATTY: NCCLBPF_PROFILER_MASK
 * asks for those).
 */
static int wanted_mask(int abi)
{
	const struct nbpf_settings *s = nbpf_host_settings();
	struct nbpf_image *img;
	int m = NBPF_PROF_COLL;

	if (s->profiler_mask >= 0)
		return s->profiler_mask;
	nbpf_epoch_enter();
	img = atomic_load_explicit(&nbpf_host_published, memory_order_acquire);
	if (img && img->n_profilers)
		m |= NBPF_PROF_KERNEL_CH;
	if (img && img->n_prof_events)
		m |= (int)(nbpf_prof_types_of(abi) & ~(uint32_t)NBPF_PROF_CHATTY);
	nbpf_epoch_exit();
	return m;
}

/* Whether the current image has SEC("profiler/event") programs; in an epoch section. */
static bool events_wanted(void)
{
	struct nbpf_image *img = atomic_load_explicit(&nbpf_host_published, memory_order_acquire);

	return img && img->n_prof_events;
}

/* Counts an event NCCL started, on the cache lines of the thread kind that raises it. */
static void count_event(struct pctx *p, uint32_t type)
{
	if (p->comm && type && !(type & (type - 1)) && type < 1u << NBPF_PROF_EVENT_TYPES)
		atomic_fetch_add_explicit(&p->comm->prof_events[nbpf_prof_proxy_side(type)]
					   .n[__builtin_ctz(type)], 1, memory_order_relaxed);
}

/* The event record of slot e for event programs, from descriptor d. */
static void rec_fill(struct pctx *p, struct pev *e, int abi, const void *d, uint64_t now)
{
	struct pctx *pp;
	uint64_t pw;
	struct pev *parent = handle_get(descr_parent(d), &pp, &pw);

	nbpf_prof_event_decode(abi, d, p->n_ranks, &e->rec);
	e->rec.comm_id = p->comm_id;
	e->rec.start_ns = now;
	e->rec.parent_type = parent ? atomic_load_explicit(&parent->type, memory_order_relaxed) : 0;
	atomic_store_explicit(&e->st_mask, 0, memory_order_relaxed);
	atomic_store_explicit(&e->st_last, UINT32_MAX, memory_order_relaxed);
	atomic_store_explicit(&e->st_appended, 0, memory_order_relaxed);
	atomic_store_explicit(&e->st_bytes, 0, memory_order_relaxed);
}

/* The record of slot e once stopped at now: start's and the states recorded since. */
static void rec_finish(struct pev *e, uint64_t now, struct ncclbpf_prof_event *out)
{
	uint64_t bytes = atomic_load_explicit(&e->st_bytes, memory_order_acquire);

	*out = e->rec;
	out->dur_ns = now > out->start_ns ? now - out->start_ns : 0;
	out->states = atomic_load_explicit(&e->st_mask, memory_order_acquire);
	out->last_state = atomic_load_explicit(&e->st_last, memory_order_relaxed);
	out->appended = atomic_load_explicit(&e->st_appended, memory_order_relaxed);
	if (bytes)
		out->n_bytes = bytes;
	if (out->type == NBPF_PROF_KERNEL_CH || out->type == NBPF_PROF_KERNEL_PHASE)
		out->gpu_stop_ns = atomic_load_explicit(&e->k_stop, memory_order_acquire);
	if (out->gpu_start_ns && out->gpu_stop_ns >= out->gpu_start_ns && out->gpu_stop_ns)
		out->flags |= NCCLBPF_EVF_GPU_TIMED;
}

static void coll_fill(struct pctx *p, struct pev *e, int abi, const void *d, uint32_t *kch)
{
	struct coll_info ci;

	decode_coll(abi, d, &ci);
	e->seq = ci.seq;
	e->rank = ((const nbpf_prof_descr_v4_t *)d)->rank;
	e->coll = ci.coll;
	e->algo = ci.algo;
	e->proto = ci.proto;
	e->nch = ci.nch;
	e->bytes = ci.count * (uint64_t)ci.dsize;
	/* Same meaning as the tuner's nBytes. */
	if ((ci.coll == NCCLBPF_COLL_ALLGATHER || ci.coll == NCCLBPF_COLL_REDUCESCATTER) &&
	    p->n_ranks)
		e->bytes *= p->n_ranks;
	*kch = p->kch_timing && p->mask_ptr &&
	       (__atomic_load_n(p->mask_ptr, __ATOMIC_RELAXED) & NBPF_PROF_KERNEL_CH) ?
	       (ci.nch & 0xffu) : 0;
	atomic_store_explicit(&e->gpu_start, UINT64_MAX, memory_order_relaxed);
	atomic_store_explicit(&e->gpu_stop, 0, memory_order_relaxed);
	atomic_store_explicit(&e->host_stop, 0, memory_order_relaxed);
	atomic_store_explicit(&e->host_start, nbpf_now_ns(), memory_order_relaxed);
}

static nbpf_nccl_result_t start_event(void *ctx, int abi, void **handle, const void *d)
{
	uint32_t type, idx, kch = 0, gen;
	bool rec;
	struct pctx *p;
	struct pev *e;

	if (!handle)
		return NBPF_NCCL_SUCCESS;
	*handle = NULL;
	if (!ctx || !d)
		return NBPF_NCCL_SUCCESS;
	type = descr_type(abi, d);
	nbpf_epoch_enter();
	p = ctx_get(ctx);
	if (!p)
		goto out; /* finalized (or never ours): no event */
	count_event(p, type);
	/* Other types are tracked only for event programs; NCCL skips stop/record for NULL. */
	rec = events_wanted();
	if (!rec && type != NBPF_PROF_COLL && type != NBPF_PROF_KERNEL_CH && type != NBPF_PROF_GROUP &&
	    type != NBPF_PROF_PROXY_OP && type != NBPF_PROF_PROXY_STEP)
		goto out;
	if (type == NBPF_PROF_COLL) {
		int m = wanted_mask(abi);

		if (p->mask_ptr && __atomic_load_n(p->mask_ptr, __ATOMIC_RELAXED) != m)
			__atomic_store_n(p->mask_ptr, m, __ATOMIC_RELAXED);
		if (atomic_load_explicit(&p->n_free, memory_order_relaxed) < PROF_POOL / 4 ||
		    atomic_fetch_add_explicit(&p->starts, 1, memory_order_relaxed) %
		    PROF_SWEEP_EVERY == 0)
			sweep_step(p);
	}
	idx = pool_pop(p);
	if (idx == PROF_NONE) {
		if (p->comm)
			atomic_fetch_add_explicit(&p->comm->events_dropped, 1, memory_order_relaxed);
		goto out;
	}
	e = &p->ev[idx];
	gen = W_GEN(atomic_load_explicit(&e->w, memory_order_relaxed));
	atomic_store_explicit(&e->type, type, memory_order_relaxed);
	e->parent = 0;
	if (type == NBPF_PROF_COLL) {
		coll_fill(p, e, abi, d, &kch);
	} else if (type == NBPF_PROF_KERNEL_CH) {
		e->parent = (uint64_t)(uintptr_t)descr_parent(d);
		e->k_start = descr_kch_start(abi, d);
		atomic_store_explicit(&e->k_stop, 0, memory_order_relaxed);
	} else if (type == NBPF_PROF_KERNEL_PHASE) {
		atomic_store_explicit(&e->k_stop, 0, memory_order_relaxed); /* its start is in rec */
	}
	atomic_store_explicit(&e->has_rec, rec, memory_order_relaxed);
	if (rec)
		rec_fill(p, e, abi, d, nbpf_now_ns());
	atomic_store_explicit(&e->w, W_MAKE(gen, EV_LIVE | (type == NBPF_PROF_COLL ? W_SELF : 0) |
					    kch << 8), memory_order_release);
	*handle = handle_make(p, idx, gen);
out:
	nbpf_epoch_exit();
	return NBPF_NCCL_SUCCESS;
}

/* Folds a finished KernelCh span into its parent Coll and drops its reference. */
static void kch_finish(struct pev *k)
{
	void *parent = (void *)(uintptr_t)k->parent;
	struct pctx *pp;
	uint64_t cw;
	struct pev *c = handle_get(parent, &pp, &cw);
	uint64_t ks = k->k_start, kt = atomic_load_explicit(&k->k_stop, memory_order_acquire);

	if (!c || atomic_load_explicit(&c->type, memory_order_relaxed) != NBPF_PROF_COLL ||
	    !coll_busy(c, cw, W_GEN(cw)))
		return;
	if (ks && kt >= ks) {
		uint64_t cur = atomic_load_explicit(&c->gpu_start, memory_order_relaxed);

		while (ks < cur && !atomic_compare_exchange_weak(&c->gpu_start, &cur, ks))
			;
		cur = atomic_load_explicit(&c->gpu_stop, memory_order_relaxed);
		while (kt > cur && !atomic_compare_exchange_weak(&c->gpu_stop, &cur, kt))
			;
	}
	if (coll_put_kch(c))
		coll_complete(pp, (uint32_t)(c - pp->ev), true);
}

/* LIVE -> STOPPED for the generation in w; the Coll's own reference goes with it. */
static bool event_stop(struct pev *e, uint64_t w, uint64_t *nw)
{
	uint32_t gen = W_GEN(w);

	do {
		if (W_GEN(w) != gen || W_STATE(w) != EV_LIVE)
			return false;
		/* References and busy channels carry over; only SELF goes. */
		*nw = W_MAKE(gen, ((uint32_t)w & ~(W_SELF | 3u)) | EV_STOPPED);
	} while (!atomic_compare_exchange_weak_explicit(&e->w, &w, *nw, memory_order_acq_rel,
							memory_order_acquire));
	return true;
}

static nbpf_nccl_result_t stop_event(void *handle)
{
	struct ncclbpf_prof_event ev;
	uint64_t w, nw, t;
	bool rec = false, has;
	struct pctx *p;
	struct pev *e;

	if (!handle)
		return NBPF_NCCL_SUCCESS;
	nbpf_epoch_enter();
	e = handle_get(handle, &p, &w);
	if (!e)
		goto out;
	has = atomic_load_explicit(&e->has_rec, memory_order_relaxed);
	/* The clock only for what keeps a time: a Coll, an event's record. */
	t = atomic_load_explicit(&e->type, memory_order_relaxed) == NBPF_PROF_COLL || has ?
	    nbpf_now_ns() : 0;
	if (atomic_load_explicit(&e->type, memory_order_relaxed) == NBPF_PROF_COLL) {
		/*
		 * Read before the stop: once it drops the last reference the
		 * slot may be completed and reused.  Only a live Coll's: it
		 * holds its own reference, so nothing completes it meanwhile
		 * (a stopped one, under a duplicate stop, may be completed by
		 * its last channel); and the copy is used only if this stop
		 * wins.
		 */
		has = has && W_STATE(w) == EV_LIVE;
		if (has)
			rec_finish(e, t, &ev);
		if (event_stop(e, w, &nw)) {
			rec = has;
			atomic_store_explicit(&e->host_stop, t, memory_order_release);
			if (!W_REFS(nw))
				coll_complete(p, (uint32_t)(e - p->ev), true);
		}
	} else if (event_stop(e, w, &nw)) {
		if (atomic_load_explicit(&e->type, memory_order_relaxed) == NBPF_PROF_KERNEL_CH)
			kch_finish(e);
		if ((rec = has))
			rec_finish(e, t, &ev);
		pool_push(p, (uint32_t)(e - p->ev));
	}
	if (rec)
		run_event_programs(p, &ev);
out:
	nbpf_epoch_exit();
	return NBPF_NCCL_SUCCESS;
}

/*
 * What recordEventState adds to a tracked event: the state (for event
 * programs, which see every state recorded), and per state its argument:
 * a KernelCh's or KernelPhase's stop time, a ProxyStep's (v1..v3 also a
 * ProxyOp's) bytes, a ProxyCtrl's appended ops.  bytes, appended and
 * timer are what args held for that state (0 / NULL when none).
 */
static void record_state(void *handle, int state, uint64_t bytes, uint32_t appended,
			 const uint64_t *timer)
{
	struct pctx *p;
	struct pev *e;
	uint64_t w;
	uint32_t type;

	if (!handle)
		return;
	nbpf_epoch_enter();
	/* Only stop times matter without event programs: nothing else to look up. */
	if (!timer && !events_wanted())
		goto out;
	e = handle_get(handle, &p, &w);
	if (!e || W_STATE(w) != EV_LIVE)
		goto out;
	type = atomic_load_explicit(&e->type, memory_order_relaxed);
	if (timer && ((type == NBPF_PROF_KERNEL_CH && state == NBPF_PROF_STATE_KERNEL_CH_STOP) ||
		      (type == NBPF_PROF_KERNEL_PHASE && state == NBPF_PROF_STATE_KERNEL_PHASE_STOP)))
		atomic_store_explicit(&e->k_stop, *timer, memory_order_release);
	if (atomic_load_explicit(&e->has_rec, memory_order_relaxed) && state >= 0 && state < 32) {
		if (bytes)
			atomic_store_explicit(&e->st_bytes, bytes, memory_order_relaxed);
		if (appended)
			atomic_store_explicit(&e->st_appended, appended, memory_order_relaxed);
		atomic_store_explicit(&e->st_last, (uint32_t)state, memory_order_relaxed);
		atomic_fetch_or_explicit(&e->st_mask, 1u << state, memory_order_release);
	}
out:
	nbpf_epoch_exit();
}

/* NCCL's state numbers (abi_profiler.h): which argument member a state fills. */
static bool state_is_step(int s) { return (s >= 8 && s <= 12) || s == 20; }
static bool state_is_ctrl(int s) { return s >= 13 && s <= 18; }

static nbpf_nccl_result_t record_v4(void *handle, int state, nbpf_prof_state_args_v4_t *args)
{
	bool timer = state == NBPF_PROF_STATE_KERNEL_CH_STOP || state == NBPF_PROF_STATE_KERNEL_PHASE_STOP;

	/* Group API states come with no args. */
	record_state(handle, state, args && state_is_step(state) ? args->proxyStep.transSize : 0,
		     args && state_is_ctrl(state) ? (uint32_t)args->proxyCtrl.appendedProxyOps : 0,
		     args && timer ? &args->kernelCh.pTimer : NULL);
	return NBPF_NCCL_SUCCESS;
}

/* v1..v3 carry no KernelCh timestamps; ProxyOp and ProxyStep states carry bytes. */
static nbpf_nccl_result_t record_v1(void *handle, int state, nbpf_prof_state_args_v1_t *args)
{
	record_state(handle, state, args && (state <= 7 || state_is_step(state)) && state >= 0 ?
		     args->proxyOp.transSize : 0,
		     args && state_is_ctrl(state) ? (uint32_t)args->proxyCtrl.appendedProxyOps : 0,
		     NULL);
	return NBPF_NCCL_SUCCESS;
}

/* Publishes p under a fresh serial; false when the table is full. */
static bool ctx_publish(struct pctx *p)
{
	bool ok = false;

	pthread_mutex_lock(&g_tab_lock);
	if (!g_next_serial) {
		uint64_t t = nbpf_now_ns();

		g_next_serial = (uint32_t)(t ^ t >> 32) | 1;
	}
	for (uint32_t n = 0; n < PROF_MAX_CTX && !ok; n++) {
		uint32_t s = g_next_serial++;

		if (!g_next_serial)
			g_next_serial = 1;
		if (atomic_load_explicit(&g_tab[s % PROF_MAX_CTX], memory_order_relaxed))
			continue;
		p->serial = s;
		atomic_store_explicit(&g_tab[s % PROF_MAX_CTX], p, memory_order_release);
		ok = true;
	}
	pthread_mutex_unlock(&g_tab_lock);
	return ok;
}

static nbpf_nccl_result_t prof_init(void **ctx, int abi, uint64_t comm_id, int *mask,
				    int n_nodes, int n_ranks, int rank,
				    nbpf_nccl_logger_t logger)
{
	struct pctx *p = NULL;

	if (ctx)
		*ctx = NULL;
	nbpf_plugin_acquire(logger);
	if (!ctx)
		goto fail;
	p = aligned_alloc(64, (sizeof(*p) + 63) & ~(size_t)63);
	if (!p)
		goto fail;
	memset(p, 0, sizeof(*p));
	p->abi = abi;
	p->comm_id = comm_id;
	p->rank = rank;
	p->n_ranks = n_ranks > 0 ? (uint32_t)n_ranks : 0;
	p->mask_ptr = mask;
	p->kch_timing = abi >= 4;
	for (uint32_t i = 0; i < PROF_POOL; i++) {
		atomic_store_explicit(&p->ev[i].w, W_MAKE(1, EV_FREE), memory_order_relaxed);
		atomic_store_explicit(&p->ev[i].next_free, i + 1 < PROF_POOL ? i + 1 : PROF_NONE,
				      memory_order_relaxed);
	}
	atomic_store(&p->free_head, 1);
	atomic_store(&p->n_free, PROF_POOL);
	p->comm = nbpf_host_comm_add(NBPF_COMM_PROFILER, abi, comm_id, rank, p->n_ranks,
				     n_nodes > 0 ? (uint32_t)n_nodes : 0);
	if (!ctx_publish(p)) {
		nbpf_host_comm_remove(p->comm);
		goto fail;
	}
	if (mask)
		__atomic_store_n(mask, wanted_mask(abi), __ATOMIC_RELAXED);
	nbpf_host_log(NBPF_NCCL_LOG_INFO, NBPF_NCCL_INIT | NBPF_NCCL_PROFILE,
		      "profiler v%d ready for comm 0x%llx rank %d (mask 0x%x)", abi,
		      (unsigned long long)comm_id, rank, mask ? __atomic_load_n(mask, __ATOMIC_RELAXED) : 0);
	*ctx = ctx_handle(p);
	return NBPF_NCCL_SUCCESS;
fail:
	free(p);
	if (mask)
		*mask = 0;
	nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_INIT | NBPF_NCCL_PROFILE,
		      "profiler v%d: no context (out of memory or more than %u contexts); events off",
		      abi, PROF_MAX_CTX);
	nbpf_plugin_release();
	return NBPF_NCCL_SUCCESS;
}

/*
 * Unpublishes the context (callbacks that start now find nothing), hands
 * the records still waiting to the programs (at most PROF_FINAL_RUNS of
 * them), and retires the context and its communicator record through the
 * epoch: a callback another thread is running on it keeps both alive until
 * it returns.  An unknown or already finalized context is a no-op.
 */
static nbpf_nccl_result_t prof_finalize(void *ctx)
{
	struct pctx *p;
	uint32_t runs = 0;
	uint64_t now;

	nbpf_epoch_enter();
	p = ctx_get(ctx);
	if (!p || !atomic_compare_exchange_strong(&g_tab[p->serial % PROF_MAX_CTX], &p, NULL)) {
		nbpf_epoch_exit();
		return NBPF_NCCL_SUCCESS;
	}
	now = nbpf_now_ns();
	for (uint32_t i = 0; i < PROF_POOL; i++)
		sweep_slot(p, i, now, &runs, PROF_FINAL_RUNS, true);
	nbpf_epoch_exit();
	nbpf_host_comm_remove(p->comm);
	if (nbpf_epoch_defer(free, p)) {
		/* No memory to queue it: wait here, unless that could deadlock (leak then). */
		if (!nbpf_epoch_in_section()) {
			nbpf_epoch_synchronize();
			free(p);
		}
	}
	nbpf_epoch_poll(); /* frees what earlier finalizes retired, without waiting */
	nbpf_plugin_release();
	return NBPF_NCCL_SUCCESS;
}

/* ---- per-version entry points ------------------------------------------ */

#define START_FN(ver, descr_t, abi) \
	static nbpf_nccl_result_t start_##ver(void *ctx, void **h, descr_t *d) \
	{ return start_event(ctx, abi, h, d); }
START_FN(v1, nbpf_prof_descr_v1_t, 1)
START_FN(v2, nbpf_prof_descr_v2_t, 2)
START_FN(v3, nbpf_prof_descr_v3_t, 3)
START_FN(v4, nbpf_prof_descr_v4_t, 4)
START_FN(v5, nbpf_prof_descr_v5_t, 5)
START_FN(v6, nbpf_prof_descr_v6_t, 6)
START_FN(v7, nbpf_prof_descr_v7_t, 7)

static nbpf_nccl_result_t init_v1(void **ctx, int *mask) { return prof_init(ctx, 1, 0, mask, 0, 0, -1, NULL); }
static nbpf_nccl_result_t init_v2(void **ctx, int *mask) { return prof_init(ctx, 2, 0, mask, 0, 0, -1, NULL); }
static nbpf_nccl_result_t init_v3(void **ctx, int *mask) { return prof_init(ctx, 3, 0, mask, 0, 0, -1, NULL); }

static nbpf_nccl_result_t init_v4(void **ctx, int *mask, const char *name, uint64_t hash,
				  int n_nodes, int n_ranks, int rank, nbpf_nccl_logger_t logger)
{
	(void)name;
	return prof_init(ctx, 4, hash, mask, n_nodes, n_ranks, rank, logger);
}

static nbpf_nccl_result_t init_v5(void **ctx, uint64_t comm_id, int *mask, const char *name,
				  int n_nodes, int n_ranks, int rank, nbpf_nccl_logger_t logger)
{
	(void)name;
	return prof_init(ctx, 5, comm_id, mask, n_nodes, n_ranks, rank, logger);
}

static nbpf_nccl_result_t init_v6(void **ctx, uint64_t comm_id, int *mask, const char *name,
				  int n_nodes, int n_ranks, int rank, nbpf_nccl_logger_t logger)
{
	(void)name;
	return prof_init(ctx, 6, comm_id, mask, n_nodes, n_ranks, rank, logger);
}

static nbpf_nccl_result_t init_v7(void **ctx, uint64_t comm_id, int *mask, const char *name,
				  int n_nodes, int n_ranks, int rank, nbpf_nccl_logger_t logger)
{
	(void)name;
	return prof_init(ctx, 7, comm_id, mask, n_nodes, n_ranks, rank, logger);
}

#define PROF_TABLE(ver, rec) \
	NBPF_EXPORT const nbpf_profiler_##ver##_t ncclProfiler_##ver = { \
		.name = "ncclbpf", .init = init_##ver, .startEvent = start_##ver, \
		.stopEvent = stop_event, .recordEventState = rec, .finalize = prof_finalize, \
	}
PROF_TABLE(v1, record_v1);
PROF_TABLE(v2, record_v1);
PROF_TABLE(v3, record_v1);
PROF_TABLE(v4, record_v4);
PROF_TABLE(v5, record_v4);
PROF_TABLE(v6, record_v4);
PROF_TABLE(v7, record_v4);
