/*
 * test_writeset.c - the linear provenance scan that finds which maps an
 * object's programs write (decision consistency's rank-local maps) against
 * the path-by-path exploration it replaces.
 *
 * usage: test_writeset DIR...   (every *.bpf.o in each directory)
 *
 * For every object: the scan's set must contain the exploration's (it may
 * never miss a write), and on this corpus of idiomatic programs it must be
 * equal (no spurious rank-local maps).  Hand-written instruction sequences
 * check spills, helpers, calls and the fallback on malformed input.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/runtime/maps/map.h"
#include "../../src/runtime/verifier/verifier.h"
#include "../../src/runtime/verifier/vstate.h"
#include "check.h"

#define I(c, d, s, o, i) ((struct nbpf_insn){ .code = (c), .dst = (d), .src = (s), .off = (o), .imm = (i) })
#define LDDW_MAP(d, idx) I(NBPF_OP_LDDW, d, NBPF_PSEUDO_MAP_IDX, 0, idx), I(0, 0, 0, 0, 0)
#define EXIT0 I(NBPF_ALU64 | NBPF_MOV | NBPF_K, 0, 0, 0, 0), I(NBPF_OP_EXIT, 0, 0, 0, 0)

static void check_object(const char *path)
{
	struct ncclbpf_object *obj;
	uint8_t *fast, *slow;

	if (ncclbpf_object__open_file(path, NULL, &obj)) {
		CHECK_MSG(0, "%s: %s", path, ncclbpf_errmsg());
		return;
	}
	fast = calloc(obj->n_maps + 1, 1);
	slow = calloc(obj->n_maps + 1, 1);
	CHECK(fast && slow);
	if (fast && slow) {
		nbpf_object_map_writes(obj, fast, true);
		nbpf_object_map_writes(obj, slow, false);
		for (size_t m = 0; m < obj->n_maps; m++) {
			CHECK_MSG(fast[m] >= slow[m], "%s: map %s written but not found", path,
				  obj->maps[m]->name);
			CHECK_MSG(fast[m] == slow[m], "%s: map %s: scan %d, exploration %d", path,
				  obj->maps[m]->name, fast[m], slow[m]);
		}
	}
	free(fast);
	free(slow);
	ncclbpf_object__close(obj);
}

static int check_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	CHECK_MSG(d != NULL, "%s: %s", dir, strerror(errno));
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char path[4096];

		if (len < 6 || strcmp(de->d_name + len - 6, ".bpf.o"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		check_object(path);
		n++;
	}
	closedir(d);
	return n;
}

/* Three array maps: 0 and 1 writable, 2 read-only for programs. */
static struct ncclbpf_map mapv[3];
static struct ncclbpf_map *maps[3] = { &mapv[0], &mapv[1], &mapv[2] };

static int scan(const struct nbpf_insn *p, uint32_t n, uint8_t w[3])
{
	memset(w, 0, 3);
	return nbpf_writeset_scan(p, n, maps, 3, w);
}

