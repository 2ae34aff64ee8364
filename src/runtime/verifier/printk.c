// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * printk.c - bpf_trace_printk's format against its value arguments.
 *
 * The helper takes three value arguments in r3-r5 whatever the format
 * asks for, so a format with more conversions than the program set would
 * print what those registers last held (the JIT passes x86 registers that
 * may hold host addresses).  When the format is a constant the verifier
 * can read (.rodata at a constant offset, or stack bytes every one of
 * which comes from a spilled constant), it is parsed with the helper's
 * own scanner: it must end in a NUL within the size passed, use only
 * conversions the helper prints, at most three, and each conversion's
 * register must hold an initialised scalar.  Only a .rodata format is
 * trusted to stay what was checked: any other (the stack included, which
 * the program itself writes) must come with all three registers set, so
 * nothing stale can reach the output whatever the format is at run time.
 * Pointers never pass: every initialised value argument must be a scalar
 * (checked with the prototype, calls.c).
 */
#include <stdio.h>
#include <string.h>

#include "../maps/map.h"
#include "vstate.h"

#define FMT_SHOW 48   /* bytes of the format quoted in a detail */
#define FMT_MAX  4096 /* the helper refuses longer formats */

/*
 * The program's global constants: programs cannot write them, and the
 * loader names them after their section.  A map created read-only for
 * programs (a config map) is not a constant: operators update it.
 */
static bool map_is_rodata(const struct ncclbpf_map *m)
{
	return m && m->readonly_prog && m->type == NCCLBPF_MAP_ARRAY && m->max_entries == 1 &&
	       m->name && !strncmp(m->name, ".rodata", 7);
}

/*
 * Copies the format's bytes into buf (at most cap) up to and including
 * its first NUL.  Returns the format's length (the NUL's index), -1 when
 * every byte of the checked range is known and none is a NUL, or -2 when
 * some byte before the first NUL is not known (why says which).
 */
static int64_t read_format(struct venv *e, const struct vreg *r, uint64_t size, char *buf,
			   size_t cap, char *why, size_t why_len)
{
	int64_t o;

	if (!tnum_is_const(r->var_off)) {
		snprintf(why, why_len, "it is at a variable offset");
		return -2;
	}
	o = (int64_t)r->off + (int64_t)r->var_off.value;
	if (size > cap)
		size = cap;
	if (r->type == VT_MAP_VALUE) {
		struct ncclbpf_map *m = r->aux < e->n_maps ? e->maps[r->aux] : NULL;
		const char *p;

		if (!map_is_rodata(m) || o < 0 || (uint64_t)o >= m->value_size) {
			snprintf(why, why_len, "it is in map %s, not .rodata",
				 m && m->name ? m->name : "?");
			return -2;
		}
		p = nbpf_map_value_addr(m, (uint32_t)o);
		if (!p) {
			snprintf(why, why_len, "map %s has no contents yet", m->name);
			return -2;
		}
		if (size > m->value_size - (uint64_t)o)
			size = m->value_size - (uint64_t)o;
		for (uint64_t i = 0; i < size; i++) {
			buf[i] = p[i];
			if (!buf[i])
				return (int64_t)i;
		}
		return -1;
	}
	if (r->type == VT_STACK) {
		struct vframe *f = &e->cur->frames[r->frameno];

		for (uint64_t i = 0; i < size; i++) {
			int64_t at = o + (int64_t)i;
			const struct vslot *sl;
			uint8_t mask;
			int first = 0, idx;

			if (at < -NBPF_STACK_SIZE || at >= 0)
				return -1; /* the memory check bounded the range already */
			sl = &f->slots[stk_slot(at)];
			idx = (int)(at + 8 * ((int64_t)stk_slot(at) + 1));
			mask = slot_spill_mask(sl);
			if (SB_KIND(sl->stype[idx]) != SB_SPILL || sl->spill.type != VT_SCALAR ||
			    !tnum_is_const(sl->spill.var_off)) {
				snprintf(why, why_len,
					 "byte fp%+lld is not from a constant 4- or 8-byte store",
					 (long long)at);
				return -2;
			}
			while (!(mask & (1u << first)))
				first++;
			buf[i] = (char)(sl->spill.var_off.value >> (8 * (idx - first)));
			if (!buf[i])
				return (int64_t)i;
		}
		return -1;
	}
	snprintf(why, why_len, "it is in %s memory", vtype_name(r->type));
	return -2;
}

