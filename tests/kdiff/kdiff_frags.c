// SPDX-License-Identifier: Apache-2.0
/*
 * kdiff_frags.c - random programs over every instruction class, biased
 * toward the shapes verifiers get wrong.
 *
 * A program is a prologue (r6 = the context, r7 = the 64-byte global data
 * value, most of the top 64 stack bytes initialised, r8 and r9 two
 * values), a few fragments, and r0 = r8 or a constant at exit; up to two
 * bpf-to-bpf subprograms follow (r1 = context, r2 = a pointer into the
 * caller's frame, r3 = r7, r4 and r5 values), each with fragments of its
 * own.  A fragment is one shape, built from a value (a context field, a
 * map value at any width, signed or not, a constant, a helper's result),
 * a chain of operations (every ALU operation of both widths, movsx, sdiv
 * and smod, byte swaps), checks (every jump of both widths, the constant
 * on either side) and a use whose safety depends on the bounds: an access
 * at base + value near an edge of the stack frame or the map value, a
 * helper's size argument, a divisor.  The shapes: such an index; a spill
 * and a fill at every width and offset, sign-extending or not, with the
 * check on one copy and the use through the other; linked copies (mov,
 * mov with a constant delta, 32-bit and sign-extending moves, shift
 * pairs); pointers spilled, partly overwritten, filled narrow, moved to
 * 32 bits, added to, OR-ed, compared and stored; map lookups with and
 * without null checks (through copies and spills), updates and deletes;
 * ring buffer records; bounded loops with the counter as an index;
 * calls with pointers into the caller's frame; diamonds that join two
 * constants before a use; gotol; divisions.  Everything is a function of
 * the seed.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "helpers.h"
#include "insn_build.h"
#include "kdiff_gen.h"

const char *const kd_frag_names[KD_NFRAGS] = {
	[KD_F_ALU] = "alu", [KD_F_INDEX] = "index", [KD_F_SPILL] = "spill_fill",
	[KD_F_LINK] = "linked_copy", [KD_F_PTR] = "pointer", [KD_F_LOOKUP] = "map_lookup",
	[KD_F_RINGBUF] = "ringbuf", [KD_F_LOOP] = "loop", [KD_F_CALL] = "call",
	[KD_F_BRANCH] = "branch", [KD_F_GLOBAL] = "global_data", [KD_F_CTX] = "context",
	[KD_F_DIV] = "division", [KD_F_JOIN] = "join", [KD_F_HELPER] = "helper",
	[KD_F_CALLER_STACK] = "caller_stack",
};

/* ---- fragments ---- */

static void fragment(struct gen *g);

static void frag_alu(struct gen *g)
{
	int k = 1 + (int)kg_rnd(g, 4);

	while (k--)
		kg_alu_one(g, kg_val89(g), kg_pct(g, 30) ? (int)(8 + kg_rnd(g, 2)) : -1);
}

static void frag_index(struct gen *g)
{
	uint8_t v = kg_val(g);

	kg_src_value(g, v);
	kg_shape(g, v);
	kg_checks_then_sink(g, v, v, 0);
}

/*
 * A value spilled at one width and offset and filled at the same or
 * another width, sign-extending or not; a check on one copy, a use of the
 * other.
 */
static void frag_spill(struct gen *g)
{
	uint8_t a = kg_val(g), b = kg_other(g, a);
	int ws = kg_width(g), wf;
	int16_t off = kg_top_slot(g), foff;

	kg_src_value(g, a);
	if (kg_pct(g, 30)) { /* a value that fits, a sign-extending fill, a signed check on it, a use of the value */
		static const uint8_t sops[] = { NBPF_JSGT, NBPF_JSGE, NBPF_JSLT, NBPF_JSLE };
		struct use u;
		uint32_t at;

		ws = 1 << kg_rnd(g, 3);
		if (ws < 4)
			kg_put(g, NBPF_ALU64 | NBPF_AND | NBPF_K, a, 0, 0, (1 << (8 * ws)) - 1);
		else
			kg_put(g, NBPF_ALU | NBPF_MOV | NBPF_X, a, a, 0, 0);
		kg_put(g, NBPF_STX | NBPF_MEM | ib_size_code(ws), 10, a, off, 0);
		kg_put(g, NBPF_LDX | NBPF_MEMSX | ib_size_code(ws), b, 10, off, 0);
		kg_plan_use(g, &u);
		if (u.kind == USE_STACK)
			u.w = 1;
		at = kg_skip_if(g, kg_pct(g, 70) ? NBPF_JMP : NBPF_JMP32, sops[kg_rnd(g, 4)], b, kg_pct(g, 70) ? (int32_t)kg_rnd(g, 16) : kg_bound(g),
			     1u << a);
		kg_emit_use(g, a, &u);
		kg_land(g, at);
		return;
	}
	if (ws < 8 && kg_pct(g, 60))
		kg_put(g, NBPF_ALU64 | NBPF_AND | NBPF_K, a, 0, 0,
		    kg_pct(g, 60) ? (int32_t)((1ull << (8 * ws)) - 1) : kg_mask(g));
	else if (kg_pct(g, 30))
		kg_shape(g, a);
	if (ws < 8 && kg_pct(g, 30))
		off = (int16_t)(off + ws * (int)kg_rnd(g, 8 / (uint32_t)ws));
	kg_put(g, NBPF_STX | NBPF_MEM | ib_size_code(ws), 10, a, off, 0);
	if (kg_pct(g, 12))
		kg_put(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, a, 0, 0, 1);
	if (kg_pct(g, 10)) { /* part of the slot overwritten, mostly at its natural alignment */
		int w = kg_width(g);

		kg_put(g, NBPF_ST | NBPF_MEM | ib_size_code(w), 10, 0,
		    (int16_t)((off & ~7) + (kg_pct(g, 90) ? w * (int)kg_rnd(g, 8 / (uint32_t)w) : (int)kg_rnd(g, 8))),
		    kg_edge(g));
	}
	wf = kg_pct(g, 50) ? ws : kg_width(g);
	foff = off;
	if (wf < ws && kg_pct(g, 15))
		foff = (int16_t)(off + wf * (int)kg_rnd(g, (uint32_t)(ws / wf)));
	kg_put(g, NBPF_LDX | (wf < 8 && kg_pct(g, 55) ? NBPF_MEMSX : NBPF_MEM) | ib_size_code(wf), b, 10,
	    foff, 0);
	if (kg_pct(g, 50))
		kg_checks_then_sink(g, a, b, 1);
	else
		kg_checks_then_sink(g, b, a, 1);
}

