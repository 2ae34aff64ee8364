/*
 * state.c - abstract states: copies, the subsumption test used for
 * pruning, the exact test used for infinite-loop detection, and the
 * checkpoint tree that tells when a stored state is fully explored.
 *
 * Pruning compares against fully explored checkpoints only (their whole
 * future was proven safe and terminating).  A checkpoint still being
 * explored is an ancestor of the current path: reaching a state equal to
 * it means the path can repeat forever.  Dead registers (static liveness)
 * are ignored by both tests.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vstate.h"

#define MAX_PER_INSN 64
#define MAX_IDMAP 128
#define JOIN_AFTER 4
#define WIDEN_AFTER 8
#define STORE_SPARING 2048

/* Bytes of a stored copy of s (working or stored): its used bytes, then its class table. */
size_t vstate_size(const struct vstate *s)
{
	return vstate_used(s) + s->nlinks * sizeof(struct vlink);
}

int nbpf_verify_selfcheck;

/* ---- snapshots of callers' frames ---- */

/* A snapshot nothing refers to goes to the free list of its size, for the next one. */
static void snap_put(struct venv *e, struct vsnap *p)
{
	if (!p || --p->refs)
		return;
	if (p->prev)
		p->prev->next = p->next;
	else
		e->snaps = p->next;
	if (p->next)
		p->next->prev = p->prev;
	p->next = e->snap_free[p->f.nslots];
	e->snap_free[p->f.nslots] = p;
}

static void snap_release(struct venv *e, struct vstate *s)
{
	for (uint32_t i = 0; i + 1 < s->nframes; i++)
		snap_put(e, s->snap[i]);
}

/*
 * Makes cur->snap[i] a snapshot of cur's caller frame i: the cached one
 * while the frame still carries its stamp, else a new one (an unstamped
 * frame is stamped first).  False when out of memory.
 */
static bool frame_share(struct venv *e, struct vstate *cur, uint32_t i)
{
	struct vframe *f = &cur->frames[i];
	struct vsnap *p;

	if (!f->gen)
		vframe_touch(e, i);
	if (cur->snap[i] && cur->snap[i]->f.gen == f->gen)
		return true;
	p = e->snap_free[f->nslots];
	if (p)
		e->snap_free[f->nslots] = p->next;
	else if (!(p = malloc(offsetof(struct vsnap, f) + vframe_used(f))))
		return false;
	memcpy(&p->f, f, vframe_used(f));
	e->work += vframe_used(f) / VWORK_BYTES;
	p->refs = 1;
	p->prev = NULL;
	p->next = e->snaps;
	if (p->next)
		p->next->prev = p;
	e->snaps = p;
	snap_put(e, cur->snap[i]);
	cur->snap[i] = p;
	return true;
}

/*
 * A stored copy of the working state cur into d (vstate_size(cur) bytes):
 * the header, snapshots of the callers' frames (shared, not copied), the
 * innermost frame's used part and the class table.
 */
static bool vstate_copy(struct venv *e, struct vstate *d, struct vstate *cur)
{
	uint32_t li = cur->nframes - 1;
	size_t fu = vframe_used(&cur->frames[li]);

	for (uint32_t i = 0; i < li; i++)
		if (!frame_share(e, cur, i)) {
			venv_oom(e);
			return false;
		}
	memcpy(d, cur, offsetof(struct vstate, frames));
	for (uint32_t i = 0; i < li; i++)
		d->snap[i]->refs++;
	memcpy(&d->frames[0], &cur->frames[li], fu);
	if (cur->nlinks)
		memcpy((char *)&d->frames[0] + fu, cur->links_full,
		       cur->nlinks * sizeof(struct vlink));
	d->compact = 1;
	return true;
}

/*
 * Makes the working state d the stored state s.  Every frame of a working
 * state, live or popped, is zero at and above its nslots (init_state zeroes
 * it all, calls zero the new frame, stores grow nslots first), so only the
 * slots the old content used above the new nslots need clearing.  A
 * caller's frame of d that carries the stamp of s's snapshot already holds
 * it (the paths forked below it) and is not copied.
 */
static void vstate_restore(struct venv *e, struct vstate *d, const struct vstate *s)
{
	uint32_t li = s->nframes - 1, callers = d->nframes - 1;
	const struct vframe *in = &s->frames[0];

	for (uint32_t i = 0; i < li; i++) {
		struct vsnap *p = s->snap[i];
		struct vframe *f = &d->frames[i];

		if (i < callers && f->gen == p->f.gen) {
			if (nbpf_verify_selfcheck && memcmp(f, &p->f, vframe_used(&p->f)))
				abort();
		} else {
			uint32_t old = f->nslots;

			memcpy(f, &p->f, vframe_used(&p->f));
			e->work += vframe_used(f) / VWORK_BYTES;
			if (old > f->nslots)
				memset(&f->slots[f->nslots], 0, (old - f->nslots) * sizeof(struct vslot));
		}
		if (d->snap[i] != p) {
			p->refs++;
			snap_put(e, d->snap[i]);
			d->snap[i] = p;
		}
	}
	{
		struct vframe *f = &d->frames[li];
		uint32_t old = f->nslots;

		memcpy(f, in, vframe_used(in));
		if (old > f->nslots)
			memset(&f->slots[f->nslots], 0, (old - f->nslots) * sizeof(struct vslot));
	}
	if (s->nlinks)
		memcpy(d->links_full, vstate_links(s), s->nlinks * sizeof(struct vlink));
	memcpy(d, s, offsetof(struct vstate, snap));
	d->compact = 0;
}

/*
 * Pending branches live in buffers owned by e->stack[] and reused LIFO: a
 * push copies into the buffer at the top (grown when too small), a pop
 * restores from it and keeps it for the next push.  No allocation happens
 * once the buffers have reached the run's depth and state size.  A pending
 * copy is never changed: what the branch learns is applied when it
 * resumes (its defer), so it can share the callers' frames.
 */
struct vstate *vstate_push(struct venv *e, uint32_t pc)
{
	size_t need = vstate_size(e->cur);
	struct vstate *s;

