/*
 * profiler.c - NCCL profiler plugin v1..v6: tracks NCCL's events natively,
 * measures each collective and hands SEC("profiler") programs a completed
 * struct ncclbpf_coll_record; fills the host telemetry.
 *
 * Handles.  An event handle is never a pointer: it encodes
 *     [63:48] slot generation (16 bits, never 0)   [47:42] context tag
 *     [41:32] context table index                  [31:0]  event slot
 * so a late recordEventState after stopEvent, a duplicate stop, a handle of
 * a finalized context or NULL all resolve to "no such event": a no-op.
 *
 * Lifetime of a Coll.  It holds one reference for itself (dropped at its
 * stop) and one per KernelCh channel it announces (coll.nChannels, when
 * KernelCh timing is on, v4+), dropped when that channel's KernelCh stops.
 * Whoever drops the last reference completes it: latency = max(KernelCh
 * stop) - min(KernelCh start) (GPU clock, ns) when both exist, else host
 * time between Coll start and stop.  Stopped Colls whose channels never
 * report are completed with host time by a sweep when the pool runs low
 * and at finalize, so nothing leaks.
 *
 * Threads.  Group/Coll events come from the launching thread, KernelCh from
 * the proxy thread; slot state changes are atomic, the free list is a
 * tagged lock-free stack.  Callbacks run inside an epoch section; finalize
 * unpublishes the context and waits a grace period before freeing it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "abi_profiler.h"
#include "epoch.h"
#include "host/host.h"
#include "plugin.h"

#define PROF_POOL      2048u
#define PROF_MAX_CTX   1024u
#define PROF_NONE      UINT32_MAX
#define PROF_STALE_NS  1000000000ull /* stopped Coll waiting this long for channels: complete */

enum { EV_FREE = 0, EV_LIVE = 1, EV_STOPPED = 2 };

struct pev {
	_Atomic uint32_t gen;      /* low 16 bits match the handle while the slot is in use */
	_Atomic uint32_t state;
	uint32_t type;             /* NBPF_PROF_* bit */
	uint32_t next_free;
	uint64_t parent;           /* KernelCh: parent Coll handle */
	/* Coll */
	uint64_t seq, bytes;
	int32_t coll, algo, proto;
	uint32_t nch, kch_expected;
	int32_t rank;              /* from the Coll descriptor (v1..v3 contexts know none) */
	_Atomic uint32_t kch_done;
	_Atomic int32_t refs;
	_Atomic uint32_t completed;
	uint64_t host_start;
	_Atomic uint64_t host_stop;
	_Atomic uint64_t gpu_start, gpu_stop;
	/* KernelCh */
	uint64_t k_start;
	_Atomic uint64_t k_stop;
};

struct pctx {
	int abi;
	uint32_t index, tag;
	uint64_t comm_id;
	int rank;
	uint32_t n_ranks;
	int *mask_ptr;             /* NCCL's process-global activation mask */
	bool kch_timing;           /* KernelCh carries timestamps (v4+) */
	struct nbpf_comm *comm;
	_Atomic uint64_t free_head; /* (aba tag << 32) | (slot + 1), 0 = empty */
	_Atomic uint32_t n_free;
	struct pev ev[PROF_POOL];
};

static pthread_mutex_t g_tab_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(struct pctx *) g_tab[PROF_MAX_CTX];
static uint32_t g_tab_tag[PROF_MAX_CTX];

/* ---- handles and the pool --------------------------------------------- */

static inline void *handle_make(const struct pctx *p, uint32_t idx, uint32_t gen)
{
	uint64_t h = ((uint64_t)(gen & 0xffff) << 48) | ((uint64_t)(p->tag & 0x3f) << 42) |
		     ((uint64_t)p->index << 32) | idx;

	return (void *)(uintptr_t)h;
}

