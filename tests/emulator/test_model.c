/*
 * test_model.c - the emulator's cost model behaves like NCCL 2.28 on the
 * topologies it emulates: which cells are offered, costs that never fall
 * as messages grow, and NCCL's picks in the protocol bands NCCL shows on
 * Hopper (LL small, LL128 mid, Simple large; Tree across nodes).
 */
#include "check.h"
#include "emulator/emu.h"

#define IGN NBPF_NCCL_ALGO_PROTO_IGNORE
enum { TREE, RING, CND, CNC, NVLS, NVLST, PAT };
enum { LL, LL128, SIMPLE };
enum { BCAST, REDUCE, AG, RS, AR };

/* Whether NCCL offers (algo, proto) for coll on topo; the rules the model must follow. */
static bool offered(const struct emu_topo *t, int coll, int a, int p)
{
	bool multi = t->n_nodes > 1;

	switch (a) {
	case TREE: return coll == AR;
	case RING: return true;
	case CND: case CNC: return false;
	case NVLS: return t->nvls && !multi && p == SIMPLE && (coll == AR || coll == AG || coll == RS);
	case NVLST: return t->nvls && multi && p == SIMPLE && coll == AR;
	case PAT: return multi && t->n_nodes == t->n_ranks && p == SIMPLE && (coll == AG || coll == RS);
	}
	return false;
}

static void check_cells_and_monotonic(const struct emu_topo *t, const char *name)
{
	for (int coll = 0; coll < 5; coll++) {
		float prev[7][3];

		for (uint64_t n = 1; n <= (1ull << 34); n <<= 1) {
			float tab[7][3];

			emu_cost_table(t, coll, n, tab);
			for (int a = 0; a < 7; a++)
				for (int p = 0; p < 3; p++) {
					bool off = offered(t, coll, a, p);

					CHECK_MSG(off ? tab[a][p] > 0.0f : tab[a][p] == IGN,
						  "%s %s %llu %s/%s = %g", name, emu_coll_name(coll),
						  (unsigned long long)n, emu_algo_name(a), emu_proto_name(p),
						  tab[a][p]);
					if (n > 1 && off)
						CHECK_MSG(tab[a][p] >= prev[a][p], "%s %s %s/%s falls at %llu: %g < %g",
							  name, emu_coll_name(coll), emu_algo_name(a),
							  emu_proto_name(p), (unsigned long long)n, tab[a][p],
							  prev[a][p]);
				}
			for (int a = 0; a < 7; a++)
				for (int p = 0; p < 3; p++)
					prev[a][p] = tab[a][p];
		}
	}
}

static void pick(const struct emu_topo *t, int coll, uint64_t n, int *a, int *p)
{
	float tab[7][3];

	emu_cost_table(t, coll, n, tab);
	emu_pick(tab, a, p);
}

/* The protocol NCCL picks over sizes [lo, hi] for coll: must contain want somewhere. */
static bool proto_somewhere(const struct emu_topo *t, int coll, uint64_t lo, uint64_t hi, int want)
{
	for (uint64_t n = lo; n <= hi; n <<= 1) {
		int a, p;

		pick(t, coll, n, &a, &p);
		if (p == want)
			return true;
	}
	return false;
}

/* Protocols only move LL -> LL128 -> Simple as size grows (never back). */
static void check_proto_order(const struct emu_topo *t, int coll, const char *name)
{
	int last = -1;

	for (uint64_t n = 8; n <= (1ull << 32); n <<= 1) {
		int a, p;

		pick(t, coll, n, &a, &p);
		CHECK_MSG(a >= 0 && p >= last, "%s %s %llu: %s/%s after proto %d", name,
			  emu_coll_name(coll), (unsigned long long)n, emu_algo_name(a), emu_proto_name(p),
			  last);
		if (p > last)
			last = p;
	}
}

static void test_one_node(void)
{
	struct emu_topo t = EMU_TOPO_DEFAULT;
	int a, p;

	CHECK(!t.nvls && t.n_ranks == 8 && t.n_nodes == 1);
	check_cells_and_monotonic(&t, "1x8");
	for (int coll = 0; coll < 5; coll++) {
		pick(&t, coll, 8, &a, &p);
		CHECK_MSG(a == RING && p == LL, "1x8 %s 8 B: %s/%s", emu_coll_name(coll),
			  emu_algo_name(a), emu_proto_name(p));
		pick(&t, coll, 1ull << 30, &a, &p);
		CHECK_MSG(a == RING && p == SIMPLE, "1x8 %s 1 GiB: %s/%s", emu_coll_name(coll),
			  emu_algo_name(a), emu_proto_name(p));
		CHECK_MSG(proto_somewhere(&t, coll, 64 << 10, 16 << 20, LL128), "1x8 %s: no LL128 band",
			  emu_coll_name(coll));
		check_proto_order(&t, coll, "1x8");
	}
	/* AllReduce specifically, as the brief's reference points. */
	pick(&t, AR, 8, &a, &p);
	CHECK(a == RING && p == LL);
	pick(&t, AR, 1ull << 30, &a, &p);
	CHECK(p == SIMPLE);
	/* Ring/LL's cost at 8 B is NCCL's latency: base 6.6 + 14 NVLink hops x 0.6 us. */
	{
		float tab[7][3];

		emu_cost_table(&t, AR, 8, tab);
		CHECK_MSG(tab[RING][LL] > 15.0f && tab[RING][LL] < 15.1f, "%g", tab[RING][LL]);
	}
}

