/*
 * tuner_core.h - the tuner adapter's pure parts: reading NCCL's cost table
 * (which cells are offered, which one NCCL would pick) and applying a
 * program's outputs.  Header-only so the hot path inlines them; no state.
 *
 * Rules (docs/nccl-plugin-abi.md §2.3-2.4, docs/nccl-adapters.md):
 *   - a cell is offered when its cost is not IGNORE (-1.0) and is >= 0
 *     (NaN and other negatives are never chosen by NCCL either);
 *   - NCCL's pick: scan algorithms 0..numAlgo-1, protocols 0..numProto-1,
 *     take a value >= 0 strictly below the running minimum, starting at
 *     3.6e9 (NCCL 2.28.x; from 2.29.2 the start is FLT_MAX, which only
 *     differs for costs >= 3.6e9 -- NBPF_TUNER_START_MIN selects it);
 *   - algo and proto both set: that cell, if offered, becomes 0.0;
 *     one set: the cheapest offered cell of that row/column becomes 0.0;
 *     an IGNORE cell is never written;
 *   - n_channels 1..64 replaces *nChannels except for CollNet algorithms
 *     (NCCL uses the value verbatim there, and the plugin cannot know the
 *     communicator's channel count);
 *   - anything else is refused (bit in outcome.refused) and NCCL's choice
 *     stands;
 *   - getChunkSize: a chunk size of at least the protocol's grain replaces
 *     NCCL's (nbpf_chunk_apply).
 */
#ifndef NCCLBPF_TUNER_CORE_H
#define NCCLBPF_TUNER_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "abi_tuner.h"
#include "host/host.h"
#include "insn.h"
#include "ncclbpf/policy.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#ifndef NBPF_TUNER_START_MIN
#define NBPF_TUNER_START_MIN NBPF_NCCL_COST_START_MIN
#endif

struct nbpf_tuner_outcome {
	bool applied;      /* the table / outputs were changed */
	bool skipped;      /* the program returned SKIP */
	uint32_t refused;  /* 1u << enum nbpf_refuse */
};

static inline bool nbpf_cost_offered(float v)
{
	return v != NBPF_NCCL_ALGO_PROTO_IGNORE && v >= 0.0f;
}

/*
 * Pick NCCL would make from table (exactly its scan); algo and proto = -1
 * when nothing is selectable.
 */
static inline void nbpf_tuner_nccl_pick(const float *table, int num_algo, int num_proto,
					int *algo, int *proto)
{
	float min = NBPF_TUNER_START_MIN;

	*algo = *proto = -1;
	for (int a = 0; a < num_algo; a++)
		for (int p = 0; p < num_proto; p++) {
			float v = table[a * num_proto + p];

			if (v == NBPF_NCCL_ALGO_PROTO_IGNORE)
				continue;
			if (v >= 0.0f && v < min) {
				min = v;
				*algo = a;
				*proto = p;
			}
		}
}

/*
 * Any shape: avail_mask and NCCL's pick in one scalar pass.  A cell is
 * offered exactly when v >= 0 (IGNORE is -1.0, NaN compares false), and the
 * pick takes the first offered cell strictly below the running minimum.
 */
static inline void nbpf_tuner_scan_any(const float *table, int num_algo, int num_proto,
				       struct ncclbpf_tuner_ctx *c)
{
	float min = NBPF_TUNER_START_MIN;
	uint32_t mask = 0;
	int algo = -1, proto = -1;

	for (int a = 0; a < num_algo; a++)
		for (int p = 0; p < num_proto; p++) {
			float v = table[a * num_proto + p];

			if (!(v >= 0.0f))
				continue;
			if (a < NCCLBPF_NUM_ALGOS && p < NCCLBPF_NUM_PROTOS)
				mask |= NCCLBPF_CELL(a, p);
			if (v < min) {
				min = v;
				algo = a;
				proto = p;
			}
		}
	c->avail_mask = mask;
	c->nccl_algo = algo;
	c->nccl_proto = proto;
}

