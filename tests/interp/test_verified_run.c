// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_verified_run.c - the interpreter's path for prepared programs
 * (nbpf_interp_run_verified: no per-run validation, nothing cleared)
 * against the JIT, on every program of every shipped policy and random
 * contexts.  Before each interpreted run the C stack below the caller is
 * filled with a pattern, so a program that depended on a zeroed stack or
 * register would see it and disagree with the JIT.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "host/hooks.h"
#include "ncclbpf/runtime.h"

#define RUNS 2000

static const char *const policies[] = {
	"noop", "size_aware", "nvlink_ring_mid", "adaptive_channels", "slo_enforcer",
	"bad_channels", "latency_hist", "env_overrides",
};

/* Leaves 16 KiB of the stack below the caller holding 0xa5. */
static __attribute__((noinline)) void dirty_stack(void)
{
	volatile uint8_t junk[16384];

	memset((void *)junk, 0xa5, sizeof(junk));
	__asm__ volatile("" : : "r"(junk) : "memory");
}

static __attribute__((noinline)) int run_interp(struct ncclbpf_program *p, void *ctx,
						uint64_t len, uint64_t *r0)
{
	dirty_stack();
	return ncclbpf_program__run(p, ctx, len, r0);
}

static void check_program(const char *obj_name, struct ncclbpf_program *p,
			  const struct ncclbpf_hook_desc *h, unsigned *seed)
{
	struct ncclbpf_prepare_opts po = { .sz = sizeof(po), .engine = NCCLBPF_ENGINE_INTERP };
	uint32_t size = h->ctx_size;
	uint8_t *in = malloc((size_t)size * RUNS), *out_i = malloc((size_t)size * RUNS);
	uint64_t *r_i = calloc(RUNS, sizeof(*r_i));
	int bad = 0;

	for (size_t k = 0; k < (size_t)size * RUNS; k++) {
		unsigned r = (unsigned)rand_r(seed);

		/* Mostly small values, so thresholds on sizes and counts are crossed. */
		in[k] = (uint8_t)(r % 4 == 0 ? r >> 8 : r % 4 == 1 ? 0 : r % 8);
	}
	memcpy(out_i, in, (size_t)size * RUNS);
	CHECK_MSG(ncclbpf_program__prepare(p, h, &po) == 0, "%s: interp prepare: %s", obj_name,
		  ncclbpf_errmsg());
	for (int k = 0; k < RUNS; k++)
		CHECK(run_interp(p, out_i + (size_t)k * size, size, &r_i[k]) == 0);
	po.engine = NCCLBPF_ENGINE_JIT;
	CHECK_MSG(ncclbpf_program__prepare(p, h, &po) == 0, "%s: jit prepare: %s", obj_name,
		  ncclbpf_errmsg());
	for (int k = 0; k < RUNS; k++) {
		uint8_t *c = in + (size_t)k * size;
		uint64_t r0 = 0;

		CHECK(ncclbpf_program__run(p, c, size, &r0) == 0);
		if ((r0 != r_i[k] || memcmp(c, out_i + (size_t)k * size, size)) && bad++ < 3)
			CHECK_MSG(0, "%s/%s run %d: interp r0 %llu, jit r0 %llu%s", obj_name,
				  ncclbpf_program__name(p), k, (unsigned long long)r_i[k],
				  (unsigned long long)r0,
				  memcmp(c, out_i + (size_t)k * size, size) ? ", context differs" : "");
	}
	free(in);
	free(out_i);
	free(r_i);
}

int main(void)
{
	unsigned seed = 4242;
	int progs = 0;

	for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
		struct ncclbpf_object *obj = NULL;
		char path[512];

		snprintf(path, sizeof(path), "%s/%s.bpf.o", POLICY_DIR, policies[i]);
		if (ncclbpf_object__open_file(path, NULL, &obj)) {
			CHECK_MSG(0, "%s: %s", path, ncclbpf_errmsg());
			continue;
		}
		for (size_t k = 0; k < ncclbpf_object__prog_count(obj); k++) {
			struct ncclbpf_program *p = ncclbpf_object__prog(obj, k);
			const struct ncclbpf_hook_desc *h =
				ncclbpf_hook_find_section(ncclbpf_program__section(p));

			if (!h)
				continue;
			check_program(policies[i], p, h, &seed);
			progs++;
		}
		ncclbpf_object__close(obj);
	}
	CHECK(progs >= 8);
	return check_summary("test_verified_run");
}