/* Two registers holding related values; a check on one, a use of the other. */
static void frag_link(struct gen *g)
{
	uint8_t a = kg_val(g), b = kg_other(g, a);
	int32_t k = kg_pct(g, 70) ? (int32_t)kg_rnd(g, 33) - 16 : kg_edge(g);

	kg_src_value(g, a);
	if (kg_pct(g, 50))
		kg_put(g, NBPF_ALU64 | NBPF_AND | NBPF_K, a, 0, 0, kg_mask(g));
	switch (kg_rnd(g, 9)) {
	case 0:
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, b, a, 0, 0);
		break;
	case 1: /* a constant delta */
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, b, a, 0, 0);
		kg_put(g, NBPF_ALU64 | (kg_pct(g, 70) ? NBPF_ADD : NBPF_SUB) | NBPF_K, b, 0, 0, k);
		break;
	case 2: /* a 32-bit copy */
		kg_put(g, NBPF_ALU | NBPF_MOV | NBPF_X, b, a, 0, 0);
		break;
	case 3: /* sign-extending moves */
		if (kg_pct(g, 60))
			kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, b, a, (int16_t)(8 << kg_rnd(g, 3)), 0);
		else
			kg_put(g, NBPF_ALU | NBPF_MOV | NBPF_X, b, a, (int16_t)(8 << kg_rnd(g, 2)), 0);
		break;
	case 4: /* a copy, then the original moves on */
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, b, a, 0, 0);
		kg_put(g, (kg_pct(g, 60) ? NBPF_ALU64 : NBPF_ALU) | NBPF_ADD | NBPF_K, a, 0, 0, k);
		break;
	case 5: /* a zero extension, then a copy */
		kg_put(g, NBPF_ALU | NBPF_MOV | NBPF_X, a, a, 0, 0);
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, b, a, 0, 0);
		break;
	case 6: /* a copy through the stack */
		kg_put(g, NBPF_STX | NBPF_MEM | NBPF_DW, 10, a, -32, 0);
		kg_put(g, NBPF_LDX | NBPF_MEM | NBPF_DW, b, 10, -32, 0);
		break;
	case 7: /* shift pairs: extensions of the low half (which the kernel does not link) */
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, b, a, 0, 0);
		kg_put(g, NBPF_ALU64 | NBPF_LSH | NBPF_K, b, 0, 0, kg_pct(g, 70) ? 32 : (int32_t)kg_rnd(g, 64));
		kg_put(g, NBPF_ALU64 | (kg_pct(g, 50) ? NBPF_RSH : NBPF_ARSH) | NBPF_K, b, 0, 0,
		    kg_pct(g, 70) ? 32 : (int32_t)kg_rnd(g, 64));
		kg_checks_then_sink(g, b, b, 1);
		return;
	default: /* a copy and an operation on it */
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, b, a, 0, 0);
		g->busy = a < 6 ? 1u << a : 0;
		kg_alu_one(g, b, -1);
		g->busy = 0;
		break;
	}
	if (kg_pct(g, 50))
		kg_checks_then_sink(g, a, b, 1);
	else
		kg_checks_then_sink(g, b, a, 1);
}

/* A pointer: r7 (map value), the frame, the context. */
static uint8_t ptr_src(struct gen *g)
{
	uint32_t r = kg_rnd(g, 10);

	return r < 5 ? 7 : r < 8 ? 10 : 6;
}

