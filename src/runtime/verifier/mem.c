/*
 * mem.c - loads, stores and atomics through typed pointers, and the memory
 * arguments of helpers.  Each region (context fields, stack frame bytes,
 * map value, ring buffer record) has its own rules; every access is proven
 * inside its region for all values of the pointer's variable offset.
 */
#include <errno.h>
#include <string.h>

#include "../maps/map.h"
#include "vstate.h"

#define MAX_VAR_OFF (1ll << 29)

static struct vframe *frame_of(struct venv *e, const struct vreg *base)
{
	return &e->cur->frames[base->frameno];
}

static void note_depth(struct venv *e, const struct vframe *f, int64_t lo)
{
	struct vsubprog *s = &e->subs[f->subprog];

	if (-lo > (int64_t)s->stack_depth)
		s->stack_depth = (uint32_t)-lo;
}

/*
 * A store is about to overwrite part of slot k's spill (or may, at a
 * variable offset): the spill's bytes stop being one register.  A spilled
 * scalar's bytes are data and stay readable, with its taint.  A spilled
 * pointer's bytes hold an address: were they data, a narrower store
 * followed by a load of the untouched bytes would hand the program part of
 * a stack, context or map address as an integer, free to be stored in a
 * map.  They become unreadable instead (SB_INVALID, marked SB_PTR_REST for
 * the message) until a store writes them; the caller then marks the bytes
 * it writes for certain.  The kernel refuses such stores for unprivileged
 * programs; keeping them but refusing the read also accepts compilers'
 * reuse of a dead pointer's slot for narrower data.
 */
static void slot_scrub_spill(struct vframe *f, uint32_t k)
{
	struct vslot *sl = &f->slots[k];
	bool ptr = sl->spill.type != VT_SCALAR;
	uint8_t t = sl->spill.taint ? SB_TAINT : 0;

	for (int i = 0; i < 8; i++) {
		if (SB_KIND(sl->stype[i]) != SB_SPILL)
			continue;
		sl->stype[i] = ptr ? SB_INVALID | SB_PTR_REST
				   : SB_MISC | t | (sl->stype[i] & SB_TAINT);
	}
	memset(&sl->spill, 0, sizeof(sl->spill));
}

static void grow_slots(struct vframe *f, int64_t lo)
{
	uint32_t k = stk_slot(lo) + 1;

	if (k > f->nslots)
		f->nslots = k;
}

/*
 * Writes size bytes at fp-relative o (constant).  An 8-byte aligned write of
 * a known register is a spill and keeps the register's full state.  A
 * naturally aligned 1-, 2- or 4-byte write of a scalar is a narrow spill:
 * the slot keeps the truncated value (with its id only when the value fits:
 * otherwise the copy is not the same value), its spill bytes mark exactly
 * the bytes written, and a read of exactly those bytes, or of their first
 * bytes (narrow_fill), gets the value back (compilers keep 32-bit loop
 * counters whose address is taken, such as map keys, this way).
 */
void stack_write_reg(struct vframe *f, int32_t o, uint32_t size, const struct vreg *v)
{
	uint8_t t = (v && v->taint) ? SB_TAINT : 0;

	grow_slots(f, o);
	if (size == 8 && !(o % 8) && v) {
		struct vslot *sl = &f->slots[stk_slot(o)];

		memset(sl->stype, SB_SPILL | t, 8);
		sl->spill = *v;
		return;
	}
	if (size < 8 && !(o % size) && v && v->type == VT_SCALAR) {
		struct vslot *sl = &f->slots[stk_slot(o)];

		if (slot_spill_mask(sl))
			slot_scrub_spill(f, stk_slot(o));
		sl->spill = *v;
		/* the same value, and linked to it, when it fits (narrow_fill) */
		if (v->umax >> (8 * size))
			reg_forget_links(&sl->spill);
		scalar_zext_bytes(&sl->spill, size);
		for (int64_t i = o; i < (int64_t)o + size; i++)
			*stk_type(f, i) = SB_SPILL | t;
		return;
	}
	for (int64_t i = o; i < (int64_t)o + size; i++)
		if (SB_KIND(*stk_type(f, i)) == SB_SPILL)
			slot_scrub_spill(f, stk_slot(i));
	for (int64_t i = o; i < (int64_t)o + size; i++)
		*stk_type(f, i) = SB_MISC | t;
}