static void test_one_node_nvls(void)
{
	struct emu_topo t = { .n_ranks = 8, .n_nodes = 1, .nvls = true };
	int a, p;

	check_cells_and_monotonic(&t, "1x8+nvls");
	pick(&t, AR, 8, &a, &p);
	CHECK(a == RING && p == LL);
	pick(&t, AR, 1ull << 30, &a, &p);
	CHECK_MSG(a == NVLS && p == SIMPLE, "%s/%s", emu_algo_name(a), emu_proto_name(p));
	/* Broadcast never gets NVLS. */
	pick(&t, BCAST, 1ull << 30, &a, &p);
	CHECK(a == RING);
}

static void test_multi_node(void)
{
	struct emu_topo t = { .n_ranks = 32, .n_nodes = 4 };
	int a, p;

	check_cells_and_monotonic(&t, "4x8");
	/* Across nodes NCCL's tree wins small AllReduce, Simple the large ones. */
	pick(&t, AR, 8, &a, &p);
	CHECK_MSG(a == TREE && p == LL, "4x8 AR 8 B: %s/%s", emu_algo_name(a), emu_proto_name(p));
	pick(&t, AR, 1ull << 32, &a, &p);
	CHECK_MSG(p == SIMPLE, "4x8 AR 4 GiB: %s/%s", emu_algo_name(a), emu_proto_name(p));
	CHECK(proto_somewhere(&t, AR, 64 << 10, 64 << 20, LL128));
	for (int coll = 0; coll < 5; coll++) {
		pick(&t, coll, 8, &a, &p);
		CHECK_MSG(p == LL, "4x8 %s 8 B: %s/%s", emu_coll_name(coll), emu_algo_name(a),
			  emu_proto_name(p));
		pick(&t, coll, 1ull << 32, &a, &p);
		CHECK_MSG(p == SIMPLE, "4x8 %s 4 GiB: %s/%s", emu_coll_name(coll), emu_algo_name(a),
			  emu_proto_name(p));
		check_proto_order(&t, coll, "4x8");
	}
	t.nvls = true;
	check_cells_and_monotonic(&t, "4x8+nvls");

	/* Two nodes use the 2-node constants; same rules. */
	t = (struct emu_topo){ .n_ranks = 16, .n_nodes = 2 };
	check_cells_and_monotonic(&t, "2x8");
	pick(&t, AR, 8, &a, &p);
	CHECK(a == TREE && p == LL);
}

static void test_one_gpu_per_node(void)
{
	struct emu_topo t = { .n_ranks = 8, .n_nodes = 8 };
	float tab[7][3];
	int a, p;

	check_cells_and_monotonic(&t, "8x1");
	emu_cost_table(&t, AG, 1 << 20, tab);
	CHECK(tab[PAT][SIMPLE] > 0.0f && tab[PAT][LL] == IGN);
	/* PAT's log-depth latency beats the ring's 7 network steps for small AllGathers. */
	pick(&t, AG, 1 << 20, &a, &p);
	CHECK_MSG(a == PAT || a == RING, "%s/%s", emu_algo_name(a), emu_proto_name(p));
	CHECK(proto_somewhere(&t, AG, 8, 1ull << 30, SIMPLE));
}

static void test_edges(void)
{
	struct emu_topo one = { .n_ranks = 1, .n_nodes = 1 };
	struct emu_topo odd = { .n_ranks = 3, .n_nodes = 7 }; /* more nodes than ranks: clamped */
	struct emu_topo def = EMU_TOPO_DEFAULT;
	float tab[7][3];
	int a, p;

	emu_cost_table(&one, AR, 1 << 20, tab);
	emu_pick(tab, &a, &p);
	CHECK(a == RING && p == SIMPLE && tab[RING][SIMPLE] == 0.0f);
	emu_cost_table(&odd, AR, 1 << 20, tab);
	emu_pick(tab, &a, &p);
	CHECK(a >= 0 && p >= 0);
	emu_cost_table(&one, 9, 1 << 20, tab); /* unknown collective: nothing offered */
	emu_pick(tab, &a, &p);
	CHECK(a == -1 && p == -1);
	emu_cost_table(&def, AR, 0, tab);
	CHECK(tab[RING][LL] > 0.0f);
}

