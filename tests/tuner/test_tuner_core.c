/*
 * test_tuner_core.c - the tuner adapter's pure parts (src/nccl/tuner_core.h):
 *   - nbpf_tuner_table_scan (SIMD for NCCL's 7x3 shape) must give exactly
 *     the avail_mask and pick of NCCL's scalar loop on random tables full
 *     of IGNORE, NaN, negative, -0.0, infinite, tied and >= 3.6e9 costs;
 *   - nbpf_prog_may_read_ctx must say false only for programs whose r1 is
 *     dead at entry (hand-built programs and the shipped policies).
 */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "insn.h"
#include "nccl/tuner_core.h"

/* NCCL's loop, written out independently of tuner_core.h. */
static void reference(const float *t, int na, int np, uint32_t *mask, int *algo, int *proto)
{
	float min = NBPF_NCCL_COST_START_MIN;

	*mask = 0;
	*algo = *proto = -1;
	for (int a = 0; a < na; a++)
		for (int p = 0; p < np; p++) {
			float v = t[a * np + p];

			if (v == NBPF_NCCL_ALGO_PROTO_IGNORE)
				continue;
			if (v >= 0.0f && a < NCCLBPF_NUM_ALGOS && p < NCCLBPF_NUM_PROTOS)
				*mask |= NCCLBPF_CELL(a, p);
			if (v >= 0.0f && v < min) {
				min = v;
				*algo = a;
				*proto = p;
			}
		}
}

static float random_cost(unsigned *seed)
{
	static const float special[] = { -1.0f, -1.0f, -1.0f, NAN, -2.5f, -0.0f, 0.0f, INFINITY,
					 3.6e9f, 3.7e9f, 3.5e9f, 1.0f, 1.0f, 5.0f };
	unsigned r = (unsigned)rand_r(seed);

	if (r % 3 == 0)
		return special[(r / 3) % (sizeof(special) / sizeof(special[0]))];
	return (float)(r % 64) * 0.5f; /* few distinct values: many ties */
}

static void test_scan(void)
{
	unsigned seed = 12345;
	int bad = 0;
	float t[8 * 4];

	for (int it = 0; it < 200000; it++) {
		int na = NCCLBPF_NUM_ALGOS, np = NCCLBPF_NUM_PROTOS;
		struct ncclbpf_tuner_ctx c = { 0 };
		uint32_t m;
		int a, p;

		if (it % 4 == 3) { /* other shapes take the scalar path */
			na = 1 + rand_r(&seed) % 8;
			np = 1 + rand_r(&seed) % 4;
		}
		for (int i = 0; i < na * np; i++)
			t[i] = random_cost(&seed);
		reference(t, na, np, &m, &a, &p);
		c.nccl_algo = c.nccl_proto = 77;
		nbpf_tuner_mask_scan(t, na, np, &c);
		if (c.avail_mask != m || c.nccl_algo != 77 || c.nccl_proto != 77)
			if (bad++ < 5)
				fprintf(stderr, "mask scan %dx%d: %#x/%#x\n", na, np, c.avail_mask, m);
		nbpf_tuner_table_scan(t, na, np, &c);
		if (c.avail_mask != m || c.nccl_algo != a || c.nccl_proto != p) {
			if (bad++ < 5)
				fprintf(stderr, "scan %dx%d: mask %#x/%#x pick %d,%d/%d,%d\n", na, np,
					c.avail_mask, m, c.nccl_algo, c.nccl_proto, a, p);
		}
	}
	CHECK_EQ_U64(bad, 0);

	/* All ignored; all equal (first wins); only one offered at the end. */
	for (int i = 0; i < 21; i++)
		t[i] = -1.0f;
	struct ncclbpf_tuner_ctx c = { 0 };

	nbpf_tuner_table_scan(t, 7, 3, &c);
	CHECK_EQ_U64(c.avail_mask, 0);
	CHECK(c.nccl_algo == -1 && c.nccl_proto == -1);
	t[20] = 7.0f;
	nbpf_tuner_table_scan(t, 7, 3, &c);
	CHECK_EQ_U64(c.avail_mask, NCCLBPF_CELL(6, 2));
	CHECK(c.nccl_algo == 6 && c.nccl_proto == 2);
	for (int i = 0; i < 21; i++)
		t[i] = 2.0f;
	nbpf_tuner_table_scan(t, 7, 3, &c);
	CHECK_EQ_U64(c.avail_mask, (1u << 21) - 1);
	CHECK(c.nccl_algo == 0 && c.nccl_proto == 0);
}