/*
 * A fill narrower than the spill it reads, from the spill's first bytes
 * (its low bytes: the machine is little-endian), or a spill of 1 or 2
 * bytes read back whole: the value truncated to size bytes.  It is still
 * the same value (and keeps the id) when the spilled value fits.
 */
static bool narrow_fill(struct vframe *f, int64_t lo, uint32_t size, struct vreg *out)
{
	const struct vslot *sl = &f->slots[stk_slot(lo)];
	uint32_t b = (uint32_t)(lo + 8 * ((int64_t)stk_slot(lo) + 1));
	uint8_t m = slot_spill_mask(sl), want = (uint8_t)(((1u << size) - 1) << b);

	if (size >= 8 || lo % size || sl->spill.type != VT_SCALAR || (m & want) != want ||
	    (b && (m & (1u << (b - 1)))))
		return false; /* not the first bytes of a spilled scalar */
	if (out) {
		*out = sl->spill;
		if (out->umax >> (8 * size))
			reg_forget_links(out);
		scalar_zext_bytes(out, size);
	}
	return true;
}

/* Range [lo, hi) of byte offsets the access may touch, relative to the region base. */
static void access_range(const struct vreg *base, int32_t off, uint32_t size, int64_t *lo,
			 int64_t *hi)
{
	*lo = (int64_t)base->off + off + base->smin;
	*hi = (int64_t)base->off + off + base->smax + size;
}

static int stack_access(struct venv *e, uint32_t pc, uint8_t regno, const struct vreg *base,
			int32_t off, uint32_t size, bool write, struct vreg *out,
			const struct vreg *stored, bool helper)
{
	struct vframe *f = frame_of(e, base);
	bool cst = tnum_is_const(base->var_off);
	int64_t lo, hi;
	uint8_t regs[2] = { regno, 0xff };
	uint8_t taint = 0;

	access_range(base, off, size, &lo, &hi);
	if (lo < -NBPF_STACK_SIZE || hi > 0)
		return verr(e, pc, helper ? VM_HELPER_SIZE : VM_STACK_OOB, regs,
			    "stack bytes [%lld, %lld) of fp, frame is [-%d, 0)", (long long)lo,
			    (long long)hi, NBPF_STACK_SIZE);
	note_depth(e, f, lo);
	e->work += (uint64_t)(hi - lo) / (8 * VWORK_SLOTS); /* the loops below walk the range */
	if (write) {
		if (stored && stored->type != VT_SCALAR) {
			if (!cst || size != 8 || (lo % 8))
				return verr(e, pc, VM_STACK_PTR_SPILL, regs, "%u bytes at fp%+lld",
					    size, (long long)lo);
			if (stored->type == VT_STACK && stored->frameno > base->frameno)
				return verr(e, pc, VM_STACK_ESCAPE, regs, NULL);
		}
		if (cst) {
			stack_write_reg(f, (int32_t)lo, size, stored);
			vframe_touch(e, base->frameno); /* a caller's frame: restamp */
			return 0;
		}
		/*
		 * Unknown position: nothing becomes initialised, spills lose their
		 * type, and a spilled pointer the range touches becomes unreadable
		 * in all 8 bytes (any of them may still hold its address on some
		 * path).  Which bytes change depends on the offset, so a
		 * rank-local offset makes every byte it may reach rank-local too.
		 */
		taint = ((stored && stored->taint) || (base->taint & TAINT_LOCAL)) ? SB_TAINT : 0;
		grow_slots(f, lo);
		for (int64_t i = lo; i < hi; i++) {
			uint8_t *b = stk_type(f, i);

			if (SB_KIND(*b) == SB_SPILL)
				slot_scrub_spill(f, stk_slot(i));
			if (SB_KIND(*b) != SB_INVALID)
				*b |= taint;
		}
		vframe_touch(e, base->frameno);
		return 0;
	}
	/* read; a helper reads raw bytes, so a spilled pointer must not pass */
	if (!helper && cst && (size == 8 || size == 4) && !(lo % size) &&
	    slot_spill_mask(&f->slots[stk_slot(lo)]) ==
		    (uint8_t)(((1u << size) - 1) << (lo + 8 * ((int64_t)stk_slot(lo) + 1)))) {
		if (out)
			*out = f->slots[stk_slot(lo)].spill;
		return 0;
	}
	if (!helper && cst && narrow_fill(f, lo, size, out))
		return 0;
	for (int64_t i = lo; i < hi; i++) {
		uint8_t b = *stk_type(f, i), k = SB_KIND(b);

		if (k == SB_INVALID && (b & SB_PTR_REST))
			return verr(e, pc, VM_STACK_PTR_REST, regs, "byte fp%+lld", (long long)i);
		if (k == SB_INVALID)
			return verr(e, pc, VM_STACK_UNINIT, regs, "byte fp%+lld", (long long)i);
		if (k == SB_SPILL) {
			const struct vreg *sp = &f->slots[stk_slot(i)].spill;

			if (sp->type != VT_SCALAR)
				return verr(e, pc, VM_STACK_PTR_FILL, regs, "byte fp%+lld",
					    (long long)i);
			taint |= sp->taint;
		}
		if (b & SB_TAINT)
			taint |= TAINT_LOCAL;
	}
	/* a rank-local variable offset picks which bytes are read */
	if (!cst)
		taint |= base->taint & TAINT_LOCAL;
	if (out) {
		if (size <= 8)
			scalar_from_load(out, size, false);
		else
			reg_mark_unknown(out); /* a helper's buffer: only the taint matters */
		out->taint = taint;
	}
	return 0;
}

