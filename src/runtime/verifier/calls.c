/*
 * calls.c - helper calls (checked against their prototypes), bpf-to-bpf
 * calls (a new frame; r1-r5 passed, r6-r9 preserved), and exits (a
 * function's r0; the main program's return range and leaked references).
 */
#include <errno.h>
#include <string.h>

#include "../maps/map.h"
#include "vstate.h"

static bool hook_allows(const struct ncclbpf_hook_desc *h, int32_t id)
{
	for (uint32_t i = 0; i < h->n_helpers; i++)
		if (h->helpers[i] == id)
			return true;
	return false;
}

static bool is_ringbuf_helper(int32_t id)
{
	return id == NBPF_HELPER_RINGBUF_OUTPUT || id == NBPF_HELPER_RINGBUF_RESERVE ||
	       id == NBPF_HELPER_RINGBUF_QUERY;
}

struct release_arg {
	uint32_t id;
};

static void mark_released(struct vreg *r, void *arg)
{
	(void)arg;
	if (r->type == VT_RINGBUF_MEM || r->type == VT_RINGBUF_MEM_OR_NULL)
		r->type = VT_RINGBUF_RELEASED;
}

static int release_ref(struct venv *e, uint32_t pc, uint8_t regno, uint32_t id)
{
	struct vstate *s = e->cur;
	uint8_t regs[2] = { regno, 0xff };

	for (uint32_t i = 0; i < s->nrefs; i++) {
		if (s->refs[i] != id)
			continue;
		s->refs[i] = s->refs[--s->nrefs];
		for_each_reg_with_id(e, id, mark_released, NULL);
		return 0;
	}
	return verr(e, pc, VM_RB_DOUBLE, regs, NULL);
}

