/*
 * vstate.h - the verifier's internal types: abstract registers, frames,
 * states, the per-run environment, and the functions the verifier's files
 * share.  Nothing outside src/runtime/verifier/ includes this.
 */
#ifndef NCCLBPF_VERIFIER_VSTATE_H
#define NCCLBPF_VERIFIER_VSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../helpers.h"
#include "../insn.h"
#include "msgs.h"
#include "ncclbpf/runtime.h"
#include "tnum.h"

struct ncclbpf_map;

/* Register types. */
enum vtype {
	VT_NOT_INIT = 0,
	VT_SCALAR,
	VT_CTX,            /* hook context; off only, never variable */
	VT_STACK,          /* frame-relative: frameno names the frame */
	VT_MAP_PTR,        /* a map (lddw src 5); aux = map index */
	VT_MAP_VALUE,      /* aux = map index (global data too: lddw src 6) */
	VT_MAP_VALUE_OR_NULL,
	VT_RINGBUF_MEM,    /* aux = record size, id = reference */
	VT_RINGBUF_MEM_OR_NULL,
	VT_RINGBUF_RELEASED, /* a record pointer after submit/discard */
};

/* Taint bits. */
#define TAINT_LOCAL 1u  /* rank-local: may differ between ranks */

/*
 * One register.  A pointer's address is base + off + (a value in var_off
 * and [smin, smax] / [umin, umax]); a scalar is exactly var_off/bounds.
 * id ties copies together (null checks, bounds checks, references); a
 * scalar with an id holds the id's value plus off (64-bit wrapping: a
 * constant delta, `r7 = r6; r7 += 5`), so a check on one of them bounds
 * all (reg_linked_bounds).  A scalar's pad (DV_*) and aux describe how it
 * derives from another value's id (links.c); a pointer's aux is its map or
 * record size.
 */
struct vreg {
	uint8_t type;
	uint8_t taint;
	uint8_t frameno;
	uint8_t pad;
	uint32_t id;
	uint32_t aux;
	int32_t off;
	struct tnum var_off;
	int64_t smin, smax;
	uint64_t umin, umax;
};

/* Stack byte kinds (low 2 bits), the remnant mark and taint (bit 7). */
#define SB_INVALID 0
#define SB_MISC    1
#define SB_SPILL   2
#define SB_KIND(b) ((b) & 3)
/*
 * An SB_INVALID byte that still holds part of a spilled pointer a narrower
 * store overwrote in part: unreadable like never-written bytes (so pruning
 * and joins treat it as SB_INVALID), marked only to name the right reason.
 */
#define SB_PTR_REST 0x04
#define SB_TAINT   0x80

#define NSLOTS (NBPF_STACK_SIZE / 8)

/* One 8-byte stack slot: slot k holds bytes fp-8(k+1) .. fp-8k-1. */
struct vslot {
	uint8_t stype[8];
	struct vreg spill;   /* valid when the bytes are SB_SPILL */
};

/*
 * A frame.  Slots at or above nslots are all zero (invalid), so a stored
 * state keeps only the slots in use of its innermost frame (vstate_size).
 *
 * gen stamps a caller's frame (any frame but the innermost): two such
 * frames, in any two states of one run, with the same nonzero gen have the
 * same content, so pruning skips comparing them.  A frame is stamped anew
 * when it becomes a caller and whenever it is written while it is one
 * (vframe_touch: stores through pointers into it); what cannot restamp
 * (refinements of linked copies) sets 0, which means "compare".  Bit 0:
 * the frame holds register ids that the comparison must map.  With a
 * stamp come kmask/ksum, the frame's constant spills (state.c: const_match).
 */
struct vframe {
	struct vreg regs[NBPF_NREGS];
	uint32_t callsite;    /* insn of the call that made this frame (main: UINT32_MAX) */
	uint32_t subprog;
	uint32_t nslots;
	uint32_t gen;
	uint64_t kmask, ksum;  /* valid while gen != 0 */
	uint64_t rsum;         /* ksum over the slots that reach addresses (rel_slots) */
	struct vslot slots[NSLOTS];
};

static inline uint32_t stk_slot(int64_t o)
{
	return (uint32_t)((-o - 1) / 8);
}