/*
 * A context access at constant offset o that no single field contains.
 * Compilers merge adjacent constant stores (algo and proto become one
 * 8-byte store) and, more rarely, adjacent loads, so an access is accepted
 * when it is naturally aligned and covers only whole declared fields with
 * the right it needs: no byte of padding or reserved space, no part of a
 * field.  A store of a rank-local value (or under a rank-local branch) is
 * reported once per decision field it covers; a load is rank-local when any
 * covered field is.
 */
static int ctx_multi_access(struct venv *e, uint32_t pc, uint8_t regno, uint32_t o,
			    uint32_t size, bool write, struct vreg *out, const struct vreg *stored)
{
	const struct ncclbpf_hook_desc *h = e->hook;
	const struct ncclbpf_ctx_field *cover[8];
	uint8_t regs[2] = { regno, 0xff };
	uint32_t n = 0, at = o, need = write ? NCCLBPF_FIELD_WRITE : NCCLBPF_FIELD_READ;
	bool local = false;
	int err;

	if (o % size)
		return verr(e, pc, VM_CTX_FIELD, regs, "misaligned %u bytes at offset %u of %s",
			    size, o, h->ctx_type);
	while (at < o + size) {
		const struct ncclbpf_ctx_field *c = NULL;

		for (uint32_t i = 0; i < h->n_fields; i++)
			if (h->fields[i].off <= at && at < h->fields[i].off + h->fields[i].size) {
				c = &h->fields[i];
				break;
			}
		if (!c || c->off != at || c->off + c->size > o + size || n == 8)
			return verr(e, pc, VM_CTX_FIELD, regs,
				    "%u bytes at offset %u of %s %s %u", size, o, h->ctx_type,
				    c ? "cover part of field at" : "cover no field at byte", at);
		if (!(c->access & need)) {
			if (write)
				return verr(e, pc, VM_CTX_RO, regs, "field %s of %s", c->name,
					    h->ctx_type);
			return verr(e, pc, VM_CTX_FIELD, regs, "field %s is not readable", c->name);
		}
		local |= !(c->flags & (NCCLBPF_FIELD_RANK_INVARIANT | NCCLBPF_FIELD_DECISION));
		cover[n++] = c;
		at += c->size;
	}
	if (!write) {
		if (out) {
			scalar_from_load(out, size, false);
			out->taint = local ? TAINT_LOCAL : 0;
		}
		return 0;
	}
	if (stored && stored->type != VT_SCALAR)
		return verr(e, pc, VM_PTR_TO_CTX, regs, "field %s", cover[0]->name);
	for (uint32_t i = 0; i < n; i++)
		if ((cover[i]->flags & NCCLBPF_FIELD_DECISION) &&
		    (err = check_decision_store(e, pc, cover[i], stored ? stored->taint : 0)))
			return err;
	return 0;
}