static void frag_ptr(struct gen *g)
{
	uint8_t p = ptr_src(g), t = 5, v = 4;
	int16_t slot = kg_top_slot(g);

	kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, t, p, 0, 0);
	if (p == 10)
		kg_put(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, t, 0, 0, slot);
	switch (kg_rnd(g, 9)) {
	case 0: case 1: { /* spilled, maybe partly overwritten, filled at some width */
		int wf = kg_pct(g, 55) ? 8 : kg_width(g);

		kg_put(g, NBPF_STX | NBPF_MEM | NBPF_DW, 10, t, -24, 0);
		if (kg_pct(g, 30)) {
			int w = 1 << kg_rnd(g, 3);

			kg_put(g, NBPF_ST | NBPF_MEM | ib_size_code(w), 10, 0,
			    (int16_t)(-24 + (kg_pct(g, 90) ? w * (int)kg_rnd(g, 8 / (uint32_t)w) : (int)kg_rnd(g, 8))),
			    kg_edge(g));
		}
		kg_put(g, NBPF_LDX | (wf < 8 && kg_pct(g, 40) ? NBPF_MEMSX : NBPF_MEM) | ib_size_code(wf), v, 10,
		    (int16_t)(-24 + (wf < 8 && kg_pct(g, 30) ? wf * (int)kg_rnd(g, 8 / (uint32_t)wf) : 0)), 0);
		if (kg_pct(g, 60))
			kg_access(g, v, 0);
		else
			kg_sink(g, v);
		break;
	}
	case 2: /* moved to 32 bits, then used as a pointer or a value */
		kg_put(g, NBPF_ALU | NBPF_MOV | NBPF_X, v, t, 0, 0);
		if (kg_pct(g, 50))
			kg_access(g, v, 0);
		else
			kg_sink(g, v);
		break;
	case 3: { /* arithmetic with a value, bounded or not, of either width */
		uint8_t s = 3;

		kg_src_value(g, s);
		if (kg_pct(g, 60))
			kg_put(g, NBPF_ALU64 | NBPF_AND | NBPF_K, s, 0, 0, kg_mask(g));
		kg_put(g, (kg_pct(g, 85) ? NBPF_ALU64 : NBPF_ALU) | (kg_pct(g, 75) ? NBPF_ADD : NBPF_SUB) | NBPF_X,
		    t, s, 0, 0);
		kg_access(g, t, 0);
		break;
	}
	case 4: { /* an OR into an aligned frame pointer, or other bitwise operations */
		static const uint8_t ops[] = { NBPF_OR, NBPF_AND, NBPF_XOR, NBPF_LSH, NBPF_MUL };
		uint8_t s = 3;

		kg_src_value(g, s);
		kg_put(g, NBPF_ALU64 | NBPF_AND | NBPF_K, s, 0, 0, kg_pct(g, 70) ? 7 : kg_mask(g));
		kg_put(g, NBPF_ALU64 | ops[kg_pct(g, 70) ? 0 : kg_rnd(g, sizeof(ops))] | NBPF_X, t, s, 0, 0);
		kg_access(g, t, 0);
		break;
	}
	case 5: { /* compared with a value or another pointer */
		uint32_t at = kg_jfwd(g, (kg_pct(g, 70) ? NBPF_JMP : NBPF_JMP32) | kg_jop(g) | NBPF_X, t,
				   kg_pct(g, 50) ? (uint8_t)(8 + kg_rnd(g, 2)) : ptr_src(g), 0);

		kg_access(g, t, 0);
		kg_land(g, at);
		break;
	}
	case 6: /* stored into the map value or the context */
		if (kg_pct(g, 70))
			kg_put(g, NBPF_STX | NBPF_MEM | NBPF_DW, 7, t, (int16_t)(8 * kg_rnd(g, 8)), 0);
		else
			kg_put(g, NBPF_STX | NBPF_MEM | (kg_pct(g, 50) ? NBPF_DW : NBPF_W), 6, t, 48, 0);
		break;
	case 7: /* the difference of two pointers */
		kg_put(g, NBPF_ALU64 | NBPF_SUB | NBPF_X, t, ptr_src(g), 0, 0);
		kg_sink(g, t);
		break;
	default: /* kept in r8 (returned, or used as a value) */
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 8, t, 0, 0);
		break;
	}
}

/* A key at KEY_SLOT: a constant, a value, or left uninitialised. */
static void map_key(struct gen *g, int key_size)
{
	uint32_t r = kg_rnd(g, 10);

	if (r < 5) {
		kg_put(g, NBPF_ST | NBPF_MEM | ib_size_code(key_size), 10, 0, KEY_SLOT,
		    kg_pct(g, 80) ? (int32_t)kg_rnd(g, 6) : kg_edge(g));
	} else if (r < 9) {
		uint8_t v = 3;

		kg_src_value(g, v);
		if (kg_pct(g, 50))
			kg_put(g, NBPF_ALU64 | NBPF_AND | NBPF_K, v, 0, 0, 7);
		kg_put(g, NBPF_STX | NBPF_MEM | ib_size_code(key_size), 10, v, KEY_SLOT, 0);
	}
}

