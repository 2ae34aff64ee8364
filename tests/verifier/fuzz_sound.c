/*
 * fuzz_sound.c - soundness fuzzer for the verifier.
 *
 * Each input becomes a program: either raw instruction words (first byte
 * odd) or, mostly, a plausible program built from the bytes by a small
 * generator (context loads and stores, stack traffic, map lookups with and
 * without null checks, indices, branches, short loops, helper calls, ring
 * buffer records, table keys built from two bounded values by shifts and
 * AND/OR/XOR).  Every program the verifier accepts runs in the
 * interpreter on several random contexts with a checker that traps any
 * access outside the context's fields (with their rights), the live stack
 * frames, map values handed out by lookups or lddw, and live ring buffer
 * records; r0 must lie in the range the verifier proved.  Any trap or
 * range violation aborts: the verifier accepted an unsafe program.
 *
 * Built with tests/common/fuzz_driver.c for the bounded ctest run
 * (verifier_fuzz_sound); see docs/verifier.md for long runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "insn_build.h"
#include "interp.h"
#include "maps/map.h"
#include "mem_checker.h"
#include "ncclbpf/runtime.h"
#include "verifier/verifier.h"

/* ---- the test hook ---- */

#define CTX_SIZE 64

static const struct ncclbpf_ctx_field fz_fields[] = {
	{ "a", 0, 8, NCCLBPF_FIELD_READ, NCCLBPF_FIELD_RANK_INVARIANT, "" },
	{ "b", 8, 8, NCCLBPF_FIELD_READ, 0, "" },
	{ "c", 16, 4, NCCLBPF_FIELD_READ, NCCLBPF_FIELD_RANK_INVARIANT, "" },
	{ "d", 20, 4, NCCLBPF_FIELD_READ, 0, "" },
	{ "out1", 24, 4, NCCLBPF_FIELD_READ | NCCLBPF_FIELD_WRITE, NCCLBPF_FIELD_DECISION, "" },
	{ "out2", 28, 4, NCCLBPF_FIELD_READ | NCCLBPF_FIELD_WRITE, 0, "" },
	{ "e", 32, 8, NCCLBPF_FIELD_READ, 0, "" },
	{ "w", 40, 2, NCCLBPF_FIELD_WRITE, 0, "" },
};
static const int32_t fz_helpers[] = { 1, 2, 3, 5, 7, 131, 132, 133 };
static const struct ncclbpf_hook_desc fz_hook = {
	.name = "fuzz", .section = "fuzz", .ctx_type = "struct fuzz_ctx", .ctx_size = CTX_SIZE,
	.fields = fz_fields, .n_fields = sizeof(fz_fields) / sizeof(fz_fields[0]),
	.helpers = fz_helpers, .n_helpers = sizeof(fz_helpers) / sizeof(fz_helpers[0]),
	.ret_min = INT64_MIN, .ret_max = INT64_MAX, .ret_doc = "", .doc = "",
};

#define NMAPS 4
static struct ncclbpf_map *maps[NMAPS];
static unsigned long n_inputs, n_accepted, n_runs;

static void setup_maps(void)
{
	static const struct { const char *name; enum ncclbpf_map_type t; uint32_t k, v, n; } d[NMAPS] = {
		{ "fz_arr", NCCLBPF_MAP_ARRAY, 4, 16, 4 },
		{ "fz_data", NCCLBPF_MAP_ARRAY, 4, 32, 1 },
		{ "fz_rb", NCCLBPF_MAP_RINGBUF, 0, 0, 4096 },
		{ "fz_hash", NCCLBPF_MAP_HASH, 8, 8, 16 },
	};

	for (int i = 0; i < NMAPS; i++) {
		char name[64];

		snprintf(name, sizeof(name), "%s_%d", d[i].name, (int)getpid());
		if (ncclbpf_map__create(name, d[i].t, d[i].k, d[i].v, d[i].n, NULL, &maps[i])) {
			fprintf(stderr, "fuzz_sound: map %s: %s\n", name, ncclbpf_errmsg());
			exit(2);
		}
	}
}

