/*
 * check_struct.c - checks that need no abstract state: every instruction is
 * a known v4 encoding with valid registers and zero reserved fields, lddw
 * is whole, jumps land inside their function and never inside lddw, every
 * instruction is reachable, no function falls off its end, calls form no
 * cycle and no chain deeper than NBPF_MAX_CALL_DEPTH.  Also computes what
 * the exploration needs: prune points, functions, register liveness.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../maps/map.h"
#include "vstate.h"

#define NO_TARGET UINT32_MAX

static bool is_cond_jmp(uint8_t code)
{
	uint8_t cls = NBPF_CLASS(code), op = NBPF_OP(code);

	return (cls == NBPF_JMP || cls == NBPF_JMP32) && op != NBPF_JA && op != NBPF_CALL &&
	       op != NBPF_EXIT;
}

/* Jump target of insn i (conditional, ja, gotol, pseudo call), or NO_TARGET. */
static int64_t jump_target(const struct nbpf_insn *in, uint32_t i)
{
	uint8_t cls = NBPF_CLASS(in->code), op = NBPF_OP(in->code);

	if (cls != NBPF_JMP && cls != NBPF_JMP32)
		return NO_TARGET;
	if (in->code == NBPF_OP_GOTOL)
		return (int64_t)i + 1 + in->imm;
	if (in->code == NBPF_OP_CALL && in->src == NBPF_PSEUDO_CALL)
		return (int64_t)i + 1 + in->imm;
	if (op == NBPF_CALL || op == NBPF_EXIT)
		return NO_TARGET;
	return (int64_t)i + 1 + in->off;
}

static int check_alu(struct venv *e, uint32_t i, const struct nbpf_insn *in)
{
	bool is64 = NBPF_CLASS(in->code) == NBPF_ALU64, x = NBPF_SRC(in->code) == NBPF_X;
	uint8_t op = NBPF_OP(in->code);

	if (op > NBPF_END)
		return verr(e, i, VM_BAD_OPCODE, NULL, "opcode 0x%02x", in->code);
	if (in->dst == NBPF_REG_FP)
		return verr(e, i, VM_WRITE_FP, NULL, NULL);
	if (op == NBPF_END) {
		if ((is64 && x) || in->src || in->off ||
		    (in->imm != 16 && in->imm != 32 && in->imm != 64))
			return verr(e, i, VM_RESERVED, NULL, "byte swap needs imm 16, 32 or 64");
		return 0;
	}
	if (op == NBPF_NEG) {
		if (x || in->src || in->off || in->imm)
			return verr(e, i, VM_RESERVED, NULL, NULL);
		return 0;
	}
	if (in->off) {
		bool ok = false;

		if (op == NBPF_MOV && x)
			ok = in->off == 8 || in->off == 16 || (is64 && in->off == 32);
		if ((op == NBPF_DIV || op == NBPF_MOD) && in->off == 1)
			ok = true;
		if (!ok)
			return verr(e, i, VM_RESERVED, NULL, "offset %d", in->off);
	}
	if (x ? in->imm != 0 : in->src != 0)
		return verr(e, i, VM_RESERVED, NULL, NULL);
	if (!x && (op == NBPF_LSH || op == NBPF_RSH || op == NBPF_ARSH) &&
	    (in->imm < 0 || in->imm >= (is64 ? 64 : 32)))
		return verr(e, i, VM_BAD_SHIFT, NULL, "shift by %d", in->imm);
	if (!x && (op == NBPF_DIV || op == NBPF_MOD) && in->imm == 0)
		return verr(e, i, VM_DIV_ZERO, NULL, "constant divisor 0");
	return 0;
}