/* r0 = lookup in map m; r1-r5 clobbered. */
static void lookup(struct gen *g, int m)
{
	map_key(g, (int)kd_map_descs[m].key_size);
	kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 2, 10, 0, 0);
	kg_put(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, 2, 0, 0, KEY_SLOT);
	kg_put_lddw(g, 1, NBPF_PSEUDO_MAP_IDX, m, 0);
	kg_put(g, NBPF_OP_CALL, 0, 0, 0, NBPF_HELPER_MAP_LOOKUP);
}

static void frag_lookup(struct gen *g)
{
	static const int maps[] = { KD_MAP_ARR, KD_MAP_ARR, KD_MAP_HASH, KD_MAP_DATA, KD_MAP_RODATA };
	int m = maps[kg_rnd(g, 5)];
	uint32_t vs = kd_map_descs[m].value_size, skip = UINT32_MAX, skip2 = UINT32_MAX;
	uint8_t p = 0;

	if (kg_pct(g, 12)) { /* an update or a delete first */
		bool upd = kg_pct(g, 60);

		map_key(g, (int)kd_map_descs[m].key_size);
		if (upd && kg_pct(g, 85)) {
			kg_put(g, NBPF_ST | NBPF_MEM | NBPF_DW, 10, 0, VAL_SLOT, kg_edge(g));
			kg_put(g, NBPF_ST | NBPF_MEM | NBPF_DW, 10, 0, VAL_SLOT + 8, kg_edge(g));
		}
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 2, 10, 0, 0);
		kg_put(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, 2, 0, 0, KEY_SLOT);
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 3, 10, 0, 0);
		kg_put(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, 3, 0, 0, VAL_SLOT);
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 4, 0, 0, 0);
		kg_put_lddw(g, 1, NBPF_PSEUDO_MAP_IDX, m, 0);
		kg_put(g, NBPF_OP_CALL, 0, 0, 0, upd ? NBPF_HELPER_MAP_UPDATE : NBPF_HELPER_MAP_DELETE);
	}
	lookup(g, m);
	switch (kg_rnd(g, 8)) {
	case 0: case 1: case 2:
		skip = kg_jfwd(g, NBPF_JMP | NBPF_JEQ | NBPF_K, 0, 0, 0);
		break;
	case 3: /* the use on the taken side */
		kg_put(g, NBPF_JMP | NBPF_JNE | NBPF_K, 0, 0, 1, 0);
		skip = kg_jfwd(g, NBPF_OP_JA, 0, 0, 0);
		break;
	case 4: /* checked through a copy */
		p = 3;
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, p, 0, 0, 0);
		skip = kg_jfwd(g, NBPF_JMP | NBPF_JEQ | NBPF_K, kg_pct(g, 50) ? 0 : p, 0, 0);
		break;
	case 5: /* spilled before the check, filled after it */
		kg_put(g, NBPF_STX | NBPF_MEM | NBPF_DW, 10, 0, -16, 0);
		skip = kg_jfwd(g, NBPF_JMP | NBPF_JEQ | NBPF_K, 0, 0, 0);
		p = 3;
		kg_put(g, NBPF_LDX | NBPF_MEM | NBPF_DW, p, 10, -16, 0);
		break;
	case 6: /* a check of another kind */
		skip = kg_jfwd(g, (kg_pct(g, 50) ? NBPF_JMP32 : NBPF_JMP) | kg_jop(g) | NBPF_K, 0, 0,
			    kg_pct(g, 70) ? 0 : kg_edge(g));
		break;
	default: /* none */
		break;
	}
	if (kg_pct(g, 30)) { /* an index into the value */
		uint8_t v = 4;

		kg_src_value(g, v);
		kg_shape(g, v);
		g->busy = 1u << p;
		skip2 = kg_check(g, v, 0);
		g->busy = 0;
		kg_put(g, NBPF_ALU64 | NBPF_ADD | NBPF_X, p, v, 0, 0);
	}
	kg_access(g, p, (int16_t)(kg_pct(g, 60) ? 0 : (int)kg_rnd(g, vs + 4) - 2));
	if (kg_pct(g, 40))
		kg_put(g, NBPF_LDX | NBPF_MEM | NBPF_DW, 8, p, (int16_t)(8 * kg_rnd(g, vs / 8)), 0);
	kg_land(g, skip2);
	kg_land(g, skip);
}