/* Resolves a handle to its live context and slot; NULL when stale or foreign. */
static struct pev *handle_get(const void *handle, struct pctx **out)
{
	uint64_t h = (uint64_t)(uintptr_t)handle;
	uint32_t ci = (uint32_t)(h >> 32) & 0x3ff, idx = (uint32_t)h;
	struct pctx *p;
	struct pev *e;

	if (!h || ci >= PROF_MAX_CTX)
		return NULL;
	p = atomic_load_explicit(&g_tab[ci], memory_order_acquire);
	if (!p || (p->tag & 0x3f) != ((h >> 42) & 0x3f) || idx >= PROF_POOL)
		return NULL;
	e = &p->ev[idx];
	if ((atomic_load_explicit(&e->gen, memory_order_acquire) & 0xffff) != (h >> 48) ||
	    atomic_load_explicit(&e->state, memory_order_acquire) == EV_FREE)
		return NULL;
	*out = p;
	return e;
}

static uint32_t pool_pop(struct pctx *p)
{
	uint64_t head = atomic_load_explicit(&p->free_head, memory_order_acquire);

	for (;;) {
		uint32_t slot = (uint32_t)head;
		uint64_t next;

		if (!slot)
			return PROF_NONE;
		next = ((head >> 32) + 1) << 32 |
		       (p->ev[slot - 1].next_free == PROF_NONE ? 0 : p->ev[slot - 1].next_free + 1);
		if (atomic_compare_exchange_weak_explicit(&p->free_head, &head, next,
							  memory_order_acq_rel, memory_order_acquire)) {
			atomic_fetch_sub_explicit(&p->n_free, 1, memory_order_relaxed);
			return slot - 1;
		}
	}
}

/* Retires a slot: bumps its generation (stale handles stop matching) and frees it. */
static void pool_push(struct pctx *p, uint32_t idx)
{
	struct pev *e = &p->ev[idx];
	uint32_t g = atomic_load_explicit(&e->gen, memory_order_relaxed) + 1;
	uint64_t head;

	if (!(g & 0xffff))
		g++;
	atomic_store_explicit(&e->gen, g, memory_order_release);
	atomic_store_explicit(&e->state, EV_FREE, memory_order_release);
	head = atomic_load_explicit(&p->free_head, memory_order_acquire);
	do {
		uint32_t slot = (uint32_t)head;

		e->next_free = slot ? slot - 1 : PROF_NONE;
	} while (!atomic_compare_exchange_weak_explicit(&p->free_head, &head,
							((head >> 32) + 1) << 32 | (idx + 1),
							memory_order_acq_rel, memory_order_acquire));
	atomic_fetch_add_explicit(&p->n_free, 1, memory_order_relaxed);
}

/* ---- descriptor decoding ----------------------------------------------- */

static int dtype_size_name(const char *s)
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

static int dtype_size_enum(unsigned v)
{
	static const int sz[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };

	return v < sizeof(sz) / sizeof(sz[0]) ? sz[v] : 1;
}

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
	ci->dsize = dtype_size_name(dt);
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
		ci->dsize = dtype_size_enum(x->coll.datatype);
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

/* Runs every profiler program of the current image; caller is in an epoch section. */
static void run_programs(struct pctx *p, struct ncclbpf_coll_record *r)
{
	struct nbpf_image *img = atomic_load_explicit(&nbpf_host_published, memory_order_acquire);
	struct nbpf_comm *cm = p->comm;
	bool stats = nbpf_host_settings()->stats;

	if (!img)
		return;
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
	for (uint32_t i = 0; i < img->n_profilers; i++) {
		const struct nbpf_host_prog *hp = img->profilers[i];
		uint64_t t0 = stats ? nbpf_now_ns() : 0, ret;

		if (hp->func)
			hp->func(r, sizeof(*r));
		else
			ncclbpf_program__run(hp->prog, r, sizeof(*r), &ret);
		if (cm) {
			atomic_fetch_add_explicit(&cm->prog[hp->slot].runs, 1, memory_order_relaxed);
			if (stats)
				atomic_fetch_add_explicit(&cm->prog[hp->slot].ns, nbpf_now_ns() - t0,
							  memory_order_relaxed);
		}
	}
}

