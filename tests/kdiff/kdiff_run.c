// SPDX-License-Identifier: Apache-2.0
/*
 * kdiff_run.c - accepted programs run: on the checking interpreter (every
 * access offered to tests/common/mem_checker.c, r0 within the range we
 * proved), then on the interpreter and the JIT from the same inputs, which
 * must leave the same r0, context, maps and ring buffer records.  Inputs
 * are bytes at sign and width edges; the clock, random numbers and the
 * thread slot are sequences reset for each run, and each run starts from
 * the same maps and an empty, zeroed ring buffer at the same position.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "interp.h"
#include "jit/jit.h"
#include "kdiff.h"
#include "maps/map.h"
#include "mem_checker.h"

/* ---- deterministic helpers for the runs ---- */

static uint64_t det_counter;
static struct nbpf_helper det_helpers[3];

static uint64_t det_prandom(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	return kd_mix(det_counter++) & 0xffffffffu;
}

static uint64_t det_ktime(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	return 1000000000ull + 1000 * det_counter++;
}

static uint64_t det_cpu(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	return det_counter++ & 3;
}

/* Production helpers, with the clock, random numbers and the slot replaced by sequences. */
static const struct nbpf_helper *run_helper(int32_t id)
{
	for (int i = 0; i < 3; i++)
		if (det_helpers[i].id == id)
			return &det_helpers[i];
	return nbpf_helper_find(id);
}

static void det_init(void)
{
	static const struct { int32_t id; nbpf_helper_fn fn; } d[3] = {
		{ NBPF_HELPER_PRANDOM_U32, det_prandom },
		{ NBPF_HELPER_KTIME_GET_NS, det_ktime },
		{ NBPF_HELPER_SMP_PROC_ID, det_cpu },
	};

	if (det_helpers[0].fn)
		return;
	for (int i = 0; i < 3; i++) {
		det_helpers[i] = *nbpf_helper_find(d[i].id);
		det_helpers[i].fn = d[i].fn;
	}
}

/* ---- runs ---- */

struct snapshot {
	uint64_t r0;
	uint8_t ctx[KD_CTX_SIZE];
	uint8_t arr[4 * 16], data[64];
	uint64_t hash_digest, rb_digest;
	uint32_t hash_n, rb_n;
};

struct inputs {
	uint8_t ctx[KD_CTX_SIZE], arr[4 * 16], data[64], rodata[32];
};

/* Bytes at the edges of signs and widths, mostly. */
static uint8_t edge_byte(uint64_t *s)
{
	static const uint8_t e[] = { 0x00, 0x01, 0x7f, 0x80, 0xff, 0xfe, 0x08, 0x10 };
	uint64_t r = kd_mix((*s)++);

	return (r & 0x300) ? e[r % 8] : (uint8_t)(r >> 16);
}

static void make_inputs(struct inputs *in, uint64_t seed, uint32_t run)
{
	uint64_t s = kd_mix(seed ^ (0x1000003ull * (run + 1)));
	uint8_t *all[4] = { in->ctx, in->arr, in->data, in->rodata };
	size_t len[4] = { sizeof(in->ctx), sizeof(in->arr), sizeof(in->data), sizeof(in->rodata) };

	for (int a = 0; a < 4; a++)
		for (size_t i = 0; i < len[a]; i++)
			all[a][i] = run == 0 ? 0 : run == 1 ? 0xff : edge_byte(&s);
}

static int drain(void *user, const void *data, uint32_t size)
{
	uint64_t *d = user;

	for (uint32_t i = 0; i < size; i++)
		d[0] = (d[0] ^ ((const uint8_t *)data)[i]) * 0x100000001b3ull;
	d[1]++;
	return 0;
}

/*
 * A record holds whatever the ring held where it lands, in the kernel as
 * here, so each engine's run starts with the ring drained, at a multiple
 * of its size, and zeroed: its records then hold the same bytes.
 */
static void ring_reset(struct ncclbpf_map *rb)
{
	uint64_t ring = kd_map_descs[KD_MAP_RB].max_entries, d[2] = { 0, 0 }, rem;
	void *r;

	ncclbpf_ringbuf__consume(rb, drain, d);
	while ((rem = ring - nbpf_ringbuf_query(rb, 3) % ring) != ring) {
		r = nbpf_ringbuf_reserve(rb, rem >= 16 ? rem - 8 : 8, 0);
		if (!r)
			abort();
		nbpf_ringbuf_commit(r, true);
		ncclbpf_ringbuf__consume(rb, drain, d);
	}
	r = nbpf_ringbuf_reserve(rb, ring - 8, 0);
	if (!r)
		abort();
	memset(r, 0, ring - 8);
	nbpf_ringbuf_commit(r, true);
	ncclbpf_ringbuf__consume(rb, drain, d);
}

static void set_inputs(struct kd_env *e, const struct inputs *in, uint8_t *ctx)
{
	uint8_t key[8];

	memcpy(ctx, in->ctx, KD_CTX_SIZE);
	memcpy(e->maps[KD_MAP_ARR]->array_base, in->arr, sizeof(in->arr));
	memcpy(nbpf_map_value_addr(e->maps[KD_MAP_DATA], 0), in->data, sizeof(in->data));
	memcpy(nbpf_map_value_addr(e->maps[KD_MAP_RODATA], 0), in->rodata, sizeof(in->rodata));
	while (ncclbpf_map__next_key(e->maps[KD_MAP_HASH], NULL, key) == 0)
		ncclbpf_map__delete(e->maps[KD_MAP_HASH], key);
	ring_reset(e->maps[KD_MAP_RB]);
	det_counter = 0;
}