static void frag_ringbuf(struct gen *g)
{
	uint32_t skip = UINT32_MAX;
	int32_t size = kg_pct(g, 80) ? 8 * (int32_t)(1 + kg_rnd(g, 8)) : kg_edge(g);

	if (kg_pct(g, 25)) { /* output from the stack, or a query */
		if (kg_pct(g, 60)) {
			kg_put_lddw(g, 1, NBPF_PSEUDO_MAP_IDX, KD_MAP_RB, 0);
			kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 2, 10, 0, 0);
			kg_put(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, 2, 0, 0, -64);
			kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 3, 0, 0, kg_pct(g, 80) ? (int32_t)kg_rnd(g, 65) : size);
			kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 4, 0, 0, 0);
			kg_put(g, NBPF_OP_CALL, 0, 0, 0, NBPF_HELPER_RINGBUF_OUTPUT);
		} else {
			kg_put_lddw(g, 1, NBPF_PSEUDO_MAP_IDX, KD_MAP_RB, 0);
			kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 2, 0, 0, (int32_t)kg_rnd(g, 2));
			kg_put(g, NBPF_OP_CALL, 0, 0, 0, NBPF_HELPER_RINGBUF_QUERY);
			kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 9 - (g->loop_reg == 9), 0, 0, 0);
		}
		return;
	}
	kg_put_lddw(g, 1, NBPF_PSEUDO_MAP_IDX, KD_MAP_RB, 0);
	kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 2, 0, 0, size);
	kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 3, 0, 0, 0);
	kg_put(g, NBPF_OP_CALL, 0, 0, 0, NBPF_HELPER_RINGBUF_RESERVE);
	if (kg_pct(g, 90))
		skip = kg_jfwd(g, NBPF_JMP | NBPF_JEQ | NBPF_K, 0, 0, 0);
	kg_access(g, 0, (int16_t)(kg_pct(g, 70) ? 0 : (int)kg_rnd(g, (uint32_t)(size > 0 && size < 80 ? size : 64) + 4) - 2));
	kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 1, 0, 0, 0);
	kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 2, 0, 0, 0);
	if (kg_pct(g, 5)) { /* a copy spilled, used after the release */
		kg_put(g, NBPF_STX | NBPF_MEM | NBPF_DW, 10, 0, -40, 0);
		kg_put(g, NBPF_OP_CALL, 0, 0, 0, NBPF_HELPER_RINGBUF_SUBMIT);
		kg_put(g, NBPF_LDX | NBPF_MEM | NBPF_DW, 1, 10, -40, 0);
		kg_access(g, 1, 0);
	} else if (kg_pct(g, 96)) {
		kg_put(g, NBPF_OP_CALL, 0, 0, 0,
		    kg_pct(g, 50) ? NBPF_HELPER_RINGBUF_SUBMIT : NBPF_HELPER_RINGBUF_DISCARD);
	}
	kg_land(g, skip);
}

/* A bounded loop; the body may use the counter as an index. */
static void frag_loop(struct gen *g)
{
	uint8_t c = 9;
	int32_t trips = 1 + (int32_t)kg_rnd(g, 6);
	uint32_t head, shape_ = kg_rnd(g, 5);
	bool on_stack = shape_ == 4;
	int saved = g->loop_reg;

	if (g->loop_reg >= 0 || g->depth > 1) {
		frag_index(g);
		return;
	}
	g->loop_reg = c;
	if (on_stack)
		kg_put(g, NBPF_ST | NBPF_MEM | NBPF_DW, 10, 0, CNT_SLOT, 0);
	else
		kg_put(g, (shape_ == 2 ? NBPF_ALU : NBPF_ALU64) | NBPF_MOV | NBPF_K, c, 0, 0,
		    shape_ == 1 ? trips : shape_ == 3 ? -trips : 0);
	head = g->n;
	if (on_stack)
		kg_put(g, NBPF_LDX | NBPF_MEM | NBPF_DW, c, 10, CNT_SLOT, 0);
	g->depth++;
	if (kg_pct(g, 60))
		kg_checks_then_sink(g, c, c, 0);
	for (int k = (int)kg_rnd(g, 3); k > 0; k--)
		fragment(g);
	g->depth--;
	if (on_stack)
		kg_put(g, NBPF_LDX | NBPF_MEM | NBPF_DW, c, 10, CNT_SLOT, 0);
	switch (shape_) {
	case 1: /* down to zero */
		kg_put(g, NBPF_ALU64 | NBPF_SUB | NBPF_K, c, 0, 0, 1);
		kg_put(g, NBPF_JMP | NBPF_JNE | NBPF_K, c, 0, (int16_t)((int64_t)head - g->n - 1), 0);
		break;
	case 2: /* 32-bit */
		kg_put(g, NBPF_ALU | NBPF_ADD | NBPF_K, c, 0, 0, 1);
		kg_put(g, NBPF_JMP32 | NBPF_JLT | NBPF_K, c, 0, (int16_t)((int64_t)head - g->n - 1), trips);
		break;
	case 3: /* signed, from below zero */
		kg_put(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, c, 0, 0, 1);
		kg_put(g, NBPF_JMP | NBPF_JSLT | NBPF_K, c, 0, (int16_t)((int64_t)head - g->n - 1), 0);
		break;
	case 4: /* the counter kept on the stack */
		kg_put(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, c, 0, 0, 1);
		kg_put(g, NBPF_STX | NBPF_MEM | NBPF_DW, 10, c, CNT_SLOT, 0);
		kg_put(g, NBPF_JMP | NBPF_JLT | NBPF_K, c, 0, (int16_t)((int64_t)head - g->n - 1), trips);
		break;
	default:
		kg_put(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, c, 0, 0, 1);
		kg_put(g, NBPF_JMP | (kg_pct(g, 50) ? NBPF_JLT : NBPF_JLE) | NBPF_K, c, 0,
		    (int16_t)((int64_t)head - g->n - 1), trips);
		break;
	}
	g->loop_reg = saved;
}