/* One helper call: arguments against the prototype, then r0 from the return type. */
int check_helper_call(struct venv *e, uint32_t pc, const struct nbpf_insn *in)
{
	const struct nbpf_helper *h = e->helper_find ? e->helper_find(in->imm) : NULL;
	struct vframe *f = cur_frame(e);
	const struct ncclbpf_map *map = NULL;
	uint32_t map_idx = 0, release_id = 0;
	uint64_t alloc_size = 0;
	uint8_t taint = 0, regs[2] = { 0xff, 0xff };
	struct vreg r1 = f->regs[1], *r0;
	int err;

	if (!h)
		return verr(e, pc, VM_HELPER_UNKNOWN, NULL, "helper %d", in->imm);
	if (!e->collect && !hook_allows(e->hook, in->imm))
		return verr(e, pc, VM_HELPER_DENIED, NULL, "%s (%d) in hook %s", h->name, in->imm,
			    e->hook->name);
	for (int i = 0; i < 5; i++) {
		enum nbpf_arg_type t = h->args[i];
		uint8_t regno = (uint8_t)(i + 1);
		struct vreg *r = &f->regs[regno];

		regs[0] = regno;
		if (t == NBPF_ARG_NONE)
			continue;
		/* trace_printk's value arguments are variadic: check_printk says which must be set */
		if (r->type == VT_NOT_INIT && t == NBPF_ARG_ANYTHING &&
		    in->imm == NBPF_HELPER_TRACE_PRINTK)
			continue;
		if (r->type == VT_NOT_INIT)
			return verr(e, pc, VM_UNINIT_REG, regs, "argument %d of %s", i + 1, h->name);
		taint |= r->taint;
		switch (t) {
		case NBPF_ARG_ANYTHING:
			if (r->type != VT_SCALAR)
				return verr(e, pc, VM_PTR_ARG, regs, "argument %d of %s", i + 1, h->name);
			break;
		case NBPF_ARG_CONST_MAP_PTR:
			if (r->type != VT_MAP_PTR)
				return verr(e, pc, VM_HELPER_ARG, regs, "argument %d of %s must be a map, not %s",
					    i + 1, h->name, vtype_name(r->type));
			map_idx = r->aux;
			map = venv_map(e, map_idx);
			if (!map)
				return verr(e, pc, VM_BAD_MAP, regs, NULL);
			if ((map->type == NCCLBPF_MAP_RINGBUF) != is_ringbuf_helper(in->imm))
				return verr(e, pc, VM_HELPER_MAP_TYPE, regs, "%s on map %s (type %d)",
					    h->name, map->name, map->type);
			break;
		case NBPF_ARG_PTR_TO_MAP_KEY:
		case NBPF_ARG_PTR_TO_MAP_VALUE:
			if (!map)
				return verr(e, pc, VM_HELPER_ARG, regs, "argument %d of %s needs a map first",
					    i + 1, h->name);
			if (r->type != VT_STACK && r->type != VT_MAP_VALUE && r->type != VT_RINGBUF_MEM)
				return verr(e, pc, VM_HELPER_ARG, regs,
					    "argument %d of %s must point to %s memory, not %s", i + 1,
					    h->name, t == NBPF_ARG_PTR_TO_MAP_KEY ? "key" : "value",
					    vtype_name(r->type));
			if ((err = check_helper_mem(e, pc, regno,
						    t == NBPF_ARG_PTR_TO_MAP_KEY ? map->key_size
										: map->value_size,
						    false, false, &taint)))
				return err;
			break;
		case NBPF_ARG_PTR_TO_MEM:
		case NBPF_ARG_PTR_TO_RO_STR: {
			enum nbpf_arg_type st = i < 4 ? h->args[i + 1] : NBPF_ARG_NONE;
			struct vreg *sz = &f->regs[regno + 1];
			uint8_t sregs[3] = { regno, (uint8_t)(regno + 1), 0xff };

			if (st != NBPF_ARG_CONST_SIZE && st != NBPF_ARG_CONST_SIZE_OR_ZERO)
				return verr(e, pc, VM_HELPER_ARG, regs, "prototype of %s", h->name);
			if (r->type != VT_STACK && r->type != VT_MAP_VALUE && r->type != VT_RINGBUF_MEM)
				return verr(e, pc, VM_HELPER_ARG, sregs,
					    "argument %d of %s must point to stack, map value or record memory, not %s",
					    i + 1, h->name, vtype_name(r->type));
			if (sz->type != VT_SCALAR)
				return verr(e, pc, sz->type == VT_NOT_INIT ? VM_UNINIT_REG : VM_HELPER_ARG,
					    sregs, "size argument %d of %s", i + 2, h->name);
			if (st == NBPF_ARG_CONST_SIZE && sz->umin == 0)
				return verr(e, pc, VM_HELPER_SIZE, sregs, "size of %s may be zero", h->name);
			if (sz->umax > (1u << 20))
				return verr(e, pc, VM_HELPER_SIZE, sregs, "size of %s is unbounded",
					    h->name);
			if ((err = check_helper_mem(e, pc, regno, sz->umax, true, false, &taint)))
				return err;
			break;
		}
		case NBPF_ARG_CONST_SIZE:
		case NBPF_ARG_CONST_SIZE_OR_ZERO:
			if (r->type != VT_SCALAR)
				return verr(e, pc, VM_HELPER_ARG, regs, "size argument %d of %s", i + 1,
					    h->name);
			break;
		case NBPF_ARG_CONST_ALLOC_SIZE:
			if (!reg_is_const(r) || r->var_off.value == 0 || r->var_off.value > (1u << 20))
				return verr(e, pc, VM_HELPER_SIZE, regs,
					    "reservation size must be a positive constant");
			alloc_size = r->var_off.value;
			if (map && map->max_entries && alloc_size > map->max_entries)
				return verr(e, pc, VM_HELPER_SIZE, regs,
					    "record of %llu bytes in a %u-byte ring buffer",
					    (unsigned long long)alloc_size, map->max_entries);
			break;
		case NBPF_ARG_PTR_TO_RINGBUF_MEM:
			if (r->type == VT_RINGBUF_MEM_OR_NULL)
				return verr(e, pc, VM_RB_NULL, regs, "%s", h->name);
			if (r->type == VT_RINGBUF_RELEASED)
				return verr(e, pc, VM_RB_DOUBLE, regs, "%s", h->name);
			if (r->type != VT_RINGBUF_MEM)
				return verr(e, pc, VM_HELPER_ARG, regs,
					    "argument %d of %s must be a ring buffer record, not %s", i + 1,
					    h->name, vtype_name(r->type));
			if (r->off || !tnum_equals_const(r->var_off, 0))
				return verr(e, pc, VM_HELPER_ARG, regs,
					    "%s needs the pointer bpf_ringbuf_reserve returned", h->name);
			release_id = r->id;
			break;
		default:
			return verr(e, pc, VM_HELPER_ARG, regs, "prototype of %s", h->name);
		}
	}
	if (in->imm == NBPF_HELPER_TRACE_PRINTK && !e->collect && (err = check_printk(e, pc)))
		return err;
	if (map && (in->imm == NBPF_HELPER_MAP_UPDATE || in->imm == NBPF_HELPER_MAP_DELETE)) {
		if (map->readonly_prog)
			return verr(e, pc, VM_RODATA_WRITE, NULL, "%s on map %s", h->name, map->name);
		if (e->map_writes)
			e->map_writes[map_idx] = 1;
	}
	if (release_id && (err = release_ref(e, pc, 1, release_id)))
		return err;
	if ((h->flags & NBPF_HELPER_UNWIND) && r1.type == VT_SCALAR && r1.umin == 0) {
		/* r1 == 0 stops the program with r0 = 0 */
		if (!e->have_ret || e->ret_min > 0)
			e->ret_min = 0;
		if (!e->have_ret || e->ret_max < 0)
			e->ret_max = 0;
		e->have_ret = true;
	}
	for (int i = 1; i <= 5; i++)
		mark_reg_not_init(&f->regs[i]);
	r0 = &f->regs[0];
	mark_reg_not_init(r0);
	switch (h->ret) {
	case NBPF_RET_VOID:
		break;
	case NBPF_RET_INTEGER:
		if ((h->flags & NBPF_HELPER_UNWIND) && r1.type == VT_SCALAR) {
			*r0 = r1;
			reg_forget_links(r0);
			break;
		}
		reg_mark_unknown(r0);
		r0->taint = taint;
		if ((h->flags & NBPF_HELPER_RANK_LOCAL) || (map && map_is_rank_local(e, map_idx)))
			r0->taint |= TAINT_LOCAL;
		break;
	case NBPF_RET_PTR_TO_MAP_VALUE_OR_NULL:
		reg_mark_const(r0, 0);
		r0->type = VT_MAP_VALUE_OR_NULL;
		r0->aux = map_idx;
		r0->id = ++e->next_id;
		r0->taint = taint | ((map && map_is_rank_local(e, map_idx)) ? TAINT_LOCAL : 0);
		break;
	case NBPF_RET_PTR_TO_RINGBUF_MEM_OR_NULL:
		if (e->cur->nrefs >= MAX_REFS)
			return verr(e, pc, VM_RB_TOO_MANY, NULL, NULL);
		reg_mark_const(r0, 0);
		r0->type = VT_RINGBUF_MEM_OR_NULL;
		r0->aux = (uint32_t)alloc_size;
		r0->id = ++e->next_id;
		r0->taint = TAINT_LOCAL;
		e->cur->refs[e->cur->nrefs++] = r0->id;
		break;
	}
	return 0;
}

