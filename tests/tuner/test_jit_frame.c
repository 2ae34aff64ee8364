/*
 * test_jit_frame.c - the JIT drops the 512-byte frame (and the key stores)
 * of programs whose only use of r10 is the key of inlined array lookups,
 * the common shape of tuner policies.  Checks, against the interpreter on
 * the same contexts, that results are unchanged, that the frame really goes
 * (smaller code) for the plain shape, and that it stays whenever the key's
 * slot or address can be seen another way (read back through r10, address
 * copied, address live on a branch out of the block).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "helpers.h"
#include "interp.h"
#include "jit/jit.h"
#include "text/asm.h"

#define HEAD "mov %r6, %r1\n" "ldxw %r2, [%r6+0]\n"
#define TAIL "jeq %r0, 0, none\n" "ldxw %r1, [%r0+0]\n" "stxw [%r6+4], %r1\n" \
	     "none:\n" "mov %r0, 0\n" "exit\n"

static const struct {
	const char *name, *text;
	int frame; /* 0: must be elided, 1: must stay, -1: either */
} progs[] = {
	{ "plain_reg_key", HEAD "stxw [%r10-4], %r2\n" "lddw %r1, map[0]\n" "mov %r2, %r10\n"
			   "add %r2, -4\n" "call 1\n" TAIL, 0 },
	{ "const_key", "mov %r6, %r1\n" "stw [%r10-8], 3\n" "lddw %r1, map[0]\n" "mov %r2, %r10\n"
		       "add %r2, -8\n" "call 1\n" TAIL, 0 },
	{ "slot_read_back", HEAD "stxw [%r10-4], %r2\n" "lddw %r1, map[0]\n" "mov %r2, %r10\n"
			    "add %r2, -4\n" "call 1\n" "ldxw %r3, [%r10-4]\n" "stxw [%r6+8], %r3\n" TAIL, 1 },
	{ "address_copied", HEAD "stxw [%r10-4], %r2\n" "lddw %r1, map[0]\n" "mov %r2, %r10\n"
			    "add %r2, -4\n" "mov %r7, %r2\n" "call 1\n" "ldxw %r3, [%r7+0]\n"
			    "stxw [%r6+8], %r3\n" TAIL, 1 },
	{ "branch_out", HEAD "stxw [%r10-4], %r2\n" "lddw %r1, map[0]\n" "mov %r2, %r10\n"
			"add %r2, -4\n" "jeq %r6, 0, out\n" "call 1\n" TAIL
			"out:\n" "ldxw %r0, [%r2+0]\n" "exit\n", 1 },
	{ "two_lookups", HEAD "stxw [%r10-4], %r2\n" "lddw %r1, map[0]\n" "mov %r2, %r10\n"
			 "add %r2, -4\n" "call 1\n" "mov %r7, %r0\n" "ldxw %r2, [%r6+12]\n"
			 "stxw [%r10-8], %r2\n" "lddw %r1, map[0]\n" "mov %r2, %r10\n" "add %r2, -8\n"
			 "call 1\n" "jeq %r7, 0, none\n" "jeq %r0, 0, none\n" "ldxw %r1, [%r7+0]\n"
			 "ldxw %r2, [%r0+0]\n" "add %r1, %r2\n" "stxw [%r6+4], %r1\n"
			 "none:\n" "mov %r0, 0\n" "exit\n", 0 },
};

struct tctx {
	uint32_t key, out, extra, key2;
};

int main(void)
{
	struct ncclbpf_map *map = NULL;
	size_t sizes[sizeof(progs) / sizeof(progs[0])];

	CHECK_EQ_U64(ncclbpf_map__create("jf_array", NCCLBPF_MAP_ARRAY, 4, 8, 16, NULL, &map), 0);
	if (!map)
		return check_summary("tuner_jit_frame");
	for (uint32_t k = 0; k < 16; k++) {
		uint64_t v = 100 + 7 * k;

		ncclbpf_map__update(map, &k, &v, NCCLBPF_ANY);
	}
	struct ncclbpf_map *maps[1] = { map };
	const struct nbpf_env env = { .maps = maps, .n_maps = 1, .helper = nbpf_helper_find };

	for (size_t p = 0; p < sizeof(progs) / sizeof(progs[0]); p++) {
		struct nbpf_insn *insns = NULL;
		struct nbpf_jit_image *img = NULL;
		uint32_t n = 0;

		sizes[p] = 0;
		if (nbpf_asm(progs[p].text, strlen(progs[p].text), &insns, &n)) {
			CHECK_MSG(0, "%s: %s", progs[p].name, ncclbpf_errmsg());
			continue;
		}
		if (nbpf_jit_compile(insns, n, &env, &img)) {
			CHECK_MSG(0, "%s: jit: %s", progs[p].name, ncclbpf_errmsg());
			free(insns);
			continue;
		}
		sizes[p] = img->code_size;
		/* sub rsp, 512 (imm32 form): the frame allocation. */
		bool frame = memmem(img->mem, img->code_size, "\x48\x81\xec\x00\x02\x00\x00", 7) != NULL;

		if (progs[p].frame >= 0)
			CHECK_MSG(frame == (progs[p].frame == 1), "%s: frame %d, want %d", progs[p].name,
				  frame, progs[p].frame);
		for (uint32_t k = 0; k < 20; k++) {
			struct tctx a = { .key = k, .extra = 1000 + k, .key2 = (k * 5) % 17 }, b = a;
			uint64_t ra = 1, rb = 2;

			ra = img->func(&a, sizeof(a));
			CHECK_MSG(nbpf_interp_run(insns, n, &env, &b, sizeof(b), NULL, 0, &rb) == 0,
				  "%s: interp", progs[p].name);
			CHECK_MSG(ra == rb && !memcmp(&a, &b, sizeof(a)), "%s key %u: jit %llu/%u/%u interp %llu/%u/%u",
				  progs[p].name, k, (unsigned long long)ra, a.out, a.extra,
				  (unsigned long long)rb, b.out, b.extra);
		}
		nbpf_jit_free(img);
		free(insns);
	}
	printf("code bytes:");
	for (size_t p = 0; p < sizeof(progs) / sizeof(progs[0]); p++)
		printf(" %s %zu", progs[p].name, sizes[p]);
	printf("\n");
	ncclbpf_map__put(map);
	return check_summary("tuner_jit_frame");
}