/* The format for a detail: printable, cut at FMT_SHOW bytes. */
static void quote(char *out, size_t cap, const char *fmt, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len && n + 5 < cap && i < FMT_SHOW; i++) {
		unsigned char c = (unsigned char)fmt[i];

		if (c == '\n') {
			out[n++] = '\\';
			out[n++] = 'n';
		} else {
			out[n++] = c >= 0x20 && c < 0x7f && c != '"' ? (char)c : '?';
		}
	}
	if (len > FMT_SHOW && n + 4 < cap) {
		memcpy(out + n, "...", 3);
		n += 3;
	}
	out[n] = '\0';
}

int check_printk(struct venv *e, uint32_t pc)
{
	struct vframe *f = cur_frame(e);
	const struct vreg *fmt = &f->regs[1], *size = &f->regs[2];
	char buf[FMT_MAX], shown[FMT_SHOW * 2 + 8], why[96];
	uint8_t regs[2] = { 1, 0xff };
	size_t bad = 0;
	int64_t len;
	int n;

	len = read_format(e, fmt, size->umax, buf, sizeof(buf), why, sizeof(why));
	e->work += (len > 0 ? (uint64_t)len : FMT_MAX) / 64; /* the bytes read and parsed */
	if (len == -2) {
		/* not a constant: only all three registers set leaves nothing stale */
		for (uint8_t r = 3; r <= 5; r++) {
			if (f->regs[r].type != VT_NOT_INIT)
				continue;
			regs[0] = r;
			return verr(e, pc, VM_PRINTK_ARGS, regs,
				    "the format is not a constant (%s), so r3-r5 must all be set; r%u is not",
				    why, r);
		}
		return 0;
	}
	if (len == -1)
		return verr(e, pc, VM_PRINTK_FMT, regs, "no NUL within the first %llu bytes (size in r2)",
			    (unsigned long long)(size->umax < FMT_MAX ? size->umax : FMT_MAX));
	quote(shown, sizeof(shown), buf, (size_t)len);
	n = nbpf_printk_nargs(buf, (size_t)len, &bad);
	if (n < 0) {
		struct nbpf_printk_tok t;

		nbpf_printk_next(buf, (size_t)len, bad, &t);
		return verr(e, pc, VM_PRINTK_CONV, regs, "\"%.*s\" in format \"%s\"",
			    (int)(t.end - t.start), &buf[t.start], shown);
	}
	if (n > 3)
		return verr(e, pc, VM_PRINTK_ARGS, regs,
			    "format \"%s\" has %d conversions; bpf_trace_printk passes at most 3", shown,
			    n);
	for (int i = 0; i < n; i++) {
		uint8_t r = (uint8_t)(3 + i);

		if (f->regs[r].type != VT_NOT_INIT)
			continue; /* a pointer was refused with the prototype */
		regs[0] = r;
		return verr(e, pc, VM_PRINTK_ARGS, regs,
			    "format \"%s\" has %d conversion%s, but r%u (conversion %d) is not set", shown,
			    n, n == 1 ? "" : "s", r, i + 1);
	}
	/*
	 * What the program can write, it could rewrite before the call in a
	 * way a verifier bug misses, and the helper prints r3-r5 as the
	 * format then asks: a stack format is checked, never trusted.
	 */
	for (uint8_t r = 3; fmt->type == VT_STACK && r <= 5; r++) {
		if (f->regs[r].type != VT_NOT_INIT)
			continue;
		regs[0] = r;
		return verr(e, pc, VM_PRINTK_ARGS, regs,
			    "format \"%s\" is on the stack, which the program can write, so r3-r5 must all be set; r%u is not",
			    shown, r);
	}
	return 0;
}