static void report(void)
{
	printf("fuzz_sound: %lu inputs, %lu accepted, %lu checked runs, 0 traps\n", n_inputs,
	       n_accepted, n_runs);
	for (int i = 0; i < NMAPS; i++)
		if (maps[i])
			ncclbpf_map__put(maps[i]);
	/* The generator is tuned so that a real share of programs passes. */
	if (n_inputs >= 200 && n_accepted * 50 < n_inputs) {
		fprintf(stderr, "fuzz_sound: only %lu of %lu programs accepted: generator broken?\n",
			n_accepted, n_inputs);
		_exit(1);
	}
}

/* ---- program generator ---- */

struct gen {
	const uint8_t *d;
	size_t n, i;
	struct nbpf_insn *p;
	uint32_t len, cap;
};

static uint32_t take(struct gen *g, uint32_t mod)
{
	uint32_t v = 0;

	for (int k = 0; k < 2; k++)
		v = (v << 8) | (g->i < g->n ? g->d[g->i++] : (uint8_t)(g->i++ * 131));
	return mod ? v % mod : v;
}

static void emit(struct gen *g, uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	ib_put(g->p, &g->len, g->cap, code, dst, src, off, imm);
}

static void emit_lddw(struct gen *g, uint8_t dst, uint8_t src, int32_t imm, int32_t imm2)
{
	ib_put_lddw(g->p, &g->len, g->cap, dst, src, imm, imm2);
}

static uint8_t reg(struct gen *g)
{
	return (uint8_t)take(g, 10);
}

/* r7 = fp + base + r (r a scalar the fragment bounded, or not), then an access through r7. */
static void stack_index(struct gen *g, uint8_t r)
{
	uint8_t sz = ib_sizes[take(g, 4)];

	emit(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 7, 10, 0, 0);
	/* near the top or the bottom of the frame, so a wrong bound leaves it */
	emit(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, 7, 0, 0,
	     take(g, 2) ? -8 * (int32_t)(take(g, 8) + 1) : -512 + 8 * (int32_t)take(g, 8));
	emit(g, NBPF_ALU64 | NBPF_ADD | NBPF_X, 7, r, 0, 0);
	if (take(g, 2))
		emit(g, NBPF_LDX | NBPF_MEM | sz, 8, 7, (int16_t)(take(g, 16) - 8), 0);
	else
		emit(g, NBPF_ST | NBPF_MEM | sz, 7, 0, (int16_t)(take(g, 16) - 8), 1);
}