static int check_mem_insn(struct venv *e, uint32_t i, const struct nbpf_insn *in)
{
	uint8_t cls = NBPF_CLASS(in->code), mode = NBPF_MODE(in->code), sz = NBPF_SIZE(in->code);

	switch (cls) {
	case NBPF_LD:
		if (mode == NBPF_ABS || mode == NBPF_IND)
			return verr(e, i, VM_UNSUPPORTED, NULL, "legacy packet load");
		if (in->code != NBPF_OP_LDDW)
			return verr(e, i, VM_BAD_OPCODE, NULL, "opcode 0x%02x", in->code);
		if (i + 1 >= e->n || e->insns[i + 1].code || e->insns[i + 1].dst ||
		    e->insns[i + 1].src || e->insns[i + 1].off)
			return verr(e, i, VM_LDDW_SPLIT, NULL, NULL);
		if (in->dst == NBPF_REG_FP)
			return verr(e, i, VM_WRITE_FP, NULL, NULL);
		if (in->off)
			return verr(e, i, VM_RESERVED, NULL, NULL);
		switch (in->src) {
		case 0:
			break;
		case NBPF_PSEUDO_MAP_FD:
		case NBPF_PSEUDO_MAP_IDX:
		case NBPF_PSEUDO_MAP_VALUE:
		case NBPF_PSEUDO_MAP_IDX_VALUE:
			if (in->imm < 0 || (uint32_t)in->imm >= e->n_maps || !e->maps ||
			    !e->maps[in->imm])
				return verr(e, i, VM_BAD_MAP, NULL, "map index %d of %u", in->imm,
					    e->n_maps);
			if ((in->src == NBPF_PSEUDO_MAP_FD || in->src == NBPF_PSEUDO_MAP_IDX) &&
			    e->insns[i + 1].imm)
				return verr(e, i, VM_RESERVED, NULL, "map reference with offset");
			if (in->src == NBPF_PSEUDO_MAP_VALUE || in->src == NBPF_PSEUDO_MAP_IDX_VALUE) {
				const struct ncclbpf_map *m = e->maps[in->imm];
				int32_t off = e->insns[i + 1].imm;

				/* only array maps have one fixed value address */
				if (m->type != NCCLBPF_MAP_ARRAY)
					return verr(e, i, VM_LDDW_PSEUDO, NULL,
						    "value address of map %s, which is not an array",
						    m->name);
				if (off < 0 || (uint32_t)off >= m->value_size)
					return verr(e, i, VM_MAP_OOB, NULL,
						    "offset %d in a %u-byte value of map %s", off,
						    m->value_size, m->name);
			}
			break;
		default:
			return verr(e, i, VM_LDDW_PSEUDO, NULL, "pseudo source %u", in->src);
		}
		return 0;
	case NBPF_LDX:
		if (!(mode == NBPF_MEM || (mode == NBPF_MEMSX && sz != NBPF_DW)))
			return verr(e, i, VM_BAD_OPCODE, NULL, "opcode 0x%02x", in->code);
		if (in->imm)
			return verr(e, i, VM_RESERVED, NULL, NULL);
		if (in->dst == NBPF_REG_FP)
			return verr(e, i, VM_WRITE_FP, NULL, NULL);
		return 0;
	case NBPF_ST:
		if (mode != NBPF_MEM)
			return verr(e, i, VM_BAD_OPCODE, NULL, "opcode 0x%02x", in->code);
		if (in->src)
			return verr(e, i, VM_RESERVED, NULL, NULL);
		return 0;
	default: /* STX */
		if (mode == NBPF_MEM) {
			if (in->imm)
				return verr(e, i, VM_RESERVED, NULL, NULL);
			return 0;
		}
		if (mode == NBPF_ATOMIC && (sz == NBPF_W || sz == NBPF_DW)) {
			int32_t op = in->imm & ~NBPF_FETCH;

			if (in->imm == NBPF_XCHG || in->imm == NBPF_CMPXCHG || op == NBPF_ADD ||
			    op == NBPF_OR || op == NBPF_AND || op == NBPF_XOR)
				return 0;
			return verr(e, i, VM_BAD_OPCODE, NULL, "atomic operation 0x%x", in->imm);
		}
		return verr(e, i, VM_BAD_OPCODE, NULL, "opcode 0x%02x", in->code);
	}
}

static int check_jmp(struct venv *e, uint32_t i, const struct nbpf_insn *in)
{
	uint8_t op = NBPF_OP(in->code);
	bool is32 = NBPF_CLASS(in->code) == NBPF_JMP32, x = NBPF_SRC(in->code) == NBPF_X;

	if (op == 0xe0 || op == 0xf0)
		return verr(e, i, VM_BAD_OPCODE, NULL, "opcode 0x%02x", in->code);
	if (op == NBPF_JA) {
		if (x || in->dst || in->src || (is32 ? in->off != 0 : in->imm != 0))
			return verr(e, i, VM_RESERVED, NULL, NULL);
		return 0;
	}
	if (op == NBPF_CALL || op == NBPF_EXIT) {
		if (is32)
			return verr(e, i, VM_BAD_OPCODE, NULL, "opcode 0x%02x", in->code);
		if (op == NBPF_EXIT) {
			if (x || in->dst || in->src || in->off || in->imm)
				return verr(e, i, VM_RESERVED, NULL, NULL);
			return 0;
		}
		if (x)
			return verr(e, i, VM_BAD_CALL, NULL, "indirect call (callx)");
		if (in->dst || in->off)
			return verr(e, i, VM_RESERVED, NULL, NULL);
		if (in->src != 0 && in->src != NBPF_PSEUDO_CALL)
			return verr(e, i, VM_BAD_CALL, NULL, "call kind %u", in->src);
		return 0;
	}
	if (x ? in->imm != 0 : in->src != 0)
		return verr(e, i, VM_RESERVED, NULL, NULL);
	return 0;
}