	if (e->n_stack == e->cap_stack) {
		uint32_t cap = e->cap_stack ? e->cap_stack * 2 : 64;
		void *p = realloc(e->stack, cap * sizeof(*e->stack));
		void *q;

		if (!p) {
			venv_oom(e);
			return NULL;
		}
		e->stack = p;
		q = realloc(e->stack_bytes, cap * sizeof(*e->stack_bytes));
		if (!q) {
			venv_oom(e);
			return NULL;
		}
		e->stack_bytes = q;
		e->cap_stack = cap;
	}
	if (e->n_stack == e->n_bufs) {
		e->stack[e->n_bufs] = NULL;
		e->stack_bytes[e->n_bufs++] = 0;
	}
	if (e->stack_bytes[e->n_stack] < need) {
		/* round up so that slightly larger states later reuse the buffer */
		size_t cap = (need + 1023) & ~(size_t)1023;

		free(e->stack[e->n_stack]);
		e->stack[e->n_stack] = malloc(cap);
		e->stack_bytes[e->n_stack] = e->stack[e->n_stack] ? cap : 0;
		if (!e->stack[e->n_stack]) {
			venv_oom(e);
			return NULL;
		}
	}
	s = e->stack[e->n_stack];
	if (!vstate_copy(e, s, e->cur))
		return NULL;
	e->n_stack++;
	e->work += need / VWORK_BYTES;
	s->pc = pc;
	s->defer.kind = VDEFER_NONE;
	if (s->parent)
		s->parent->branches++;
	return s;
}

/* Forgets the newest pending branch (its side turned out infeasible). */
void vstate_drop_top(struct venv *e)
{
	struct vstate *s = e->stack[--e->n_stack];

	if (s->parent)
		s->parent->branches--;
	snap_release(e, s);
}

/* Continues with the newest pending branch. */
void vstate_pop(struct venv *e)
{
	struct vstate *s = e->stack[--e->n_stack];

	vstate_restore(e, e->cur, s);
	e->work += vstate_size(s) / VWORK_BYTES;
	snap_release(e, s);
}

/*
 * Checkpoints are never freed before the run ends: they come from a bump
 * arena of 64 KiB chunks (bigger for an oversized state), all released by
 * vstate_release_all.  Up to CHUNK_CACHE standard chunks are kept for the
 * next verification (any thread): returning them to the allocator lets it
 * trim the heap, and the next run would fault every page in again.
 */
#define CHUNK_SIZE 65536
#define CHUNK_CACHE 32

struct achunk {
	struct achunk *next;
	size_t used, cap;
	max_align_t data[];
};

static struct achunk *chunk_cache;
static unsigned chunk_cached;
static pthread_mutex_t chunk_lock = PTHREAD_MUTEX_INITIALIZER;

static struct achunk *chunk_get(size_t cap)
{
	struct achunk *c = NULL;

	if (cap == CHUNK_SIZE - sizeof(*c)) {
		pthread_mutex_lock(&chunk_lock);
		c = chunk_cache;
		if (c) {
			chunk_cache = c->next;
			chunk_cached--;
		}
		pthread_mutex_unlock(&chunk_lock);
	}
	if (!c) {
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->cap = cap;
	}
	c->used = 0;
	return c;
}

static void chunk_put(struct achunk *c)
{
	if (c->cap == CHUNK_SIZE - sizeof(*c)) {
		pthread_mutex_lock(&chunk_lock);
		if (chunk_cached < CHUNK_CACHE) {
			c->next = chunk_cache;
			chunk_cache = c;
			chunk_cached++;
			c = NULL;
		}
		pthread_mutex_unlock(&chunk_lock);
	}
	free(c);
}

/* Frees the chunks kept between verifications (library unload, tests). */
void nbpf_vstate_chunk_flush(void)
{
	struct achunk *c;

	pthread_mutex_lock(&chunk_lock);
	c = chunk_cache;
	chunk_cache = NULL;
	chunk_cached = 0;
	pthread_mutex_unlock(&chunk_lock);
	while (c) {
		struct achunk *next = c->next;

		free(c);
		c = next;
	}
}

static inline void *arena_alloc(void **arena, size_t n)
{
	struct achunk *c = *arena;

	n = (n + 15) & ~(size_t)15;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > CHUNK_SIZE - sizeof(*c) ? n : CHUNK_SIZE - sizeof(*c);

		c = chunk_get(cap);
		if (!c)
			return NULL;
		c->next = *arena;
		*arena = c;
	}
	c->used += n;
	return (char *)c->data + c->used - n;
}

static const struct vslot zero_slot;

static const struct vslot *slot_at(const struct vframe *f, uint32_t k)
{
	return k < f->nslots ? &f->slots[k] : &zero_slot;
}

/* 8 stack byte kinds at once (memcmp would be a library call per slot). */
static inline bool eq8(const uint8_t *a, const uint8_t *b)
{
	uint64_t x, y;

	memcpy(&x, a, 8);
	memcpy(&y, b, 8);
	return x == y;
}