#if defined(__SSE2__)
/* Bits 0..20 from the sign masks of six 4-lane compares (lanes 21..23 dropped). */
#define NBPF_BITS21(m0, m1, m2, m3, m4, m5)                                           \
	((uint32_t)_mm_movemask_ps(m0) | (uint32_t)_mm_movemask_ps(m1) << 4 |          \
	 (uint32_t)_mm_movemask_ps(m2) << 8 | (uint32_t)_mm_movemask_ps(m3) << 12 |    \
	 (uint32_t)_mm_movemask_ps(m4) << 16 | ((uint32_t)_mm_movemask_ps(m5) & 1u) << 20)

/*
 * NCCL's own shape (7 algorithms x 3 protocols: 21 contiguous floats, bit i
 * of avail_mask is cell i) without a branch per cell: the costs of one
 * size change from call to call, so per-cell branches mispredict.  Offered
 * cells come from one compare per 4 cells; the pick is the horizontal
 * minimum of the offered costs (others replaced by the start value) and,
 * when it is below the start value, the first cell equal to it -- the
 * first strict minimum in scan order, which is what NCCL's loop finds.
 * Plain variables rather than arrays keep everything in registers.
 */
static inline void nbpf_tuner_scan21(const float *table, struct ncclbpf_tuner_ctx *c)
{
	const __m128 zero = _mm_setzero_ps(), start = _mm_set1_ps(NBPF_TUNER_START_MIN);
	__m128 v0 = _mm_loadu_ps(table), v1 = _mm_loadu_ps(table + 4);
	__m128 v2 = _mm_loadu_ps(table + 8), v3 = _mm_loadu_ps(table + 12);
	__m128 v4 = _mm_loadu_ps(table + 16);
	__m128 v5 = _mm_move_ss(_mm_set1_ps(NBPF_NCCL_ALGO_PROTO_IGNORE), _mm_load_ss(table + 20));
	__m128 o0 = _mm_cmpge_ps(v0, zero), o1 = _mm_cmpge_ps(v1, zero);
	__m128 o2 = _mm_cmpge_ps(v2, zero), o3 = _mm_cmpge_ps(v3, zero);
	__m128 o4 = _mm_cmpge_ps(v4, zero), o5 = _mm_cmpge_ps(v5, zero);
#define NBPF_KEEP_OFFERED(v, o) _mm_or_ps(_mm_and_ps(o, v), _mm_andnot_ps(o, start))
	__m128 w0 = NBPF_KEEP_OFFERED(v0, o0), w1 = NBPF_KEEP_OFFERED(v1, o1);
	__m128 w2 = NBPF_KEEP_OFFERED(v2, o2), w3 = NBPF_KEEP_OFFERED(v3, o3);
	__m128 w4 = NBPF_KEEP_OFFERED(v4, o4), w5 = NBPF_KEEP_OFFERED(v5, o5);
#undef NBPF_KEEP_OFFERED
	__m128 mn = _mm_min_ps(_mm_min_ps(_mm_min_ps(w0, w1), _mm_min_ps(w2, w3)),
			       _mm_min_ps(w4, w5));
	uint32_t mask = NBPF_BITS21(o0, o1, o2, o3, o4, o5), eq;
	int i;

	mn = _mm_min_ps(mn, _mm_shuffle_ps(mn, mn, _MM_SHUFFLE(1, 0, 3, 2)));
	mn = _mm_min_ps(mn, _mm_shuffle_ps(mn, mn, _MM_SHUFFLE(2, 3, 0, 1)));
	/* Lanes equal to the minimum; none is offered when it is not below start. */
	eq = NBPF_BITS21(_mm_cmpeq_ps(w0, mn), _mm_cmpeq_ps(w1, mn), _mm_cmpeq_ps(w2, mn),
			 _mm_cmpeq_ps(w3, mn), _mm_cmpeq_ps(w4, mn), _mm_cmpeq_ps(w5, mn));
	eq &= mask & -(uint32_t)(_mm_comilt_ss(mn, start) != 0);
	c->avail_mask = mask;
	i = eq ? __builtin_ctz(eq) : -1;
	c->nccl_algo = i >= 0 ? i / NCCLBPF_NUM_PROTOS : -1;
	c->nccl_proto = i >= 0 ? i % NCCLBPF_NUM_PROTOS : -1;
}
#undef NBPF_BITS21
#endif