static void coll_complete(struct pctx *p, uint32_t idx)
{
	struct pev *e = &p->ev[idx];
	struct ncclbpf_coll_record r;
	uint64_t gs, gt, hs;
	uint32_t zero = 0;

	if (!atomic_compare_exchange_strong(&e->completed, &zero, 1))
		return;
	gs = atomic_load_explicit(&e->gpu_start, memory_order_acquire);
	gt = atomic_load_explicit(&e->gpu_stop, memory_order_acquire);
	hs = atomic_load_explicit(&e->host_stop, memory_order_acquire);
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
		r.latency_ns = hs > e->host_start ? hs - e->host_start : 0;
	}
	run_programs(p, &r);
	if (p->comm)
		telemetry_add(p->comm, &r);
	pool_push(p, idx);
}

static inline void coll_put(struct pctx *p, uint32_t idx)
{
	if (atomic_fetch_sub_explicit(&p->ev[idx].refs, 1, memory_order_acq_rel) == 1)
		coll_complete(p, idx);
}

/* Completes stopped Colls whose channels stopped reporting (or all, at finalize). */
static void sweep(struct pctx *p, bool all)
{
	uint64_t now = nbpf_now_ns();

	for (uint32_t i = 0; i < PROF_POOL; i++) {
		struct pev *e = &p->ev[i];
		uint64_t hs;

		if (atomic_load_explicit(&e->state, memory_order_acquire) != EV_STOPPED ||
		    e->type != NBPF_PROF_COLL)
			continue;
		hs = atomic_load_explicit(&e->host_stop, memory_order_acquire);
		if (all || (hs && now - hs > PROF_STALE_NS))
			coll_complete(p, i);
	}
}

/* ---- callbacks --------------------------------------------------------- */

/* Activation mask the current image needs (or NCCLBPF_PROFILER_MASK). */
static int wanted_mask(void)
{
	const struct nbpf_settings *s = nbpf_host_settings();
	struct nbpf_image *img;
	int m;

	if (s->profiler_mask >= 0)
		return s->profiler_mask;
	nbpf_epoch_enter();
	img = atomic_load_explicit(&nbpf_host_published, memory_order_acquire);
	m = img && img->n_profilers ? NBPF_PROF_COLL | NBPF_PROF_KERNEL_CH : NBPF_PROF_COLL;
	nbpf_epoch_exit();
	return m;
}