/*
 * Bit i set when byte i of the slot holds (part of) a spilled register.
 * All 8 bytes at once (pruning asks this of every slot of every frame it
 * compares): kind SB_SPILL is bit 1 without bit 0; the multiply gathers
 * bit 0 of each byte into the top byte, byte i to bit i.
 */
static inline uint8_t slot_spill_mask(const struct vslot *sl)
{
	uint64_t x, z;

	memcpy(&x, sl->stype, 8);
	z = (x >> 1) & ~x & 0x0101010101010101ull;
	return (uint8_t)((z * 0x0102040810204080ull) >> 56);
}

static inline uint8_t *stk_type(struct vframe *f, int64_t o)
{
	uint32_t k = stk_slot(o);

	return &f->slots[k].stype[o + 8 * ((int64_t)k + 1)];
}

#define MAX_REFS 16
#define MAX_CTRL 16
#define MAX_LINKS 4

/* Scalar derivations (links.c); DV_SELF is the value of the id itself. */
#define DV_SELF 0
#define DV_RSH  1
#define DV_TOP  2
#define DV_ZEXT 3
#define DV_SEXT 4

/* A class of equal extended copies (links.c): key is base id | j << 24. */
struct vlink {
	uint32_t key;
	uint32_t id;
	uint8_t kind;
	uint8_t pad[7];
	struct tnum var_off;
	int64_t smin, smax;
	uint64_t umin, umax;
};

struct vnode;

/*
 * The last comparison this path forked on, with the side it took, kept
 * while neither compared register of the innermost frame is written (any
 * write, call or exit forgets it).  Compilers test one relation several
 * times in a row (one conditional move per variable a selection updates);
 * the intervals cannot express `a > b`, so without this each repeated test
 * forks again.  code 0: no fact.
 */
struct vcmp {
	uint8_t code, dst, src, taken;
	int32_t imm;
};

/* A fact whose registers are dead can never decide a later jump. */
static inline bool vcmp_live(const struct vcmp *c, uint16_t live)
{
	return c->code && (live & (1u << c->dst)) &&
	       (NBPF_SRC(c->code) != NBPF_X || (live & (1u << c->src)));
}

static inline bool vcmp_equal(const struct vcmp *a, const struct vcmp *b)
{
	return a->code == b->code && (!a->code || (a->dst == b->dst && a->src == b->src &&
						   a->taken == b->taken && a->imm == b->imm));
}

/*
 * A caller's frame as stored states share it (state.c): immutable once
 * made, its content is that of every frame stamped with its f.gen, so a
 * fork or a checkpoint refers to it instead of copying 4.6 KiB per caller.
 * Only f.nslots slots are allocated.
 */
struct vsnap {
	uint32_t refs;
	struct vsnap *prev, *next; /* the run's snapshots, all freed at its end */
	struct vframe f;
};

/* What a pending branch still has to learn when it resumes (verifier.c). */
#define VDEFER_NONE 0
#define VDEFER_JMP  1  /* the conditional jump at insn, taken */
#define VDEFER_NULL 2  /* the pointers of id are null (flag 1) or not */

struct vdefer {
	uint32_t insn;
	uint32_t id;
	uint8_t kind, flag;
};

/*
 * One abstract state: a path's knowledge at insn pc.  The working state
 * (venv.cur) holds every frame in frames[] and its class table in
 * links_full.  A stored copy (pending branch, checkpoint; compact set) is
 * immutable: its callers' frames are snapshots (snap[]), its innermost
 * frame sits at frames[0] (only the slots in use), and its class table
 * follows (vstate_links).  Read frames through vst_frame().  In the
 * working state, snap[i] caches a snapshot of caller frame i, valid while
 * their stamps (gen) agree.
 */