/* Fills avail_mask only (NCCL's pick left as it is): for programs that read
 * the mask but not the pick. */
static inline void nbpf_tuner_mask_scan(const float *table, int num_algo, int num_proto,
					struct ncclbpf_tuner_ctx *c)
{
#if defined(__SSE2__)
	if (__builtin_expect(num_algo == NCCLBPF_NUM_ALGOS && num_proto == NCCLBPF_NUM_PROTOS, 1)) {
		const __m128 zero = _mm_setzero_ps();
		uint32_t m = (uint32_t)_mm_movemask_ps(_mm_cmpge_ps(_mm_loadu_ps(table), zero)) |
			     (uint32_t)_mm_movemask_ps(_mm_cmpge_ps(_mm_loadu_ps(table + 4), zero)) << 4 |
			     (uint32_t)_mm_movemask_ps(_mm_cmpge_ps(_mm_loadu_ps(table + 8), zero)) << 8 |
			     (uint32_t)_mm_movemask_ps(_mm_cmpge_ps(_mm_loadu_ps(table + 12), zero)) << 12 |
			     (uint32_t)_mm_movemask_ps(_mm_cmpge_ps(_mm_loadu_ps(table + 16), zero)) << 16;

		c->avail_mask = m | (uint32_t)(table[20] >= 0.0f) << 20;
		return;
	}
#endif
	{
		int algo = c->nccl_algo, proto = c->nccl_proto;

		nbpf_tuner_scan_any(table, num_algo, num_proto, c);
		c->nccl_algo = algo;
		c->nccl_proto = proto;
	}
}

/* Fills avail_mask and NCCL's pick in c from table. */
static inline void nbpf_tuner_table_scan(const float *table, int num_algo, int num_proto,
					 struct ncclbpf_tuner_ctx *c)
{
#if defined(__SSE2__)
	if (__builtin_expect(num_algo == NCCLBPF_NUM_ALGOS && num_proto == NCCLBPF_NUM_PROTOS, 1)) {
		nbpf_tuner_scan21(table, c);
		return;
	}
#endif
	nbpf_tuner_scan_any(table, num_algo, num_proto, c);
}

/*
 * Cells a v2 tuner may name (NCCL's v2 adaptor writes 0.0 into the named
 * cell unless it is IGNORE, so the flags are all we know): Tree and Ring
 * with every protocol, CollNet Direct/Chain Simple with collNetSupport,
 * NVLS and NVLS Tree Simple with nvlsSupport.  PAT is never offered (v2
 * predates it).
 */
static inline uint32_t nbpf_tuner_v2_mask(int coll_net, int nvls)
{
	uint32_t m = 0;

	for (int p = 0; p < NCCLBPF_NUM_PROTOS; p++)
		m |= NCCLBPF_CELL(NCCLBPF_ALGO_TREE, p) | NCCLBPF_CELL(NCCLBPF_ALGO_RING, p);
	if (coll_net)
		m |= NCCLBPF_CELL(NCCLBPF_ALGO_COLLNET_DIRECT, NCCLBPF_PROTO_SIMPLE) |
		     NCCLBPF_CELL(NCCLBPF_ALGO_COLLNET_CHAIN, NCCLBPF_PROTO_SIMPLE);
	if (nvls)
		m |= NCCLBPF_CELL(NCCLBPF_ALGO_NVLS, NCCLBPF_PROTO_SIMPLE) |
		     NCCLBPF_CELL(NCCLBPF_ALGO_NVLS_TREE, NCCLBPF_PROTO_SIMPLE);
	return m;
}