static void frag_call(struct gen *g)
{
	int to = g->sub + 1;

	if (to >= g->nsubs || g->ncalls >= MAX_CALLS || g->loop_reg >= 0) {
		frag_index(g);
		return;
	}
	kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 1, 6, 0, 0);
	kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 2, 10, 0, 0);
	kg_put(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, 2, 0, 0, kg_pct(g, 85) ? kg_top_slot(g) : -(int32_t)kg_rnd(g, 80));
	kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 3, 7, 0, 0);
	kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 4, 8, 0, 0);
	if (kg_pct(g, 50))
		kg_put(g, NBPF_ALU64 | NBPF_AND | NBPF_K, 4, 0, 0, kg_mask(g));
	kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 5, 0, 0, kg_bound(g));
	if (g->n < g->cap) {
		g->call_at[g->ncalls] = g->n;
		g->call_to[g->ncalls++] = to;
		kg_put(g, NBPF_OP_CALL, 0, NBPF_PSEUDO_CALL, 0, 0);
	}
	kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 8, 0, 0, 0);
	if (kg_pct(g, 50))
		kg_checks_then_sink(g, 8, 8, 0);
}

/* In a subprogram: through the pointer into the caller's frame, spilled at fp-8 on entry. */
static void frag_caller_stack(struct gen *g)
{
	uint8_t t = 2;

	if (g->sub < 0) {
		frag_spill(g);
		return;
	}
	kg_put(g, NBPF_LDX | NBPF_MEM | NBPF_DW, t, 10, -8, 0);
	g->busy = 1u << t;
	switch (kg_rnd(g, 4)) {
	case 0: { /* an index */
		uint8_t v = 3;

		kg_src_value(g, v);
		kg_shape(g, v);
		{
			uint32_t at = kg_check(g, v, 1u << t);

			kg_put(g, NBPF_ALU64 | NBPF_ADD | NBPF_X, t, v, 0, 0);
			kg_access(g, t, 0);
			kg_land(g, at);
		}
		break;
	}
	case 1: /* our own frame's address into the caller's */
		kg_put(g, NBPF_STX | NBPF_MEM | NBPF_DW, t, 10, 0, 0);
		break;
	default:
		kg_access(g, t, (int16_t)(kg_pct(g, 70) ? 0 : (int)kg_rnd(g, 24) - 12));
		break;
	}
	g->busy = 0;
}

static void frag_branch(struct gen *g)
{
	uint8_t v = kg_val89(g);
	uint32_t at;

	if (kg_pct(g, 50))
		at = kg_jfwd(g, (kg_pct(g, 30) ? NBPF_JMP32 : NBPF_JMP) | kg_jop(g) | NBPF_K, v, 0, kg_edge(g));
	else
		at = kg_check(g, v, 0);
	g->depth++;
	if (g->depth < 3) {
		fragment(g);
	} else {
		kg_alu_one(g, v, -1);
	}
	if (kg_pct(g, 30)) { /* an else arm, reached through gotol or ja */
		uint32_t over = kg_jfwd(g, kg_pct(g, 50) ? NBPF_OP_GOTOL : NBPF_OP_JA, 0, 0, 0);

		kg_land(g, at);
		at = over;
		if (g->depth < 3)
			fragment(g);
		else
			kg_alu_one(g, v, -1);
	}
	g->depth--;
	kg_land(g, at);
}

/* Two constants (or shaped values) joined before a use. */
static void frag_join(struct gen *g)
{
	uint8_t v = kg_val(g), c = kg_other(g, v);
	uint32_t at, over;

	kg_src_value(g, c);
	at = kg_jfwd(g, (kg_pct(g, 30) ? NBPF_JMP32 : NBPF_JMP) | kg_jop(g) | NBPF_K, c, 0, kg_bound(g));
	kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, v, 0, 0, kg_pct(g, 70) ? (int32_t)kg_rnd(g, 64) : kg_edge(g));
	over = kg_jfwd(g, kg_pct(g, 40) ? NBPF_OP_GOTOL : NBPF_OP_JA, 0, 0, 0);
	kg_land(g, at);
	if (kg_pct(g, 50))
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, v, 0, 0, kg_pct(g, 70) ? (int32_t)kg_rnd(g, 64) : kg_edge(g));
	else
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, v, c, 0, 0);
	kg_land(g, over);
	kg_checks_then_sink(g, v, v, 0);
}

static void frag_global(struct gen *g)
{
	int m = kg_pct(g, 70) ? KD_MAP_DATA : KD_MAP_RODATA;
	int32_t vs = (int32_t)kd_map_descs[m].value_size;
	uint8_t t = 5;

	kg_put_lddw(g, t, NBPF_PSEUDO_MAP_IDX_VALUE, m,
		 kg_pct(g, 80) ? 8 * (int32_t)kg_rnd(g, (uint32_t)vs / 8) : (int32_t)kg_rnd(g, (uint32_t)vs + 9));
	if (kg_pct(g, 40)) {
		uint8_t v = 4;
		uint32_t at;

		g->busy = 1u << t;
		kg_src_value(g, v);
		kg_shape(g, v);
		g->busy = 0;
		at = kg_check(g, v, 1u << t);
		kg_put(g, NBPF_ALU64 | NBPF_ADD | NBPF_X, t, v, 0, 0);
		kg_access(g, t, 0);
		kg_land(g, at);
	} else {
		kg_access(g, t, (int16_t)(kg_pct(g, 60) ? 0 : (int)kg_rnd(g, 16) - 4));
	}
}

