/*
 * writeset.c - which maps a program may write, by a cheap provenance
 * analysis instead of a full exploration.
 *
 * Decision consistency needs, before verifying any program of an object,
 * the set of maps that some program of the object writes.  Exploring every
 * program path by path for that costs as much as verifying it; this pass
 * is one forward dataflow over the instructions, flow-sensitive but
 * path-insensitive, whose values are sets of provenances:
 *
 *   V(m)  may point into a value of map m (lookup result, global data);
 *   P(m)  may be map m itself (lddw of a map);
 *   S     may point into a stack frame.
 *
 * The stack is one cell for all frames and offsets (the union of what was
 * ever stored through a stack pointer); bpf-to-bpf calls are context
 * insensitive (every exit's r0 reaches every return site).  A store or
 * atomic through a register holding V(m), or map_update/delete with P(m)
 * in r1, marks m written.  Loads through non-stack pointers give plain
 * integers: context, map values and ring buffer records never hold pointers
 * in a program the verifier accepts (storing one there is a rejection), and
 * a rejected program never runs, so its writes do not matter.  The result
 * is therefore a superset of the writes any accepted program can make:
 * never fewer rank-local maps, at worst a few more warnings than the
 * path-sensitive exploration would give.  Writes to read-only maps are
 * always rejections and are not counted.
 *
 * Programs it does not handle (more than 64 maps, more than 65,536
 * instructions, malformed encodings, no fixpoint within the round budget)
 * return -EAGAIN: the caller then uses the exploration.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../maps/map.h"
#include "vstate.h"

#define WS_MAX_INSNS 65536
#define WS_MAX_ROUNDS 64

struct wsval {
	uint64_t v, p;   /* V(m) and P(m) bitsets */
	uint32_t s;      /* S */
	uint32_t pad;
};

struct wsstate {
	struct wsval r[NBPF_NREGS];
	uint8_t reached;
};

struct wsrun {
	const struct nbpf_insn *insns;
	uint32_t n;
	struct wsstate *st;     /* per insn: values before it */
	struct wsval stack;     /* everything stored through a stack pointer */
	struct wsval ret;       /* every exit's r0 */
	uint64_t written;
	bool changed;
	bool bad;               /* a flow left the program (jump into a lddw's second slot) */
};

static bool val_join(struct wsval *d, const struct wsval *s)
{
	struct wsval o = *d;

	d->v |= s->v;
	d->p |= s->p;
	d->s |= s->s;
	return o.v != d->v || o.p != d->p || o.s != d->s;
}

static void flow(struct wsrun *w, uint32_t to, const struct wsstate *from)
{
	struct wsstate *d;

	if (to > w->n + 1) {
		w->bad = true;
		return;
	}
	d = &w->st[to];
	if (!d->reached) {
		*d = *from;
		d->reached = 1;
		w->changed = true;
		return;
	}
	for (int r = 0; r < NBPF_NREGS; r++)
		if (val_join(&d->r[r], &from->r[r]))
			w->changed = true;
}

static void global_join(struct wsrun *w, struct wsval *g, const struct wsval *v)
{
	if (val_join(g, v))
		w->changed = true;
}

/* Rejects encodings the transfer function below would misread. */
static int ws_check(const struct nbpf_insn *insns, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (insns[i].dst >= NBPF_NREGS || insns[i].src >= NBPF_NREGS)
			return -EAGAIN;
	for (uint32_t i = 0; i < n; i++) {
		const struct nbpf_insn *in = &insns[i];
		uint8_t cls = NBPF_CLASS(in->code);

		if (cls == NBPF_LD) {
			if (in->code != NBPF_OP_LDDW || i + 1 >= n)
				return -EAGAIN;
			i++;
			continue;
		}
		if (cls == NBPF_JMP || cls == NBPF_JMP32) {
			int64_t t;

			if (in->code == NBPF_OP_EXIT)
				continue;
			if (in->code == NBPF_OP_CALL) {
				if (in->src != NBPF_PSEUDO_CALL)
					continue;
				t = (int64_t)i + 1 + in->imm;
			} else if (in->code == NBPF_OP_GOTOL) {
				t = (int64_t)i + 1 + in->imm;
			} else if (in->code == NBPF_OP_CALLX) {
				return -EAGAIN;
			} else {
				t = (int64_t)i + 1 + in->off;
			}
			if (t < 0 || t >= n)
				return -EAGAIN;
		}
	}
	return 0;
}

static void mark_maps(struct wsrun *w, uint64_t set, struct ncclbpf_map *const *maps,
		      uint32_t n_maps)
{
	for (uint32_t m = 0; set && m < n_maps; m++, set >>= 1)
		if ((set & 1) && maps[m] && !maps[m]->readonly_prog)
			w->written |= 1ull << m;
}