struct vstate {
	uint32_t pc;
	uint32_t nframes;
	uint32_t nrefs;
	uint32_t nctrl;
	uint16_t nlinks;
	uint16_t compact;         /* a stored copy (see above) */
	uint32_t refs[MAX_REFS];  /* live ring buffer reservations (ids) */
	/* Active rank-local branch conditions: (frame << 24 | immediate post-dominator). */
	uint32_t ctrl[MAX_CTRL];
	struct vnode *parent;     /* latest checkpoint on this path */
	uint32_t last_ckpt;       /* insns_processed when it was stored */
	struct vcmp cmp;          /* last forked comparison (see struct vcmp) */
	struct vdefer defer;      /* a pending branch's refinement */
	struct vsnap *snap[NBPF_MAX_CALL_DEPTH];
	struct vframe frames[NBPF_MAX_CALL_DEPTH];
	/* only in a working state; use vstate_links() */
	struct vlink links_full[MAX_LINKS];
};

static inline const struct vframe *vst_frame(const struct vstate *s, uint32_t i)
{
	if (!s->compact)
		return &s->frames[i];
	return i + 1 == s->nframes ? &s->frames[0] : &s->snap[i]->f;
}

/* Bytes of a frame up to its last slot in use. */
static inline size_t vframe_used(const struct vframe *f)
{
	return offsetof(struct vframe, slots) + f->nslots * sizeof(struct vslot);
}

/* Bytes of a stored copy of s before its class table: header and innermost frame. */
static inline size_t vstate_used(const struct vstate *s)
{
	return offsetof(struct vstate, frames) + vframe_used(vst_frame(s, s->nframes - 1));
}

/*
 * The class table (links.c): in a working state at links_full, in a copy
 * (pending branch, checkpoint) right after its used bytes, so that the
 * many states without classes carry none.
 */
static inline struct vlink *vstate_links(const struct vstate *s)
{
	return s->compact ? (struct vlink *)((char *)s + vstate_used(s))
			  : (struct vlink *)s->links_full;
}

/* struct vnode sflags: summaries computed for big states only (state.c: state_big). */
#define NS_SLOTS 0x01  /* smask, shash, okey, osum */
#define NS_JKEY  0x02  /* jkey, jokey (computed on first use) */

/* A checkpoint stored at a prune point. */
struct vnode {
	struct vnode *next;    /* same insn */
	struct vnode *parent;
	uint32_t branches;     /* live paths below; 0: fully explored */
	uint32_t hash;
	uint16_t cmask;        /* live innermost registers holding a constant scalar */
	uint8_t joins;         /* joins in the chain that produced this state (widening) */
	uint8_t sflags;        /* NS_*: which summaries below are valid */
	uint64_t chash;        /* hash of those constants (a quick necessary test) */
	uint64_t smask;        /* innermost stack slots holding an 8-byte constant spill */
	uint64_t shash;        /* sum of their mixes (state.c: const_match) */
	uint64_t jkey;         /* what try_join needs equal, hashed (state.c: join_key) */
	uint64_t okey, osum;   /* callers' frames' constant spills (valid: okey != 0) */
	uint64_t jokey;        /* their relevant ones, for joins (valid: != 0) */
	struct vstate *st;
};

struct vsubprog {
	uint32_t start, end;   /* [start, end) */
	uint32_t stack_depth;  /* deepest byte touched, bytes */
	uint64_t rel_slots;    /* 8-byte slots whose spilled values may reach an address or size */
};

/*
 * The time guard of one ncclbpf_program__verify, shared by the object's
 * write-set discovery and the verification.  Its clock (a system call for
 * a thread's CPU time) is first read after VWORK_CHECK units of work, so
 * the many short verifications never read it.
 */
struct vguard {
	uint64_t budget_ns;   /* 0: no guard */
	uint64_t deadline_ns; /* 0: not started */
};

/* The per-run environment. */
struct venv {
	const struct nbpf_insn *insns;
	uint32_t n;
	struct ncclbpf_map *const *maps;
	uint32_t n_maps;
	const struct ncclbpf_hook_desc *hook;
	const struct nbpf_helper *(*helper_find)(int32_t id);
	const struct ncclbpf_program *prog; /* for line info; may be NULL */
	const char *obj_name;
	bool strict;
	bool collect;          /* write-set discovery: no findings, no consistency */
	bool track_ctrl;       /* the hook has decision fields: follow control dependence */
	uint32_t max_insns, max_states;
	uint64_t max_work;       /* the deterministic bound (see VWORK_*) */
	struct vguard *guard;    /* the time guard (may be shared, or NULL: none) */
	uint64_t work, next_check; /* work units done, and when to look at the clock next */
	bool timed_out;