/*
 * The apply shortcut for programs that did not read NCCL's pick
 * (nbpf_tuner_apply_table_unscanned) against the full path (scan, then
 * nbpf_tuner_apply_table), on random tables, shapes and outputs, with the
 * pick fields left stale as the adapter leaves them: same table, same
 * channel count, same outcome.
 */
static void test_apply_unscanned(void)
{
	static const int outs[] = { NCCLBPF_KEEP, NCCLBPF_KEEP, -2, 0, 1, 2, 3, 4, 5, 6, 7 };
	static const uint32_t chans[] = { NCCLBPF_KEEP, NCCLBPF_KEEP, 0, 1, 8, 64, 65 };
	static const uint64_t rets[] = { NCCLBPF_TUNER_APPLY, NCCLBPF_TUNER_APPLY, NCCLBPF_TUNER_SKIP,
					 UINT64_MAX, 9 };
	unsigned seed = 777;
	int bad = 0, fast = 0;
	float t1[8 * 4], t2[8 * 4];

	for (int it = 0; it < 200000; it++) {
		int na = NCCLBPF_NUM_ALGOS, np = NCCLBPF_NUM_PROTOS, ch1 = 4, ch2 = 4;
		struct ncclbpf_tuner_ctx c1 = { 0 }, c2;
		struct nbpf_tuner_outcome o1, o2;
		uint64_t ret = rets[rand_r(&seed) % 5];

		if (it % 4 == 3) {
			na = 1 + rand_r(&seed) % 8;
			np = 1 + rand_r(&seed) % 4;
		}
		for (int i = 0; i < na * np; i++)
			t1[i] = t2[i] = random_cost(&seed);
		if (rand_r(&seed) % 3 == 0) /* no CollNet cell offered: channels need no pick */
			for (int a = 0; a < na; a++)
				for (int p = 0; p < np && nbpf_is_collnet(a); p++)
					t1[a * np + p] = t2[a * np + p] = NBPF_NCCL_ALGO_PROTO_IGNORE;
		c1.algo = outs[rand_r(&seed) % 11];
		c1.proto = outs[rand_r(&seed) % 11] % 4;
		c1.n_channels = chans[rand_r(&seed) % 7];
		/* What the adapter leaves when the program read the mask only. */
		c1.nccl_algo = c1.nccl_proto = -1;
		if (rand_r(&seed) & 1)
			nbpf_tuner_mask_scan(t1, na, np, &c1);
		c2 = c1;
		nbpf_tuner_table_scan(t1, na, np, &c1);
		nbpf_tuner_apply_table(&c1, ret, t1, na, np, &ch1, &o1);
		nbpf_tuner_apply_table_unscanned(&c2, ret, t2, na, np, &ch2, &o2);
		fast += c2.nccl_algo == -1 && ((c2.algo >= 0 && c2.proto >= 0) ||
					       (c2.algo == NCCLBPF_KEEP && c2.proto == NCCLBPF_KEEP &&
						c2.n_channels != NCCLBPF_KEEP));
		if (memcmp(t1, t2, sizeof(float) * (size_t)(na * np)) || ch1 != ch2 ||
		    o1.applied != o2.applied || o1.skipped != o2.skipped || o1.refused != o2.refused) {
			if (bad++ < 5)
				fprintf(stderr, "apply %dx%d algo %d proto %d ch %u ret %llu: "
					"ch %d/%d applied %d/%d refused %#x/%#x\n", na, np, c2.algo,
					c2.proto, c2.n_channels, (unsigned long long)ret, ch1, ch2,
					o1.applied, o2.applied, o1.refused, o2.refused);
		}
	}
	CHECK_EQ_U64(bad, 0);
	CHECK(fast > 10000); /* the shortcut itself was taken, not only the fallback */
}