static int check_insn(struct venv *e, uint32_t i)
{
	const struct nbpf_insn *in = &e->insns[i];

	if (in->dst > NBPF_REG_FP || in->src > NBPF_REG_FP)
		return verr(e, i, VM_BAD_REG, NULL, "dst r%u src r%u", in->dst, in->src);
	switch (NBPF_CLASS(in->code)) {
	case NBPF_ALU:
	case NBPF_ALU64:
		return check_alu(e, i, in);
	case NBPF_JMP:
	case NBPF_JMP32:
		return check_jmp(e, i, in);
	default:
		return check_mem_insn(e, i, in);
	}
}

/* Successors of i in its function (calls fall through). */
static int successors(const struct venv *e, uint32_t i, int64_t out[2])
{
	const struct nbpf_insn *in = &e->insns[i];
	int64_t t = jump_target(in, i);

	if (in->code == NBPF_OP_EXIT)
		return 0;
	if (in->code == NBPF_OP_LDDW) {
		out[0] = (int64_t)i + 2;
		return 1;
	}
	if (in->code == NBPF_OP_JA || in->code == NBPF_OP_GOTOL) {
		out[0] = t;
		return 1;
	}
	out[0] = (int64_t)i + 1;
	if (is_cond_jmp(in->code)) {
		out[1] = t;
		return 2;
	}
	return 1;
}