	/* Static facts. */
	uint8_t *flags;        /* per insn: IF_* */
	uint8_t *fail_hint;    /* per insn: register that last failed a pruning test (optional) */
	uint16_t *live;        /* per insn: registers live before it */
	uint16_t *relevant;    /* per insn: registers whose values may reach an address or size */
	uint32_t *ipdom;       /* per insn: immediate post-dominator (UINT32_MAX: exit) */
	struct vsubprog *subs;
	uint32_t n_subs;
	uint8_t *map_written;  /* per map: some program of the object writes it */
	uint8_t *map_writes;   /* per map: this program writes it (collect output) */

	/* Exploration. */
	struct vnode **explored; /* per insn list */
	uint16_t *n_explored;
	struct vstate **stack;   /* pending branches: buffers reused LIFO, never freed mid-run */
	size_t *stack_bytes;     /* capacity of each buffer in stack[] */
	uint32_t n_stack, cap_stack, n_bufs;
	void *arena;             /* checkpoints: bump-allocated, released at the end of the run */
	struct vnode *hslab;     /* their headers, apart (a prune point walks 64 of them): */
	uint32_t hslab_left;     /* taken from slabs of 64 in the same arena */
	struct vsnap *snaps;     /* every live snapshot of a caller's frame */
	struct vsnap *snap_free[NSLOTS + 1]; /* released ones, by nslots, for reuse */
	struct vstate *cur;
	uint32_t next_id;
	uint32_t next_gen;       /* frame stamps (struct vframe) */
	uint32_t insns_processed, states, peak_states;
	bool have_ret;
	int64_t ret_min, ret_max;
	bool ctx_checked;        /* the BTF context type was compared (ctx_type.c) */

	/* Findings. */
	struct ncclbpf_finding *findings;
	uint32_t n_findings, cap_findings;
	bool rejected;
	int oom;
};

/*
 * Work, the deterministic measure that decides (venv.work against
 * max_work): a unit is about one processed instruction's cost.  An
 * instruction counts 1, a state comparison VWORK_CMP plus its frame walks,
 * a walk of a frame (compared, joined, searched for linked copies,
 * restamped) 1 plus a unit per VWORK_SLOTS slots in use, a copy of a state
 * or frame a unit per VWORK_BYTES bytes.  Measured on the shapes of
 * tests/verifier/patho_gen.h, a unit costs 25 to 65 ns of CPU on the
 * 2-core development machine, loaded (docs/benchmarks.md), so
 * the default budget is decided in well under a second.  The time
 * guard is read every VWORK_CHECK units (about a millisecond).
 */
#define VWORK_CHECK 16384u
#define VWORK_CMP 8u
#define VWORK_BYTES 512u
#define VWORK_SLOTS 8u

/* The work of walking a frame's registers and slots in use. */
static inline uint64_t vwork_frame(const struct vframe *f)
{
	return 1 + f->nslots / VWORK_SLOTS;
}

/* Per-insn static flags. */
#define IF_PRUNE   0x01   /* prune point: jump target, after branch/call */
#define IF_LDDW2   0x02   /* second slot of a lddw */
#define IF_SEEN    0x04   /* reached by exploration */
#define IF_WARNED  0x08   /* a consistency warning was recorded here */
#define IF_LOOP    0x10   /* target of a backward jump: always checkpointed */
#define IF_LOOPEXIT 0x20  /* conditional jump that can leave a loop */
#define IF_HIT     0x40   /* a checkpoint here has pruned a path */

/* ---- bounds.c: scalar domain ---- */
void reg_mark_unknown(struct vreg *r);
void reg_mark_const(struct vreg *r, uint64_t v);
void reg_bounds_sync(struct vreg *r);
bool reg_is_const(const struct vreg *r);
/* Scalar ALU (op = NBPF_ADD..; alu32 as the ISA defines).  k = shift/const operand. */
/* Exact unsigned bounds [lo, hi] of x OP y (AND, OR, XOR), x in [a, b], y in [c, d]. */
void scalar_bitwise_range(uint8_t op, uint64_t a, uint64_t b, uint64_t c, uint64_t d,
			  uint64_t *lo, uint64_t *hi);