static inline bool nbpf_is_collnet(int algo)
{
	return algo == NCCLBPF_ALGO_COLLNET_DIRECT || algo == NCCLBPF_ALGO_COLLNET_CHAIN;
}

/* Return value check shared by both shapes; false = nothing to apply. */
static inline bool nbpf_tuner_ret_ok(uint64_t ret, struct nbpf_tuner_outcome *o)
{
	o->applied = o->skipped = false;
	o->refused = 0;
	if (ret == NCCLBPF_TUNER_SKIP) {
		o->skipped = true;
		return false;
	}
	if (ret != NCCLBPF_TUNER_APPLY) {
		o->refused |= 1u << (ret == UINT64_MAX ? NBPF_REFUSE_ERROR : NBPF_REFUSE_RETURN);
		return false;
	}
	return true;
}

/* n_channels for the algorithm NCCL will run (final_algo). */
static inline void nbpf_tuner_apply_channels(const struct ncclbpf_tuner_ctx *c, int final_algo,
					     int *n_channels, struct nbpf_tuner_outcome *o)
{
	if (c->n_channels == NCCLBPF_KEEP || !n_channels)
		return;
	if (c->n_channels < 1 || c->n_channels > 64)
		o->refused |= 1u << NBPF_REFUSE_CHANNELS;
	else if (nbpf_is_collnet(final_algo))
		o->refused |= 1u << NBPF_REFUSE_COLLNET_CHANNELS;
	else {
		*n_channels = c->n_channels;
		o->applied = true;
	}
}

/* v3+ shape: edits the cost table and *n_channels. */
static inline void nbpf_tuner_apply_table(const struct ncclbpf_tuner_ctx *c, uint64_t ret,
					  float *table, int num_algo, int num_proto,
					  int *n_channels, struct nbpf_tuner_outcome *o)
{
	int a = c->algo, p = c->proto, final_algo = c->nccl_algo;

	if (!nbpf_tuner_ret_ok(ret, o))
		return;
	if (a != NCCLBPF_KEEP || p != NCCLBPF_KEEP) {
		bool range_ok = (a == NCCLBPF_KEEP || (a >= 0 && a < NCCLBPF_NUM_ALGOS && a < num_algo)) &&
				(p == NCCLBPF_KEEP || (p >= 0 && p < NCCLBPF_NUM_PROTOS && p < num_proto));

		if (!range_ok) {
			o->refused |= 1u << NBPF_REFUSE_RANGE;
		} else {
			int best_a = -1, best_p = -1;
			float best = 0.0f;

			/* Cheapest offered cell matching the set outputs (exact cell when both set). */
			for (int i = 0; i < num_algo && i < NCCLBPF_NUM_ALGOS; i++) {
				if (a != NCCLBPF_KEEP && i != a)
					continue;
				for (int j = 0; j < num_proto && j < NCCLBPF_NUM_PROTOS; j++) {
					float v;

					if (p != NCCLBPF_KEEP && j != p)
						continue;
					if (!(c->avail_mask & NCCLBPF_CELL(i, j)))
						continue;
					v = table[i * num_proto + j];
					if (best_a < 0 || v < best) {
						best = v;
						best_a = i;
						best_p = j;
					}
				}
			}
			if (best_a < 0) {
				o->refused |= 1u << NBPF_REFUSE_CELL;
			} else {
				table[best_a * num_proto + best_p] = 0.0f;
				final_algo = best_a;
				o->applied = true;
			}
		}
	}
	nbpf_tuner_apply_channels(c, final_algo, n_channels, o);
}

/*
 * nbpf_tuner_apply_table for a program that did not read NCCL's pick, so
 * c->nccl_algo/nccl_proto (and, when it did not read it either, avail_mask)
 * are not filled.  The common answer -- both algo and proto set, naming an
 * offered cell -- depends on that one cell only: it becomes 0.0 and the
 * channel bound checks against that algorithm, with no scan of the table.
 * A channel count alone depends on NCCL's pick only through the CollNet
 * rule, so it needs no pick when no CollNet cell is offered.  Anything
 * else (one of the two set, a cell that is not offered, channels with a
 * CollNet cell offered) scans first and takes the full path.  Same decisions as scan + apply_table
 * (tests/tuner/test_tuner_core.c checks it on random tables).
 */