/* A bpf-to-bpf call: pushes a frame whose r1-r5 are the caller's. */
int check_subprog_call(struct venv *e, uint32_t pc, const struct nbpf_insn *in)
{
	struct vstate *s = e->cur;
	struct vframe *caller = cur_frame(e), *callee;
	uint32_t target = (uint32_t)((int64_t)pc + 1 + in->imm);

	if (s->nframes >= NBPF_MAX_CALL_DEPTH)
		return verr(e, pc, VM_CALL_DEPTH, NULL, "%u frames", s->nframes + 1);
	callee = &s->frames[s->nframes];
	memset(callee, 0, sizeof(*callee));
	e->work += sizeof(*callee) / VWORK_BYTES;
	callee->callsite = pc;
	callee->subprog = vsubprog_of(e, target);
	for (int i = 1; i <= 5; i++)
		callee->regs[i] = caller->regs[i];
	callee->regs[NBPF_REG_FP].type = VT_STACK;
	callee->regs[NBPF_REG_FP].frameno = (uint8_t)s->nframes;
	reg_mark_const(&callee->regs[NBPF_REG_FP], 0);
	callee->regs[NBPF_REG_FP].type = VT_STACK;
	callee->regs[NBPF_REG_FP].frameno = (uint8_t)s->nframes;
	s->nframes++;
	s->pc = target;
	return 0;
}

/* exit: returns to the caller, or ends the path at the main program's exit. */
int check_exit(struct venv *e, uint32_t pc, bool *path_done)
{
	struct vstate *s = e->cur;
	struct vframe *f = cur_frame(e);
	struct vreg r0 = f->regs[0];
	uint8_t regs[2] = { 0, 0xff };
	const struct ncclbpf_hook_desc *h = e->hook;

	*path_done = false;
	if (r0.type == VT_NOT_INIT && s->nframes == 1)
		return verr(e, pc, VM_R0_UNINIT, NULL, NULL);
	if (s->nframes > 1) {
		/* a void function: the caller's r0 is then uninitialised */
		uint32_t fi = s->nframes - 1, k = 0;
		bool ctrl = false;
		struct vframe *caller = &s->frames[fi - 1];

		if (r0.type == VT_STACK && r0.frameno == fi)
			return verr(e, pc, VM_RET_STACK, regs, NULL);
		for (uint32_t i = 0; i < s->nctrl; i++) {
			if ((s->ctrl[i] >> 24) == fi)
				ctrl = true;
			else
				s->ctrl[k++] = s->ctrl[i];
		}
		s->nctrl = k;
		/* returned under the callee's rank-local branch, or called inside a caller's region */
		if (ctrl || k)
			r0.taint |= TAINT_LOCAL;
		caller->regs[0] = r0;
		for (int i = 1; i <= 5; i++)
			mark_reg_not_init(&caller->regs[i]);
		s->nframes--;
		s->pc = f->callsite + 1;
		return 0;
	}
	if (s->nrefs)
		return verr(e, pc, VM_RB_LEAK, NULL, "%u reservation(s) still held", s->nrefs);
	if (r0.type != VT_SCALAR)
		return verr(e, pc, VM_PTR_RET, regs, NULL);
	if (r0.smin < h->ret_min || r0.smax > h->ret_max)
		return verr(e, pc, VM_RET_RANGE, regs, "hook %s allows [%lld, %lld]", h->name,
			    (long long)h->ret_min, (long long)h->ret_max);
	if (!e->have_ret || r0.smin < e->ret_min)
		e->ret_min = r0.smin;
	if (!e->have_ret || r0.smax > e->ret_max)
		e->ret_max = r0.smax;
	e->have_ret = true;
	*path_done = true;
	return 0;
}