/* One plausible fragment; pending forward jumps are patched to land here or later. */
static void fragment(struct gen *g, int depth)
{
	uint32_t k = take(g, 27);
	uint8_t r = reg(g), s = reg(g);
	int small = (int)take(g, 70) - 3;

	switch (k) {
	case 0: case 1: /* context load, mostly at field offsets */
		emit(g, NBPF_LDX | NBPF_MEM | ib_sizes[take(g, 4)], r ? r : 2, 6, 0,
		     0), g->p[g->len - 1].off = (int16_t)(take(g, 2) ? fz_fields[take(g, 8)].off : take(g, 72));
		break;
	case 2: /* context store */
		emit(g, NBPF_STX | NBPF_MEM | ib_sizes[take(g, 4)], 6, s, (int16_t)(take(g, 3) ? 24 + 4 * take(g, 2) : take(g, 64)), 0);
		break;
	case 3: case 4: { /* ALU */
		uint8_t op = ib_alu_ops[take(g, sizeof(ib_alu_ops))];
		uint8_t cls = take(g, 3) ? NBPF_ALU64 : NBPF_ALU;
		bool x = take(g, 2);

		if (r == 6)
			r = 7;
		if (op == NBPF_NEG)
			emit(g, cls | op, r, 0, 0, 0);
		else if (op == NBPF_LSH || op == NBPF_RSH || op == NBPF_ARSH)
			emit(g, cls | op | NBPF_K, r, 0, 0, (int32_t)take(g, cls == NBPF_ALU ? 32 : 64));
		else if ((op == NBPF_DIV || op == NBPF_MOD) && !x)
			emit(g, cls | op | NBPF_K, r, 0, 0, (int32_t)take(g, 9) + 1);
		else
			emit(g, cls | op | (x ? NBPF_X : NBPF_K), r, x ? s : 0, 0,
			     x ? 0 : (int32_t)take(g, 0) - 32768);
		break;
	}
	case 5: /* stack store */
		if (take(g, 2))
			emit(g, NBPF_STX | NBPF_MEM | ib_sizes[take(g, 4)], 10, s, (int16_t)-(int)(8 * (take(g, 8) + 1)), 0);
		else
			emit(g, NBPF_ST | NBPF_MEM | ib_sizes[take(g, 4)], 10, 0, (int16_t)-(int)(take(g, 72)), (int32_t)take(g, 0));
		break;
	case 6: /* stack load */
		emit(g, NBPF_LDX | NBPF_MEM | ib_sizes[take(g, 4)], r == 6 ? 7 : r, 10, (int16_t)-(int)(8 * (take(g, 8) + 1)), 0);
		break;
	case 7: case 8: { /* map lookup, usually null-checked, then an access */
		uint32_t m = take(g, 4) ? 0 : 3;
		bool check = take(g, 8) != 0;
		uint8_t sz = ib_sizes[take(g, 4)];

		if (m == 0)
			emit(g, NBPF_ST | NBPF_MEM | NBPF_W, 10, 0, -4, (int32_t)take(g, 6));
		else
			emit(g, NBPF_ST | NBPF_MEM | NBPF_DW, 10, 0, -8, (int32_t)take(g, 4));
		emit(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 2, 10, 0, 0);
		emit(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, 2, 0, 0, m == 0 ? -4 : -8);
		emit_lddw(g, 1, NBPF_PSEUDO_MAP_IDX, (int32_t)m, 0);
		emit(g, NBPF_JMP | NBPF_CALL, 0, 0, 0, NBPF_HELPER_MAP_LOOKUP);
		if (check)
			emit(g, NBPF_JMP | NBPF_JEQ | NBPF_K, 0, 0, take(g, 2) ? 3 : 4, 0);
		if (take(g, 2)) { /* index: clamped or not */
			emit(g, NBPF_LDX | NBPF_MEM | NBPF_W, 8, 6, 16, 0);
			emit(g, NBPF_ALU64 | NBPF_AND | NBPF_K, 8, 0, 0, (int32_t)take(g, 24));
			emit(g, NBPF_ALU64 | NBPF_ADD | NBPF_X, 0, 8, 0, 0);
		} else {
			emit(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 8, 0, 0, 0);
			emit(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 9, 0, 0, 1);
			emit(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, 9, 0, 0, 1);
		}
		if (take(g, 2))
			emit(g, NBPF_LDX | NBPF_MEM | sz, 7, 0, (int16_t)take(g, 18), 0);
		else
			emit(g, NBPF_STX | NBPF_MEM | sz, 0, 7, (int16_t)take(g, 18), 0);
		emit(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 0, 0, 0, 0);
		break;
	}
	case 9: /* global data */
		emit_lddw(g, 9, NBPF_PSEUDO_MAP_IDX_VALUE, 1, (int32_t)take(g, 36));
		if (take(g, 2))
			emit(g, NBPF_LDX | NBPF_MEM | ib_sizes[take(g, 4)], 7, 9, (int16_t)take(g, 8), 0);
		else
			emit(g, NBPF_ST | NBPF_MEM | ib_sizes[take(g, 4)], 9, 0, (int16_t)take(g, 8), 5);
		break;
	case 10: case 11: { /* forward branch over a fragment */
		uint32_t at = g->len;

		emit(g, (take(g, 4) ? NBPF_JMP : NBPF_JMP32) | ib_jmp_ops[take(g, sizeof(ib_jmp_ops))] |
			 (take(g, 2) ? NBPF_X : NBPF_K), r, 0, 0, (int32_t)take(g, 64));
		if (NBPF_SRC(g->p[at].code) == NBPF_X)
			g->p[at].src = s, g->p[at].imm = 0;
		if (depth < 3)
			fragment(g, depth + 1);
		if (at < g->len)
			g->p[at].off = (int16_t)(g->len - at - 1);
		break;
	}
	case 12: { /* small counted loop */
		uint32_t head;
		int n = (int)take(g, 6) + 1;

		emit(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 9, 0, 0, 0);
		head = g->len;
		if (depth < 2)
			fragment(g, depth + 1);
		emit(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, 9, 0, 0, take(g, 8) ? 1 : 0);
		emit(g, NBPF_JMP | NBPF_JLT | NBPF_K, 9, 0, (int16_t)((int)head - (int)g->len - 1), n);
		break;
	}
	case 13: /* helper returning a scalar */
		emit(g, NBPF_JMP | NBPF_CALL, 0, 0, 0, take(g, 2) ? NBPF_HELPER_KTIME_GET_NS : NBPF_HELPER_PRANDOM_U32);
		emit(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, r == 6 ? 7 : r, 0, 0, 0);
		break;
	case 14: { /* ring buffer record */
		emit_lddw(g, 1, NBPF_PSEUDO_MAP_IDX, 2, 0);
		emit(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 2, 0, 0, 16);
		emit(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 3, 0, 0, 0);
		emit(g, NBPF_JMP | NBPF_CALL, 0, 0, 0, NBPF_HELPER_RINGBUF_RESERVE);
		emit(g, NBPF_JMP | NBPF_JEQ | NBPF_K, 0, 0, 5, 0);
		emit(g, NBPF_ST | NBPF_MEM | ib_sizes[take(g, 4)], 0, 0, (int16_t)take(g, 18), 7);
		emit(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 1, 0, 0, 0);
		emit(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 2, 0, 0, 0);
		emit(g, NBPF_JMP | NBPF_CALL, 0, 0, 0, take(g, 2) ? NBPF_HELPER_RINGBUF_SUBMIT : NBPF_HELPER_RINGBUF_DISCARD);
		emit(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 0, 0, 0, 0);
		break;
	}
	case 16: { /* sign-extending load or move, a signed check, then a stack index */
		uint8_t v = r == 6 || r == 7 ? 9 : r;

		if (take(g, 2))
			emit(g, NBPF_LDX | NBPF_MEMSX | ib_sizes[take(g, 3)], v, take(g, 2) ? 6 : 10,
			     0, 0), g->p[g->len - 1].off = g->p[g->len - 1].src == 6 ?
				(int16_t)fz_fields[take(g, 8)].off : (int16_t)-(int)(take(g, 64) + 1);
		else
			emit(g, (take(g, 2) ? NBPF_ALU64 : NBPF_ALU) | NBPF_MOV | NBPF_X, v, s, 8 << take(g, 3), 0);
		if (take(g, 2)) /* a second check: signed and unsigned ranges that meet after extension */
			emit(g, (take(g, 2) ? NBPF_JMP : NBPF_JMP32) | ib_jmp_ops[take(g, sizeof(ib_jmp_ops))] | NBPF_K,
			     v, 0, 5, take(g, 2) ? (int32_t)take(g, 24) - 12 : -(int32_t)take(g, 300));
		emit(g, (take(g, 2) ? NBPF_JMP : NBPF_JMP32) | ib_jmp_ops[take(g, sizeof(ib_jmp_ops))] | NBPF_K,
		     v, 0, 4, (int32_t)take(g, 24) - 12);
		stack_index(g, v);
		break;
	}
	case 17: /* partial-width stores into spill slots, then a read of another width */
		emit(g, NBPF_STX | NBPF_MEM | ib_sizes[take(g, 4)], 10, s, (int16_t)-(int)(take(g, 64) + 1), 0);
		if (take(g, 2))
			emit(g, NBPF_ST | NBPF_MEM | ib_sizes[take(g, 4)], 10, 0, (int16_t)-(int)(take(g, 64) + 1),
			     (int32_t)take(g, 0));
		emit(g, NBPF_LDX | NBPF_MEM | ib_sizes[take(g, 4)], r == 6 ? 7 : r, 10,
		     (int16_t)-(int)(take(g, 64) + 1), 0);
		break;
	case 18: { /* 32-bit arithmetic and a 32-bit check guarding a stack index */
		uint8_t v = r == 6 || r == 7 ? 9 : r;
		uint8_t op = ib_alu_ops[take(g, sizeof(ib_alu_ops))];

		if (op == NBPF_DIV || op == NBPF_MOD || op == NBPF_LSH || op == NBPF_RSH || op == NBPF_ARSH)
			emit(g, NBPF_ALU | op | NBPF_K, v, 0, 0, (int32_t)take(g, 31) + 1);
		else
			emit(g, NBPF_ALU | op | NBPF_K, v, 0, 0, (int32_t)take(g, 0) - 32768);
		emit(g, (take(g, 2) ? NBPF_JMP32 : NBPF_JMP) | ib_jmp_ops[take(g, sizeof(ib_jmp_ops))] | NBPF_K,
		     v, 0, 4, (int32_t)take(g, 24) - 8);
		stack_index(g, v);
		break;
	}
	case 19: { /* atomics on the stack, at any offset and width */
		static const int32_t aops[] = { NBPF_ADD, NBPF_ADD | NBPF_FETCH, NBPF_OR, NBPF_XOR | NBPF_FETCH,
						NBPF_XCHG, NBPF_CMPXCHG };

		emit(g, NBPF_STX | NBPF_ATOMIC | (take(g, 2) ? NBPF_DW : NBPF_W), 10, s == 10 ? 2 : s,
		     (int16_t)-(int)(take(g, 64) + 1), aops[take(g, 6)]);
		break;
	}
	case 20: { /* byte swaps of a bounded value used as an index */
		static const int32_t w[] = { 16, 32, 64 };
		uint8_t v = r == 6 || r == 7 ? 9 : r;

		emit(g, NBPF_ALU64 | NBPF_AND | NBPF_K, v, 0, 0, (int32_t)take(g, 0x400));
		emit(g, (take(g, 3) ? NBPF_ALU | NBPF_END | (take(g, 2) ? NBPF_TO_BE : NBPF_TO_LE)
				    : NBPF_ALU64 | NBPF_END), v, 0, 0, w[take(g, 3)]);
		emit(g, NBPF_JMP | ib_jmp_ops[take(g, sizeof(ib_jmp_ops))] | NBPF_K, v, 0, 4, (int32_t)take(g, 0x400));
		stack_index(g, v);
		break;
	}
	case 21: { /* a helper reading a stack buffer: hash lookup or update from fp-off */
		int32_t off = -(int32_t)(take(g, 24) + 8);

		emit(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 2, 10, 0, 0);
		emit(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, 2, 0, 0, off);
		emit(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 3, 10, 0, 0);
		emit(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, 3, 0, 0, -(int32_t)(take(g, 24) + 1));
		emit(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 4, 0, 0, 0);
		emit_lddw(g, 1, NBPF_PSEUDO_MAP_IDX, take(g, 2) ? 3 : 0, 0);
		emit(g, NBPF_JMP | NBPF_CALL, 0, 0, 0, take(g, 2) ? NBPF_HELPER_MAP_UPDATE : NBPF_HELPER_MAP_LOOKUP);
		emit(g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 0, 0, 0, 0);
		break;
	}
	case 22: { /* checks on one extended copy of a value, an index through another */
		uint8_t v = 3, a = 4, b = 5;

		emit(g, NBPF_LDX | NBPF_MEM | NBPF_DW, v, 6, take(g, 2) ? 0 : 32, 0);
		if (take(g, 2))
			emit(g, NBPF_ALU64 | NBPF_RSH | NBPF_K, v, 0, 0, (int32_t)take(g, 40));
		for (int c = 0; c < 2; c++) {
			uint8_t d = c ? b : a;

			emit(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, d, v, 0, 0);
			switch (take(g, 5)) {
			case 0: /* mov32 */
				emit(g, NBPF_ALU | NBPF_MOV | NBPF_X, d, v, 0, 0);
				break;
			case 1: /* movsx32 */
				emit(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, d, v, 32, 0);
				break;
			case 2: /* (x << k) >> 32 or s>> 32 */
				emit(g, NBPF_ALU64 | NBPF_LSH | NBPF_K, d, 0, 0, (int32_t)take(g, 33));
				emit(g, NBPF_ALU64 | (take(g, 2) ? NBPF_RSH : NBPF_ARSH) | NBPF_K, d, 0, 0,
				     take(g, 4) ? 32 : (int32_t)take(g, 64));
				break;
			case 3: /* x >> j, then an extension */
				emit(g, NBPF_ALU64 | NBPF_RSH | NBPF_K, d, 0, 0, (int32_t)take(g, 33));
				emit(g, NBPF_ALU | NBPF_MOV | NBPF_X, d, d, 0, 0);
				break;
			default: /* a change of the value in between */
				emit(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, d, 0, 0, (int32_t)take(g, 3));
				emit(g, NBPF_ALU | NBPF_MOV | NBPF_X, d, d, 0, 0);
				break;
			}
			if (!c) { /* one or two checks on the first copy, skipping the rest */
				int checks = 1 + (int)take(g, 2);

				for (int i = 0; i < checks; i++)
					emit(g, (take(g, 2) ? NBPF_JMP : NBPF_JMP32) |
						     ib_jmp_ops[take(g, sizeof(ib_jmp_ops))] | NBPF_K,
					     a, 0, (int16_t)(checks - i - 1 + 7), (int32_t)take(g, 24) - 4);
			}
		}
		stack_index(g, b);
		break;
	}
	case 23: { /* a known value on the left of a comparison (32 or 64 bits), then an index */
		uint8_t v = r == 6 || r == 7 || r == 2 ? 9 : r;
		bool w = take(g, 2);
		int checks = 1 + (int)take(g, 2);

		for (int i = 0; i < checks; i++) {
			emit(g, (w ? NBPF_ALU : NBPF_ALU64) | NBPF_MOV | NBPF_K, 2, 0, 0,
			     (int32_t)take(g, 24) - 8);
			emit(g, (w ? NBPF_JMP32 : NBPF_JMP) | ib_jmp_ops[take(g, sizeof(ib_jmp_ops))] | NBPF_X,
			     take(g, 2) ? 2 : v, 0, (int16_t)(2 * (checks - i - 1) + 4), 0);
			g->p[g->len - 1].src = g->p[g->len - 1].dst == 2 ? v : 2;
		}
		if (w && take(g, 2))
			emit(g, NBPF_ALU | NBPF_MOV | NBPF_X, v, v, 0, 0);
		stack_index(g, v);
		break;
	}
	case 24: { /* spill at one width, fill at the same or a narrower one, check one, index the other */
		static const uint8_t w[4] = { NBPF_B, NBPF_H, NBPF_W, NBPF_DW };
		static const int16_t wb[4] = { 1, 2, 4, 8 };
		uint32_t ws = take(g, 4), wf = take(g, ws + 1);
		int16_t off = (int16_t)(-8 * (int)(take(g, 6) + 1) + (take(g, 4) ? 0 : wb[ws] * (int)take(g, 2)));
		uint8_t a = 3, b = 4;

		emit(g, NBPF_LDX | NBPF_MEM | ib_sizes[take(g, 4)], a, 6, (int16_t)(take(g, 2) ? 0 : 16), 0);
		if (take(g, 2))
			emit(g, NBPF_ALU64 | NBPF_AND | NBPF_K, a, 0, 0, (int32_t)take(g, 0x400));
		emit(g, NBPF_STX | NBPF_MEM | w[ws], 10, a, off, 0);
		if (take(g, 4) == 0) /* the register changes after the spill */
			emit(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, a, 0, 0, 1);
		/* sign-extending fills too: a filled value is the spilled one only when no sign bit is set */
		emit(g, NBPF_LDX | (wf < 3 && take(g, 2) ? NBPF_MEMSX : NBPF_MEM) | w[wf], b, 10,
		     (int16_t)(off + (take(g, 4) ? 0 : (int)take(g, 4))), 0);
		if (take(g, 2)) {
			uint8_t t = a;

			a = b;
			b = t;
		}
		emit(g, (take(g, 2) ? NBPF_JMP : NBPF_JMP32) | ib_jmp_ops[take(g, sizeof(ib_jmp_ops))] | NBPF_K,
		     a, 0, 4, (int32_t)take(g, 24) - 4);
		stack_index(g, b);
		break;
	}
	case 25: { /* an index built from two bounded values by shifts and AND/OR/XOR, as tables are keyed */
		static const uint8_t bops[] = { NBPF_OR, NBPF_AND, NBPF_XOR };
		static const uint8_t sops[] = { NBPF_LSH, NBPF_RSH, NBPF_ARSH };
		static const uint8_t cops[] = { NBPF_JGT, NBPF_JGE, NBPF_JSGT, NBPF_JSGE, NBPF_JEQ };
		uint32_t skip[4], n_skip = 0;
		uint8_t v[2] = { 3, 4 };

		for (int i = 0; i < 2; i++) {
			emit(g, NBPF_LDX | NBPF_MEM | ib_sizes[take(g, 4)], v[i], 6, fz_fields[take(g, 4)].off, 0);
			switch (take(g, 4)) {
			case 0: /* a mask */
				emit(g, (take(g, 2) ? NBPF_ALU64 : NBPF_ALU) | NBPF_AND | NBPF_K, v[i], 0, 0,
				     (int32_t)take(g, 0x200) - (take(g, 8) ? 0 : 0x100));
				break;
			case 1: /* none: the value is unbounded */
				break;
			default: /* a check that leaves the index out when it fails */
				skip[n_skip++] = g->len;
				emit(g, (take(g, 3) ? NBPF_JMP : NBPF_JMP32) | cops[take(g, sizeof(cops))] | NBPF_K,
				     v[i], 0, 0, (int32_t)take(g, 0x100) - (take(g, 8) ? 0 : 0x80));
				break;
			}
			if (take(g, 2)) {
				uint8_t cls = take(g, 2) ? NBPF_ALU64 : NBPF_ALU;

				emit(g, cls | sops[take(g, sizeof(sops))] | NBPF_K, v[i], 0, 0,
				     (int32_t)take(g, cls == NBPF_ALU ? 32 : 64));
			}
		}
		emit(g, (take(g, 3) ? NBPF_ALU64 : NBPF_ALU) | bops[take(g, sizeof(bops))] | NBPF_X, v[0], v[1], 0, 0);
		if (take(g, 3) == 0) /* scaled, as a table of wider entries */
			emit(g, (take(g, 2) ? NBPF_ALU64 : NBPF_ALU) | NBPF_LSH | NBPF_K, v[0], 0, 0, (int32_t)take(g, 4));
		stack_index(g, v[0]);
		for (uint32_t i = 0; i < n_skip; i++)
			if (skip[i] < g->len)
				g->p[skip[i]].off = (int16_t)(g->len - skip[i] - 1);
		break;
	}
	case 26: { /* a copy plus a constant (linked with a delta), a check on one, an index through the other */
		uint8_t a = 3, b = 4, cls = take(g, 3) ? NBPF_ALU64 : NBPF_ALU;

		emit(g, NBPF_LDX | NBPF_MEM | ib_sizes[take(g, 4)], a, 6, fz_fields[take(g, 4)].off, 0);
		if (take(g, 2))
			emit(g, NBPF_ALU64 | NBPF_AND | NBPF_K, a, 0, 0, (int32_t)take(g, 0x400));
		emit(g, cls | NBPF_MOV | NBPF_X, b, a, 0, 0);
		emit(g, cls | (take(g, 2) ? NBPF_ADD : NBPF_SUB) | NBPF_K, b, 0, 0,
		     (int32_t)take(g, 64) - 32 + (take(g, 8) ? 0 : INT32_MAX - 64));
		if (take(g, 4) == 0) /* one of them changes after the link */
			emit(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, take(g, 2) ? a : b, 0, 0, (int32_t)take(g, 16));
		if (take(g, 2)) {
			uint8_t t = a;

			a = b;
			b = t;
		}
		emit(g, (take(g, 2) ? NBPF_JMP : NBPF_JMP32) | ib_jmp_ops[take(g, sizeof(ib_jmp_ops))] | NBPF_K,
		     a, 0, 4, (int32_t)take(g, 24) - 4);
		stack_index(g, b);
		break;
	}
	default: /* copy between registers / pointers */
		emit(g, NBPF_ALU64 | NBPF_MOV | NBPF_X, r == 6 ? 8 : r, s, 0, 0);
		if (small >= 0 && small < 64)
			emit(g, NBPF_ALU64 | NBPF_ADD | NBPF_K, r == 6 ? 8 : r, 0, 0, small);
		break;
	}
}