/*
 * The getChunkSize calls NCCL 2.30 makes (emu_chunk.c): the parts cover the
 * collective's bytes exactly, NCCL's chunk never exceeds its buffer limit,
 * and the chunks NCCL's formulas give where they are plain: Ring/Simple
 * AllReduce 4 MiB / 8 steps x 4 = 2 MiB, Ring/LL 64 KiB / 2, Ring/LL128
 * 614400 / 16 x 15 = 576000, NVLS capped at 128 KiB; 1 GiB on 16 channels:
 * a first, a last and 14 middle parts of 64 MiB.
 */
static void test_chunk_model(void)
{
	const struct emu_topo topos[] = { { 8, 1, true, false }, { 32, 4, true, false },
					  { 4, 4, false, false } };

	for (size_t ti = 0; ti < sizeof(topos) / sizeof(topos[0]); ti++) {
		const struct emu_topo *t = &topos[ti];

		for (int coll = 0; coll < 5; coll++)
			for (uint64_t n = 64; n <= (1ull << 32); n <<= 1)
				for (int a = 0; a < 7; a++)
					for (int p = 0; p < 3; p++) {
						struct emu_chunk_call c[EMU_MAX_CHUNK_CALLS];
						uint64_t sum = 0;
						int k;

						if (!offered(t, coll, a, p))
							continue;
						k = emu_chunk_calls(t, coll, n, a, p, 0, c);
						CHECK_MSG(k >= 1 && k <= 3, "%d calls", k);
						for (int i = 0; i < k; i++) {
							sum += c[i].n_bytes * (uint64_t)c[i].n_parts;
							CHECK(c[i].n_channels == 1 && c[i].n_parts >= 1);
							CHECK_MSG(c[i].nccl_chunk > 0 && c[i].nccl_chunk <= c[i].max_chunk,
								  "%s/%s chunk %u max %u", emu_algo_name(a),
								  emu_proto_name(p), c[i].nccl_chunk, c[i].max_chunk);
						}
						CHECK_MSG(sum == n, "%zu %s %llu %s/%s: parts sum to %llu", ti,
							  emu_coll_name(coll), (unsigned long long)n,
							  emu_algo_name(a), emu_proto_name(p), (unsigned long long)sum);
					}
	}
	struct emu_chunk_call c[EMU_MAX_CHUNK_CALLS];
	const struct emu_topo t8 = { 8, 1, true, false };

	CHECK_EQ_U64(emu_chunk_calls(&t8, AR, 1ull << 30, RING, SIMPLE, 0, c), 3);
	CHECK(c[0].nccl_chunk == 2u << 20 && c[0].max_chunk == 2u << 20);
	CHECK(c[0].n_bytes == 64u << 20 && c[1].n_bytes == 64u << 20 && c[2].n_bytes == 64u << 20);
	CHECK(c[0].n_parts == 1 && c[1].n_parts == 1 && c[2].n_parts == 14);
	CHECK(emu_chunk_calls(&t8, AR, 1ull << 30, RING, LL, 0, c) >= 1 && c[0].nccl_chunk == 32768);
	CHECK(emu_chunk_calls(&t8, AR, 1ull << 30, RING, LL128, 0, c) >= 1 && c[0].nccl_chunk == 576000);
	CHECK(emu_chunk_calls(&t8, AR, 1ull << 30, NVLS, SIMPLE, 0, c) >= 1 && c[0].nccl_chunk == 128u << 10);
	/* A plugin's channel count changes the parts: 4 channels of 256 MiB. */
	CHECK_EQ_U64(emu_chunk_calls(&t8, AR, 1ull << 30, RING, SIMPLE, 4, c), 3);
	CHECK(c[0].n_bytes == 256u << 20 && c[2].n_parts == 2);
	/* NCCL lowers an answer to its buffer and rounds it down to the grain. */
	CHECK_EQ_U64(emu_chunk_final(SIMPLE, 2u << 20, 1u << 30), 2u << 20);
	CHECK_EQ_U64(emu_chunk_final(SIMPLE, 2u << 20, 1000), 512);
	CHECK_EQ_U64(emu_chunk_final(LL128, 576000, 5000), 3840);
	CHECK_EQ_U64(emu_chunk_final(LL, 32768, 15), 0);
}

int main(void)
{
	test_one_node();
	test_one_node_nvls();
	test_multi_node();
	test_one_gpu_per_node();
	test_edges();
	test_chunk_model();
	return check_summary("emulator_model");
}