void scalar_alu(struct vreg *dst, const struct vreg *src, uint8_t op, bool alu32, int16_t off);
/* Truncates/extends a scalar for a load or MOVSX of size bytes. */
void scalar_from_load(struct vreg *r, uint32_t size, bool sign);
void scalar_zext32(struct vreg *r);
/* Keeps the low size bytes, zero-extended, with the bounds that survive. */
void scalar_zext_bytes(struct vreg *r, uint32_t size);
void scalar_sext(struct vreg *r, uint32_t size, bool alu32);
/*
 * Branch refinement: given dst OP src taken (taken=true) or not, narrows
 * both (scalars).  Returns 1 if always taken, 0 if never, -1 if unknown.
 */
/*
 * alo/blo (may be NULL): for is32, what the path knows of the operands'
 * low halves beyond their own bounds, as two views: [0] zero-extended,
 * [1] sign-extended; scalar_refine narrows them by what the branch says.
 */
int scalar_branch_outcome(const struct vreg *a, const struct vreg *b, uint8_t op, bool is32,
			  const struct vreg *alo, const struct vreg *blo);
void scalar_refine(struct vreg *a, struct vreg *b, uint8_t op, bool is32, bool taken,
		   struct vreg *alo, struct vreg *blo);
/* Makes a low half's zero- and sign-extended views (lo[0], lo[1]) agree. */
void scalar_meet_views(struct vreg lo[2]);
/* r := values both r and b allow (both describe one value). */
void scalar_meet(struct vreg *r, const struct vreg *b);
/* Whether the scalar's bounds are consistent (false: the path is infeasible). */
bool scalar_feasible(const struct vreg *r);

/* ---- links.c ---- */
/* Clears a register's id and, for a scalar, its derivation and delta. */
static inline void reg_forget_links(struct vreg *r)
{
	r->id = 0;
	if (r->type == VT_SCALAR || r->type == VT_NOT_INIT) {
		r->aux = 0;
		r->pad = 0;
		r->off = 0;
	}
}
/*
 * r, linked to from (same id), takes the bounds from's imply for it: from's
 * shifted by the difference of their deltas, met with what r knew.
 */
void reg_linked_bounds(struct vreg *r, const struct vreg *from);
/* After a mov32/movsx32/shift computed dst from the value from. */
void links_after_alu(struct venv *e, const struct nbpf_insn *in, const struct vreg *from,
		     struct vreg *dst);
/* After a branch refined r (and its id's copies): its class and sibling; false if infeasible. */
bool links_refined(struct venv *e, const struct vreg *r);
void links_prune(const struct venv *e, struct vstate *s);
/* r's low half as the path knows it: lo[0] zero-, lo[1] sign-extended; true if beyond r's bounds. */
bool links_lo32(struct vstate *s, const struct vreg *r, struct vreg lo[2]);
/* r's low half from r's bounds alone: lo[0] zero-, lo[1] sign-extended. */
void links_lo32_plain(const struct vreg *r, struct vreg lo[2]);
/* After a 32-bit comparison refined r's low half to lo (r: the register in the state). */
void links_note32(struct venv *e, struct vstate *s, struct vreg *r, const struct vreg lo[2]);

/* ---- check_struct.c ---- */
int vcheck_structure(struct venv *e);
/* Frees the state chunks cached between verifications (state.c). */
void nbpf_vstate_chunk_flush(void);
uint32_t vsubprog_of(const struct venv *e, uint32_t i);
int vsuccessors(const struct venv *e, uint32_t i, int64_t out[2]);

/* ---- state.c ---- */
/*
 * Pending branches: push a copy of e->cur (resumes at pc, after the
 * caller sets its defer), drop the newest, pop it into e->cur (its defer
 * is then to be applied).
 */