static uint32_t generate(const uint8_t *d, size_t n, struct nbpf_insn *p, uint32_t cap)
{
	struct gen g = { .d = d, .n = n, .p = p, .cap = cap - 3 };
	uint32_t frags = 1 + (n ? d[0] % 12 : 0);

	emit(&g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 6, 1, 0, 0);
	/* mostly initialised registers and stack, so most programs get far */
	for (uint8_t r = 0; r < 10; r++)
		if (r != 1 && r != 6 && take(&g, 8))
			emit(&g, NBPF_ALU64 | NBPF_MOV | NBPF_K, r, 0, 0, (int32_t)take(&g, 40));
	for (int k = 1; k <= 8; k++)
		if (take(&g, 4))
			emit(&g, NBPF_ST | NBPF_MEM | NBPF_DW, 10, 0, (int16_t)(-8 * k), 0);
	for (uint32_t f = 0; f < frags; f++)
		fragment(&g, 0);
	g.cap += 3;
	if (take(&g, 3))
		emit(&g, NBPF_ALU64 | NBPF_MOV | NBPF_X, 0, 7, 0, 0);
	else
		emit(&g, NBPF_ALU64 | NBPF_MOV | NBPF_K, 0, 0, 0, (int32_t)take(&g, 0));
	emit(&g, NBPF_JMP | NBPF_EXIT, 0, 0, 0, 0);
	return g.len;
}

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nbpf_insn prog[256];
	struct nbpf_verify_input in;
	struct ncclbpf_verify_result res;
	uint32_t n;

	nbpf_verify_selfcheck = 1; /* pruning's shortcuts agree with the full tests */
	int err;

	if (!maps[0]) {
		setup_maps();
		atexit(report);
	}
	n_inputs++;
	if (size && (data[0] & 7) == 7) {
		n = (uint32_t)((size - 1) / 8);
		if (n > 256)
			n = 256;
		memcpy(prog, data + 1, n * 8);
	} else {
		n = generate(data, size, prog, 256);
	}
	memset(&in, 0, sizeof(in));
	in.insns = prog;
	in.n_insns = n;
	in.maps = maps;
	in.n_maps = NMAPS;
	err = nbpf_verify_insns(&in, &fz_hook, NULL, &res);
	if (err && getenv("FUZZ_SOUND_REASONS") && res.n_findings)
		fprintf(stderr, "reject: %s\n", res.findings[0].reason);
	free(res.findings);
	if (err)
		return 0;
	n_accepted++;
	{
		uint64_t seed = 0x9e3779b97f4a7c15ull ^ size ^ 1;
		struct nbpf_env env = { .maps = maps, .n_maps = NMAPS, .helper = nbpf_helper_find };

		for (size_t i = 0; i < size; i++)
			seed = (seed ^ data[i]) * 0x100000001b3ull;
		for (int run = 0; run < 4; run++) {
			uint8_t ctx[CTX_SIZE];
			struct mem_checker mc;
			uint64_t r0 = 0;

			for (int b = 0; b < CTX_SIZE; b++)
				ctx[b] = (uint8_t)(run == 0 ? 0 : run == 1 ? 0xff : xs(&seed));
			mem_checker_init(&mc, &fz_hook, ctx);
			mem_checker_add(&mc, nbpf_map_value_addr(maps[1], 0), 32, false);
			err = nbpf_interp_run(prog, n, &env, ctx, CTX_SIZE, &mc.chk, 1u << 22, &r0);
			n_runs++;
			if (err) {
				fprintf(stderr, "fuzz_sound: accepted program trapped: %s\n", ncclbpf_errmsg());
				for (uint32_t i = 0; i < n; i++)
					fprintf(stderr, "  %3u: %02x %u %u %d %d\n", i, prog[i].code, prog[i].dst,
						prog[i].src, prog[i].off, prog[i].imm);
				abort();
			}
			if ((int64_t)r0 < res.ret_min || (int64_t)r0 > res.ret_max) {
				fprintf(stderr, "fuzz_sound: r0 %lld outside proven [%lld, %lld]\n",
					(long long)r0, (long long)res.ret_min, (long long)res.ret_max);
				abort();
			}
		}
	}
	return 0;
}