static uint32_t subprog_of(const struct venv *e, uint32_t i)
{
	uint32_t lo = 0, hi = e->n_subs;

	while (hi - lo > 1) {
		uint32_t mid = (lo + hi) / 2;

		if (e->subs[mid].start <= i)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Longest frame chain from subprog s (memoized; recursion stops one level
 * past the limit); -1 on a cycle (reported).
 */
static int call_depth(struct venv *e, uint32_t s, uint8_t *color, int *depth, int level)
{
	int best = 0;

	if (color[s] == 2)
		return depth[s];
	if (color[s] == 1)
		return -1;
	if (level > NBPF_MAX_CALL_DEPTH)
		return NBPF_MAX_CALL_DEPTH + 1;
	color[s] = 1;
	for (uint32_t i = e->subs[s].start; i < e->subs[s].end; i++) {
		const struct nbpf_insn *in = &e->insns[i];
		int d;

		if (in->code != NBPF_OP_CALL || in->src != NBPF_PSEUDO_CALL || (e->flags[i] & IF_LDDW2))
			continue;
		d = call_depth(e, subprog_of(e, (uint32_t)(i + 1 + in->imm)), color, depth, level + 1);
		if (d < 0) {
			if (!e->rejected)
				verr(e, i, VM_RECURSION, NULL, NULL);
			return -1;
		}
		if (d > best)
			best = d;
	}
	color[s] = 2;
	depth[s] = best + 1;
	return depth[s];
}

/*
 * Argument registers of a call: for a known helper, those its prototype
 * uses (only_addr: only pointer, map and size arguments, whose values
 * matter for safety); bpf-to-bpf calls and unknown helpers use r1-r5.
 */
static uint16_t helper_arg_mask(const struct venv *e, const struct nbpf_insn *in, bool only_addr)
{
	const struct nbpf_helper *h;
	uint16_t m = 0;

	if (in->src == NBPF_PSEUDO_CALL || !e->helper_find || !(h = e->helper_find(in->imm)))
		return 0x3e;
	for (int i = 0; i < 5; i++) {
		if (h->args[i] == NBPF_ARG_NONE)
			continue;
		if (only_addr && h->args[i] == NBPF_ARG_ANYTHING)
			continue;
		m |= (uint16_t)(1u << (i + 1));
	}
	return m;
}

static uint16_t insn_uses(const struct venv *e, uint32_t i, uint16_t *defs)
{
	const struct nbpf_insn *in = &e->insns[i];
	uint8_t cls = NBPF_CLASS(in->code), op = NBPF_OP(in->code), mode = NBPF_MODE(in->code);
	uint16_t use = 0, def = 0;
	bool x = NBPF_SRC(in->code) == NBPF_X;

	switch (cls) {
	case NBPF_ALU:
	case NBPF_ALU64:
		if (op != NBPF_MOV)
			use |= 1u << in->dst;
		if (x && op != NBPF_END)
			use |= 1u << in->src;
		def |= 1u << in->dst;
		break;
	case NBPF_LD:
		def |= 1u << in->dst;
		break;
	case NBPF_LDX:
		use |= 1u << in->src;
		def |= 1u << in->dst;
		break;
	case NBPF_ST:
		use |= 1u << in->dst;
		break;
	case NBPF_STX:
		use |= (1u << in->dst) | (1u << in->src);
		if (mode == NBPF_ATOMIC && (in->imm & NBPF_FETCH)) {
			if (in->imm == NBPF_CMPXCHG) {
				use |= 1;
				def |= 1;
			} else {
				def |= 1u << in->src;
			}
		}
		break;
	default:
		if (op == NBPF_CALL) {
			use |= helper_arg_mask(e, in, false);
			def |= 0x3f;
		} else if (op == NBPF_EXIT) {
			use |= 1;
		} else if (op != NBPF_JA) {
			use |= 1u << in->dst;
			if (x)
				use |= 1u << in->src;
		}
		break;
	}
	*defs = def;
	return use;
}

static uint16_t live_transfer(const struct venv *e, uint32_t k, uint16_t out)
{
	uint16_t def, use = insn_uses(e, k, &def);

	return (uint16_t)(use | (out & ~def));
}

/* An 8-byte store to a fixed frame slot that no relevant load reads back. */
static bool spill_irrelevant(const struct venv *e, uint32_t k, const struct nbpf_insn *in)
{
	int64_t o = in->off;

	if (in->dst != NBPF_REG_FP || o >= 0 || o < -NBPF_STACK_SIZE || (o & 7))
		return false;
	return !(e->subs[subprog_of(e, k)].rel_slots & (1ull << stk_slot(o)));
}

/*
 * Registers whose exact value may become part of an address or a size:
 * memory access bases, helper and function arguments, divisors, 8-byte
 * stores (a spill may come back as an address), and everything that flows
 * into them through ALU operations.  Joins never merge different values of
 * these (state.c), so clamped indices keep their path-sensitive bounds.
 */
static uint16_t relevant_transfer(const struct venv *e, uint32_t k, uint16_t out)
{
	const struct nbpf_insn *in = &e->insns[k];
	uint8_t cls = NBPF_CLASS(in->code), op = NBPF_OP(in->code);
	bool x = NBPF_SRC(in->code) == NBPF_X;
	uint16_t rin = out;

	switch (cls) {
	case NBPF_ALU:
	case NBPF_ALU64: {
		uint16_t d = (uint16_t)(1u << in->dst);
		bool dst_rel = out & d;

		rin &= (uint16_t)~d;
		if (op == NBPF_MOV) {
			if (dst_rel && x)
				rin |= (uint16_t)(1u << in->src);
			break;
		}
		if (dst_rel) {
			rin |= d;
			if (x)
				rin |= (uint16_t)(1u << in->src);
		} else if ((op == NBPF_DIV || op == NBPF_MOD) && x) {
			/* the divisor must be proven nonzero; the dividend may be anything */
			rin |= (uint16_t)(1u << in->src);
		}
		break;
	}
	case NBPF_LD:
		rin &= (uint16_t)~(1u << in->dst);
		break;
	case NBPF_LDX:
		rin &= (uint16_t)~(1u << in->dst);
		rin |= (uint16_t)(1u << in->src);
		break;
	case NBPF_ST:
		rin |= (uint16_t)(1u << in->dst);
		break;
	case NBPF_STX:
		rin |= (uint16_t)(1u << in->dst);
		if (NBPF_MODE(in->code) == NBPF_ATOMIC)
			rin |= (uint16_t)(1u << in->src);
		else if (NBPF_SIZE(in->code) == NBPF_DW && !spill_irrelevant(e, k, in))
			rin |= (uint16_t)(1u << in->src);
		break;
	default:
		if (op == NBPF_CALL)
			rin = (uint16_t)((rin & ~0x3fu) | helper_arg_mask(e, in, true));
		else if (op == NBPF_EXIT)
			rin = 1; /* r0: the return range check (main), the caller's r0 (functions) */
		else if (op != NBPF_JA && (e->flags[k] & IF_LOOPEXIT))
			rin |= (uint16_t)((1u << in->dst) | (x ? 1u << in->src : 0));
		break;
	}
	return rin;
}

/*
 * A monotone backward dataflow over each function's control flow, solved
 * with a worklist: each value only gains bits, so every instruction is
 * revisited at most 16 times and large programs stay linear.
 */
static int backward_solve(struct venv *e, uint16_t *val,
			  uint16_t (*tf)(const struct venv *e, uint32_t k, uint16_t out))
{
	uint32_t n = e->n, *predoff = calloc(n + 1, sizeof(uint32_t)), *preds = NULL;
	uint32_t *work = malloc(n * sizeof(uint32_t)), nw = 0;
	uint8_t *inq = calloc(n, 1);
	int err = 0;

	if (!predoff || !work || !inq) {
		err = venv_oom(e);
		goto out;
	}
	for (uint32_t k = 0; k < n; k++) {
		int64_t s[2];
		int ns;

		if (e->flags[k] & IF_LDDW2)
			continue;
		ns = successors(e, k, s);
		for (int j = 0; j < ns; j++)
			predoff[s[j] + 1]++;
	}
	for (uint32_t k = 0; k < n; k++)
		predoff[k + 1] += predoff[k];
	preds = malloc((predoff[n] + 1) * sizeof(uint32_t));
	if (!preds) {
		err = venv_oom(e);
		goto out;
	}
	{
		uint32_t *fill = calloc(n, sizeof(uint32_t));

		if (!fill) {
			err = venv_oom(e);
			goto out;
		}
		for (uint32_t k = 0; k < n; k++) {
			int64_t s[2];
			int ns;

			if (e->flags[k] & IF_LDDW2)
				continue;
			ns = successors(e, k, s);
			for (int j = 0; j < ns; j++)
				preds[predoff[s[j]] + fill[s[j]]++] = k;
		}
		free(fill);
	}
	for (uint32_t k = 0; k < n; k++) {
		if (!(e->flags[k] & IF_LDDW2)) {
			work[nw++] = k;
			inq[k] = 1;
		}
	}
	while (nw) {
		uint32_t k = work[--nw];
		int64_t s[2];
		int ns = successors(e, k, s);
		uint16_t out = 0, in;

		inq[k] = 0;
		for (int j = 0; j < ns; j++)
			out |= val[s[j]];
		in = tf(e, k, out);
		if (in == val[k])
			continue;
		val[k] = in;
		for (uint32_t p = predoff[k]; p < predoff[k + 1]; p++) {
			if (!inq[preds[p]]) {
				inq[preds[p]] = 1;
				work[nw++] = preds[p];
			}
		}
	}
out:
	free(predoff);
	free(preds);
	free(work);
	free(inq);
	return err;
}

/*
 * One round of the loop decomposition: Tarjan's SCC algorithm (iterative,
 * no recursion on program input) over the active instructions, following
 * only edges that stay inside the previous round's component (lab) and do
 * not enter a header.  Writes the new component of every active node to
 * nl (components numbered from *ncomp) and returns how many nodes lie in
 * nontrivial components (size > 1 or a self edge).
 */
struct loopscc {
	uint32_t *lab, *nl, *idx, *low, *stk, *cs, *csz;
	uint8_t *act, *hdr, *onstk, *cj, *self;
};

static bool loop_edge(const struct loopscc *w, uint32_t j, int64_t s)
{
	return s >= 0 && w->act[s] && !w->hdr[s] && w->lab[s] == w->lab[j];
}

static uint32_t scc_round(const struct venv *e, struct loopscc *w, uint32_t *ncomp)
{
	uint32_t n = e->n, counter = 0, nst = 0, ncs = 0, nontriv = 0;

	for (uint32_t k = 0; k < n; k++)
		w->idx[k] = UINT32_MAX;
	for (uint32_t r = 0; r < n; r++) {
		if (!w->act[r] || w->idx[r] != UINT32_MAX)
			continue;
		/* call stack of (node, next successor to try) */
		w->cs[ncs] = r;
		w->cj[ncs++] = 0;
		w->idx[r] = w->low[r] = counter++;
		w->stk[nst++] = r;
		w->onstk[r] = 1;
		while (ncs) {
			uint32_t v = w->cs[ncs - 1];
			int64_t sc[2];
			int ns = successors(e, v, sc);

			if (w->cj[ncs - 1] < ns) {
				int64_t s = sc[w->cj[ncs - 1]++];

				if (!loop_edge(w, v, s))
					continue;
				if (w->idx[s] == UINT32_MAX) {
					w->idx[s] = w->low[s] = counter++;
					w->stk[nst++] = (uint32_t)s;
					w->onstk[s] = 1;
					w->cs[ncs] = (uint32_t)s;
					w->cj[ncs++] = 0;
				} else if (w->onstk[s] && w->idx[s] < w->low[v]) {
					w->low[v] = w->idx[s];
				}
				continue;
			}
			ncs--;
			if (ncs && w->low[v] < w->low[w->cs[ncs - 1]])
				w->low[w->cs[ncs - 1]] = w->low[v];
			if (w->low[v] == w->idx[v]) {
				uint32_t c = (*ncomp)++, size = 0, x;

				do {
					x = w->stk[--nst];
					w->onstk[x] = 0;
					w->nl[x] = c;
					size++;
				} while (x != v);
				w->csz[c] = size;
			}
		}
	}
	for (uint32_t k = 0; k < n; k++) {
		int64_t sc[2];
		int ns;

		if (!w->act[k])
			continue;
		w->self[k] = 0;
		ns = successors(e, k, sc);
		for (int j = 0; j < ns; j++)
			if (sc[j] == (int64_t)k && loop_edge(w, k, sc[j]))
				w->self[k] = 1;
	}
	for (uint32_t k = 0; k < n; k++)
		if (w->act[k] && (w->csz[w->nl[k]] > 1 || w->self[k]))
			nontriv++;
	return nontriv;
}

/*
 * Marks conditional jumps that can leave a loop, from the loop nesting
 * forest: the strongly connected components of the control flow graph are
 * the outermost loops; inside each, the edges into its headers (nodes
 * entered from outside, or the function entry) are removed and the
 * decomposition repeats for the inner loops.  A jump leaves a loop when one
 * of its successors lies outside a nontrivial component that holds the
 * jump, at any level.  Branches that only select between paths of one
 * iteration (if (cost < best) ...) are not marked, whatever the code
 * layout, so their operands do not become relevant.  Their operands decide
 * termination, so joins must not merge different values of them (a widened
 * counter makes a bounded loop look unbounded).  Precision only: marks are
 * never needed for soundness; past 64 nesting levels every conditional
 * jump still inside a loop is marked (the conservative answer).
 */
static int mark_loop_exits(struct venv *e)
{
	uint32_t n = e->n, ncomp, round;
	struct loopscc w = { 0 };
	int err = 0;

	w.lab = calloc(n, sizeof(uint32_t));
	w.nl = calloc(n, sizeof(uint32_t));
	w.idx = calloc(n, sizeof(uint32_t));
	w.low = calloc(n, sizeof(uint32_t));
	w.stk = calloc(n, sizeof(uint32_t));
	w.cs = calloc(n, sizeof(uint32_t));
	w.csz = calloc(n, sizeof(uint32_t));
	w.act = calloc(n, 1);
	w.hdr = calloc(n, 1);
	w.onstk = calloc(n, 1);
	w.cj = calloc(n, 1);
	w.self = calloc(n, 1);
	if (!w.lab || !w.nl || !w.idx || !w.low || !w.stk || !w.cs || !w.csz || !w.act ||
	    !w.hdr || !w.onstk || !w.cj || !w.self) {
		err = venv_oom(e);
		goto out;
	}
	for (uint32_t k = 0; k < n; k++)
		w.act[k] = !(e->flags[k] & IF_LDDW2);
	for (round = 0;; round++) {
		uint32_t nontriv;

		ncomp = 0;
		nontriv = scc_round(e, &w, &ncomp);
		if (!nontriv)
			break;
		for (uint32_t k = 0; k < n; k++) {
			int64_t sc[2];
			int ns;

			if (!w.act[k] || !(w.csz[w.nl[k]] > 1 || w.self[k]))
				continue;
			if (round == 64) {
				if (is_cond_jmp(e->insns[k].code))
					e->flags[k] |= IF_LOOPEXIT;
				continue;
			}
			ns = successors(e, k, sc);
			for (int j = 0; j < ns; j++) {
				int64_t s = sc[j];

				if (is_cond_jmp(e->insns[k].code) &&
				    (!w.act[s] || w.lab[s] != w.lab[k] || w.nl[s] != w.nl[k] ||
				     (w.hdr[s] && s != (int64_t)k)))
					e->flags[k] |= IF_LOOPEXIT;
			}
		}
		if (round == 64)
			break;
		/* headers of the nontrivial components: entered from outside them */
		for (uint32_t k = 0; k < n; k++) {
			int64_t sc[2];
			int ns;

			if (e->flags[k] & IF_LDDW2)
				continue;
			if (w.act[k] && (w.csz[w.nl[k]] > 1 || w.self[k]) &&
			    e->subs[subprog_of(e, k)].start == k)
				w.hdr[k] = 1;
			ns = successors(e, k, sc);
			for (int j = 0; j < ns; j++) {
				int64_t s = sc[j];

				if (s >= 0 && w.act[s] && (w.csz[w.nl[s]] > 1 || w.self[s]) &&
				    (!w.act[k] || w.lab[s] != w.lab[k] || w.nl[s] != w.nl[k]))
					w.hdr[s] = 1;
			}
		}
		/* the next round looks inside the nontrivial components only */
		for (uint32_t k = 0; k < n; k++) {
			if (w.act[k] && !(w.csz[w.nl[k]] > 1 || w.self[k]))
				w.act[k] = 0;
			w.lab[k] = w.nl[k];
		}
	}
out:
	free(w.lab);
	free(w.nl);
	free(w.idx);
	free(w.low);
	free(w.stk);
	free(w.cs);
	free(w.csz);
	free(w.act);
	free(w.hdr);
	free(w.onstk);
	free(w.cj);
	free(w.self);
	return err;
}

/*
 * Register relevance together with the relevance of fixed frame slots: a
 * slot is relevant when some r10-based load of it feeds a relevant
 * register, and only stores to relevant slots make the stored register
 * relevant.  The two depend on each other, so the solve repeats while the
 * slot sets grow; past a few rounds every slot counts as relevant, which
 * is the conservative (least joining) answer.
 */
static int solve_relevant(struct venv *e)
{
	for (int round = 0;; round++) {
		bool grew = false;
		int err = backward_solve(e, e->relevant, relevant_transfer);

		if (err || round == 8)
			return err;
		for (uint32_t k = 0; k < e->n; k++) {
			const struct nbpf_insn *in = &e->insns[k];
			int64_t lo = in->off, hi;
			uint32_t size, sub;
			uint64_t m = 0;

			if ((e->flags[k] & IF_LDDW2) || NBPF_CLASS(in->code) != NBPF_LDX ||
			    in->src != NBPF_REG_FP || k + 1 >= e->n ||
			    !(e->relevant[k + 1] & (1u << in->dst)))
				continue;
			size = NBPF_SIZE(in->code) == NBPF_DW ? 8 : NBPF_SIZE(in->code) == NBPF_W ? 4
			     : NBPF_SIZE(in->code) == NBPF_H ? 2 : 1;
			hi = lo + size;
			if (lo < -NBPF_STACK_SIZE || hi > 0)
				continue;
			for (int64_t o = lo; o < hi; o++)
				m |= 1ull << stk_slot(o);
			sub = subprog_of(e, k);
			if ((e->subs[sub].rel_slots | m) != e->subs[sub].rel_slots) {
				e->subs[sub].rel_slots |= m;
				grew = true;
			}
		}
		if (!grew)
			return 0;
		if (round == 7)
			for (uint32_t s = 0; s < e->n_subs; s++)
				e->subs[s].rel_slots = UINT64_MAX;
	}
}

/*
 * Debug aid (NCCLBPF_VERIFIER_DUMP_RELEVANCE set): prints, per instruction,
 * the live and relevant registers and the loop-exit mark, and per function
 * the relevant stack slots, to stderr.  Read-only; never changes a verdict.
 */
static void dump_relevance(const struct venv *e)
{
	for (uint32_t s = 0; s < e->n_subs; s++)
		fprintf(stderr, "func %u at %u: rel_slots %#018llx\n", s, e->subs[s].start,
			(unsigned long long)e->subs[s].rel_slots);
	for (uint32_t k = 0; k < e->n; k++) {
		if (e->flags[k] & IF_LDDW2)
			continue;
		fprintf(stderr, "%5u: code %#04x live %#06x rel %#06x%s%s\n", k, e->insns[k].code,
			e->live[k], e->relevant[k], (e->flags[k] & IF_LOOPEXIT) ? " loopexit" : "",
			(e->flags[k] & IF_LOOP) ? " loophead" : "");
	}
}

int vcheck_structure(struct venv *e)
{
	uint32_t *entries = NULL, n_entries = 0, *work = NULL, n_work = 0;
	uint8_t *color = NULL, *reach = NULL;
	int *depth = NULL, err = 0;

	if (!e->n)
		return verr(e, 0, VM_EMPTY, NULL, NULL);
	if (e->n > 1000000)
		return verr(e, 0, VM_TOO_LARGE, NULL, "%u instructions", e->n);

	/* Encodings; lddw second slots first so jumps into them are seen. */
	for (uint32_t i = 0; i < e->n; i++) {
		if ((err = check_insn(e, i)))
			return err;
		if (e->insns[i].code == NBPF_OP_LDDW)
			e->flags[++i] |= IF_LDDW2;
	}

	entries = calloc(e->n + 1, sizeof(*entries));
	work = calloc(e->n + 1, sizeof(*work));
	reach = calloc(e->n, 1);
	if (!entries || !work || !reach) {
		err = venv_oom(e);
		goto out;
	}
	entries[n_entries++] = 0;
	for (uint32_t i = 0; i < e->n; i++) {
		const struct nbpf_insn *in = &e->insns[i];
		int64_t t;

		if (e->flags[i] & IF_LDDW2)
			continue;
		t = jump_target(in, i);
		if (t == NO_TARGET)
			continue;
		if (t < 0 || t >= e->n) {
			err = verr(e, i, VM_JUMP_RANGE, NULL, "target %lld of %u", (long long)t, e->n);
			goto out;
		}
		if (e->flags[t] & IF_LDDW2) {
			err = verr(e, i, VM_JUMP_LDDW, NULL, "target %lld", (long long)t);
			goto out;
		}
		e->flags[t] |= IF_PRUNE;
		if (t <= i)
			e->flags[t] |= IF_LOOP;
		if (in->code == NBPF_OP_CALL)
			entries[n_entries++] = (uint32_t)t;
		if (is_cond_jmp(in->code) || in->code == NBPF_OP_CALL)
			e->flags[i + 1 < e->n ? i + 1 : i] |= IF_PRUNE;
	}
	qsort(entries, n_entries, sizeof(*entries), cmp_u32);
	e->subs = calloc(n_entries, sizeof(*e->subs));
	if (!e->subs) {
		err = venv_oom(e);
		goto out;
	}
	for (uint32_t i = 0; i < n_entries; i++) {
		if (i && entries[i] == entries[i - 1])
			continue;
		e->subs[e->n_subs].start = entries[i];
		if (e->n_subs)
			e->subs[e->n_subs - 1].end = entries[i];
		e->n_subs++;
	}
	e->subs[e->n_subs - 1].end = e->n;

	/* Edges stay inside their function; nothing falls off an end. */
	for (uint32_t i = 0; i < e->n; i++) {
		int64_t s[2];
		int ns;
		uint32_t sp;

		if (e->flags[i] & IF_LDDW2)
			continue;
		ns = successors(e, i, s);
		sp = subprog_of(e, i);
		for (int j = 0; j < ns; j++) {
			bool fall = j == 0 && e->insns[i].code != NBPF_OP_JA &&
				    e->insns[i].code != NBPF_OP_GOTOL;

			if (s[j] >= e->subs[sp].start && s[j] < e->subs[sp].end)
				continue;
			err = fall ? verr(e, i, VM_FALL_OFF, NULL, NULL)
				   : verr(e, i, VM_JUMP_SUBPROG, NULL, "target %lld", (long long)s[j]);
			goto out;
		}
	}

	/* Reachability from the entry (calls reach their callee). */
	work[n_work++] = 0;
	reach[0] = 1;
	while (n_work) {
		uint32_t i = work[--n_work];
		int64_t s[3];
		int ns = successors(e, i, s);

		if (e->insns[i].code == NBPF_OP_CALL && e->insns[i].src == NBPF_PSEUDO_CALL)
			s[ns++] = (int64_t)i + 1 + e->insns[i].imm;
		for (int j = 0; j < ns; j++) {
			if (!reach[s[j]]) {
				reach[s[j]] = 1;
				work[n_work++] = (uint32_t)s[j];
			}
		}
	}
	for (uint32_t i = 0; i < e->n; i++) {
		if (!reach[i] && !(e->flags[i] & IF_LDDW2)) {
			err = verr(e, i, VM_UNREACHABLE, NULL, NULL);
			goto out;
		}
	}

	color = calloc(e->n_subs, 1);
	depth = calloc(e->n_subs, sizeof(*depth));
	if (!color || !depth) {
		err = venv_oom(e);
		goto out;
	}
	{
		int d = call_depth(e, 0, color, depth, 1);

		if (d < 0) {
			err = -EACCES;
			goto out;
		}
		if (d > NBPF_MAX_CALL_DEPTH) {
			err = verr(e, 0, VM_CALL_DEPTH, NULL, "%d frames, at most %d", d,
				   NBPF_MAX_CALL_DEPTH);
			goto out;
		}
	}
	for (uint32_t s = 0; s < e->n_subs; s++)
		e->flags[e->subs[s].start] |= IF_PRUNE;
	if ((err = backward_solve(e, e->live, live_transfer)))
		goto out;
	if ((err = mark_loop_exits(e)))
		goto out;
	err = solve_relevant(e);
	if (!err && getenv("NCCLBPF_VERIFIER_DUMP_RELEVANCE"))
		dump_relevance(e);
out:
	free(entries);
	free(work);
	free(reach);
	free(color);
	free(depth);
	return err;
}

uint32_t vsubprog_of(const struct venv *e, uint32_t i)
{
	return subprog_of(e, i);
}

int vsuccessors(const struct venv *e, uint32_t i, int64_t out[2])
{
	return successors(e, i, out);
}