static void frag_ctx(struct gen *g)
{
	uint8_t d = kg_val(g);

	switch (kg_rnd(g, 10)) {
	case 0: case 1: case 2:
		kg_ctx_load(g, d, NBPF_MEM);
		break;
	case 3: case 4: /* cb[]: whole words, or two at once */
		if (kg_pct(g, 75))
			kg_put(g, NBPF_STX | NBPF_MEM | NBPF_W, 6, (uint8_t)(8 + kg_rnd(g, 2)),
			    (int16_t)(48 + 4 * kg_rnd(g, 5)), 0);
		else
			kg_put(g, NBPF_ST | NBPF_MEM | NBPF_DW, 6, 0, (int16_t)(48 + 8 * kg_rnd(g, 2)), kg_edge(g));
		break;
	case 5: /* a narrow or misplaced store */
		kg_put(g, NBPF_ST | NBPF_MEM | ib_size_code(kg_width(g)), 6, 0, (int16_t)kg_rnd(g, 80), kg_edge(g));
		break;
	case 6: /* a load spanning fields */
		kg_put(g, NBPF_LDX | NBPF_MEM | NBPF_DW, d, 6, (int16_t)(8 * kg_rnd(g, 9)), 0);
		break;
	case 7: /* through a moved context pointer */
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 5, 6, 0, 0);
		kg_put(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, 5, 0, 0, 4 * (int32_t)kg_rnd(g, 18));
		kg_put(g, NBPF_LDX | NBPF_MEM | NBPF_W, d, 5, 0, 0);
		break;
	case 8: /* sign-extending */
		kg_ctx_load(g, d, NBPF_MEMSX);
		break;
	default: /* anywhere */
		kg_put(g, NBPF_LDX | NBPF_MEM | ib_size_code(kg_width(g)), d, 6, (int16_t)kg_rnd(g, 200), 0);
		break;
	}
}

/*
 * Division and modulo, unsigned and signed, by a register or a constant.
 * The kernel does not bound their results, so a quotient never decides a
 * later check (it lands in a scratch register nothing reads): only the
 * divisor's test is compared.
 */
static void frag_div(struct gen *g)
{
	uint8_t a = kg_val89(g), b = kg_other(g, a), q;
	uint32_t at = UINT32_MAX;

	kg_src_value(g, b);
	switch (kg_rnd(g, 8)) {
	case 0: case 1: case 2:
		at = kg_jfwd(g, (kg_pct(g, 30) ? NBPF_JMP32 : NBPF_JMP) | NBPF_JEQ | NBPF_K, b, 0, 0);
		break;
	case 3: case 4:
		kg_put(g, NBPF_ALU64 | NBPF_OR | NBPF_K, b, 0, 0, 1);
		break;
	case 5: case 6:
		kg_shape(g, b);
		at = kg_check(g, b, 1u << a);
		break;
	default:
		break;
	}
	q = kg_scratch(g, 1u << b);
	kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, q, a, 0, 0);
	if (kg_pct(g, 80))
		kg_put(g, (kg_pct(g, 60) ? NBPF_ALU64 : NBPF_ALU) | (kg_pct(g, 50) ? NBPF_DIV : NBPF_MOD) | NBPF_X,
		    q, b, (int16_t)kg_pct(g, 40), 0);
	else
		kg_put(g, (kg_pct(g, 60) ? NBPF_ALU64 : NBPF_ALU) | (kg_pct(g, 50) ? NBPF_DIV : NBPF_MOD) | NBPF_K,
		    q, 0, (int16_t)kg_pct(g, 40), kg_pct(g, 95) ? kg_edge(g) | 1 : 0);
	kg_land(g, at);
}

static void frag_helper(struct gen *g)
{
	uint8_t v = g->loop_reg == 8 ? 9 : 8;

	kg_put(g, NBPF_OP_CALL, 0, 0, 0, kg_helper_value(g));
	kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, v, 0, 0, 0);
	kg_shape(g, v);
	if (kg_pct(g, 60))
		kg_checks_then_sink(g, v, v, 0);
}