static inline void nbpf_tuner_apply_table_unscanned(struct ncclbpf_tuner_ctx *c, uint64_t ret,
						    float *table, int num_algo, int num_proto,
						    int *n_channels, struct nbpf_tuner_outcome *o)
{
	int a = c->algo, p = c->proto;

	if (a == NCCLBPF_KEEP && p == NCCLBPF_KEEP && c->n_channels == NCCLBPF_KEEP) {
		nbpf_tuner_ret_ok(ret, o); /* nothing to apply, nothing to read */
		return;
	}
	if (a == NCCLBPF_KEEP && p == NCCLBPF_KEEP) {
		/* Channels only: NCCL's pick matters only if it could be a CollNet cell. */
		bool collnet = false;

		for (int i = 0; i < num_algo && i < NCCLBPF_NUM_ALGOS; i++)
			for (int j = 0; nbpf_is_collnet(i) && j < num_proto; j++)
				collnet |= nbpf_cost_offered(table[i * num_proto + j]);
		if (!collnet) {
			if (nbpf_tuner_ret_ok(ret, o))
				nbpf_tuner_apply_channels(c, -1, n_channels, o);
			return;
		}
	} else if (a >= 0 && a < NCCLBPF_NUM_ALGOS && a < num_algo && p >= 0 &&
		   p < NCCLBPF_NUM_PROTOS && p < num_proto &&
		   nbpf_cost_offered(table[a * num_proto + p])) {
		if (!nbpf_tuner_ret_ok(ret, o))
			return;
		table[a * num_proto + p] = 0.0f;
		o->applied = true;
		nbpf_tuner_apply_channels(c, a, n_channels, o);
		return;
	}
	nbpf_tuner_table_scan(table, num_algo, num_proto, c);
	nbpf_tuner_apply_table(c, ret, table, num_algo, num_proto, n_channels, o);
}

/* v2 shape: writes the algorithm and protocol out-pointers (both or neither). */
static inline void nbpf_tuner_apply_v2(const struct ncclbpf_tuner_ctx *c, uint64_t ret,
				       int *algorithm, int *protocol, int *n_channels,
				       struct nbpf_tuner_outcome *o)
{
	int a = c->algo, p = c->proto, final_algo = c->nccl_algo;

	if (!nbpf_tuner_ret_ok(ret, o))
		return;
	if (a != NCCLBPF_KEEP || p != NCCLBPF_KEEP) {
		if (a == NCCLBPF_KEEP || p == NCCLBPF_KEEP || a < 0 || a >= NCCLBPF_NUM_ALGOS ||
		    p < 0 || p >= NCCLBPF_NUM_PROTOS)
			/* v2 has no costs to complete a half answer with. */
			o->refused |= 1u << (a == NCCLBPF_KEEP || p == NCCLBPF_KEEP ?
					     NBPF_REFUSE_CELL : NBPF_REFUSE_RANGE);
		else if (!(c->avail_mask & NCCLBPF_CELL(a, p)) || !algorithm || !protocol)
			o->refused |= 1u << NBPF_REFUSE_CELL;
		else {
			*algorithm = a;
			*protocol = p;
			final_algo = a;
			o->applied = true;
		}
	}
	nbpf_tuner_apply_channels(c, final_algo, n_channels, o);
}

/*
 * The grain NCCL rounds a chunk size down to (ncclProtoGrainSize in
 * NCCL's device.h): LL 16 bytes, LL128 32 x 8 / 16 x 15 x 8 = 1920, Simple
 * 512; 0 for anything else.
 */