#define INSN(c, d, s, o, i) ((struct nbpf_insn){ .code = (c), .dst = (d), .src = (s), .off = (o), .imm = (i) })
#define MOV64_K(d, i) INSN(NBPF_ALU64 | NBPF_MOV | NBPF_K, d, 0, 0, i)
#define MOV64_X(d, s) INSN(NBPF_ALU64 | NBPF_MOV | NBPF_X, d, s, 0, 0)
#define LDX_W(d, s, o) INSN(NBPF_LDX | NBPF_MEM | NBPF_W, d, s, o, 0)
#define JEQ_K(d, i, o) INSN(NBPF_JMP | NBPF_JEQ | NBPF_K, d, 0, o, i)
#define JA(o) INSN(NBPF_JMP | NBPF_JA, 0, 0, o, 0)
#define CALL(i) INSN(NBPF_JMP | NBPF_CALL, 0, 0, 0, i)
#define EXIT() INSN(NBPF_JMP | NBPF_EXIT, 0, 0, 0, 0)

static void test_may_read_ctx(void)
{
	const struct nbpf_insn noop[] = { MOV64_K(0, 1), EXIT() };
	const struct nbpf_insn reads[] = { LDX_W(2, 1, 44), MOV64_K(0, 1), EXIT() };
	const struct nbpf_insn copies[] = { MOV64_X(6, 1), MOV64_K(1, 0), MOV64_K(0, 1), EXIT() };
	const struct nbpf_insn overwritten[] = { MOV64_K(1, 0), LDX_W(2, 1, 0), MOV64_K(0, 1),
						 EXIT() };
	/* r0 = 1; if r0 == 0 goto +1; r1 = 0; r2 = *(r1 + 0): reads on the taken branch. */
	const struct nbpf_insn one_branch[] = { MOV64_K(0, 1), JEQ_K(0, 0, 1), MOV64_K(1, 0),
						LDX_W(2, 1, 0), EXIT() };
	const struct nbpf_insn both_branches[] = { MOV64_K(0, 1), JEQ_K(0, 0, 2), MOV64_K(1, 0),
						   JA(1), MOV64_K(1, 5), LDX_W(2, 1, 0), EXIT() };
	const struct nbpf_insn call_first[] = { CALL(5), MOV64_K(0, 1), EXIT() };
	const struct nbpf_insn call_after[] = { MOV64_K(1, 0), CALL(5), MOV64_K(0, 1), EXIT() };
	/* The read at 2 is reachable only through the back edge at 5. */
	const struct nbpf_insn loop[] = { MOV64_K(0, 3), JA(2), LDX_W(2, 1, 0), EXIT(),
					  INSN(NBPF_ALU64 | NBPF_SUB | NBPF_K, 0, 0, 0, 1),
					  JEQ_K(0, 0, -4), MOV64_K(1, 0), MOV64_K(0, 1), EXIT() };
	const struct nbpf_insn loop_safe[] = { MOV64_K(0, 3), MOV64_K(1, 0), JA(2), LDX_W(2, 1, 0), EXIT(),
					       INSN(NBPF_ALU64 | NBPF_SUB | NBPF_K, 0, 0, 0, 1),
					       JEQ_K(0, 0, -4), MOV64_K(0, 1), EXIT() };
	const struct nbpf_insn off_end[] = { MOV64_K(0, 1), JA(5), EXIT() };
	const struct nbpf_insn branch_on_r1[] = { JEQ_K(1, 0, 0), MOV64_K(0, 1), EXIT() };

	CHECK(!nbpf_prog_may_read_ctx(noop, 2));
	CHECK(nbpf_prog_may_read_ctx(reads, 3));
	CHECK(!nbpf_prog_may_read_ctx(copies, 4)); /* copied, never loaded through */
	CHECK(!nbpf_prog_may_read_ctx(overwritten, 4));
	CHECK(nbpf_prog_may_read_ctx(one_branch, 5));
	CHECK(!nbpf_prog_may_read_ctx(both_branches, 7));
	CHECK(nbpf_prog_may_read_ctx(call_first, 3));
	CHECK(!nbpf_prog_may_read_ctx(call_after, 4));
	CHECK(nbpf_prog_may_read_ctx(loop, 9));
	CHECK(!nbpf_prog_may_read_ctx(loop_safe, 9));
	CHECK(nbpf_prog_may_read_ctx(off_end, 3));
	CHECK(!nbpf_prog_may_read_ctx(branch_on_r1, 3)); /* compares the pointer only */
	CHECK(nbpf_prog_may_read_ctx(NULL, 0));

	/* Field-level answers. */
	const struct nbpf_insn n_bytes[] = { MOV64_X(6, 1), INSN(NBPF_LDX | NBPF_MEM | NBPF_DW, 2, 6, 0, 0),
					     MOV64_K(0, 1), EXIT() };
	const struct nbpf_insn mask[] = { LDX_W(2, 1, 44), MOV64_K(0, 1), EXIT() };
	const struct nbpf_insn pick[] = { LDX_W(2, 1, 52), MOV64_K(0, 1), EXIT() };
	const struct nbpf_insn wide[] = { INSN(NBPF_LDX | NBPF_MEM | NBPF_DW, 2, 1, 40, 0), MOV64_K(0, 1), EXIT() };
	const struct nbpf_insn arith[] = { INSN(NBPF_ALU64 | NBPF_ADD | NBPF_K, 1, 0, 0, 8), LDX_W(2, 1, 0),
					   MOV64_K(0, 1), EXIT() };
	const struct nbpf_insn spill[] = { INSN(NBPF_STX | NBPF_MEM | NBPF_DW, 10, 1, -8, 0), MOV64_K(0, 1), EXIT() };
	const struct nbpf_insn writes[] = { INSN(NBPF_ST | NBPF_MEM | NBPF_W, 1, 0, 72, 2), MOV64_K(0, 1), EXIT() };
	/* r6 = ctx; r1 = 0; call; r2 = *(u32 *)(r6 + 44): the copy survives the call. */
	const struct nbpf_insn after_call[] = { MOV64_X(6, 1), MOV64_K(1, 0), CALL(5), LDX_W(2, 6, 44),
						MOV64_K(0, 1), EXIT() };
	/* r2 = r1 only on one branch, then a load through r2 after the join. */
	const struct nbpf_insn joined[] = { MOV64_K(2, 0), MOV64_K(0, 1), JEQ_K(0, 0, 1), MOV64_X(2, 1),
					    LDX_W(3, 2, 48), EXIT() };

	CHECK_EQ_U64(nbpf_prog_ctx_use(n_bytes, 4), NBPF_CTX_FIELDS);
	CHECK_EQ_U64(nbpf_prog_ctx_use(mask, 3), NBPF_CTX_FIELDS | NBPF_CTX_MASK);
	CHECK_EQ_U64(nbpf_prog_ctx_use(pick, 3), NBPF_CTX_FIELDS | NBPF_CTX_PICK);
	CHECK_EQ_U64(nbpf_prog_ctx_use(wide, 3), NBPF_CTX_FIELDS | NBPF_CTX_MASK); /* bytes 40..47 */
	CHECK_EQ_U64(nbpf_prog_ctx_use(arith, 4), NBPF_CTX_ALL);
	CHECK_EQ_U64(nbpf_prog_ctx_use(spill, 3), NBPF_CTX_ALL);
	CHECK_EQ_U64(nbpf_prog_ctx_use(writes, 3), 0);
	CHECK_EQ_U64(nbpf_prog_ctx_use(after_call, 6), NBPF_CTX_FIELDS | NBPF_CTX_MASK);
	CHECK_EQ_U64(nbpf_prog_ctx_use(joined, 6), NBPF_CTX_FIELDS | NBPF_CTX_PICK);
	CHECK_EQ_U64(nbpf_prog_ctx_use(noop, 2), 0);
}