static int key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, 8);
}

static void take_snapshot(struct kd_env *e, const uint8_t *ctx, uint64_t r0, struct snapshot *s)
{
	uint8_t keys[16][8], val[16];
	uint64_t d[2] = { 0, 0 };
	uint32_t n = 0;

	memset(s, 0, sizeof(*s));
	s->r0 = r0;
	memcpy(s->ctx, ctx, KD_CTX_SIZE);
	memcpy(s->arr, e->maps[KD_MAP_ARR]->array_base, sizeof(s->arr));
	memcpy(s->data, nbpf_map_value_addr(e->maps[KD_MAP_DATA], 0), sizeof(s->data));
	while (n < 16 && ncclbpf_map__next_key(e->maps[KD_MAP_HASH], n ? keys[n - 1] : NULL,
						keys[n]) == 0)
		n++;
	qsort(keys, n, 8, key_cmp);
	s->hash_digest = 0xcbf29ce484222325ull;
	for (uint32_t i = 0; i < n; i++) {
		ncclbpf_map__lookup(e->maps[KD_MAP_HASH], keys[i], val);
		drain(&s->hash_digest, keys[i], 8);
		drain(&s->hash_digest, val, 16);
	}
	s->hash_n = n;
	ncclbpf_ringbuf__consume(e->maps[KD_MAP_RB], drain, d);
	s->rb_digest = d[0];
	s->rb_n = (uint32_t)d[1];
}

static const char *snapshot_diff(const struct snapshot *a, const struct snapshot *b)
{
	if (a->r0 != b->r0)
		return "r0";
	if (memcmp(a->ctx, b->ctx, KD_CTX_SIZE))
		return "context";
	if (memcmp(a->arr, b->arr, sizeof(a->arr)))
		return "array map";
	if (memcmp(a->data, b->data, sizeof(a->data)))
		return "global data";
	if (a->hash_n != b->hash_n || a->hash_digest != b->hash_digest)
		return "hash map";
	if (a->rb_n != b->rb_n || a->rb_digest != b->rb_digest)
		return "ring buffer records";
	return NULL;
}

int kd_run_checks(struct kd_env *e, const struct kd_prog *p, uint64_t seed, bool jit,
		  struct kd_verdict *v)
{
	const struct nbpf_env env = { .maps = e->maps, .n_maps = KD_NMAPS, .helper = run_helper };
	struct nbpf_jit_image *img = NULL;
	int cls = 0;

	det_init();
#if defined(__x86_64__)
	if (jit && nbpf_jit_compile(p->insns, p->n, &env, &img)) {
		snprintf(v->run_msg, sizeof(v->run_msg), "JIT refused an accepted program: %s",
			 ncclbpf_errmsg());
		return KD_C_FAIL_JIT;
	}
#endif
	for (uint32_t run = 0; run < e->runs && !cls; run++) {
		uint8_t ctx[KD_CTX_SIZE] __attribute__((aligned(8)));
		struct snapshot si, sj;
		struct inputs in;
		struct mem_checker mc;
		uint64_t r0 = 0;
		const char *d;

		make_inputs(&in, seed, run);
		set_inputs(e, &in, ctx);
		mem_checker_init(&mc, &kd_hook, ctx);
		mem_checker_add(&mc, nbpf_map_value_addr(e->maps[KD_MAP_DATA], 0), 64, false);
		mem_checker_add(&mc, nbpf_map_value_addr(e->maps[KD_MAP_RODATA], 0), 32, true);
		if (nbpf_interp_run(p->insns, p->n, &env, ctx, KD_CTX_SIZE, &mc.chk, 1u << 24, &r0)) {
			snprintf(v->run_msg, sizeof(v->run_msg), "run %u: %s", run, ncclbpf_errmsg());
			cls = KD_C_FAIL_RUN;
			break;
		}
		if ((int64_t)r0 < v->ret_min || (int64_t)r0 > v->ret_max) {
			snprintf(v->run_msg, sizeof(v->run_msg),
				 "run %u: r0 %" PRId64 " outside the proven [%" PRId64 ", %" PRId64 "]", run,
				 (int64_t)r0, v->ret_min, v->ret_max);
			cls = KD_C_FAIL_RUN;
			break;
		}
		if (!img)
			continue;
		take_snapshot(e, ctx, r0, &si);
		set_inputs(e, &in, ctx);
		r0 = img->func(ctx, KD_CTX_SIZE);
		take_snapshot(e, ctx, r0, &sj);
		d = snapshot_diff(&si, &sj);
		if (d) {
			snprintf(v->run_msg, sizeof(v->run_msg),
				 "run %u: interpreter and JIT differ in %s (r0 0x%" PRIx64 " / 0x%" PRIx64 ")",
				 run, d, si.r0, sj.r0);
			cls = KD_C_FAIL_JIT;
		}
	}
	if (img)
		nbpf_jit_free(img);
	if (cls == KD_C_FAIL_RUN && kd_env_map_renew(e, KD_MAP_RB)) /* a trap may leave a record reserved */
		abort();
	return cls;
}