static inline uint32_t nbpf_proto_grain(int proto)
{
	return proto == NCCLBPF_PROTO_LL ? 16u : proto == NCCLBPF_PROTO_LL128 ? 1920u :
	       proto == NCCLBPF_PROTO_SIMPLE ? 512u : 0u;
}

/*
 * getChunkSize (tuner v6+): c->chunk_size replaces *chunk when it is at
 * least one grain of the protocol.  NCCL itself lowers the answer to what
 * its buffers hold and rounds it down to a multiple of the grain
 * (calcCollChunking in enqueue.cc), so larger values are safe as they are;
 * a smaller one would round down to 0, and NCCL divides by the chunk size,
 * so it is refused (NBPF_REFUSE_RANGE) and NCCL's chunk stands.
 */
static inline void nbpf_chunk_apply(const struct ncclbpf_chunk_ctx *c, uint64_t ret,
				    size_t *chunk, struct nbpf_tuner_outcome *o)
{
	if (!nbpf_tuner_ret_ok(ret, o) || c->chunk_size == NCCLBPF_KEEP)
		return;
	if (!c->grain || c->chunk_size < 0 || (uint32_t)c->chunk_size < c->grain)
		o->refused |= 1u << NBPF_REFUSE_RANGE;
	else {
		*chunk = (size_t)c->chunk_size;
		o->applied = true;
	}
}

/* ---- which parts of its context does a program read? ---------------------- */

/* nbpf_prog_ctx_use bits. */
#define NBPF_CTX_FIELDS 1u  /* reads some field: fill the context */
#define NBPF_CTX_MASK   2u  /* reads avail_mask: scan the table for it */
#define NBPF_CTX_PICK   4u  /* reads nccl_algo/nccl_proto: NCCL's pick too */
#define NBPF_CTX_ALL    7u

#define NBPF_CTX_SCAN_MAX 4096
#define NBPF_CTX_SEEN     0x8000u /* st[i]: insn i reached */

static inline unsigned nbpf_ctx_range_use(long off, long size)
{
	const long m = (long)offsetof(struct ncclbpf_tuner_ctx, avail_mask);
	const long p = (long)offsetof(struct ncclbpf_tuner_ctx, nccl_algo);
	unsigned use = NBPF_CTX_FIELDS;

	if (off < m + 4 && off + size > m)
		use |= NBPF_CTX_MASK;
	if (off < p + 8 && off + size > p)
		use |= NBPF_CTX_PICK;
	return use;
}

/*
 * Conservative answer to "which context bytes can the program load?", so
 * the adapter computes only what can be read: nothing at all (not even the
 * context) for a program that never touches it, no cost-table scan for one
 * that never reads avail_mask or NCCL's pick.  A forward data flow over the
 * control flow graph tracks which registers may hold the context pointer
 * (r1 at entry, copies by 64-bit mov); a load through one of them at a
 * constant offset records the bytes.  Anything that would let the pointer
 * escape the analysis -- arithmetic on it, storing it, passing it to a
 * helper or subprogram, atomics -- and any instruction or shape it does not
 * know (legacy packet loads, callx, programs over NBPF_CTX_SCAN_MAX slots,
 * loops needing over 64 passes) answers NBPF_CTX_ALL.  Writes through the
 * pointer (the outputs) are not reads.  No allocation: one 16-bit register
 * set per instruction on the stack (8 KiB); run once per image, not per call.
 */