static int ctx_access(struct venv *e, uint32_t pc, uint8_t regno, const struct vreg *base,
		      int32_t off, uint32_t size, bool write, struct vreg *out,
		      const struct vreg *stored, bool atomic)
{
	const struct ncclbpf_hook_desc *h = e->hook;
	uint8_t regs[2] = { regno, 0xff };
	const struct ncclbpf_ctx_field *fl = NULL;
	int64_t o;

	if (e->collect) {
		/* write-set discovery: any context access is fine */
		if (out)
			scalar_from_load(out, size, false);
		return 0;
	}
	if (atomic)
		return verr(e, pc, VM_CTX_ATOMIC, regs, NULL);
	if (!tnum_is_const(base->var_off))
		return verr(e, pc, VM_CTX_VAROFF, regs, NULL);
	o = (int64_t)base->off + (int64_t)base->var_off.value + off;
	if (o < 0 || o + size > h->ctx_size)
		return verr(e, pc, VM_CTX_OOB, regs, "%s %u bytes at offset %lld of %s (%u bytes)",
			    write ? "write" : "read", size, (long long)o, h->ctx_type, h->ctx_size);
	if (!h->n_fields) {
		/* a hook without a field table: plain memory (raw programs, tests) */
		if (write && stored && stored->type != VT_SCALAR)
			return verr(e, pc, VM_PTR_TO_CTX, regs, NULL);
		if (out && !write) {
			scalar_from_load(out, size, false);
			out->taint = TAINT_LOCAL;
		}
		return 0;
	}
	for (uint32_t i = 0; i < h->n_fields; i++) {
		const struct ncclbpf_ctx_field *c = &h->fields[i];

		if (c->off <= o && o + size <= c->off + c->size) {
			fl = c;
			break;
		}
	}
	if (!fl && size > 1)
		return ctx_multi_access(e, pc, regno, (uint32_t)o, size, write, out, stored);
	if (!fl)
		return verr(e, pc, VM_CTX_FIELD, regs, "%u bytes at offset %lld of %s", size,
			    (long long)o, h->ctx_type);
	if (write) {
		if (!(fl->access & NCCLBPF_FIELD_WRITE))
			return verr(e, pc, VM_CTX_RO, regs, "field %s of %s", fl->name, h->ctx_type);
		if (o != fl->off || size != fl->size)
			return verr(e, pc, VM_CTX_WIDTH, regs, "%u-byte write to %u-byte field %s",
				    size, fl->size, fl->name);
		if (stored && stored->type != VT_SCALAR)
			return verr(e, pc, VM_PTR_TO_CTX, regs, "field %s", fl->name);
		if (fl->flags & NCCLBPF_FIELD_DECISION)
			return check_decision_store(e, pc, fl, stored ? stored->taint : 0);
		return 0;
	}
	if (!(fl->access & NCCLBPF_FIELD_READ))
		return verr(e, pc, VM_CTX_FIELD, regs, "field %s is not readable", fl->name);
	if ((o - fl->off) % size)
		return verr(e, pc, VM_CTX_WIDTH, regs, "misaligned %u-byte read in field %s", size,
			    fl->name);
	if (out) {
		scalar_from_load(out, size, false);
		/*
		 * A decision field holds its invariant initial value (KEEP) or what
		 * this call stored; a rank-local store was already reported there,
		 * so reading it back adds nothing rank-local of its own.
		 */
		out->taint = (fl->flags & (NCCLBPF_FIELD_RANK_INVARIANT | NCCLBPF_FIELD_DECISION))
				     ? 0 : TAINT_LOCAL;
	}
	return 0;
}

