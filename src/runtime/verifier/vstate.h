/*
 * vstate.h - the verifier's internal types: abstract registers, frames,
 * states, the per-run environment, and the functions the verifier's files
 * share.  Nothing outside src/runtime/verifier/ includes this.
 */
#ifndef NCCLBPF_VERIFIER_VSTATE_H
#define NCCLBPF_VERIFIER_VSTATE_H

#include <stdbool.h>
#include <stdint.h>

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
 * and [smin, smax] / [umin, umax]); a scalar is exactly var_off/bounds with
 * off 0.  id ties copies together (null checks, bounds checks, references).
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
 */
struct vframe {
	struct vreg regs[NBPF_NREGS];
	uint32_t callsite;    /* insn of the call that made this frame (main: UINT32_MAX) */
	uint32_t subprog;
	uint32_t nslots;
	uint32_t pad;
	struct vslot slots[NSLOTS];
};

static inline uint32_t stk_slot(int64_t o)
{
	return (uint32_t)((-o - 1) / 8);
}

/* Bit i set when byte i of the slot holds (part of) a spilled register. */
static inline uint8_t slot_spill_mask(const struct vslot *sl)
{
	uint8_t m = 0;

	for (int i = 0; i < 8; i++)
		if (SB_KIND(sl->stype[i]) == SB_SPILL)
			m |= (uint8_t)(1u << i);
	return m;
}

static inline uint8_t *stk_type(struct vframe *f, int64_t o)
{
	uint32_t k = stk_slot(o);

	return &f->slots[k].stype[o + 8 * ((int64_t)k + 1)];
}

#define MAX_REFS 16
#define MAX_CTRL 16

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

/* One abstract state: a path's knowledge at insn pc. */
struct vstate {
	uint32_t pc;
	uint32_t nframes;
	uint32_t nrefs;
	uint32_t nctrl;
	uint32_t refs[MAX_REFS];  /* live ring buffer reservations (ids) */
	/* Active rank-local branch conditions: (frame << 24 | immediate post-dominator). */
	uint32_t ctrl[MAX_CTRL];
	struct vnode *parent;     /* latest checkpoint on this path */
	uint32_t last_ckpt;       /* insns_processed when it was stored */
	struct vcmp cmp;          /* last forked comparison (see struct vcmp) */
	struct vframe frames[NBPF_MAX_CALL_DEPTH];
};

/* A checkpoint stored at a prune point. */
struct vnode {
	struct vnode *next;    /* same insn */
	struct vnode *parent;
	uint32_t branches;     /* live paths below; 0: fully explored */
	uint32_t hash;
	uint16_t cmask;        /* live innermost registers holding a constant scalar */
	uint8_t joins;         /* joins in the chain that produced this state (widening) */
	uint64_t chash;        /* hash of those constants (a quick necessary test) */
	struct vstate *st;
};

struct vsubprog {
	uint32_t start, end;   /* [start, end) */
	uint32_t stack_depth;  /* deepest byte touched, bytes */
	uint64_t rel_slots;    /* 8-byte slots whose spilled values may reach an address or size */
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
	struct vstate *cur;
	uint32_t next_id;
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

/* Per-insn static flags. */
#define IF_PRUNE   0x01   /* prune point: jump target, after branch/call */
#define IF_LDDW2   0x02   /* second slot of a lddw */
#define IF_SEEN    0x04   /* reached by exploration */
#define IF_WARNED  0x08   /* a consistency warning was recorded here */
#define IF_LOOP    0x10   /* target of a backward jump: always checkpointed */
#define IF_LOOPEXIT 0x20  /* conditional jump that can leave a loop */

/* ---- bounds.c: scalar domain ---- */
void reg_mark_unknown(struct vreg *r);
void reg_mark_const(struct vreg *r, uint64_t v);
void reg_bounds_sync(struct vreg *r);
bool reg_is_const(const struct vreg *r);
/* Scalar ALU (op = NBPF_ADD..; alu32 as the ISA defines).  k = shift/const operand. */
void scalar_alu(struct vreg *dst, const struct vreg *src, uint8_t op, bool alu32, int16_t off);
/* Truncates/extends a scalar for a load or MOVSX of size bytes. */
void scalar_from_load(struct vreg *r, uint32_t size, bool sign);
void scalar_zext32(struct vreg *r);
void scalar_sext(struct vreg *r, uint32_t size, bool alu32);
/*
 * Branch refinement: given dst OP src taken (taken=true) or not, narrows
 * both (scalars).  Returns 1 if always taken, 0 if never, -1 if unknown.
 */
int scalar_branch_outcome(const struct vreg *a, const struct vreg *b, uint8_t op, bool is32);
void scalar_refine(struct vreg *a, struct vreg *b, uint8_t op, bool is32, bool taken);
/* Whether the scalar's bounds are consistent (false: the path is infeasible). */
bool scalar_feasible(const struct vreg *r);

/* ---- check_struct.c ---- */
int vcheck_structure(struct venv *e);
/* Frees the state chunks cached between verifications (state.c). */
void nbpf_vstate_chunk_flush(void);
uint32_t vsubprog_of(const struct venv *e, uint32_t i);
int vsuccessors(const struct venv *e, uint32_t i, int64_t out[2]);

/* ---- state.c ---- */
/* Pending branches: push a copy of e->cur (resumes at pc), drop the newest, pop into e->cur. */
struct vstate *vstate_push(struct venv *e, uint32_t pc);
void vstate_drop_top(struct venv *e);
void vstate_pop(struct venv *e);
size_t vstate_size(const struct vstate *s);
/* Copies s into the full-size working state d. */
void vstate_restore(struct vstate *d, const struct vstate *s);
/* 1: pruned (path ends), 0: continue; may store a checkpoint. */
int vstate_visit(struct venv *e);
void vstate_path_done(struct venv *e);
void vstate_release_all(struct venv *e);

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
static inline struct vframe *cur_frame(struct venv *e)
{
	return &e->cur->frames[e->cur->nframes - 1];
}
struct vreg *vreg_get(struct venv *e, uint8_t regno);
void mark_reg_not_init(struct vreg *r);
/* Applies fn-style refinement to every copy of a register with id (all frames, spills). */
void for_each_reg_with_id(struct vstate *s, uint32_t id, void (*fn)(struct vreg *, void *),
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