static inline unsigned nbpf_prog_ctx_use(const struct nbpf_insn *insn, size_t n)
{
	uint16_t st[NBPF_CTX_SCAN_MAX];
	unsigned use = 0;
	bool changed = true;

	if (!insn || n == 0 || n > NBPF_CTX_SCAN_MAX)
		return NBPF_CTX_ALL;
	memset(st, 0, n * sizeof(st[0]));
	st[0] = NBPF_CTX_SEEN | 1u << 1;
	for (int pass = 0; changed; pass++) {
		if (pass > 64)
			return NBPF_CTX_ALL;
		changed = false;
		for (size_t i = 0; i < n; i++) {
			const struct nbpf_insn *in = &insn[i];
			uint8_t cls = NBPF_CLASS(in->code), op = NBPF_OP(in->code);
			uint16_t s = st[i], d = (uint16_t)(1u << in->dst), r = (uint16_t)(1u << in->src);
			bool falls = true, jumps = false;
			size_t next = i + 1;
			long tgt = 0;

			if (!(s & NBPF_CTX_SEEN))
				continue;
			if (in->dst >= 11 || in->src >= 11)
				return NBPF_CTX_ALL;
			switch (cls) {
			case NBPF_LD:
				if (in->code != (NBPF_LD | NBPF_IMM | NBPF_DW))
					return NBPF_CTX_ALL;
				s &= (uint16_t)~d;
				next = i + 2;
				break;
			case NBPF_LDX: {
				static const long sz[4] = { 4, 2, 1, 8 }; /* W, H, B, DW */

				if (NBPF_MODE(in->code) != NBPF_MEM && NBPF_MODE(in->code) != NBPF_MEMSX)
					return NBPF_CTX_ALL;
				if (s & r)
					use |= nbpf_ctx_range_use(in->off, sz[NBPF_SIZE(in->code) >> 3]);
				s &= (uint16_t)~d;
				break;
			}
			case NBPF_ST:
				break;
			case NBPF_STX:
				if ((s & r) || (NBPF_MODE(in->code) != NBPF_MEM && (s & d)))
					return NBPF_CTX_ALL; /* pointer stored, or atomics on the context */
				break;
			case NBPF_ALU:
			case NBPF_ALU64:
				if (op == NBPF_MOV && NBPF_SRC(in->code) == NBPF_X && cls == NBPF_ALU64 &&
				    in->off == 0) {
					s = (s & r) ? (uint16_t)(s | d) : (uint16_t)(s & ~d);
				} else if (op == NBPF_MOV) {
					if (NBPF_SRC(in->code) == NBPF_X && (s & r))
						return NBPF_CTX_ALL;
					s &= (uint16_t)~d;
				} else if ((s & d) || (NBPF_SRC(in->code) == NBPF_X && (s & r))) {
					return NBPF_CTX_ALL; /* arithmetic on the pointer */
				}
				break;
			case NBPF_JMP:
			case NBPF_JMP32:
				if (op == NBPF_CALL) {
					if (in->code == (NBPF_JMP | NBPF_CALL | NBPF_X) || cls != NBPF_JMP ||
					    (s & 0x3eu))
						return NBPF_CTX_ALL; /* callx, or the pointer as an argument */
					s &= (uint16_t)~0x3fu;  /* r0..r5 clobbered */
					break;
				}
				if (op == NBPF_EXIT) {
					falls = false;
					break;
				}
				jumps = true;
				if (op == NBPF_JA) {
					falls = false;
					tgt = (long)i + 1 + (cls == NBPF_JMP32 ? in->imm : in->off);
				} else {
					tgt = (long)i + 1 + in->off;
				}
				break;
			default:
				return NBPF_CTX_ALL;
			}
			if (use == NBPF_CTX_ALL)
				return use;
			s |= NBPF_CTX_SEEN;
			if (falls) {
				if (next >= n)
					return NBPF_CTX_ALL; /* falls off the end: not a verified program */
				if ((st[next] | s) != st[next]) {
					st[next] |= s;
					changed |= next <= i;
				}
			}
			if (jumps) {
				if (tgt < 0 || (size_t)tgt >= n)
					return NBPF_CTX_ALL;
				if ((st[tgt] | s) != st[tgt]) {
					st[tgt] |= s;
					changed |= (size_t)tgt <= i;
				}
			}
		}
	}
	return use;
}

/* Whether the program can read its context at all. */
static inline bool nbpf_prog_may_read_ctx(const struct nbpf_insn *insn, size_t n)
{
	return nbpf_prog_ctx_use(insn, n) != 0;
}

#endif
