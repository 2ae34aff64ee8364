/*
 * test_bounds.c - randomized soundness of the scalar domain: for random
 * abstract operands and random concrete members of them, the concrete
 * result of every ALU operation (64- and 32-bit) and the concrete outcome
 * of every comparison must lie in what the abstract transfer functions
 * compute; plus tnum basics.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "verifier/vstate.h"

static uint64_t rs = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

/* Interesting 64-bit values: small, near sign boundaries, random. */
static uint64_t pick(void)
{
	switch (rnd() % 6) {
	case 0: return rnd() % 16;
	case 1: return (uint64_t)-(int64_t)(rnd() % 16);
	case 2: return 0x7fffffffull + rnd() % 4 - 2;
	case 3: return 0xffffffffull - rnd() % 4;
	case 4: return 0x8000000000000000ull + rnd() % 4 - 2;
	default: return rnd();
	}
}

/* An abstract scalar holding [lo, hi] (unsigned), and a concrete member. */
static void make(struct vreg *r, uint64_t *val)
{
	uint64_t a = pick(), b = rnd() % 3 ? a + rnd() % 64 : pick();

	if (b < a) {
		uint64_t t = a;

		a = b;
		b = t;
	}
	memset(r, 0, sizeof(*r));
	reg_mark_unknown(r);
	r->umin = a;
	r->umax = b;
	reg_bounds_sync(r);
	*val = b - a == UINT64_MAX ? rnd() : a + (b - a ? rnd() % (b - a + 1) : 0);
	if (rnd() % 4 == 0) { /* sometimes a constant */
		reg_mark_const(r, *val);
	}
}

static bool contains(const struct vreg *r, uint64_t v)
{
	return r->umin <= v && v <= r->umax && r->smin <= (int64_t)v && (int64_t)v <= r->smax &&
	       (v & ~r->var_off.mask) == r->var_off.value;
}

static uint64_t concrete(uint8_t op, bool alu32, uint64_t a, uint64_t b)
{
	uint32_t a32 = (uint32_t)a, b32 = (uint32_t)b;

	if (alu32) {
		switch (op) {
		case NBPF_ADD: return (uint32_t)(a32 + b32);
		case NBPF_SUB: return (uint32_t)(a32 - b32);
		case NBPF_MUL: return (uint32_t)(a32 * b32);
		case NBPF_DIV: return b32 ? a32 / b32 : 0;
		case NBPF_MOD: return b32 ? a32 % b32 : a32;
		case NBPF_OR: return a32 | b32;
		case NBPF_AND: return a32 & b32;
		case NBPF_XOR: return a32 ^ b32;
		case NBPF_LSH: return (uint32_t)(a32 << (b32 & 31));
		case NBPF_RSH: return a32 >> (b32 & 31);
		default: return (uint32_t)((int32_t)a32 >> (b32 & 31));
		}
	}
	switch (op) {
	case NBPF_ADD: return a + b;
	case NBPF_SUB: return a - b;
	case NBPF_MUL: return a * b;
	case NBPF_DIV: return b ? a / b : 0;
	case NBPF_MOD: return b ? a % b : a;
	case NBPF_OR: return a | b;
	case NBPF_AND: return a & b;
	case NBPF_XOR: return a ^ b;
	case NBPF_LSH: return a << (b & 63);
	case NBPF_RSH: return a >> (b & 63);
	default: return (uint64_t)((int64_t)a >> (b & 63));
	}
}

static bool cmp(uint8_t op, bool is32, uint64_t a, uint64_t b)
{
	if (is32) {
		uint32_t x = (uint32_t)a, y = (uint32_t)b;
		int32_t sx = (int32_t)x, sy = (int32_t)y;

		switch (op) {
		case NBPF_JEQ: return x == y;
		case NBPF_JNE: return x != y;
		case NBPF_JGT: return x > y;
		case NBPF_JGE: return x >= y;
		case NBPF_JLT: return x < y;
		case NBPF_JLE: return x <= y;
		case NBPF_JSGT: return sx > sy;
		case NBPF_JSGE: return sx >= sy;
		case NBPF_JSLT: return sx < sy;
		case NBPF_JSLE: return sx <= sy;
		default: return (x & y) != 0;
		}
	}
	switch (op) {
	case NBPF_JEQ: return a == b;
	case NBPF_JNE: return a != b;
	case NBPF_JGT: return a > b;
	case NBPF_JGE: return a >= b;
	case NBPF_JLT: return a < b;
	case NBPF_JLE: return a <= b;
	case NBPF_JSGT: return (int64_t)a > (int64_t)b;
	case NBPF_JSGE: return (int64_t)a >= (int64_t)b;
	case NBPF_JSLT: return (int64_t)a < (int64_t)b;
	case NBPF_JSLE: return (int64_t)a <= (int64_t)b;
	default: return (a & b) != 0;
	}
}