static void fragment(struct gen *g)
{
	static const struct { enum kd_frag f; uint32_t w; } tab[] = {
		{ KD_F_ALU, 6 }, { KD_F_INDEX, 14 }, { KD_F_SPILL, 16 }, { KD_F_LINK, 12 },
		{ KD_F_PTR, 7 }, { KD_F_LOOKUP, 8 }, { KD_F_RINGBUF, 4 }, { KD_F_LOOP, 5 },
		{ KD_F_CALL, 5 }, { KD_F_BRANCH, 6 }, { KD_F_GLOBAL, 4 }, { KD_F_CTX, 4 },
		{ KD_F_DIV, 3 }, { KD_F_JOIN, 5 }, { KD_F_HELPER, 2 }, { KD_F_CALLER_STACK, 4 },
	};
	uint32_t total = 0, r;
	enum kd_frag f = KD_F_ALU;

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		total += tab[i].w;
	r = kg_rnd(g, total);
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		if (r < tab[i].w) {
			f = tab[i].f;
			break;
		}
		r -= tab[i].w;
	}
	if (g->frags)
		g->frags[f]++;
	switch (f) {
	case KD_F_ALU: frag_alu(g); break;
	case KD_F_INDEX: frag_index(g); break;
	case KD_F_SPILL: frag_spill(g); break;
	case KD_F_LINK: frag_link(g); break;
	case KD_F_PTR: frag_ptr(g); break;
	case KD_F_LOOKUP: frag_lookup(g); break;
	case KD_F_RINGBUF: frag_ringbuf(g); break;
	case KD_F_LOOP: frag_loop(g); break;
	case KD_F_CALL: frag_call(g); break;
	case KD_F_BRANCH: frag_branch(g); break;
	case KD_F_GLOBAL: frag_global(g); break;
	case KD_F_CTX: frag_ctx(g); break;
	case KD_F_DIV: frag_div(g); break;
	case KD_F_JOIN: frag_join(g); break;
	case KD_F_HELPER: frag_helper(g); break;
	case KD_F_CALLER_STACK: frag_caller_stack(g); break;
	default: break;
	}
}

/* Initialises the top 64 bytes of the frame (but now and then a slot) and, sometimes, its deepest 64. */
static void init_stack(struct gen *g, int from_slot)
{
	int hole = kg_pct(g, 10) ? from_slot + (int)kg_rnd(g, (uint32_t)(9 - from_slot)) : 0;

	for (int k = from_slot; k <= 8; k++)
		if (k != hole)
			kg_put(g, NBPF_ST | NBPF_MEM | NBPF_DW, 10, 0, (int16_t)(-8 * k),
			    kg_pct(g, 60) ? 0 : kg_edge(g));
	if (kg_pct(g, 75))
		for (int k = 0; k < 8; k++)
			kg_put(g, NBPF_STX | NBPF_MEM | NBPF_DW, 10, (uint8_t)(8 + (k & 1)),
			    (int16_t)(g->floor + 8 * k), 0);
}

/* Body and exit of one function (which calls the next subprogram); room for the exit is kept. */
static void function_body(struct gen *g, int nfrags)
{
	int call = g->sub + 1 < g->nsubs ? (int)kg_rnd(g, (uint32_t)nfrags + 1) : -1;

	g->cap -= EPILOGUE;
	for (int i = 0; i <= nfrags; i++) {
		if (i == call) {
			if (g->frags)
				g->frags[KD_F_CALL]++;
			frag_call(g);
		}
		if (i < nfrags)
			fragment(g);
	}
	g->cap += EPILOGUE;
	if (kg_pct(g, 80))
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 0, 8, 0, 0);
	else
		kg_put(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 0, 0, 0, kg_edge(g));
	kg_put(g, NBPF_OP_EXIT, 0, 0, 0, 0);
}

void kd_generate(uint64_t seed, struct kd_prog *p, uint64_t frags[KD_NFRAGS])
{
	struct gen g = { .s = seed, .p = p->insns, .cap = KD_MAX_INSNS, .sub = -1, .loop_reg = -1,
			 .frags = frags };
	uint32_t start[MAX_SUBS];

	g.nsubs = kg_pct(&g, 30) ? 1 + (int)kg_rnd(&g, MAX_SUBS) : 0;
	/* the kernel bounds a call chain's stack at 512 bytes in all; ours, each frame */
	g.floor = g.nsubs ? (int16_t)-160 : (int16_t)-512;
	g.cap = KD_MAX_INSNS / 2;
	kg_put(&g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 6, 1, 0, 0);
	kg_put_lddw(&g, 7, NBPF_PSEUDO_MAP_IDX_VALUE, KD_MAP_DATA, 0);
	kg_src_value(&g, 8);
	kg_put(&g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 9, 0, 0, kg_pct(&g, 50) ? kg_bound(&g) : kg_edge(&g));
	init_stack(&g, 1);
	function_body(&g, 1 + (int)kg_rnd(&g, 6));
	for (int s = 0; s < g.nsubs; s++) {
		g.sub = s;
		g.cap = g.n + KD_MAX_INSNS / 4 < KD_MAX_INSNS ? g.n + KD_MAX_INSNS / 4 : KD_MAX_INSNS;
		start[s] = g.n;
		kg_put(&g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 6, 1, 0, 0);
		kg_put(&g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 7, 3, 0, 0);
		kg_put(&g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 8, 4, 0, 0);
		kg_put(&g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 9, 5, 0, 0);
		kg_put(&g, NBPF_STX | NBPF_MEM | NBPF_DW, 10, 2, -8, 0);
		init_stack(&g, 2);
		function_body(&g, 1 + (int)kg_rnd(&g, 4));
	}
	for (int c = 0; c < g.ncalls; c++)
		g.p[g.call_at[c]].imm = (int32_t)start[g.call_to[c]] - (int32_t)g.call_at[c] - 1;
	p->n = g.n;
}
