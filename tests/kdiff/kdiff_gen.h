/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kdiff_gen.h - the program generator's vocabulary, shared by its two
 * files: kdiff_gen.c (values, operations, checks and the uses that need
 * bounds) and kdiff_frags.c (the shapes, and whole programs).
 */
#ifndef NCCLBPF_KDIFF_GEN_H
#define NCCLBPF_KDIFF_GEN_H

#include <stdbool.h>
#include <stdint.h>

#include "kdiff.h"

#define MAX_SUBS  2
#define MAX_CALLS 32
#define EPILOGUE  8      /* slots kept for a function's last instructions */
#define KEY_SLOT  (-72)  /* map keys (8 bytes) */
#define VAL_SLOT  (-96)  /* map update values (16 bytes) */
#define CNT_SLOT  (-104) /* a loop counter kept on the stack */

struct gen {
	uint64_t s;
	struct nbpf_insn *p;
	uint32_t n, cap;
	int depth;            /* fragment nesting */
	int sub;              /* -1: main program, else the subprogram's index */
	int nsubs;
	int loop_reg;         /* a loop counter no fragment may write, or -1 */
	uint32_t busy;        /* scratch registers holding a pointer the fragment still uses */
	int16_t floor;        /* deepest stack offset fragments touch */
	uint32_t call_at[MAX_CALLS];
	int call_to[MAX_CALLS];
	int ncalls;
	uint64_t *frags;
};

/*
 * A use whose safety depends on the value's bounds, planned before the
 * checks so that they can aim at its edge: room is the largest value
 * (unsigned) the use takes safely.
 */
enum use_kind { USE_STACK, USE_MAP, USE_MAP32, USE_SIZE, USE_DIVISOR, USE_RETURN };

struct use {
	enum use_kind kind;
	int16_t base, off;
	int w;
	bool sub;  /* base - value: the room is below the base */
	bool aligned; /* the value is a multiple of w already */
	int32_t room;
};

/* random choices: [0, n), true with p percent */
uint32_t kg_rnd(struct gen *g, uint32_t n);
bool kg_pct(struct gen *g, uint32_t p);
/* emitting; a forward jump to patch with kg_land() when its target is reached */
void kg_put(struct gen *g, uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm);
void kg_put_lddw(struct gen *g, uint8_t dst, uint8_t src, int32_t imm, int32_t imm2);
uint32_t kg_jfwd(struct gen *g, uint8_t code, uint8_t dst, uint8_t src, int32_t imm);
void kg_land(struct gen *g, uint32_t at);
/* constants, widths, registers, stack slots */
int32_t kg_edge(struct gen *g);
int32_t kg_bound(struct gen *g);
int32_t kg_mask(struct gen *g);
int kg_width(struct gen *g);
uint8_t kg_val(struct gen *g);
uint8_t kg_val89(struct gen *g);
uint8_t kg_scratch(struct gen *g, uint32_t avoid);
uint8_t kg_other(struct gen *g, uint8_t a);
int16_t kg_top_slot(struct gen *g);
/* values and operations on them */
void kg_ctx_load(struct gen *g, uint8_t d, uint8_t mode);
int32_t kg_helper_value(struct gen *g);
void kg_src_value(struct gen *g, uint8_t d);
void kg_alu_one(struct gen *g, uint8_t v, int src);
void kg_shape(struct gen *g, uint8_t v);
/* checks, uses, and checks aimed at a use */
uint8_t kg_jop(struct gen *g);
uint32_t kg_check(struct gen *g, uint8_t v, uint32_t avoid);
void kg_access(struct gen *g, uint8_t t, int16_t off);
void kg_plan_use(struct gen *g, struct use *u);
void kg_emit_use(struct gen *g, uint8_t v, const struct use *u);
void kg_sink(struct gen *g, uint8_t v);
uint32_t kg_skip_if(struct gen *g, uint8_t cls, uint8_t op, uint8_t v, int32_t k, uint32_t avoid);
void kg_checks_then_sink(struct gen *g, uint8_t c, uint8_t v, int min_checks);

#endif