/*
 * The interval bounds of AND, OR, XOR are exact: over every pair of
 * ranges within [0, 15], each also under fixed high bits (the upper bits
 * of both operands in play), the computed [lo, hi] is the true min and max.
 */
static long bitwise_exact(void)
{
	static const uint8_t bops[] = { NBPF_AND, NBPF_OR, NBPF_XOR };
	static const uint64_t hx[] = { 0, 0x8000000000000000ull, ~0xfull };
	static const uint64_t hy[] = { 0, 0xa5a5a5a500000030ull, 0x8000000000000000ull };
	long bad = 0;

	for (unsigned o = 0; o < 3; o++)
		for (unsigned z = 0; z < 3; z++)
			for (uint64_t a = 0; a < 16; a++)
				for (uint64_t b = a; b < 16; b++)
					for (uint64_t c = 0; c < 16; c++)
						for (uint64_t d = c; d < 16; d++) {
							uint64_t lo = UINT64_MAX, hi = 0, glo, ghi;

							for (uint64_t x = a; x <= b; x++)
								for (uint64_t y = c; y <= d; y++) {
									uint64_t v = concrete(bops[o], false, x | hx[z], y | hy[z]);

									lo = v < lo ? v : lo;
									hi = v > hi ? v : hi;
								}
							scalar_bitwise_range(bops[o], a | hx[z], b | hx[z], c | hy[z],
									     d | hy[z], &glo, &ghi);
							if ((glo != lo || ghi != hi) && bad++ < 5)
								fprintf(stderr, "op %#x [%llx,%llx] [%llx,%llx]: [%llx,%llx], true [%llx,%llx]\n",
									bops[o], (unsigned long long)a, (unsigned long long)b,
									(unsigned long long)c, (unsigned long long)d,
									(unsigned long long)glo, (unsigned long long)ghi,
									(unsigned long long)lo, (unsigned long long)hi);
						}
	return bad;
}

/* key = coll << 5 | bucket, coll in [0, 4], bucket in [0, 31]: [0, 159], not the tnum's 255. */
static void or_key_precision(bool alu32)
{
	struct vreg coll, bucket, k;

	reg_mark_unknown(&coll);
	coll.umax = 4;
	reg_bounds_sync(&coll);
	reg_mark_unknown(&bucket);
	bucket.umax = 31;
	reg_bounds_sync(&bucket);
	reg_mark_const(&k, 5);
	scalar_alu(&coll, &k, NBPF_LSH, alu32, 0);
	CHECK_EQ_U64(coll.umax, 128);
	scalar_alu(&coll, &bucket, NBPF_OR, alu32, 0);
	CHECK_EQ_U64(coll.umax, 159);
	CHECK_EQ_U64((uint64_t)coll.smax, 159);
	CHECK_EQ_U64(coll.var_off.mask, 0xff);
	/* bucket in [16, 31] forces bit 4 on: at least 16 */
	bucket.umin = 16;
	reg_bounds_sync(&bucket);
	k = bucket;
	scalar_alu(&k, &coll, NBPF_AND, alu32, 0);
	CHECK_EQ_U64(k.umax, 31);
	scalar_alu(&bucket, &coll, NBPF_OR, alu32, 0);
	CHECK_EQ_U64(bucket.umin, 16);
}