static void check_synthetic(void)
{
	uint8_t w[3];

	mapv[2].readonly_prog = true;
	{
		/* lookup in map 0, spill the pointer, fill it into r3 and store through it */
		const struct nbpf_insn p[] = {
			I(NBPF_ST | NBPF_MEM | NBPF_W, 10, 0, -4, 0),
			LDDW_MAP(1, 0),
			I(NBPF_ALU64 | NBPF_MOV | NBPF_X, 2, 10, 0, 0),
			I(NBPF_ALU64 | NBPF_ADD | NBPF_K, 2, 0, 0, -4),
			I(NBPF_OP_CALL, 0, 0, 0, NBPF_HELPER_MAP_LOOKUP),
			I(NBPF_STX | NBPF_MEM | NBPF_DW, 10, 0, -16, 0),
			I(NBPF_JMP | NBPF_JEQ | NBPF_K, 0, 0, 2, 0),
			I(NBPF_LDX | NBPF_MEM | NBPF_DW, 3, 10, -16, 0),
			I(NBPF_ST | NBPF_MEM | NBPF_W, 3, 0, 0, 1),
			EXIT0,
		};

		CHECK(scan(p, sizeof(p) / sizeof(p[0]), w) == 0);
		CHECK(w[0] == 1 && w[1] == 0 && w[2] == 0);
	}
	{
		/* lookups in 0 and 1, reads only; update on 1; write to read-only 2 not counted */
		const struct nbpf_insn p[] = {
			I(NBPF_ST | NBPF_MEM | NBPF_W, 10, 0, -4, 0),
			LDDW_MAP(1, 0),
			I(NBPF_ALU64 | NBPF_MOV | NBPF_X, 2, 10, 0, 0),
			I(NBPF_ALU64 | NBPF_ADD | NBPF_K, 2, 0, 0, -4),
			I(NBPF_OP_CALL, 0, 0, 0, NBPF_HELPER_MAP_LOOKUP),
			I(NBPF_JMP | NBPF_JEQ | NBPF_K, 0, 0, 1, 0),
			I(NBPF_LDX | NBPF_MEM | NBPF_W, 6, 0, 0, 0),
			LDDW_MAP(1, 1),
			I(NBPF_ALU64 | NBPF_MOV | NBPF_X, 2, 10, 0, 0),
			I(NBPF_ALU64 | NBPF_ADD | NBPF_K, 2, 0, 0, -4),
			I(NBPF_ALU64 | NBPF_MOV | NBPF_X, 3, 2, 0, 0),
			I(NBPF_ALU64 | NBPF_MOV | NBPF_K, 4, 0, 0, 0),
			I(NBPF_OP_CALL, 0, 0, 0, NBPF_HELPER_MAP_UPDATE),
			I(NBPF_OP_LDDW, 1, NBPF_PSEUDO_MAP_IDX_VALUE, 0, 2), I(0, 0, 0, 0, 0),
			I(NBPF_ST | NBPF_MEM | NBPF_W, 1, 0, 0, 1),
			EXIT0,
		};

		CHECK(scan(p, sizeof(p) / sizeof(p[0]), w) == 0);
		CHECK(w[0] == 0 && w[1] == 1 && w[2] == 0);
	}
	{
		/* a map value pointer passed to a function that stores through r1 */
		const struct nbpf_insn p[] = {
			I(NBPF_OP_LDDW, 1, NBPF_PSEUDO_MAP_IDX_VALUE, 0, 1), I(0, 0, 0, 0, 0),
			I(NBPF_OP_CALL, 0, NBPF_PSEUDO_CALL, 0, 2),
			EXIT0,
			I(NBPF_ST | NBPF_MEM | NBPF_W, 1, 0, 0, 7),
			I(NBPF_OP_EXIT, 0, 0, 0, 0),
		};

		CHECK(scan(p, sizeof(p) / sizeof(p[0]), w) == 0);
		CHECK(w[0] == 0 && w[1] == 1);
	}
	{
		/* malformed: jump out of range, split lddw, bad register */
		const struct nbpf_insn j[] = { I(NBPF_JMP | NBPF_JA, 0, 0, 5, 0), EXIT0 };
		const struct nbpf_insn l[] = { EXIT0, I(NBPF_OP_LDDW, 1, 0, 0, 0) };
		const struct nbpf_insn r[] = { I(NBPF_ALU64 | NBPF_MOV | NBPF_K, 12, 0, 0, 0), EXIT0 };

		/* a jump into a lddw whose second slot is a wild jump: no crash, no answer */
		const struct nbpf_insn m[] = {
			I(NBPF_JMP | NBPF_JEQ | NBPF_K, 1, 0, 1, 0),
			I(NBPF_OP_LDDW, 1, 0, 0, 0), I(NBPF_JMP | NBPF_JA, 0, 0, 30000, 0),
			EXIT0,
		};

		CHECK(scan(m, 5, w) == -EAGAIN);
		CHECK(scan(j, 3, w) == -EAGAIN);
		CHECK(scan(l, 3, w) == -EAGAIN);
		CHECK(scan(r, 3, w) == -EAGAIN);
		CHECK(scan(j, 0, w) == -EAGAIN);
	}
}

int main(int argc, char **argv)
{
	int n = 0;

	check_synthetic();
	for (int i = 1; i < argc; i++)
		n += check_dir(argv[i]);
	CHECK(argc < 2 || n > 0);
	printf("%d objects compared\n", n);
	return check_summary("verifier_writeset");
}