static nbpf_nccl_result_t start_event(struct pctx *p, int abi, void **handle, const void *d)
{
	uint32_t type, idx;
	struct pev *e;

	if (!handle)
		return NBPF_NCCL_SUCCESS;
	*handle = NULL;
	if (!p || !d)
		return NBPF_NCCL_SUCCESS;
	type = descr_type(abi, d);
	if (type != NBPF_PROF_COLL && type != NBPF_PROF_KERNEL_CH && type != NBPF_PROF_GROUP &&
	    type != NBPF_PROF_PROXY_OP && type != NBPF_PROF_PROXY_STEP)
		return NBPF_NCCL_SUCCESS; /* untracked: NCCL skips stop/record for it */
	if (type == NBPF_PROF_COLL) {
		int m = wanted_mask();

		if (p->mask_ptr && __atomic_load_n(p->mask_ptr, __ATOMIC_RELAXED) != m)
			__atomic_store_n(p->mask_ptr, m, __ATOMIC_RELAXED);
		if (atomic_load_explicit(&p->n_free, memory_order_relaxed) < PROF_POOL / 4)
			sweep(p, false);
	}
	idx = pool_pop(p);
	if (idx == PROF_NONE) {
		if (p->comm)
			atomic_fetch_add_explicit(&p->comm->events_dropped, 1, memory_order_relaxed);
		return NBPF_NCCL_SUCCESS;
	}
	e = &p->ev[idx];
	e->type = type;
	e->parent = 0;
	atomic_store_explicit(&e->completed, 0, memory_order_relaxed);
	if (type == NBPF_PROF_COLL) {
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
		e->kch_expected = p->kch_timing && p->mask_ptr &&
				  (__atomic_load_n(p->mask_ptr, __ATOMIC_RELAXED) & NBPF_PROF_KERNEL_CH) ?
				  ci.nch : 0;
		atomic_store_explicit(&e->kch_done, 0, memory_order_relaxed);
		atomic_store_explicit(&e->refs, 1 + (int32_t)e->kch_expected, memory_order_relaxed);
		atomic_store_explicit(&e->gpu_start, UINT64_MAX, memory_order_relaxed);
		atomic_store_explicit(&e->gpu_stop, 0, memory_order_relaxed);
		atomic_store_explicit(&e->host_stop, 0, memory_order_relaxed);
		e->host_start = nbpf_now_ns();
	} else if (type == NBPF_PROF_KERNEL_CH) {
		e->parent = (uint64_t)(uintptr_t)descr_parent(d);
		e->k_start = descr_kch_start(abi, d);
		atomic_store_explicit(&e->k_stop, 0, memory_order_relaxed);
	}
	atomic_store_explicit(&e->state, EV_LIVE, memory_order_release);
	*handle = handle_make(p, idx, atomic_load_explicit(&e->gen, memory_order_relaxed));
	return NBPF_NCCL_SUCCESS;
}

/* Folds a finished KernelCh span into its parent Coll and drops its reference. */
static void kch_finish(struct pev *k)
{
	struct pctx *pp;
	struct pev *c = handle_get((void *)(uintptr_t)k->parent, &pp);
	uint64_t ks = k->k_start, kt = atomic_load_explicit(&k->k_stop, memory_order_acquire);

	if (!c || c->type != NBPF_PROF_COLL ||
	    atomic_load_explicit(&c->completed, memory_order_acquire))
		return;
	if (ks && kt >= ks) {
		uint64_t cur = atomic_load_explicit(&c->gpu_start, memory_order_relaxed);

		while (ks < cur && !atomic_compare_exchange_weak(&c->gpu_start, &cur, ks))
			;
		cur = atomic_load_explicit(&c->gpu_stop, memory_order_relaxed);
		while (kt > cur && !atomic_compare_exchange_weak(&c->gpu_stop, &cur, kt))
			;
	}
	if (atomic_fetch_add_explicit(&c->kch_done, 1, memory_order_acq_rel) < c->kch_expected)
		coll_put(pp, (uint32_t)(c - pp->ev));
}

static nbpf_nccl_result_t stop_event(void *handle)
{
	struct pctx *p;
	struct pev *e;

	if (!handle)
		return NBPF_NCCL_SUCCESS;
	nbpf_epoch_enter();
	e = handle_get(handle, &p);
	if (e) {
		uint32_t live = EV_LIVE;

		if (e->type == NBPF_PROF_COLL) {
			if (atomic_compare_exchange_strong(&e->state, &live, EV_STOPPED)) {
				atomic_store_explicit(&e->host_stop, nbpf_now_ns(), memory_order_release);
				coll_put(p, (uint32_t)(e - p->ev));
			}
		} else if (atomic_compare_exchange_strong(&e->state, &live, EV_STOPPED)) {
			if (e->type == NBPF_PROF_KERNEL_CH)
				kch_finish(e);
			pool_push(p, (uint32_t)(e - p->ev));
		}
	}
	nbpf_epoch_exit();
	return NBPF_NCCL_SUCCESS;
}