/* Short id lists (refs, ctrl: at most 16 entries). */
static inline bool eq32s(const uint32_t *a, const uint32_t *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

struct idmap {
	uint32_t old[MAX_IDMAP], cur[MAX_IDMAP];
	uint32_t n;
};

/* ids must correspond one to one between the two states. */
static bool check_ids(struct idmap *m, uint32_t o, uint32_t c)
{
	if (!o && !c)
		return true;
	if (!o || !c)
		return false;
	for (uint32_t i = 0; i < m->n; i++) {
		if (m->old[i] == o)
			return m->cur[i] == c;
		if (m->cur[i] == c)
			return false;
	}
	if (m->n == MAX_IDMAP)
		return false;
	m->old[m->n] = o;
	m->cur[m->n++] = c;
	return true;
}

static inline __attribute__((always_inline)) bool range_within(const struct vreg *o,
							       const struct vreg *c)
{
	return o->umin <= c->umin && o->umax >= c->umax && o->smin <= c->smin &&
	       o->smax >= c->smax && tnum_in(o->var_off, c->var_off);
}

static inline __attribute__((always_inline)) bool range_equal(const struct vreg *o,
							      const struct vreg *c)
{
	return o->umin == c->umin && o->umax == c->umax && o->smin == c->smin &&
	       o->smax == c->smax && o->var_off.value == c->var_off.value &&
	       o->var_off.mask == c->var_off.mask;
}

static inline __attribute__((always_inline)) bool regsafe(const struct vreg *o, const struct vreg *c,
						   struct idmap *m, bool exact)
{
	if (o->type == VT_NOT_INIT)
		return !exact || c->type == VT_NOT_INIT;
	if (c->type != o->type)
		return false;
	if (exact ? c->taint != o->taint : (c->taint & ~o->taint) != 0)
		return false;
	if (o->type == VT_SCALAR) {
		if (!(exact ? range_equal(o, c) : range_within(o, c)))
			return false;
		/* An old link between copies (and its delta) must exist in the new state too. */
		if (o->id && (!check_ids(m, o->id, c->id) || o->off != c->off))
			return false;
		if (exact && o->off != c->off)
			return false;
		/* and so must a derivation (links.c): later copies join its class */
		if (o->pad && (o->pad != c->pad || (o->aux >> 24) != (c->aux >> 24) ||
			       !check_ids(m, o->aux & 0xffffff, c->aux & 0xffffff)))
			return false;
		if (exact && c->pad && !o->pad)
			return false;
		return true;
	}
	if (o->aux != c->aux || o->frameno != c->frameno || o->off != c->off)
		return false;
	if (!(exact ? range_equal(o, c) : range_within(o, c)))
		return false;
	if ((o->id || c->id) && !check_ids(m, o->id, c->id))
		return false;
	return true;
}

static bool stack_safe(const struct vframe *o, const struct vframe *c, struct idmap *m,
		       bool exact)
{
	uint32_t n = o->nslots > c->nslots ? o->nslots : c->nslots;

	for (uint32_t slot = 0; slot < n; slot++) {
		const struct vslot *os = slot_at(o, slot), *cs = slot_at(c, slot);
		const uint8_t *ob = os->stype, *cb = cs->stype;

		if (eq8(ob, cb)) {
			if (slot_spill_mask(os) && !regsafe(&os->spill, &cs->spill, m, exact))
				return false;
			continue;
		}
		if (exact)
			return false;
		/* an old spill (full or narrow) needs the same spill in cur */
		if (slot_spill_mask(os)) {
			if (slot_spill_mask(os) != slot_spill_mask(cs) ||
			    !regsafe(&os->spill, &cs->spill, m, false))
				return false;
		}
		for (int i = 0; i < 8; i++) {
			uint8_t ok = SB_KIND(ob[i]), ck = SB_KIND(cb[i]);

			if (ok == SB_INVALID)
				continue;
			if ((cb[i] & SB_TAINT) && !(ob[i] & SB_TAINT))
				return false;
			if (ok == SB_MISC) {
				if (ck == SB_MISC)
					continue;
				if (ck == SB_SPILL && cs->spill.type == VT_SCALAR)
					continue;
				return false;
			}
			/* old spill: same layout and value checked above */
			if (ck != SB_SPILL)
				return false;
		}
	}
	return true;
}


/* One constant spill (slot k holds v), for the sums of const_match. */
static inline uint64_t slot_mix(uint32_t k, uint64_t v)
{
	uint64_t z = v + 0x9e3779b97f4a7c15ull * (k + 1);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A full 8-byte spill of a constant scalar: pruning needs the same constant there. */
static inline bool slot_const(const struct vslot *sl)
{
	return slot_spill_mask(sl) == 0xff && sl->spill.type == VT_SCALAR && !sl->spill.var_off.mask;
}

void vframe_touch(struct venv *e, uint32_t fi)
{
	struct vstate *s = e->cur;
	struct vframe *f = &s->frames[fi];
	uint16_t live;
	uint32_t ids = 0;

	if (fi + 1 >= s->nframes)
		return; /* the innermost frame is always compared */
	e->work += vwork_frame(f);
	/* the registers the comparison looks at: callee-saved, live after the call */
	live = e->live[s->frames[fi + 1].callsite + 1] & 0x3c0;
	for (int r = 6; r <= 9; r++)
		if ((live & (1u << r)) && f->regs[r].id)
			ids = 1;
	f->kmask = 0;
	f->ksum = 0;
	f->rsum = 0;
	for (uint32_t k = 0; k < f->nslots; k++) {
		const struct vslot *sl = &f->slots[k];

		if (slot_spill_mask(sl) && sl->spill.id)
			ids = 1;
		if (slot_const(sl)) {
			uint64_t m = slot_mix(k, sl->spill.var_off.value);

			f->kmask |= 1ull << k;
			f->ksum += m;
			if (e->subs[f->subprog].rel_slots & (1ull << k))
				f->rsum += m;
		}
	}
	if (++e->next_gen >= UINT32_MAX >> 1)
		e->next_gen = 1; /* unreachable within the budgets; never reuse 0 */
	f->gen = e->next_gen << 1 | ids;
}

/* Two callers' frames known identical, with no ids to map: nothing to compare. */
static bool frame_same(const struct vframe *o, const struct vframe *c)
{
	if (!o->gen || o->gen != c->gen || (o->gen & 1))
		return false;
	if (nbpf_verify_selfcheck &&
	    (memcmp(o, c, offsetof(struct vframe, slots)) ||
	     memcmp(o->slots, c->slots, o->nslots * sizeof(o->slots[0]))))
		abort();
	return true;
}

/* Whether every concrete state of c is one of o (exact: the same abstract state). */
static bool states_equal(struct venv *e, const struct vstate *o, const struct vstate *c,
			 bool exact)
{
	struct idmap m;

	m.n = 0;
	if (o->nframes != c->nframes || o->pc != c->pc)
		return false;
	if (c->nctrl && (c->nctrl != o->nctrl || !eq32s(c->ctrl, o->ctrl, c->nctrl)))
		return false;
	if (exact && o->nctrl != c->nctrl)
		return false;
	/* o's exploration followed its fact's side only: c must hold the same fact */
	if ((exact || o->cmp.code) && !vcmp_equal(&o->cmp, &c->cmp))
		return false;
	if (o->nrefs != c->nrefs)
		return false;
	for (uint32_t i = 0; i < o->nrefs; i++)
		if (!check_ids(&m, o->refs[i], c->refs[i]))
			return false;
	for (uint32_t f = 0; f < o->nframes; f++)
		if (vst_frame(o, f)->callsite != vst_frame(c, f)->callsite)
			return false;
	/* o's classes of extended copies (links.c), in order, with bounds as wide */
	if (o->nlinks > c->nlinks || (exact && o->nlinks != c->nlinks))
		return false;
	for (uint32_t i = 0; i < o->nlinks; i++) {
		const struct vlink *ol = &vstate_links(o)[i], *cl = &vstate_links(c)[i];
		struct vreg ov, cv;

		if (ol->kind != cl->kind || (ol->key >> 24) != (cl->key >> 24) ||
		    !check_ids(&m, ol->key & 0xffffff, cl->key & 0xffffff) ||
		    !check_ids(&m, ol->id, cl->id))
			return false;
		ov.var_off = ol->var_off, ov.umin = ol->umin, ov.umax = ol->umax;
		ov.smin = ol->smin, ov.smax = ol->smax;
		cv.var_off = cl->var_off, cv.umin = cl->umin, cv.umax = cl->umax;
		cv.smin = cl->smin, cv.smax = cl->smax;
		if (!(exact ? range_equal(&ov, &cv) : range_within(&ov, &cv)))
			return false;
	}
	/*
	 * Innermost frame first: paths that differ mostly differ where they
	 * run, and callers' frames (up to 7 of 4.6 KiB each) are usually the
	 * same on both sides; a failing test should not walk them first.
	 */
	for (uint32_t f = o->nframes; f-- > 0;) {
		const struct vframe *of = vst_frame(o, f), *cf = vst_frame(c, f);
		uint16_t live;

		if (f + 1 < o->nframes && frame_same(of, cf))
			continue;
		e->work += vwork_frame(of->nslots > cf->nslots ? of : cf);
		if (f + 1 == o->nframes) {
			uint8_t hr = e->fail_hint ? e->fail_hint[c->pc] : NBPF_REG_FP;

			live = e->live[c->pc];
			/*
			 * The register that failed last time here usually fails
			 * again: test it first.  Testing it twice is harmless (the
			 * id correspondence is the same however it was built).
			 */
			if (hr < NBPF_REG_FP && (live & (1u << hr)) &&
			    !regsafe(&of->regs[hr], &cf->regs[hr], &m, exact))
				return false;
		} else {
			live = e->live[vst_frame(o, f + 1)->callsite + 1] & 0x3c0;
		}
		for (uint8_t r = 0; r < NBPF_REG_FP; r++)
			if ((live & (1u << r)) && !regsafe(&of->regs[r], &cf->regs[r], &m, exact)) {
				if (e->fail_hint && f + 1 == o->nframes)
					e->fail_hint[c->pc] = r;
				return false;
			}
		if (!stack_safe(of, cf, &m, exact))
			return false;
	}
	return true;
}

/* Hash of the live registers of the innermost frame: equal states hash alike. */
static uint32_t state_hash(const struct venv *e, const struct vstate *s)
{
	const struct vframe *f = vst_frame(s, s->nframes - 1);
	uint16_t live = e->live[s->pc];
	uint64_t h = 1469598103934665603ull ^ s->nframes;

	for (int r = 0; r < NBPF_REG_FP; r++) {
		const struct vreg *v = &f->regs[r];

		if (!(live & (1u << r)) || v->type == VT_NOT_INIT)
			continue;
		h = (h ^ ((uint64_t)v->type << 32 | (uint32_t)v->off)) * 1099511628211ull;
		h = (h ^ v->var_off.value ^ (v->var_off.mask << 1)) * 1099511628211ull;
		h = (h ^ v->umin ^ (v->umax << 3) ^ (uint64_t)v->smin ^ ((uint64_t)v->smax << 5)) *
		    1099511628211ull;
	}
	return (uint32_t)(h ^ (h >> 32));
}


/* ---- joins: the fallback that keeps path counts linear ---- */

static bool can_join_reg(const struct vreg *o, const struct vreg *c, bool relevant)
{
	if (o->type != c->type)
		return false;
	if (o->type == VT_NOT_INIT)
		return true;
	if (o->type == VT_SCALAR)
		return !relevant || range_equal(o, c);
	return o->aux == c->aux && o->frameno == c->frameno && o->off == c->off &&
	       o->id == c->id && range_equal(o, c);
}

/*
 * Two layouts of one slot that a join may blur into plain data: the slot's
 * values reach no address or size (not relevant), neither holds a pointer,
 * and the same bytes are initialised in both.  Counters kept in a stack
 * array (one path stored a narrow spill where another still has the
 * 8-byte zero spill of the memset) otherwise split a loop's states by
 * layout, 2^slots of them.
 */
static bool slots_blurrable(const struct vslot *o, const struct vslot *c, bool relevant)
{
	if (relevant)
		return false;
	if ((slot_spill_mask(o) && o->spill.type != VT_SCALAR) ||
	    (slot_spill_mask(c) && c->spill.type != VT_SCALAR))
		return false;
	for (int i = 0; i < 8; i++)
		if ((SB_KIND(o->stype[i]) == SB_INVALID) != (SB_KIND(c->stype[i]) == SB_INVALID))
			return false;
	return true;
}

/* c := initialised data holding either slot's bytes, with either's taint. */
static void blur_slot(struct vslot *c, const struct vslot *o)
{
	uint8_t taint = 0;

	if ((slot_spill_mask(c) && c->spill.taint) ||
	    (slot_spill_mask(o) && o->spill.taint))
		taint = SB_TAINT;
	for (int i = 0; i < 8; i++) {
		if (SB_KIND(c->stype[i]) == SB_INVALID)
			continue;
		c->stype[i] = SB_MISC | taint | ((c->stype[i] | o->stype[i]) & SB_TAINT);
	}
	memset(&c->spill, 0, sizeof(c->spill));
}

/*
 * Joins o into c.  level 0: the hull of both; level 1 (a chain of joins at
 * one prune point, or many explored states there): when c is not within o,
 * the bounds the joined tnum implies, with every bit below the highest
 * unknown one made unknown too, so a value growing by one bit at a time
 * needs one join, not one per bit; level 2 (a longer chain): when c is not
 * within o, any value.  Only scalars that differ can grow, and relevant
 * ones never differ here (try_join), so widening keeps what safety needs.
 */
static void join_reg(struct vreg *c, const struct vreg *o, int level)
{
	uint64_t mu;

	if (c->type != VT_SCALAR)
		return;
	mu = o->var_off.mask | c->var_off.mask | (o->var_off.value ^ c->var_off.value);
	if (level && (c->umin < o->umin || c->umax > o->umax || c->smin < o->smin ||
		      c->smax > o->smax)) {
		if (level >= 2)
			mu = UINT64_MAX;
		else if (mu)
			mu |= UINT64_MAX >> __builtin_clzll(mu);
	}
	c->var_off = TNUM(c->var_off.value & ~mu, mu);
	if (level && (c->umin < o->umin || c->umax > o->umax || c->smin < o->smin ||
		      c->smax > o->smax)) {
		/* keep only what the joined tnum implies: chains of joins stay short */
		c->umin = 0;
		c->umax = UINT64_MAX;
		c->smin = INT64_MIN;
		c->smax = INT64_MAX;
		c->taint |= o->taint;
		reg_forget_links(c);
		reg_bounds_sync(c);
		return;
	}
	c->umin = o->umin < c->umin ? o->umin : c->umin;
	c->umax = o->umax > c->umax ? o->umax : c->umax;
	c->smin = o->smin < c->smin ? o->smin : c->smin;
	c->smax = o->smax > c->smax ? o->smax : c->smax;
	c->taint |= o->taint;
	if (c->id != o->id || c->off != o->off) {
		c->id = 0; /* the join holds either side's relation */
		c->off = 0;
	}
	if (c->pad != o->pad || c->aux != o->aux) {
		c->pad = 0; /* the join holds values of either derivation */
		c->aux = 0;
	}
	reg_bounds_sync(c);
}

/*
 * Widens cur to the hull of cur and o when they differ only in scalar
 * values (same pointers, same stack layout, references and branches).
 * The result contains cur, so exploring it instead is sound; it loses the
 * correlation between scalars, which is why it only happens once a prune
 * point already holds JOIN_AFTER explored states.
 */
static bool same_gen(const struct vframe *o, const struct vframe *c, bool outer)
{
	return outer && o->gen && o->gen == c->gen;
}

static inline __attribute__((always_inline)) bool can_join(struct venv *e,
							   const struct vstate *o,
							   const struct vstate *c)
{
	if (o->nframes != c->nframes || o->nrefs != c->nrefs || o->nctrl != c->nctrl ||
	    !eq32s(o->refs, c->refs, o->nrefs) || !eq32s(o->ctrl, c->ctrl, o->nctrl))
		return false;
	for (uint32_t f = o->nframes; f-- > 0;) { /* innermost first, as in states_equal */
		const struct vframe *of = vst_frame(o, f);
		const struct vframe *cf = &c->frames[f];

		if (of->callsite != cf->callsite || of->nslots != cf->nslots)
			return false;
		if (same_gen(of, cf, f + 1 < o->nframes))
			continue; /* identical: joins to itself */
		e->work += vwork_frame(of);
		uint16_t rel = f + 1 == o->nframes ? e->relevant[c->pc]
						    : e->relevant[vst_frame(o, f + 1)->callsite + 1];
		uint16_t live = f + 1 == o->nframes ? e->live[c->pc]
						     : e->live[vst_frame(o, f + 1)->callsite + 1];

		for (int r = 0; r < NBPF_NREGS; r++)
			if ((live & (1u << r)) &&
			    !can_join_reg(&of->regs[r], &cf->regs[r], rel & (1u << r)))
				return false;
		for (uint32_t k = 0; k < of->nslots; k++) {
			if (!eq8(of->slots[k].stype, cf->slots[k].stype)) {
				if (!slots_blurrable(&of->slots[k], &cf->slots[k],
						     e->subs[of->subprog].rel_slots & (1ull << k)))
					return false;
				continue;
			}
			if (slot_spill_mask(&of->slots[k]) &&
			    !can_join_reg(&of->slots[k].spill, &cf->slots[k].spill,
					  e->subs[of->subprog].rel_slots & (1ull << k)))
				return false;
		}
	}
	return true;
}

static bool try_join(struct venv *e, const struct vstate *o, struct vstate *c, int level)
{
	if (!can_join(e, o, c))
		return false;
	for (uint32_t f = 0; f < o->nframes; f++) {
		const struct vframe *of = vst_frame(o, f);
		struct vframe *cf = &c->frames[f];

		if (same_gen(of, cf, f + 1 < o->nframes))
			continue;
		for (int r = 0; r < NBPF_NREGS; r++) {
			uint16_t live = f + 1 == o->nframes ? e->live[c->pc]
							     : e->live[vst_frame(o, f + 1)->callsite + 1];

			if (live & (1u << r))
				join_reg(&cf->regs[r], &of->regs[r], level);
		}
		for (uint32_t k = 0; k < of->nslots; k++)
			if (!eq8(of->slots[k].stype, cf->slots[k].stype))
				blur_slot(&cf->slots[k], &of->slots[k]);
			else if (slot_spill_mask(&of->slots[k]))
				join_reg(&cf->slots[k].spill, &of->slots[k].spill, level);
		if (f + 1 < o->nframes)
			vframe_touch(e, f); /* c is e->cur, and the join may have changed it */
	}
	if (!vcmp_equal(&o->cmp, &c->cmp))
		c->cmp.code = 0; /* the join holds states where either side was taken */
	/* classes of extended copies: kept only where both sides have the same */
	if (o->nlinks != c->nlinks ||
	    memcmp(vstate_links(o), vstate_links(c), o->nlinks * sizeof(struct vlink)))
		c->nlinks = 0;
	return true;
}

/*
 * A key that two states must share for try_join to join them: what
 * try_join requires to be equal in the innermost frame (layout, register
 * types, pointers, relevant scalars and slots, initialised bytes), hashed.
 * Computed once per visit and stored with each checkpoint, it turns the
 * failing joins of a prune point into a comparison of two words each,
 * without touching the checkpoints' states.  Callers' frames are left out:
 * the key is a necessary condition only.
 */
static inline uint64_t mix64(uint64_t h, uint64_t v)
{
	h = (h ^ v) * 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 29);
}

static uint64_t jkey_reg(uint64_t h, const struct vreg *r, bool relevant)
{
	h = mix64(h, r->type);
	if (r->type == VT_NOT_INIT || (r->type == VT_SCALAR && !relevant))
		return h;
	if (r->type != VT_SCALAR)
		h = mix64(mix64(h, (uint64_t)r->aux << 32 | (uint32_t)r->off),
			  (uint64_t)r->frameno << 32 | r->id);
	h = mix64(h, r->var_off.value);
	h = mix64(h, r->var_off.mask);
	h = mix64(h, r->umin ^ (r->umax << 1));
	return mix64(h, (uint64_t)r->smin ^ ((uint64_t)r->smax << 1));
}

static uint64_t join_key(struct venv *e, const struct vstate *s)
{
	const struct vframe *f = vst_frame(s, s->nframes - 1);
	uint16_t live = e->live[s->pc], rel = e->relevant[s->pc];
	uint64_t rs = e->subs[f->subprog].rel_slots;
	uint64_t h = mix64(0x6a09e667f3bcc909ull, (uint64_t)s->nframes << 48 | (uint64_t)s->nrefs << 32 |
					      (uint64_t)s->nctrl << 16 | f->nslots);

	e->work += 2 * vwork_frame(f); /* a hash of every register and slot */
	for (uint32_t i = 0; i < s->nrefs; i++)
		h = mix64(h, s->refs[i]);
	for (uint32_t i = 0; i < s->nctrl; i++)
		h = mix64(h, s->ctrl[i]);
	h = mix64(h, f->callsite);
	for (int r = 0; r < NBPF_NREGS; r++)
		if (live & (1u << r))
			h = jkey_reg(h, &f->regs[r], rel & (1u << r));
	for (uint32_t k = 0; k < f->nslots; k++) {
		const struct vslot *sl = &f->slots[k];
		bool relevant = rs & (1ull << k);
		uint64_t inval = 0, kinds;

		if (relevant) {
			memcpy(&kinds, sl->stype, 8);
			h = mix64(h, kinds);
			if (slot_spill_mask(sl))
				h = jkey_reg(h, &sl->spill, true);
			continue;
		}
		for (int i = 0; i < 8; i++)
			inval |= (uint64_t)(SB_KIND(sl->stype[i]) == SB_INVALID) << i;
		h = mix64(h, inval);
		/* a spilled pointer joins only with the same pointer, never blurs */
		if (slot_spill_mask(sl) && sl->spill.type != VT_SCALAR)
			h = jkey_reg(h, &sl->spill, true);
	}
	return h;
}

/*
 * The callers' part: a relevant constant spill joins only with the same
 * constant.  0 when some caller's frame has no summary (then only the
 * innermost key is tested).
 */
static uint64_t join_key_outer(const struct venv *e, const struct vstate *s)
{
	uint64_t h = 0x1f83d9abfb41bd6bull;

	for (uint32_t i = 0; i + 1 < s->nframes; i++) {
		const struct vframe *f = vst_frame(s, i);

		if (!f->gen)
			return 0;
		h = mix64(mix64(h, f->kmask & e->subs[f->subprog].rel_slots), f->rsum);
	}
	return h | 1;
}

void vstate_path_done(struct venv *e)
{
	for (struct vnode *n = e->cur->parent; n; n = n->parent) {
		if (--n->branches)
			break;
	}
	e->cur->parent = NULL;
}

/*
 * Quick rejection before states_equal: a checkpoint register or stack slot
 * of the innermost frame holding a constant scalar (a slot: an 8-byte
 * spill) subsumes only that same constant, so the current values over the
 * checkpoint's constant places must hash as its constants do.  Paths that
 * differ only in constants (offsets chosen by a branch, kept in spills
 * because they reach an address) are told apart here instead of by a walk
 * over their frames.
 *
 * Registers: v[r] is the current constant, or a value no constant hashes
 * to when r holds none (then the full test would fail too; a collision
 * only costs the full test).  Slots: a sum of per-slot mixes, so the
 * checkpoint's sum is the current one minus the slots only the current
 * state holds constant, usually none: the test costs what the two masks
 * differ in, not the 64 zeroed slots of a cleared frame.
 */
#define CV_NONCONST 0x9e3779b97f4a7c15ull

struct csum {
	uint16_t rmask;           /* registers holding a constant scalar */
	uint64_t smask;           /* slots holding an 8-byte spill of one */
	uint64_t stotal;          /* sum of smix over smask */
	uint64_t okey, osum;      /* callers' frames (see struct vnode) */
	bool full;                /* the slot and caller parts are computed */
	uint64_t v[NBPF_REG_FP];
	uint64_t smix[NSLOTS];
};

/*
 * The slot and caller summaries and the join keys pay off where a deep
 * comparison is expensive: several frames, or many slots in use.  For the
 * small states of most policies they would cost more than they save.
 */
static bool state_big(const struct vstate *s)
{
	return s->nframes > 1 || vst_frame(s, 0)->nslots > 8;
}

/* full: the slot and caller parts too (else registers only). */
static void const_values(const struct vstate *s, struct csum *cs, bool full)
{
	const struct vframe *f = vst_frame(s, s->nframes - 1);

	cs->rmask = 0;
	cs->smask = 0;
	cs->stotal = 0;
	cs->okey = 0;
	cs->osum = 0;
	cs->full = full;
	for (int r = 0; r < NBPF_REG_FP; r++) {
		const struct vreg *v = &f->regs[r];

		if (v->type == VT_SCALAR && !v->var_off.mask) {
			cs->v[r] = v->var_off.value;
			cs->rmask |= (uint16_t)(1u << r);
		} else {
			cs->v[r] = CV_NONCONST ^ ((uint64_t)v->type << 56);
		}
	}
	if (!full)
		return;
	for (uint32_t k = 0; k < f->nslots; k++) {
		const struct vslot *sl = &f->slots[k];

		if (slot_const(sl)) {
			cs->smix[k] = slot_mix(k, sl->spill.var_off.value);
			cs->smask |= 1ull << k;
			cs->stotal += cs->smix[k];
		}
	}
	/*
	 * Callers' frames carry their own summaries (vframe_touch).  Where
	 * every caller's frame has one, the masks hashed (okey) and the sums
	 * combined (osum) must match: equal masks with different sums mean a
	 * constant differs.  okey 0: some frame has no summary, no test.
	 */
	cs->okey = s->nframes > 1 ? 0x510e527fade682d1ull : 0;
	for (uint32_t i = 0; i + 1 < s->nframes; i++) {
		const struct vframe *of = vst_frame(s, i);

		if (!of->gen) {
			cs->okey = 0;
			break;
		}
		cs->okey = (cs->okey ^ of->kmask) * 0x100000001b3ull | 1;
		cs->osum += of->ksum * (2 * i + 1);
	}
}

static uint64_t const_hash(const struct csum *cs, uint16_t rmask)
{
	uint64_t h = 0x243f6a8885a308d3ull;

	for (int r = 0; rmask; r++, rmask >>= 1)
		if (rmask & 1)
			h = (h ^ cs->v[r] ^ ((uint64_t)r << 59)) * 0x100000001b3ull;
	return h;
}

/*
 * Whether the current constants may match checkpoint n's (false: they
 * cannot).  cs holds the registers, and the rest when n has slot summaries.
 */
static bool const_match(const struct vnode *n, const struct csum *cs)
{
	if (n->sflags & NS_SLOTS) {
		uint64_t extra = cs->smask & ~n->smask, sum = cs->stotal;

		if (n->smask & ~cs->smask)
			return false; /* a constant spill there, none here */
		while (extra) {
			sum -= cs->smix[__builtin_ctzll(extra)];
			extra &= extra - 1;
		}
		if (sum != n->shash)
			return false;
		if (n->okey && n->okey == cs->okey && n->osum != cs->osum)
			return false;
	}
	return !n->cmask || const_hash(cs, n->cmask) == n->chash;
}

/*
 * Unlinks an explored checkpoint of pc whose memory can hold a state of
 * need bytes and returns it for reuse: victim itself, or when victim is
 * NULL the last fitting one (the list is kept most recently pruning
 * first).  Checkpoints still being explored stay: they detect infinite
 * loops and count pending branches.  NULL when none fits.
 */
static struct vnode *take_explored(struct venv *e, uint32_t pc, const struct vnode *victim,
				   size_t need)
{
	struct vnode **link, **pick = NULL, *n;

	for (link = &e->explored[pc]; *link; link = &(*link)->next) {
		n = *link;
		if (n->branches || vstate_size(n->st) < need)
			continue;
		if (!victim || n == victim)
			pick = link;
		if (n == victim)
			break;
	}
	if (!pick)
		return NULL;
	n = *pick;
	*pick = n->next;
	e->n_explored[pc]--;
	snap_release(e, n->st);
	return n;
}

/*
 * At a prune point: 1 when the current path is covered by an explored
 * checkpoint, 0 to continue (a checkpoint may be stored), <0 on rejection.
 */
int vstate_visit(struct venv *e)
{
	struct vstate *cur = e->cur;
	uint32_t pc = cur->pc;
	uint32_t h = 0;
	bool hashed = false;
	struct vnode *n, **link, *jn = NULL;
	uint8_t joins;
	uint32_t complete = 0;
	bool joined = false;
	struct csum cs;
	uint16_t live = e->live[pc];
	bool have_cv = false, big = state_big(cur);

	if (cur->cmp.code && !vcmp_live(&cur->cmp, live))
		cur->cmp.code = 0; /* useless from here on: do not let it split checkpoints */
	if (cur->nlinks) {
		for (uint32_t f = 0; f < cur->nframes; f++)
			e->work += vwork_frame(&cur->frames[f]);
		links_prune(e, cur);
	}
	/* the walk over the list: ancestors cost a hash compare, the others quick tests */
	e->work += e->n_explored[pc] / 16;
	for (link = &e->explored[pc]; (n = *link); link = &n->next) {
		if (n->branches) {
			/* the hash is only needed against checkpoints still being explored */
			if (!hashed) {
				h = state_hash(e, cur);
				hashed = true;
			}
			if (n->hash == h && (e->work += VWORK_CMP, states_equal(e, n->st, cur, true)))
				return verr(e, pc, VM_LOOP_INFINITE, NULL,
					    "the state at insn %u repeats", pc);
			continue;
		}
		if ((n->cmask && !have_cv) || ((n->sflags & NS_SLOTS) && !(have_cv && cs.full))) {
			const_values(cur, &cs, big || (n->sflags & NS_SLOTS));
			e->work += vwork_frame(&cur->frames[cur->nframes - 1]);
			have_cv = true;
		}
		e->work += complete % 4 == 0; /* a unit per 4 quick tests */
		if (!const_match(n, &cs)) {
			/* the quick test is a necessary condition of the full one */
			if (nbpf_verify_selfcheck && states_equal(e, n->st, cur, false))
				abort();
		} else if ((e->work += VWORK_CMP, states_equal(e, n->st, cur, false))) {
			/* move to front: a checkpoint that prunes once tends to prune again */
			e->flags[pc] |= IF_HIT;
			*link = n->next;
			n->next = e->explored[pc];
			e->explored[pc] = n;
			return 1;
		}
		complete++;
	}
	if (complete >= JOIN_AFTER) {
		/* keys pay for themselves on big states or long lists */
		bool use_keys = big || complete >= WIDEN_AFTER;
		uint64_t jk = use_keys ? join_key(e, cur) : 0, jo = use_keys ? join_key_outer(e, cur) : 0;

		for (n = e->explored[pc]; n && !joined; n = n->next) {
			bool keys = true;

			if (use_keys && !n->branches) {
				if (!(n->sflags & NS_JKEY)) {
					n->jkey = join_key(e, n->st);
					n->jokey = join_key_outer(e, n->st);
					n->sflags |= NS_JKEY;
				}
				keys = n->jkey == jk && (!jo || !n->jokey || n->jokey == jo);
			}
			if (nbpf_verify_selfcheck && !n->branches && !keys && can_join(e, n->st, cur))
				abort();
			if (!n->branches && keys && (e->work += VWORK_CMP, true) &&
			    (joined = try_join(e, n->st, cur,
					       n->joins > 1 ? 2 : n->joins || complete >= WIDEN_AFTER)))
				jn = n;
		}
		if (joined) {
			hashed = false; /* cur changed */
			for (n = e->explored[pc]; n; n = n->next)
				if (!n->branches &&
				    (e->work += VWORK_CMP, states_equal(e, n->st, cur, false))) {
					e->flags[pc] |= IF_HIT;
					return 1;
				}
		}
	}
	/* Checkpoints cost memory and time: not closer than 4 insns, except at loop heads. */
	if (!(e->flags[pc] & IF_LOOP) && cur->parent && e->insns_processed - cur->last_ckpt < 4)
		return 0;
	/*
	 * The joined state contains the checkpoint it was joined with, so that
	 * one makes room for it (join chains replace, not pile up); at the cap
	 * the least recently useful explored checkpoint does.  Dropping an
	 * explored checkpoint only loses pruning: no path below it is pending.
	 * Its memory is reused, so the stored-state budget still bounds memory.
	 */
	n = NULL;
	joins = jn ? (uint8_t)(jn->joins < 255 ? jn->joins + 1 : 255) : 0;
	if (jn)
		n = take_explored(e, pc, jn, vstate_size(cur));
	/*
	 * A full list where nothing ever pruned: these paths differ in what
	 * the state keeps (constants that reach addresses, say), and one more
	 * checkpoint would only replace another that never served, at the
	 * price of copying up to 8 frames.  Loop heads still store: their
	 * checkpoints on the path detect infinite loops.
	 */
	if (!n && e->n_explored[pc] >= MAX_PER_INSN && !(e->flags[pc] & (IF_HIT | IF_LOOP)))
		return 0;
	/*
	 * The same, sooner, once the run has stored many states (no program
	 * of the corpora stores a quarter as many): where JOIN_AFTER explored
	 * checkpoints never pruned, paths keep differing there, and storing
	 * more only fills memory (a row of forks of 8-frame states stored
	 * 16,384 of 4.5 KiB each).
	 */
	if (!n && e->states >= STORE_SPARING && e->n_explored[pc] &&
	    !(e->flags[pc] & (IF_HIT | IF_LOOP)))
		return 0;
	if (!n && e->n_explored[pc] >= MAX_PER_INSN)
		n = take_explored(e, pc, NULL, vstate_size(cur));
	if (!n) {
		if (e->n_explored[pc] >= MAX_PER_INSN)
			return 0;
		if (e->states >= e->max_states) {
			char what[32];

			snprintf(what, sizeof(what), "%u states", e->states);
			return vbudget_refuse(e, pc, VM_LOOP_STATES, VM_BUDGET_STATES, what);
		}
		/*
		 * Headers live apart from the states: the quick tests read only
		 * headers, and 64 of them packed together stay in cache where
		 * 64 states of up to 37 KiB each would not.
		 */
		if (!e->hslab_left) {
			e->hslab = arena_alloc(&e->arena, 64 * sizeof(*n));
			if (!e->hslab)
				return venv_oom(e);
			e->hslab_left = 64;
		}
		n = e->hslab++;
		e->hslab_left--;
		if (!(n->st = arena_alloc(&e->arena, vstate_size(cur))))
			return venv_oom(e);
		e->states++;
		if (e->states > e->peak_states)
			e->peak_states = e->states;
	}
	if (!vstate_copy(e, n->st, cur))
		return -ENOMEM;
	e->work += vstate_size(cur) / VWORK_BYTES;
	n->st->parent = NULL;
	n->hash = hashed ? h : state_hash(e, cur);
	if (joined || !have_cv || (big && !cs.full)) {
		const_values(cur, &cs, big);
		e->work += vwork_frame(&cur->frames[cur->nframes - 1]);
	}
	n->cmask = cs.rmask & live;
	n->smask = cs.smask;
	n->shash = cs.stotal;
	n->okey = cs.okey;
	n->osum = cs.osum;
	n->sflags = big ? NS_SLOTS : 0;
	n->chash = const_hash(&cs, n->cmask);
	n->branches = 1;
	n->joins = joins;
	n->parent = cur->parent;
	n->next = e->explored[pc];
	e->explored[pc] = n;
	e->n_explored[pc]++;
	cur->parent = n;
	cur->last_ckpt = e->insns_processed;
	return 0;
}

static void arena_release(void **arena)
{
	struct achunk *c = *arena;

	while (c) {
		struct achunk *next = c->next;

		chunk_put(c);
		c = next;
	}
	*arena = NULL;
}

static void snap_free_all(struct vsnap **l)
{
	while (*l) {
		struct vsnap *p = *l;

		*l = p->next;
		free(p);
	}
}

void vstate_release_all(struct venv *e)
{
	snap_free_all(&e->snaps);
	for (uint32_t k = 0; k <= NSLOTS; k++)
		snap_free_all(&e->snap_free[k]);
	arena_release(&e->arena);
	e->hslab = NULL;
	e->hslab_left = 0;
	for (uint32_t i = 0; i < e->n_bufs; i++)
		free(e->stack[i]);
	e->n_bufs = 0;
	e->n_stack = 0;
}