static int region_access(struct venv *e, uint32_t pc, uint8_t regno, const struct vreg *base,
			 int32_t off, uint32_t size, uint32_t limit, enum vmsg oob)
{
	uint8_t regs[2] = { regno, 0xff };
	int64_t lo, hi;

	access_range(base, off, size, &lo, &hi);
	if (lo < 0 || hi > (int64_t)limit)
		return verr(e, pc, oob, regs, "bytes [%lld, %lld) of a %u-byte %s", (long long)lo,
			    (long long)hi, limit,
			    base->type == VT_MAP_VALUE ? "map value" : "record");
	return 0;
}

/*
 * One load (value_regno >= 0 gets the result), store (stored: the value) or
 * atomic at regno + off.  Returns 0 or a rejection.
 */
int check_mem_access(struct venv *e, uint32_t pc, uint8_t regno, int32_t off, uint32_t size,
		     bool write, int value_regno, bool sign, const struct vreg *stored,
		     bool atomic)
{
	struct vframe *f = cur_frame(e);
	struct vreg base = f->regs[regno], out;
	uint8_t regs[2] = { regno, 0xff };
	const struct ncclbpf_map *m;
	int err = 0;

	memset(&out, 0, sizeof(out));
	switch (base.type) {
	case VT_NOT_INIT:
		return verr(e, pc, VM_UNINIT_REG, regs, NULL);
	case VT_SCALAR:
		return verr(e, pc, VM_DEREF_SCALAR, regs, NULL);
	case VT_MAP_VALUE_OR_NULL:
	case VT_RINGBUF_MEM_OR_NULL:
		return verr(e, pc, VM_NULL_DEREF, regs, NULL);
	case VT_MAP_PTR:
		return verr(e, pc, VM_DEREF_MAP_PTR, regs, NULL);
	case VT_RINGBUF_RELEASED:
		return verr(e, pc, VM_RB_USE_AFTER, regs, NULL);
	case VT_CTX:
		err = ctx_access(e, pc, regno, &base, off, size, write, &out, stored, atomic);
		/* ldxs* from a field: the loaded bytes are sign-extended too */
		if (!err && !write && sign && out.type == VT_SCALAR && size < 8)
			scalar_sext(&out, size, false);
		break;
	case VT_STACK:
		if (atomic) {
			struct vreg v;

			if ((err = stack_access(e, pc, regno, &base, off, size, false, &out, NULL,
						false)))
				return err;
			/* the old value would reach a register as an integer: a pointer leak */
			if (out.type != VT_SCALAR)
				return verr(e, pc, VM_STACK_PTR_FILL, regs,
					    "atomic operation on a spilled pointer");
			memset(&v, 0, sizeof(v));
			reg_mark_unknown(&v);
			v.taint = out.taint | (stored ? stored->taint : 0);
			err = stack_access(e, pc, regno, &base, off, size, true, NULL, &v, false);
			scalar_from_load(&out, size, false);
			break;
		}
		err = stack_access(e, pc, regno, &base, off, size, write, &out, stored, false);
		if (!err && !write && value_regno >= 0 && sign && out.type == VT_SCALAR && size < 8) {
			/*
			 * A filled spill keeps its id and derivation only while it
			 * is the spilled value; sign extension changes it whenever
			 * the width's sign bit may be set.
			 */
			if (out.umax >> (8 * size - 1))
				reg_forget_links(&out);
			scalar_sext(&out, size, false);
		}
		break;
	case VT_MAP_VALUE:
		m = venv_map(e, base.aux);
		if (!m)
			return verr(e, pc, VM_BAD_MAP, regs, NULL);
		if ((err = region_access(e, pc, regno, &base, off, size, m->value_size, VM_MAP_OOB)))
			return err;
		if (write || atomic) {
			if (m->readonly_prog)
				return verr(e, pc, VM_RODATA_WRITE, regs, "map %s", m->name);
			if (stored && stored->type != VT_SCALAR)
				return verr(e, pc, VM_PTR_TO_MAP, regs, "map %s", m->name);
			if (e->map_writes)
				e->map_writes[base.aux] = 1;
		}
		scalar_from_load(&out, size, sign);
		out.taint = base.taint | (map_is_rank_local(e, base.aux) ? TAINT_LOCAL : 0);
		break;
	case VT_RINGBUF_MEM:
		if ((err = region_access(e, pc, regno, &base, off, size, base.aux, VM_RB_OOB)))
			return err;
		if ((write || atomic) && stored && stored->type != VT_SCALAR)
			return verr(e, pc, VM_PTR_TO_MAP, regs, "ring buffer record");
		scalar_from_load(&out, size, sign);
		out.taint = TAINT_LOCAL;
		break;
	default:
		return verr(e, pc, VM_DEREF_SCALAR, regs, NULL);
	}
	if (err)
		return err;
	if (value_regno >= 0 && (!write || atomic)) {
		if (out.type == VT_NOT_INIT)
			reg_mark_unknown(&out);
		f->regs[value_regno] = out;
		if (out.type == VT_SCALAR && value_regno != regno)
			f->regs[value_regno].id = out.id; /* a filled spill keeps its links */
	}
	return 0;
}