static nbpf_nccl_result_t record_v4(void *handle, int state, nbpf_prof_state_args_v4_t *args)
{
	struct pctx *p;
	struct pev *e;

	if (!handle || state != NBPF_PROF_STATE_KERNEL_CH_STOP || !args)
		return NBPF_NCCL_SUCCESS;
	nbpf_epoch_enter();
	e = handle_get(handle, &p);
	if (e && e->type == NBPF_PROF_KERNEL_CH &&
	    atomic_load_explicit(&e->state, memory_order_acquire) == EV_LIVE)
		atomic_store_explicit(&e->k_stop, args->kernelCh.pTimer, memory_order_release);
	nbpf_epoch_exit();
	return NBPF_NCCL_SUCCESS;
}

/* v1..v3 carry no KernelCh timestamps; states only matter to the proxy events. */
static nbpf_nccl_result_t record_v1(void *handle, int state, nbpf_prof_state_args_v1_t *args)
{
	(void)handle; (void)state; (void)args;
	return NBPF_NCCL_SUCCESS;
}

static nbpf_nccl_result_t prof_init(void **ctx, int abi, uint64_t comm_id, int *mask,
				    int n_nodes, int n_ranks, int rank,
				    nbpf_nccl_logger_t logger)
{
	struct pctx *p = NULL;
	uint32_t slot = PROF_MAX_CTX;

	if (ctx)
		*ctx = NULL;
	nbpf_plugin_acquire(logger);
	if (!ctx)
		goto fail;
	p = calloc(1, sizeof(*p));
	if (!p)
		goto fail;
	pthread_mutex_lock(&g_tab_lock);
	for (uint32_t i = 0; i < PROF_MAX_CTX; i++)
		if (!atomic_load_explicit(&g_tab[i], memory_order_relaxed)) {
			slot = i;
			break;
		}
	if (slot < PROF_MAX_CTX) {
		p->index = slot;
		p->tag = ++g_tab_tag[slot];
	}
	pthread_mutex_unlock(&g_tab_lock);
	if (slot == PROF_MAX_CTX)
		goto fail;
	p->abi = abi;
	p->comm_id = comm_id;
	p->rank = rank;
	p->n_ranks = n_ranks > 0 ? (uint32_t)n_ranks : 0;
	p->mask_ptr = mask;
	p->kch_timing = abi >= 4;
	for (uint32_t i = 0; i < PROF_POOL; i++) {
		atomic_store_explicit(&p->ev[i].gen, 1, memory_order_relaxed);
		p->ev[i].next_free = i + 1 < PROF_POOL ? i + 1 : PROF_NONE;
	}
	atomic_store(&p->free_head, 1);
	atomic_store(&p->n_free, PROF_POOL);
	p->comm = nbpf_host_comm_add(NBPF_COMM_PROFILER, abi, comm_id, rank, p->n_ranks,
				     n_nodes > 0 ? (uint32_t)n_nodes : 0);
	if (mask)
		__atomic_store_n(mask, wanted_mask(), __ATOMIC_RELAXED);
	atomic_store_explicit(&g_tab[slot], p, memory_order_release);
	nbpf_host_log(NBPF_NCCL_LOG_INFO, NBPF_NCCL_INIT | NBPF_NCCL_PROFILE,
		      "profiler v%d ready for comm 0x%llx rank %d (mask 0x%x)", abi,
		      (unsigned long long)comm_id, rank, mask ? *mask : 0);
	*ctx = p;
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

static nbpf_nccl_result_t prof_finalize(void *ctx)
{
	struct pctx *p = ctx;

	if (!p)
		return NBPF_NCCL_SUCCESS;
	nbpf_epoch_enter();
	sweep(p, true);
	nbpf_epoch_exit();
	pthread_mutex_lock(&g_tab_lock);
	if (p->index < PROF_MAX_CTX && atomic_load(&g_tab[p->index]) == p)
		atomic_store_explicit(&g_tab[p->index], NULL, memory_order_release);
	pthread_mutex_unlock(&g_tab_lock);
	/* A callback of another thread may still be reading it. */
	if (!nbpf_epoch_in_section())
		nbpf_epoch_synchronize();
	nbpf_host_comm_remove(p->comm);
	free(p);
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
