/*
 * tuner.c - NCCL tuner plugin v2..v7: marshal getCollInfo into a struct
 * ncclbpf_tuner_ctx, run the image's tuner program, apply its outputs by the
 * rules of docs/nccl-plugin-abi.md §2.3-2.4.
 *
 * Every entry point returns ncclSuccess for policy problems (NCCL treats any
 * other result as fatal).  The hot path takes no lock, allocates nothing and
 * writes only this context's own memory (struct tuner_ctx, its struct
 * nbpf_comm and its epoch reader record).  It computes only the parts of the
 * program context the program can read (nbpf_prog_ctx_use, once per image)
 * and NCCL's pick only when needed; see docs/benchmarks.md for the costs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "abi_tuner.h"
#include "epoch.h"
#include "host/host.h"
#include "plugin.h"
#include "tuner_core.h"

/*
 * One per NCCL tuner context, on its own cache line(s): everything the hot
 * path reads is here or in the comm (also cache-line aligned), so two
 * communicators driven by two threads never write a shared line.
 */
struct tuner_ctx {
	_Alignas(64) struct nbpf_comm *comm; /* NULL if registration failed: no counters */
	/* Epoch reader record of this context: NCCL never calls one context
	 * concurrently, so its sections need no thread-local (NULL: use TLS). */
	struct nbpf_epoch_reader *rd;
	uint64_t calls;            /* owner-thread copy of comm->calls */
	uint64_t comm_id;
	uint32_t n_ranks, n_nodes;
	uint32_t nvl_domains, nvl_min, nvl_max;
	int abi;
	bool stats;                /* NCCLBPF_STATS=1: time program runs */
	unsigned ctx_use;          /* NBPF_CTX_* the program of image ana_gen may read */
	uint64_t ana_gen;          /* generation ctx_use was computed for (0: none) */
	struct nbpf_image_cache cache; /* image for calls below cache.until */
};

/* Creates a context; never fails for policy reasons (no policy = NCCL decides). */
static nbpf_nccl_result_t tuner_init_common(void **ctx, int abi, uint64_t comm_id,
					    size_t n_ranks, size_t n_nodes,
					    nbpf_nccl_logger_t logger,
					    const nbpf_nvl_domain_info_v5_t *nvl)
{
	struct tuner_ctx *t;

	if (!ctx)
		return NBPF_NCCL_INVALID_ARGUMENT;
	*ctx = NULL;
	t = aligned_alloc(_Alignof(struct tuner_ctx), sizeof(*t));
	if (!t)
		return NBPF_NCCL_SYSTEM_ERROR;
	memset(t, 0, sizeof(*t));
	nbpf_plugin_acquire(logger);
	t->abi = abi;
	t->comm_id = comm_id;
	t->cache.comm_id = comm_id; /* which images this comm follows */
	t->n_ranks = (uint32_t)n_ranks;
	t->n_nodes = (uint32_t)n_nodes;
	if (nvl) {
		t->nvl_domains = nvl->nNvlDomains > 0 ? (uint32_t)nvl->nNvlDomains : 0;
		t->nvl_min = nvl->minRanksPerNvlDomain > 0 ? (uint32_t)nvl->minRanksPerNvlDomain : 0;
		t->nvl_max = nvl->maxRanksPerNvlDomain > 0 ? (uint32_t)nvl->maxRanksPerNvlDomain : 0;
	}
	t->stats = nbpf_host_settings()->stats;
	t->rd = nbpf_epoch_reader_new();
	t->comm = nbpf_host_comm_add(NBPF_COMM_TUNER, abi, comm_id, -1, t->n_ranks, t->n_nodes);
	nbpf_host_log(NBPF_NCCL_LOG_INFO, NBPF_NCCL_INIT | NBPF_NCCL_TUNING,
		      "tuner v%d ready for comm 0x%llx (%u ranks, %u nodes)", abi,
		      (unsigned long long)comm_id, t->n_ranks, t->n_nodes);
	*ctx = t;
	return NBPF_NCCL_SUCCESS;
}