/* The shipped policies: noop and bad_channels never load from the context; slo_enforcer
 * reads avail_mask but never NCCL's pick. */
static void test_policies(void)
{
	static const struct { const char *obj, *prog; bool reads; } want[] = {
		{ "noop", "noop", false },
		{ "size_aware", "size_aware", true },
		{ "bad_channels", "bad_channels", false }, /* writes n_channels only */
		{ "slo_enforcer", "slo_enforcer_tune", true },
		{ "nvlink_ring_mid", "nvlink_ring_mid", true },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char path[512];
		struct ncclbpf_object *obj = NULL;
		struct ncclbpf_program *prog;

		snprintf(path, sizeof(path), "%s/%s.bpf.o", TUNER_POLICY_DIR, want[i].obj);
		if (ncclbpf_object__open_file(path, NULL, &obj)) {
			CHECK_MSG(0, "cannot open %s", path);
			continue;
		}
		prog = ncclbpf_object__find_program(obj, want[i].prog);
		CHECK_MSG(prog != NULL, "%s: no program %s", path, want[i].prog);
		if (prog) {
			unsigned use = nbpf_prog_ctx_use(ncclbpf_program__insns(prog),
							 ncclbpf_program__insn_count(prog));

			printf("%s: context use %#x\n", want[i].prog, use);
			CHECK_MSG((use != 0) == want[i].reads, "%s", want[i].prog);
			if (!strcmp(want[i].prog, "slo_enforcer_tune"))
				CHECK_EQ_U64(use, NBPF_CTX_FIELDS | NBPF_CTX_MASK); /* never the pick */
		}
		ncclbpf_object__close(obj);
	}
}