int main(void)
{
	static const uint8_t ops[] = { NBPF_ADD, NBPF_SUB, NBPF_MUL, NBPF_DIV, NBPF_OR, NBPF_AND,
				       NBPF_LSH, NBPF_RSH, NBPF_MOD, NBPF_XOR, NBPF_ARSH };
	static const uint8_t jops[] = { NBPF_JEQ, NBPF_JNE, NBPF_JGT, NBPF_JGE, NBPF_JLT, NBPF_JLE,
					NBPF_JSGT, NBPF_JSGE, NBPF_JSLT, NBPF_JSLE, NBPF_JSET };
	const char *scale = getenv("NCCLBPF_TEST_SCALE");
	long iters = (long)(200000 * (scale && atof(scale) > 0 ? atof(scale) : 1.0));
	long bad_alu = 0, bad_br = 0, bad_out = 0, bad_link = 0;

	CHECK(tnum_in(tnum_range(0, 7), tnum_const(5)));
	CHECK(!tnum_in(tnum_range(0, 7), tnum_const(8)));
	CHECK_EQ_U64(tnum_add(tnum_const(3), tnum_const(4)).value, 7);
	CHECK(tnum_is_unknown(tnum_range(0, UINT64_MAX)));
	CHECK_MSG(bitwise_exact() == 0, "inexact AND/OR/XOR interval bounds");
	or_key_precision(false);
	or_key_precision(true);

	for (long i = 0; i < iters; i++) {
		struct vreg a, b, r;
		uint64_t va, vb, res;
		uint8_t op = ops[rnd() % sizeof(ops)];
		bool alu32 = rnd() & 1;

		make(&a, &va);
		make(&b, &vb);
		if (op == NBPF_LSH || op == NBPF_RSH || op == NBPF_ARSH) {
			vb = rnd() % (alu32 ? 32 : 64);
			reg_mark_const(&b, vb);
		}
		if (op == NBPF_DIV || op == NBPF_MOD) {
			/* the verifier only divides by proven nonzero values */
			struct vreg d = b;

			if (alu32)
				scalar_zext32(&d);
			if (d.umin == 0)
				continue;
		}
		r = a;
		scalar_alu(&r, &b, op, alu32, 0);
		res = concrete(op, alu32, va, vb);
		if (!contains(&r, res)) {
			if (bad_alu++ < 5)
				fprintf(stderr, "alu op %#x%s: %#llx, %#llx -> %#llx not in [%llx,%llx] s[%lld,%lld] tn(%llx;%llx)\n",
					op, alu32 ? "/32" : "", (unsigned long long)va, (unsigned long long)vb,
					(unsigned long long)res, (unsigned long long)r.umin,
					(unsigned long long)r.umax, (long long)r.smin, (long long)r.smax,
					(unsigned long long)r.var_off.value, (unsigned long long)r.var_off.mask);
		}

		{
			uint8_t jop = jops[rnd() % sizeof(jops)];
			bool is32 = rnd() % 4 == 0, taken = cmp(jop, is32, va, vb);
			int out = scalar_branch_outcome(&a, &b, jop, is32, NULL, NULL);
			struct vreg ra = a, rb = b;

			if (out >= 0 && out != (int)taken && bad_out++ < 5)
				fprintf(stderr, "outcome op %#x%s: %#llx vs %#llx decided %d, is %d\n", jop,
					is32 ? "/32" : "", (unsigned long long)va, (unsigned long long)vb, out,
					taken);
			scalar_refine(&ra, &rb, jop, is32, taken, NULL, NULL);
			if ((!scalar_feasible(&ra) || !contains(&ra, va) || !scalar_feasible(&rb) ||
			     !contains(&rb, vb)) && bad_br++ < 5)
				fprintf(stderr, "refine op %#x%s taken %d: %#llx vs %#llx lost\n", jop,
					is32 ? "/32" : "", taken, (unsigned long long)va,
					(unsigned long long)vb);
		}
	}
	/* a value linked with a delta takes its bounds from the other's, shifted */
	for (long i = 0; i < iters / 4; i++) {
		struct vreg a, b;
		uint64_t va, vb;
		int32_t da = (int32_t)(rnd() % 4 ? rnd() % 64 - 32 : rnd()), db = (int32_t)(rnd() % 64 - 32);

		make(&a, &va);
		make(&b, &vb);
		vb = va - (uint64_t)(int64_t)da + (uint64_t)(int64_t)db; /* base + db */
		reg_mark_unknown(&b);
		a.off = da;
		b.off = db;
		reg_linked_bounds(&b, &a);
		if ((!scalar_feasible(&b) || !contains(&b, vb)) && bad_link++ < 5)
			fprintf(stderr, "linked bounds: %#llx (delta %d) vs %#llx (delta %d) lost\n",
				(unsigned long long)va, da, (unsigned long long)vb, db);
	}
	CHECK_MSG(bad_link == 0, "%ld unsound linked bounds", bad_link);
	CHECK_MSG(bad_alu == 0, "%ld unsound ALU results", bad_alu);
	CHECK_MSG(bad_out == 0, "%ld wrong branch outcomes", bad_out);
	CHECK_MSG(bad_br == 0, "%ld unsound branch refinements", bad_br);
	return check_summary("verifier_bounds");
}