/* One instruction: the values after it, passed to its successors. */
static void ws_step(struct wsrun *w, uint32_t pc, struct ncclbpf_map *const *maps,
		    uint32_t n_maps)
{
	const struct nbpf_insn *in = &w->insns[pc];
	struct wsstate out = w->st[pc];
	struct wsval *d = &out.r[in->dst], *s = &out.r[in->src];
	static const struct wsval none;
	uint8_t cls = NBPF_CLASS(in->code), op = NBPF_OP(in->code);

	switch (cls) {
	case NBPF_ALU:
	case NBPF_ALU64:
		if (op == NBPF_MOV && cls == NBPF_ALU64 && NBPF_SRC(in->code) == NBPF_X && !in->off)
			*d = *s;
		else if ((op == NBPF_ADD || op == NBPF_SUB) && cls == NBPF_ALU64) {
			/* pointer +- scalar keeps the provenance (either side may be the pointer) */
			if (NBPF_SRC(in->code) == NBPF_X)
				val_join(d, s);
		} else {
			/* any other operation on a pointer is a rejection: the result is an integer */
			*d = none;
		}
		flow(w, pc + 1, &out);
		return;
	case NBPF_LD: {
		uint32_t idx = (uint32_t)in->imm;

		*d = none;
		if (in->src == NBPF_PSEUDO_MAP_FD || in->src == NBPF_PSEUDO_MAP_IDX) {
			if (idx < n_maps)
				d->p = 1ull << idx;
		} else if (in->src != 0) {
			if (idx < n_maps)
				d->v = 1ull << idx;
		}
		flow(w, pc + 2, &out);
		return;
	}
	case NBPF_LDX:
		*d = w->st[pc].r[in->src].s ? w->stack : none;
		flow(w, pc + 1, &out);
		return;
	case NBPF_ST:
	case NBPF_STX: {
		const struct wsval base = w->st[pc].r[in->dst];

		mark_maps(w, base.v, maps, n_maps);
		if (cls == NBPF_STX && base.s)
			global_join(w, &w->stack, &w->st[pc].r[in->src]);
		if (cls == NBPF_STX && NBPF_MODE(in->code) == NBPF_ATOMIC) {
			const struct wsval *old = base.s ? &w->stack : &none;

			if (in->imm == NBPF_CMPXCHG) {
				if (base.s)
					global_join(w, &w->stack, &w->st[pc].r[0]);
				out.r[0] = *old;
			} else if (in->imm & NBPF_FETCH) {
				*s = *old;
			}
		}
		flow(w, pc + 1, &out);
		return;
	}
	default:
		break;
	}
	/* JMP, JMP32 */
	if (in->code == NBPF_OP_EXIT) {
		global_join(w, &w->ret, &out.r[0]);
		return;
	}
	if (in->code == NBPF_OP_CALL && in->src == NBPF_PSEUDO_CALL) {
		struct wsstate callee;

		memset(&callee, 0, sizeof(callee));
		for (int r = 1; r <= 5; r++)
			callee.r[r] = out.r[r];
		callee.r[NBPF_REG_FP].s = 1;
		callee.reached = 1;
		flow(w, (uint32_t)((int64_t)pc + 1 + in->imm), &callee);
		out.r[0] = w->ret;
		for (int r = 1; r <= 5; r++)
			out.r[r] = none;
		flow(w, pc + 1, &out);
		return;
	}
	if (in->code == NBPF_OP_CALL) {
		const struct nbpf_helper *h = nbpf_helper_find(in->imm);

		if (in->imm == NBPF_HELPER_MAP_UPDATE || in->imm == NBPF_HELPER_MAP_DELETE)
			mark_maps(w, out.r[1].p, maps, n_maps);
		out.r[0] = none;
		if (h && h->ret == NBPF_RET_PTR_TO_MAP_VALUE_OR_NULL)
			for (int r = 1; r <= 5; r++)
				out.r[0].v |= w->st[pc].r[r].p;
		for (int r = 1; r <= 5; r++)
			out.r[r] = none;
		flow(w, pc + 1, &out);
		return;
	}
	if (in->code == NBPF_OP_JA) {
		flow(w, (uint32_t)((int64_t)pc + 1 + in->off), &out);
		return;
	}
	if (in->code == NBPF_OP_GOTOL) {
		flow(w, (uint32_t)((int64_t)pc + 1 + in->imm), &out);
		return;
	}
	flow(w, (uint32_t)((int64_t)pc + 1 + in->off), &out);
	if (pc + 1 < w->n)
		flow(w, pc + 1, &out);
}

int nbpf_writeset_scan(const struct nbpf_insn *insns, uint32_t n, struct ncclbpf_map *const *maps,
		       uint32_t n_maps, uint8_t *written)
{
	struct wsrun w;
	uint32_t round;
	int err = -EAGAIN;

	if (!n || n > WS_MAX_INSNS || n_maps > 64 || (n_maps && !maps) || ws_check(insns, n))
		return -EAGAIN;
	memset(&w, 0, sizeof(w));
	w.insns = insns;
	w.n = n;
	/* +2: a fall-through past the end (or past a lddw) lands in a sink never stepped */
	w.st = calloc(n + 2, sizeof(*w.st));
	if (!w.st)
		return -EAGAIN;
	w.st[0].reached = 1;
	w.st[0].r[NBPF_REG_FP].s = 1;
	for (round = 0; round < WS_MAX_ROUNDS; round++) {
		w.changed = false;
		for (uint32_t pc = 0; pc < n; pc++)
			if (w.st[pc].reached)
				ws_step(&w, pc, maps, n_maps);
		if (!w.changed)
			break;
	}
	if (round < WS_MAX_ROUNDS && !w.bad) {
		for (uint32_t m = 0; m < n_maps; m++)
			if (w.written & (1ull << m))
				written[m] = 1;
		err = 0;
	}
	free(w.st);
	return err;
}