/*
 * nbpf_chunk_apply: a chunk size of at least the protocol's grain replaces
 * NCCL's (NCCL clamps and rounds the rest); below the grain, negative, an
 * unknown protocol or a bad return is refused and NCCL's chunk stands.
 */
static void test_chunk_apply(void)
{
	static const struct { int proto, size; uint64_t ret; bool applied; uint32_t refused; } c[] = {
		{ NCCLBPF_PROTO_SIMPLE, 512, 0, true, 0 },
		{ NCCLBPF_PROTO_SIMPLE, 511, 0, false, 1u << NBPF_REFUSE_RANGE },
		{ NCCLBPF_PROTO_SIMPLE, 1 << 30, 0, true, 0 },
		{ NCCLBPF_PROTO_LL, 16, 0, true, 0 },
		{ NCCLBPF_PROTO_LL, 15, 0, false, 1u << NBPF_REFUSE_RANGE },
		{ NCCLBPF_PROTO_LL128, 1919, 0, false, 1u << NBPF_REFUSE_RANGE },
		{ NCCLBPF_PROTO_LL128, 1920, 0, true, 0 },
		{ NCCLBPF_PROTO_SIMPLE, -2, 0, false, 1u << NBPF_REFUSE_RANGE },
		{ NCCLBPF_PROTO_SIMPLE, 0, 0, false, 1u << NBPF_REFUSE_RANGE },
		{ 7, 4096, 0, false, 1u << NBPF_REFUSE_RANGE },
		{ NCCLBPF_PROTO_SIMPLE, NCCLBPF_KEEP, 0, false, 0 },
		{ NCCLBPF_PROTO_SIMPLE, 4096, NCCLBPF_CHUNK_SKIP, false, 0 },
		{ NCCLBPF_PROTO_SIMPLE, 4096, 9, false, 1u << NBPF_REFUSE_RETURN },
		{ NCCLBPF_PROTO_SIMPLE, 4096, UINT64_MAX, false, 1u << NBPF_REFUSE_ERROR },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct ncclbpf_chunk_ctx x = { .proto = c[i].proto, .grain = nbpf_proto_grain(c[i].proto),
					       .chunk_size = c[i].size };
		struct nbpf_tuner_outcome o;
		size_t chunk = 777;

		nbpf_chunk_apply(&x, c[i].ret, &chunk, &o);
		CHECK_MSG(o.applied == c[i].applied && o.refused == c[i].refused, "case %zu", i);
		CHECK_EQ_U64(chunk, c[i].applied ? (uint64_t)c[i].size : 777);
		CHECK(o.skipped == (c[i].ret == NCCLBPF_CHUNK_SKIP));
	}
}

int main(void)
{
	test_scan();
	test_apply_unscanned();
	test_may_read_ctx();
	test_policies();
	test_chunk_apply();
	return check_summary("tuner_core");
}