static void tuner_ctx_free(void *arg)
{
	struct tuner_ctx *t = arg;

	nbpf_epoch_reader_free(t->rd);
	free(t);
}

/*
 * NCCL makes destroy the last call on a context, but a getCollInfo still
 * in flight on another thread would be inside the context's section: the
 * context and its reader record go after a grace period, never under it.
 */
static nbpf_nccl_result_t tuner_fini(void *ctx)
{
	struct tuner_ctx *t = ctx;

	if (!t)
		return NBPF_NCCL_SUCCESS;
	nbpf_host_comm_remove(t->comm);
	if (nbpf_epoch_defer(tuner_ctx_free, t) && !nbpf_epoch_in_section()) {
		nbpf_epoch_synchronize(); /* nothing queued: wait instead */
		tuner_ctx_free(t);
	}
	nbpf_epoch_poll();
	nbpf_plugin_release();
	return NBPF_NCCL_SUCCESS;
}

static inline void bump(_Atomic uint64_t *v)
{
	atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* Per-program counters restart when the comm first runs a new image. */
static __attribute__((noinline, cold)) void stats_reset(struct nbpf_comm *cm, uint64_t gen)
{
	for (uint32_t i = 0; i < NBPF_HOST_MAX_PROGS; i++) {
		atomic_store_explicit(&cm->prog[i].runs, 0, memory_order_relaxed);
		atomic_store_explicit(&cm->prog[i].ns, 0, memory_order_relaxed);
	}
	atomic_store_explicit(&cm->stats_gen, gen, memory_order_relaxed);
	atomic_store_explicit(&cm->image_gen, gen, memory_order_relaxed);
}

/* Interpreted program (NCCLBPF_ENGINE=interp); out of line to keep the JIT path short. */
static __attribute__((noinline)) uint64_t run_interp(const struct nbpf_host_prog *hp, void *c,
						     uint64_t len)
{
	uint64_t ret;

	if (ncclbpf_program__run(hp->prog, c, len, &ret))
		return UINT64_MAX;
	return ret;
}

static inline void section_enter(struct tuner_ctx *t)
{
	if (__builtin_expect(t->rd != NULL, 1))
		nbpf_epoch_enter_rec(t->rd);
	else
		nbpf_epoch_enter();
}

static inline void section_exit(struct tuner_ctx *t)
{
	if (__builtin_expect(t->rd != NULL, 1))
		nbpf_epoch_exit_rec(t->rd);
	else
		nbpf_epoch_exit();
}

/*
 * Caches which parts of its context the image's tuner program can read
 * (the interpreter gets everything).  Once per comm and image: a few
 * microseconds on the first call after a reload.
 */
static __attribute__((noinline, cold)) void analyse_prog(struct tuner_ctx *t,
							  const struct nbpf_image *img,
							  const struct nbpf_host_prog *hp)
{
	t->ctx_use = !hp->func ? NBPF_CTX_ALL
			       : nbpf_prog_ctx_use(ncclbpf_program__insns(hp->prog),
						   ncclbpf_program__insn_count(hp->prog));
	t->ana_gen = img->generation;
}

/*
 * Enters an epoch section and finds the tuner program (chunk: the
 * SEC("tuner/chunk") program) the comm's image holds for call number seq:
 * from the comm's cache while no publish or activation intervenes (one
 * version compare and one call-number compare), else by walking the
 * chain.  NULL (section already left) when there is none: NCCL decides and
 * nothing else is computed.  Otherwise the caller fills the context and
 * calls prog_exec, which leaves the section.
 */
static inline __attribute__((always_inline)) const struct nbpf_host_prog *
tuner_begin(struct tuner_ctx *t, uint64_t seq, bool chunk)
{
	const struct nbpf_host_prog *hp;

	section_enter(t);
	if (__builtin_expect(!nbpf_host_cache_hit(&t->cache, seq), 0)) {
		const struct nbpf_image *img = nbpf_host_image_fill(&t->cache, seq);

		/* Whichever call refills the cache, the next getCollInfo hits it. */
		if (img && img->tuner && img->generation != t->ana_gen)
			analyse_prog(t, img, img->tuner);
	}
	hp = chunk ? t->cache.chunk : t->cache.tuner;
	if (!hp)
		section_exit(t);
	return hp;
}

/*
 * Runs hp (JIT entry func, NULL: interpreted) on c, counts the run and
 * leaves the section tuner_begin entered (the image and map values stay
 * alive until then).  The only indirect call is the JIT'd program; timing
 * (two clock reads) only with NCCLBPF_STATS=1.
 */
static inline __attribute__((always_inline)) uint64_t
prog_exec(struct tuner_ctx *t, const struct nbpf_host_prog *hp, ncclbpf_func_t func, void *c,
	  uint64_t len)
{
	struct nbpf_comm *cm = t->comm;
	uint64_t t0 = 0, ret;

	if (__builtin_expect(t->stats, 0))
		t0 = nbpf_stats_stamp();
	ret = __builtin_expect(func != NULL, 1) ? func(c, len) : run_interp(hp, c, len);
	if (cm) {
		if (__builtin_expect(atomic_load_explicit(&cm->stats_gen, memory_order_relaxed) !=
				     t->cache.gen, 0))
			stats_reset(cm, t->cache.gen);
		bump(&cm->prog[hp->slot].runs);
		if (__builtin_expect(t->stats, 0)) {
			_Atomic uint64_t *ns = &cm->prog[hp->slot].ns;

			atomic_store_explicit(ns, atomic_load_explicit(ns, memory_order_relaxed) +
					      (nbpf_stats_stamp() - t0), memory_order_relaxed);
		}
	}
	section_exit(t);
	return ret;
}

/*
 * Inside a job NCCL calls the tuner once per collective, milliseconds
 * apart (27 ms with 4 ranks sharing a GPU), and in between NCCL, CUDA and
 * the other ranks evict this call's lines and TLB entries.  Left alone,
 * each miss follows the one whose pointer it needs (the context, then the
 * program's code behind an indirect call the front end waits for, then
 * the counters): asked for at once, they overlap.  A few loads when warm;
 * a NULL or stale address only wastes its prefetch (prefetches never fault).
 */
static inline void tuner_prefetch(const struct tuner_ctx *t)
{
	const struct nbpf_comm *cm = t->comm;

	__builtin_prefetch((const void *)t->cache.func);
	__builtin_prefetch(t->cache.tuner);
	__builtin_prefetch(t->rd, 1);
	__builtin_prefetch(&nbpf_host_chain.v);
	if (cm) {
		__builtin_prefetch(&cm->calls, 1);
		__builtin_prefetch(&cm->applied, 1);
		__builtin_prefetch(&cm->prog[0], 1);
	}
}

/* Context of a program that never reads it: only what apply looks at. */
static inline void ctx_keep(struct ncclbpf_tuner_ctx *c)
{
	c->avail_mask = 0;
	c->nccl_algo = c->nccl_proto = -1;
	c->algo = c->proto = c->n_channels = NCCLBPF_KEEP;
}

/*
 * Fills the program context: every field is assigned (no memset), the
 * table-derived ones (avail_mask, NCCL's pick) by the caller.
 */
static inline void ctx_fill(struct tuner_ctx *t, struct ncclbpf_tuner_ctx *c, uint64_t seq,
			    int coll, size_t n_bytes, int num_pipe_ops, int reg_buff)
{
	c->n_bytes = n_bytes;
	c->comm_id = t->comm_id;
	c->call_seq = seq;
	c->coll_type = (uint32_t)coll;
	c->n_ranks = t->n_ranks;
	c->n_nodes = t->n_nodes;
	c->num_pipe_ops = num_pipe_ops > 0 ? (uint32_t)num_pipe_ops : 0;
	c->reg_buff = reg_buff ? 1 : 0;
	c->avail_mask = 0;
	c->nccl_algo = -1;
	c->nccl_proto = -1;
	c->nvl_domains = t->nvl_domains;
	c->min_ranks_per_nvl_domain = t->nvl_min;
	c->max_ranks_per_nvl_domain = t->nvl_max;
	c->abi_version = (uint32_t)t->abi;
	c->algo = NCCLBPF_KEEP;
	c->proto = NCCLBPF_KEEP;
	c->n_channels = NCCLBPF_KEEP;
	c->reserved = 0;
}
_Static_assert(sizeof(struct ncclbpf_tuner_ctx) == 88,
	       "ctx_fill assigns every field: update it with the struct");

static inline void count_call(struct tuner_ctx *t, int coll)
{
	struct nbpf_comm *cm = t->comm;

	t->calls++;
	if (cm)
		bump(&cm->coll_calls[(unsigned)coll < NCCLBPF_NUM_COLLS ? (unsigned)coll
									 : NCCLBPF_NUM_COLLS]);
}

/*
 * Publishes the call count once this call's image has been chosen.  The
 * host prunes an image's activation (at_call := 0, prev := NULL) once every
 * comm's count has reached it; publishing before the choice would let a
 * prune between the two switch this call to the new image one call early,
 * and this rank would disagree with the others.
 */
static inline nbpf_nccl_result_t calls_done(struct tuner_ctx *t)
{
	if (t->comm)
		atomic_store_explicit(&t->comm->calls, t->calls, memory_order_release);
	return NBPF_NCCL_SUCCESS;
}

static inline void count_outcome(struct tuner_ctx *t, const struct nbpf_tuner_outcome *o)
{
	struct nbpf_comm *cm = t->comm;

	if (!cm)
		return;
	if (o->skipped)
		bump(&cm->skipped);
	if (o->applied)
		bump(&cm->applied);
	if (__builtin_expect(o->refused != 0, 0))
		for (int i = 0; i < NBPF_REFUSE_COUNT; i++)
			if (o->refused & (1u << i))
				bump(&cm->refused[i]);
}

/* v3+ shape: the cost table. */
static nbpf_nccl_result_t get_coll_info_table(void *ctx, int coll, size_t n_bytes,
					      int num_pipe_ops, float **table, int num_algo,
					      int num_proto, int reg_buff, int *n_channels)
{
	struct tuner_ctx *t = ctx;
	struct ncclbpf_tuner_ctx c;
	struct nbpf_tuner_outcome o;
	const struct nbpf_host_prog *hp;
	uint64_t ret, seq;

	if (!t)
		return NBPF_NCCL_SUCCESS;
	tuner_prefetch(t);
	seq = t->calls;
	count_call(t, coll);
	if (!table || num_algo <= 0 || num_proto <= 0)
		return calls_done(t);
	if (!(hp = tuner_begin(t, seq, false)))
		return calls_done(t);
	/* Compute only what the program can read ... */
	if (t->ctx_use) {
		ctx_fill(t, &c, seq, coll, n_bytes, num_pipe_ops, reg_buff);
		if (t->ctx_use & NBPF_CTX_PICK)
			nbpf_tuner_table_scan((float *)table, num_algo, num_proto, &c);
		else if (t->ctx_use & NBPF_CTX_MASK)
			nbpf_tuner_mask_scan((float *)table, num_algo, num_proto, &c);
	} else {
		ctx_keep(&c);
	}
	ret = prog_exec(t, hp, t->cache.func, &c, sizeof(c));
	/* ... and the rest only when applying an output depends on it. */
	if (t->ctx_use & NBPF_CTX_PICK)
		nbpf_tuner_apply_table(&c, ret, (float *)table, num_algo, num_proto, n_channels, &o);
	else
		nbpf_tuner_apply_table_unscanned(&c, ret, (float *)table, num_algo, num_proto,
						 n_channels, &o);
	count_outcome(t, &o);
	return calls_done(t);
}

static nbpf_nccl_result_t get_coll_info_v3(void *ctx, int coll, size_t n_bytes,
					   int num_pipe_ops, float **table, int num_algo,
					   int num_proto, int *n_channels)
{
	return get_coll_info_table(ctx, coll, n_bytes, num_pipe_ops, table, num_algo, num_proto,
				   0, n_channels);
}

/* v2 shape: support flags in, algorithm/protocol out. */
static nbpf_nccl_result_t get_coll_info_v2(void *ctx, int coll, size_t n_bytes,
					   int coll_net, int nvls, int num_pipe_ops,
					   int *algorithm, int *protocol, int *n_channels)
{
	struct tuner_ctx *t = ctx;
	struct ncclbpf_tuner_ctx c;
	struct nbpf_tuner_outcome o;
	const struct nbpf_host_prog *hp;
	uint64_t ret, seq;

	if (!t)
		return NBPF_NCCL_SUCCESS;
	seq = t->calls;
	count_call(t, coll);
	if (!(hp = tuner_begin(t, seq, false)))
		return calls_done(t);
	ctx_fill(t, &c, seq, coll, n_bytes, num_pipe_ops, 0);
	c.avail_mask = nbpf_tuner_v2_mask(coll_net, nvls);
	c.nccl_algo = algorithm && *algorithm >= 0 && *algorithm < NCCLBPF_NUM_ALGOS ? *algorithm : -1;
	c.nccl_proto = protocol && *protocol >= 0 && *protocol < NCCLBPF_NUM_PROTOS ? *protocol : -1;
	if (c.nccl_algo < 0 || c.nccl_proto < 0)
		c.nccl_algo = c.nccl_proto = -1;
	ret = prog_exec(t, hp, t->cache.func, &c, sizeof(c));
	nbpf_tuner_apply_v2(&c, ret, algorithm, protocol, n_channels, &o);
	count_outcome(t, &o);
	return calls_done(t);
}

/*
 * getChunkSize (v6+): NCCL has planned a collective (or one channel's part
 * of it) and proposes *chunk; the chunk program may replace it.  NCCL makes
 * these calls on the thread that made the group's getCollInfo calls, after
 * them, in the same order on every rank.  The image is the one the next
 * getCollInfo will use (call number t->calls): that image cannot be pruned
 * from under this rank while another rank still uses an older one, because
 * the host prunes an activation only once every comm's count has passed it.
 */
static nbpf_nccl_result_t get_chunk_size(void *ctx, int coll, size_t n_bytes, int algo,
					 int proto, int n_channels, size_t *chunk)
{
	struct tuner_ctx *t = ctx;
	struct ncclbpf_chunk_ctx c;
	struct nbpf_tuner_outcome o;
	const struct nbpf_host_prog *hp;
	uint64_t ret;

	if (!t || !chunk)
		return NBPF_NCCL_SUCCESS;
	if (t->comm)
		bump(&t->comm->chunk_calls);
	if (!(hp = tuner_begin(t, t->calls, true)))
		return NBPF_NCCL_SUCCESS;
	c.n_bytes = n_bytes;
	c.comm_id = t->comm_id;
	c.call_seq = t->calls;
	c.coll_type = (uint32_t)coll;
	c.n_ranks = t->n_ranks;
	c.n_nodes = t->n_nodes;
	c.algo = algo;
	c.proto = proto;
	c.n_channels = n_channels > 0 ? (uint32_t)n_channels : 0;
	c.nccl_chunk = *chunk > UINT32_MAX ? UINT32_MAX : (uint32_t)*chunk;
	c.grain = nbpf_proto_grain(proto);
	c.abi_version = (uint32_t)t->abi;
	c.chunk_size = NCCLBPF_KEEP;
	ret = prog_exec(t, hp, t->cache.chunk_func, &c, sizeof(c));
	nbpf_chunk_apply(&c, ret, chunk, &o);
	if (t->comm) {
		if (o.applied)
			bump(&t->comm->chunk_applied);
		o.applied = false; /* `applied` counts getCollInfo tables */
		count_outcome(t, &o);
	}
	return NBPF_NCCL_SUCCESS;
}
_Static_assert(sizeof(struct ncclbpf_chunk_ctx) == 64,
	       "get_chunk_size assigns every field: update it with the struct");

static nbpf_nccl_result_t init_v2(size_t n_ranks, size_t n_nodes, nbpf_nccl_logger_t logger,
				  void **ctx)
{
	return tuner_init_common(ctx, 2, 0, n_ranks, n_nodes, logger, NULL);
}

static nbpf_nccl_result_t init_v3(size_t n_ranks, size_t n_nodes, nbpf_nccl_logger_t logger,
				  void **ctx)
{
	return tuner_init_common(ctx, 3, 0, n_ranks, n_nodes, logger, NULL);
}

static nbpf_nccl_result_t init_v4(size_t n_ranks, size_t n_nodes, nbpf_nccl_logger_t logger,
				  void **ctx)
{
	return tuner_init_common(ctx, 4, 0, n_ranks, n_nodes, logger, NULL);
}

static nbpf_nccl_result_t init_v5(void **ctx, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
				  nbpf_nccl_logger_t logger, nbpf_nvl_domain_info_v5_t *nvl,
				  nbpf_tuner_constants_v5_t *constants)
{
	(void)constants; /* NCCL's defaults stand */
	return tuner_init_common(ctx, 5, comm_id, n_ranks, n_nodes, logger, nvl);
}

static nbpf_nccl_result_t init_v6(void **ctx, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
				  nbpf_nccl_logger_t logger, nbpf_nvl_domain_info_v5_t *nvl,
				  nbpf_tuner_constants_v5_t *constants)
{
	(void)constants;
	return tuner_init_common(ctx, 6, comm_id, n_ranks, n_nodes, logger, nvl);
}

static nbpf_nccl_result_t init_v7(void **ctx, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
				  nbpf_nccl_logger_t logger, nbpf_nvl_domain_info_v5_t *nvl,
				  nbpf_tuner_constants_v7_t *constants)
{
	(void)constants;
	return tuner_init_common(ctx, 7, comm_id, n_ranks, n_nodes, logger, nvl);
}

NBPF_EXPORT const nbpf_tuner_v2_t ncclTunerPlugin_v2 = {
	.name = "ncclbpf", .init = init_v2, .getCollInfo = get_coll_info_v2, .destroy = tuner_fini,
};
NBPF_EXPORT const nbpf_tuner_v3_t ncclTunerPlugin_v3 = {
	.name = "ncclbpf", .init = init_v3, .getCollInfo = get_coll_info_v3, .destroy = tuner_fini,
};
NBPF_EXPORT const nbpf_tuner_v4_t ncclTunerPlugin_v4 = {
	.name = "ncclbpf", .init = init_v4, .getCollInfo = get_coll_info_table, .destroy = tuner_fini,
};
NBPF_EXPORT const nbpf_tuner_v5_t ncclTunerPlugin_v5 = {
	.name = "ncclbpf", .init = init_v5, .getCollInfo = get_coll_info_table, .finalize = tuner_fini,
};
NBPF_EXPORT const nbpf_tuner_v6_t ncclTunerPlugin_v6 = {
	.name = "ncclbpf", .init = init_v6, .getCollInfo = get_coll_info_table, .finalize = tuner_fini,
	.getChunkSize = get_chunk_size,
};
NBPF_EXPORT const nbpf_tuner_v7_t ncclTunerPlugin_v7 = {
	.name = "ncclbpf", .init = init_v7, .getCollInfo = get_coll_info_table, .finalize = tuner_fini,
	.getChunkSize = get_chunk_size,
};