/*
 * A helper reads size bytes at regno (key, value, buffer): the memory must
 * be stack, map value or ring buffer record, in bounds, and initialised.
 * *taint (may be NULL) gains the rank-local bit when stack bytes read are
 * rank-local (a key computed from a random number picks a different
 * entry on each rank); map values and records carry theirs on the pointer.
 */
int check_helper_mem(struct venv *e, uint32_t pc, uint8_t regno, uint64_t size, bool zero_ok,
		     bool write, uint8_t *taint)
{
	struct vreg base = cur_frame(e)->regs[regno], got;
	uint8_t regs[2] = { regno, 0xff };
	const struct ncclbpf_map *m;
	int err;

	if (size == 0 && zero_ok)
		return 0;
	if (size > (1u << 20))
		return verr(e, pc, VM_HELPER_SIZE, regs, "size up to %llu", (unsigned long long)size);
	switch (base.type) {
	case VT_STACK:
		memset(&got, 0, sizeof(got));
		err = stack_access(e, pc, regno, &base, 0, (uint32_t)size, write,
				   write ? NULL : &got, NULL, true);
		if (!err && !write && taint)
			*taint |= got.taint;
		return err;
	case VT_MAP_VALUE:
		m = venv_map(e, base.aux);
		if (!m)
			return verr(e, pc, VM_BAD_MAP, regs, NULL);
		if (write && m->readonly_prog)
			return verr(e, pc, VM_RODATA_WRITE, regs, "map %s", m->name);
		return region_access(e, pc, regno, &base, 0, (uint32_t)size, m->value_size,
				     VM_HELPER_SIZE);
	case VT_RINGBUF_MEM:
		return region_access(e, pc, regno, &base, 0, (uint32_t)size, base.aux,
				     VM_HELPER_SIZE);
	case VT_NOT_INIT:
		return verr(e, pc, VM_UNINIT_REG, regs, NULL);
	case VT_RINGBUF_RELEASED:
		return verr(e, pc, VM_RB_USE_AFTER, regs, NULL);
	default:
		return verr(e, pc, VM_HELPER_ARG, regs, "expected a pointer to stack, map value or record, got %s",
			    vtype_name(base.type));
	}
}