struct vstate *vstate_push(struct venv *e, uint32_t pc);
void vstate_drop_top(struct venv *e);
void vstate_pop(struct venv *e);
size_t vstate_size(const struct vstate *s);
/* 1: pruned (path ends), 0: continue; may store a checkpoint. */
int vstate_visit(struct venv *e);
void vstate_path_done(struct venv *e);
void vstate_release_all(struct venv *e);
/* Restamps caller frame fi of the current state after a write to it (see struct vframe). */
void vframe_touch(struct venv *e, uint32_t fi);

/* ---- mem.c ---- */
int check_mem_access(struct venv *e, uint32_t pc, uint8_t regno, int32_t off, uint32_t size,
		     bool write, int value_regno, bool sign, const struct vreg *stored,
		     bool atomic);
int check_helper_mem(struct venv *e, uint32_t pc, uint8_t regno, uint64_t size, bool zero_ok,
		     bool write, uint8_t *taint);
void stack_write_reg(struct vframe *f, int32_t slot_off, uint32_t size, const struct vreg *v);

/* ---- calls.c ---- */
int check_helper_call(struct venv *e, uint32_t pc, const struct nbpf_insn *in);
int check_subprog_call(struct venv *e, uint32_t pc, const struct nbpf_insn *in);
int check_exit(struct venv *e, uint32_t pc, bool *path_done);

/* ---- ctx_type.c ---- */
/* The entry function's BTF context type against the hook's (before exploring). */
int vcheck_ctx_type(struct venv *e);

/* ---- printk.c ---- */
/* bpf_trace_printk's format (r1, r2) against r3-r5, before the call clobbers them. */
int check_printk(struct venv *e, uint32_t pc);

/* ---- writeset.c ---- */
/*
 * Sets written[m] for every map m the program may write (a superset of the
 * writes of any accepted program); -EAGAIN when the program is outside what
 * the fast analysis handles and the caller must explore it instead.
 */
int nbpf_writeset_scan(const struct nbpf_insn *insns, uint32_t n, struct ncclbpf_map *const *maps,
		       uint32_t n_maps, uint8_t *written);

/* ---- taint.c ---- */
/*
 * A register (or a value about to be stored) written while the path is
 * inside a rank-local branch region: which value it holds after the
 * region rejoins depends on the side taken, so it is rank-local.
 */
static inline void ctrl_taint_write(const struct vstate *s, struct vreg *r)
{
	if (s->nctrl && r->type != VT_NOT_INIT)
		r->taint |= TAINT_LOCAL;
}
bool vstate_ctrl_tainted(const struct venv *e, const struct vstate *s);
void ctrl_enter(struct venv *e, uint32_t pc);
void ctrl_leave(struct venv *e, uint32_t pc);
int check_decision_store(struct venv *e, uint32_t pc, const struct ncclbpf_ctx_field *f,
			 uint8_t value_taint);
int vcompute_ipdom(struct venv *e);
bool map_is_rank_local(const struct venv *e, uint32_t map_idx);

/* ---- verifier.c ---- */
/*
 * A budget ran out at pc: refused with in_loop, naming the loop, when
 * exploration was inside one; with no_loop otherwise.  what names the
 * budget ("8192 pending branches").
 */
int vbudget_refuse(struct venv *e, uint32_t pc, enum vmsg in_loop, enum vmsg no_loop,
		   const char *what);
static inline struct vframe *cur_frame(struct venv *e)
{
	return &e->cur->frames[e->cur->nframes - 1];
}
struct vreg *vreg_get(struct venv *e, uint8_t regno);
void mark_reg_not_init(struct vreg *r);
/* Applies fn to every copy of a register with id in e->cur (all frames, spills). */
void for_each_reg_with_id(struct venv *e, uint32_t id, void (*fn)(struct vreg *, void *),
			  void *arg);
const struct ncclbpf_map *venv_map(const struct venv *e, uint32_t idx);

/* ---- msgs.c ---- */
/* Records an error (first one wins) and returns -EACCES. */
int verr(struct venv *e, uint32_t pc, enum vmsg m, const uint8_t *regs, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void vwarn(struct venv *e, uint32_t pc, enum vmsg m, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int reg_fmt(char *buf, size_t len, const struct venv *e, const struct vreg *r);
const char *vtype_name(uint8_t t);
int venv_oom(struct venv *e);

#endif
