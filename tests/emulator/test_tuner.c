/*
 * test_tuner.c - the tuner plugin as NCCL drives it: every ABI version,
 * decisions of test policies, refusals, fail-open, rank agreement across 8
 * ranks and several communicators on threads, and dlclose/dlopen cycles.
 */
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "emu_test.h"

static const struct emu_topo topo8 = { .n_ranks = 8, .n_nodes = 1, .nvls = true };

static int open_tuner(struct emu_plugin *pl, const char *value, int maxv)
{
	char err[512];
	int r = emu_open(pl, EMU_TUNER, value, maxv, err, sizeof(err));

	if (r)
		fprintf(stderr, "%s\n", err);
	return r;
}

/* Cheapest offered cell in row algo (proto = -1) or column proto (algo = -1). */
static void cheapest(int coll, uint64_t n, int algo, int proto, int *oa, int *op)
{
	float t[7][3];
	float best = 0;

	emu_cost_table(&topo8, coll, n, t);
	*oa = *op = -1;
	for (int a = 0; a < 7; a++)
		for (int p = 0; p < 3; p++) {
			if ((algo >= 0 && a != algo) || (proto >= 0 && p != proto) || t[a][p] < 0)
				continue;
			if (*oa < 0 || t[a][p] < best) {
				best = t[a][p];
				*oa = a;
				*op = p;
			}
		}
}

static void test_versions(void)
{
	for (int v = 2; v <= 7; v++) {
		struct emu_plugin pl;
		struct emu_tuner t;
		int changed = 0;

		emu_log_reset();
		emu_set_policy(emu_policy("t_ring_ll128"));
		CHECK(open_tuner(&pl, EMU_PLUGIN, v) == 0);
		CHECK_EQ_U64(pl.version, v);
		CHECK(emu_tuner_init(&t, &pl, 0x1234, &topo8, emu_logger) == 0);
		CHECK(t.ctx != NULL);
		CHECK_STR_CONTAINS(emu_log_buf, "t_ring_ll128");
		CHECK_STR_CONTAINS(emu_log_buf, "-> tuner");
		for (uint64_t n = 8; n <= (1ull << 30); n <<= 1) {
			struct emu_decision d;
			bool mid = n >= (64u << 10) && n <= (16u << 20);

			CHECK(emu_tuner_call(&t, &topo8, 4, n, &d) == 0);
			if (mid) {
				CHECK_MSG(d.algo == 1 && d.proto == 1, "v%d %llu: %d/%d", v,
					  (unsigned long long)n, d.algo, d.proto);
			} else {
				CHECK_MSG(d.algo == d.nccl_algo && d.proto == d.nccl_proto,
					  "v%d %llu: %d/%d vs nccl %d/%d", v, (unsigned long long)n,
					  d.algo, d.proto, d.nccl_algo, d.nccl_proto);
			}
			CHECK_EQ_U64(d.n_channels, n >= (1u << 20) && n <= (16u << 20) ? 4 : 0);
			changed += d.algo != d.nccl_algo || d.proto != d.nccl_proto;
		}
		CHECK(changed > 0); /* the policy really overrode NCCL somewhere */
		CHECK(emu_tuner_fini(&t) == 0);
		emu_close(&pl);
	}
}

static void test_refusals(void)
{
	struct emu_plugin pl;
	struct emu_tuner t;
	struct emu_decision d;
	int a, p;

	emu_set_policy(emu_policy("t_refused"));
	CHECK(open_tuner(&pl, EMU_PLUGIN, 5) == 0);
	CHECK(emu_tuner_init(&t, &pl, 7, &topo8, emu_logger) == 0);
	/* IGNORE cell and 100 channels: both refused, NCCL's pick stands. */
	CHECK(emu_tuner_call(&t, &topo8, 4, 512, &d) == 0);
	CHECK(d.algo == d.nccl_algo && d.proto == d.nccl_proto);
	CHECK_EQ_U64(d.n_channels, 0);
	/* Algorithm only: the cheapest Ring cell. */
	CHECK(emu_tuner_call(&t, &topo8, 4, 256 << 10, &d) == 0);
	cheapest(4, 256 << 10, 1, -1, &a, &p);
	CHECK(d.algo == a && d.proto == p);
	/* Protocol only: the cheapest LL cell. */
	CHECK(emu_tuner_call(&t, &topo8, 4, 32 << 20, &d) == 0);
	cheapest(4, 32 << 20, -1, 0, &a, &p);
	CHECK(d.algo == a && d.proto == p && d.proto == 0);
	CHECK(d.algo != d.nccl_algo || d.proto != d.nccl_proto);
	/* SKIP: outputs ignored. */
	CHECK(emu_tuner_call(&t, &topo8, 4, 256 << 20, &d) == 0);
	CHECK(d.algo == d.nccl_algo && d.proto == d.nccl_proto);
	CHECK(emu_tuner_fini(&t) == 0);
	emu_close(&pl);
}

/* Every fail-open case: NCCL's pick, success returns, one WARN naming the problem. */
static void fail_open_case(const char *spec, const char *expect)
{
	struct emu_plugin pl;
	struct emu_tuner t;
	int ver = 5;

	emu_log_reset();
	emu_set_policy(spec);
	CHECK(open_tuner(&pl, EMU_PLUGIN, ver) == 0);
	CHECK(emu_tuner_init(&t, &pl, 99, &topo8, emu_logger) == 0);
	for (uint64_t n = 8; n <= (1ull << 30); n <<= 3) {
		struct emu_decision d;

		CHECK(emu_tuner_call(&t, &topo8, 4, n, &d) == 0);
		CHECK(d.algo == d.nccl_algo && d.proto == d.nccl_proto && d.n_channels == 0);
	}
	CHECK(emu_tuner_fini(&t) == 0);
	emu_close(&pl);
	CHECK_MSG(emu_log_warns == 1, "%d warnings for %s:\n%s", emu_log_warns, spec, emu_log_buf);
	CHECK_STR_CONTAINS(emu_log_buf, expect);
}

static void test_fail_open(void)
{
	char garbage[] = "/tmp/ncclbpf-emu-garbage-XXXXXX";
	int fd = mkstemp(garbage);

	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK(write(fd, "\177ELF this is not an object", 26) == 26);
		close(fd);
	}
	fail_open_case("/nonexistent/policy.bpf.o", "/nonexistent/policy.bpf.o");
	fail_open_case(garbage, "cannot load");
	fail_open_case(emu_policy("t_reject"), "rejected");
	/* A bad object among good ones: the whole set is refused. */
	char spec[2048];

	snprintf(spec, sizeof(spec), "%s:%s", emu_policy("t_ring_ll128"), emu_policy("t_reject"));
	fail_open_case(spec, "t_reject");
	unlink(garbage);

	/*
	 * A FIFO (or any non-regular file) is refused at once, not waited on: an
	 * open that blocked here would hang NCCL's first init.  The alarm turns a
	 * hang into a failure.
	 */
	char fifo[] = "/tmp/ncclbpf-emu-fifo-XXXXXX";

	CHECK(mkdtemp(fifo) != NULL);
	snprintf(spec, sizeof(spec), "%s/policy.bpf.o", fifo);
	CHECK(mkfifo(spec, 0600) == 0);
	alarm(20);
	fail_open_case(spec, "not a regular file");
	alarm(0);
	unlink(spec);
	rmdir(fifo);

	/* An unknown setting warns once; the policy still loads. */
	struct emu_plugin pl;
	struct emu_tuner t;
	struct emu_decision d;

	emu_log_reset();
	setenv("NCCLBPF_NO_SUCH_SETTING", "1", 1);
	emu_set_policy(emu_policy("t_ring_ll128"));
	CHECK(open_tuner(&pl, EMU_PLUGIN, 5) == 0);
	CHECK(emu_tuner_init(&t, &pl, 1, &topo8, emu_logger) == 0);
	CHECK(emu_tuner_call(&t, &topo8, 4, 1 << 20, &d) == 0);
	CHECK(d.algo == 1 && d.proto == 1);
	CHECK(emu_tuner_fini(&t) == 0);
	emu_close(&pl);
	unsetenv("NCCLBPF_NO_SUCH_SETTING");
	CHECK_EQ_U64(emu_log_warns, 1);
	CHECK_STR_CONTAINS(emu_log_buf, "NCCLBPF_NO_SUCH_SETTING");
}

/*
 * Every bad value is one WARN naming the setting, and the policy still runs
 * (a setting problem is never a reason to drop the policy).  Good spellings
 * of a boolean are silent.
 */
static void test_bad_settings(void)
{
	static char long_dir[1200];
	const struct {
		const char *name, *value;
		int warns;
	} cases[] = {
		{ "NCCLBPF_STATS", "2", 1 },
		{ "NCCLBPF_STATS", "maybe", 1 },
		{ "NCCLBPF_STATS", "off", 0 },
		{ "NCCLBPF_STATS", "TRUE", 0 },
		{ "NCCLBPF_STRICT_CONSISTENCY", "nope", 1 },
		{ "NCCLBPF_CTL_TIMEOUT_MS", "abc", 1 },
		{ "NCCLBPF_CTL_TIMEOUT_MS", "-5", 1 },
		{ "NCCLBPF_CTL_TIMEOUT_MS", "99999999999999999999999", 1 },
		{ "NCCLBPF_CTL_TIMEOUT_MS", "1500", 0 },
		{ "NCCLBPF_CTL", "sometimes", 1 },
		{ "NCCLBPF_WATCH", "2", 1 },
		{ "NCCLBPF_MAP_DIR", long_dir, 1 },
	};

	memset(long_dir, 'd', sizeof(long_dir) - 1);
	long_dir[0] = '/';
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct emu_plugin pl;
		struct emu_tuner t;
		struct emu_decision d;

		emu_log_reset();
		setenv(cases[i].name, cases[i].value, 1);
		emu_set_policy(emu_policy("t_ring_ll128"));
		CHECK(open_tuner(&pl, EMU_PLUGIN, 5) == 0);
		CHECK(emu_tuner_init(&t, &pl, 1, &topo8, emu_logger) == 0);
		CHECK(emu_tuner_call(&t, &topo8, 4, 1 << 20, &d) == 0);
		CHECK(d.algo == 1 && d.proto == 1);
		CHECK(emu_tuner_fini(&t) == 0);
		emu_close(&pl);
		unsetenv(cases[i].name);
		CHECK_MSG(emu_log_warns == cases[i].warns, "%s=%.20s: %d warnings, want %d:\n%s",
			  cases[i].name, cases[i].value, emu_log_warns, cases[i].warns, emu_log_buf);
		if (cases[i].warns)
			CHECK_STR_CONTAINS(emu_log_buf, cases[i].name);
	}
}

/* ---- rank agreement under concurrency -------------------------------------- */

#define N_COMMS 3
#define N_RANKS 8

struct rank_arg {
	const struct emu_plugin *pl;
	uint64_t comm_id;
	int calls;
	struct emu_tuner t;
	struct emu_decision *d;
	int failures;
};

static void *rank_thread(void *p)
{
	struct rank_arg *a = p;

	for (int i = 0; i < a->calls; i++) {
		uint64_t n = 1ull << (3 + (i * 7) % 28);

		if (emu_tuner_call(&a->t, &topo8, (i % 3) ? 4 : 2, n, &a->d[i]))
			a->failures++;
	}
	return NULL;
}

/*
 * N_COMMS communicators of N_RANKS ranks (communicator c has id
 * comm_base + c * step), each rank on its own thread running fn for calls
 * calls into args[c][r].d.
 */
static void run_ranks(const struct emu_plugin *pl, struct rank_arg args[N_COMMS][N_RANKS],
		      uint64_t comm_base, uint64_t step, int calls, void *(*fn)(void *))
{
	pthread_t th[N_COMMS][N_RANKS];

	for (int c = 0; c < N_COMMS; c++)
		for (int r = 0; r < N_RANKS; r++) {
			struct rank_arg *a = &args[c][r];

			memset(a, 0, sizeof(*a));
			a->pl = pl;
			a->comm_id = comm_base + (uint64_t)c * step;
			a->calls = calls;
			a->d = calloc((size_t)calls, sizeof(*a->d));
			CHECK(emu_tuner_init(&a->t, pl, a->comm_id, &topo8, emu_logger) == 0);
		}
	for (int c = 0; c < N_COMMS; c++)
		for (int r = 0; r < N_RANKS; r++)
			pthread_create(&th[c][r], NULL, fn, &args[c][r]);
	for (int c = 0; c < N_COMMS; c++)
		for (int r = 0; r < N_RANKS; r++)
			pthread_join(th[c][r], NULL);
}

static void end_ranks(struct rank_arg args[N_COMMS][N_RANKS])
{
	for (int c = 0; c < N_COMMS; c++)
		for (int r = 0; r < N_RANKS; r++) {
			CHECK_EQ_U64(args[c][r].failures, 0);
			CHECK(emu_tuner_fini(&args[c][r].t) == 0);
			free(args[c][r].d);
		}
}

static void test_rank_agreement(void)
{
	struct emu_plugin pl;
	struct rank_arg args[N_COMMS][N_RANKS];
	int calls = (int)(4000 * emu_scale());

	emu_set_policy(emu_policy("t_seq"));
	CHECK(open_tuner(&pl, EMU_PLUGIN, 5) == 0);
	run_ranks(&pl, args, 0xabc000, 3, calls, rank_thread);
	for (int c = 0; c < N_COMMS; c++) {
		int disagree = 0, wrong = 0, tree = 0;

		for (int i = 0; i < calls; i++) {
			const struct emu_decision *d0 = &args[c][0].d[i];

			for (int r = 1; r < N_RANKS; r++) {
				const struct emu_decision *d = &args[c][r].d[i];

				disagree += d->algo != d0->algo || d->proto != d0->proto ||
					    d->n_channels != d0->n_channels;
			}
			wrong += d0->n_channels != 1 + (int)(((uint64_t)i + args[c][0].comm_id) % 8);
			tree += (i & 1) && (i % 3) && d0->algo == 0 && d0->proto == 2;
		}
		CHECK_EQ_U64(disagree, 0);
		CHECK_EQ_U64(wrong, 0);
		CHECK(tree > 0);
	}
	end_ranks(args);
	emu_close(&pl);
}

/*
 * getChunkSize (v6, v7) as NCCL 2.30 calls it while it plans each
 * collective: one call per channel part, for the cell NCCL runs after the
 * tuner program's answer.  t_chunk answers 64 KiB + 100 for
 * Simple (NCCL rounds to 64 KiB), 8 bytes for LL (below the grain: refused,
 * NCCL's chunk kept), 1 GiB for LL128 (NCCL lowers it to its buffer) and
 * skips Tree.  v5 has no getChunkSize: nothing is asked.
 */
static void test_chunk(void)
{
	for (int v = 5; v <= 7; v++) {
		struct emu_plugin pl;
		struct emu_tuner t;
		int seen[3] = { 0 };

		char spec[2048];

		/* t_ring_ll128 forces Ring/LL128 for 64 KiB..16 MiB: the chunk program sees that cell. */
		snprintf(spec, sizeof(spec), "%s:%s", emu_policy("t_ring_ll128"), emu_policy("t_chunk"));
		emu_set_policy(spec);
		CHECK(open_tuner(&pl, EMU_PLUGIN, v) == 0);
		CHECK(emu_tuner_init(&t, &pl, 0x77, &topo8, emu_logger) == 0);
		for (uint64_t n = 8; n <= (1ull << 30); n <<= 1) {
			struct emu_decision d;

			CHECK(emu_tuner_call(&t, &topo8, 4, n, &d) == 0);
			if (v < 6) {
				CHECK_EQ_U64(d.n_chunks, 0);
				continue;
			}
			CHECK_MSG(d.n_chunks >= 1, "v%d %llu: no getChunkSize", v, (unsigned long long)n);
			for (int i = 0; i < d.n_chunks; i++) {
				const struct emu_chunk_call *c = &d.chunks[i];
				uint32_t want = d.algo == 0 || d.proto == 0 ? emu_chunk_final(d.proto, c->max_chunk, c->nccl_chunk)
					      : d.proto == 2 ? 64u << 10 : emu_chunk_final(1, c->max_chunk, 1u << 30);

				CHECK_MSG(d.chunk[i] == want, "v%d %llu %s/%s part %d: chunk %u, want %u",
					  v, (unsigned long long)n, emu_algo_name(d.algo),
					  emu_proto_name(d.proto), i, d.chunk[i], want);
				if (d.algo != 0)
					seen[d.proto]++;
			}
		}
		if (v >= 6)
			CHECK_MSG(seen[0] && seen[1] && seen[2], "v%d: protocols seen %d %d %d", v,
				  seen[0], seen[1], seen[2]);
		CHECK(emu_tuner_fini(&t) == 0);
		emu_close(&pl);
	}
	/* No chunk program: NCCL's chunk everywhere. */
	struct emu_plugin pl;
	struct emu_tuner t;
	struct emu_decision d;

	emu_set_policy(emu_policy("t_ring_ll128"));
	CHECK(open_tuner(&pl, EMU_PLUGIN, 7) == 0);
	CHECK(emu_tuner_init(&t, &pl, 0x78, &topo8, emu_logger) == 0);
	CHECK(emu_tuner_call(&t, &topo8, 4, 1 << 20, &d) == 0);
	CHECK(d.n_chunks >= 1);
	for (int i = 0; i < d.n_chunks; i++)
		CHECK_EQ_U64(d.chunk[i], emu_chunk_final(d.proto, d.chunks[i].max_chunk,
							 d.chunks[i].nccl_chunk));
	CHECK(emu_tuner_fini(&t) == 0);
	emu_close(&pl);
}

/*
 * Chunk decisions on many ranks and communicators at once, each rank on its
 * own thread with its tuner and chunk programs: every rank decides every
 * part alike, and as t_chunk_seq's rank-invariant formula says (the chunk
 * calls after getCollInfo number i see call_seq i + 1).
 */
static void *chunk_rank_thread(void *p)
{
	struct rank_arg *a = p;

	for (int i = 0; i < a->calls; i++)
		if (emu_tuner_call(&a->t, &topo8, (i % 3) ? 4 : 2, 1ull << (6 + (i * 5) % 25), &a->d[i]))
			a->failures++;
	return NULL;
}

static void test_chunk_agreement(void)
{
	struct emu_plugin pl;
	struct rank_arg args[N_COMMS][N_RANKS];
	int calls = (int)(1000 * emu_scale());
	char spec[2048];

	snprintf(spec, sizeof(spec), "%s:%s", emu_policy("t_seq"), emu_policy("t_chunk_seq"));
	emu_set_policy(spec);
	CHECK(open_tuner(&pl, EMU_PLUGIN, 7) == 0);
	run_ranks(&pl, args, 0xc4c000, 5, calls, chunk_rank_thread);
	for (int c = 0; c < N_COMMS; c++) {
		int disagree = 0, wrong = 0, parts = 0;

		for (int i = 0; i < calls; i++) {
			const struct emu_decision *d0 = &args[c][0].d[i];

			for (int r = 1; r < N_RANKS; r++) {
				const struct emu_decision *d = &args[c][r].d[i];

				disagree += d->n_chunks != d0->n_chunks ||
					    memcmp(d->chunk, d0->chunk, sizeof(d->chunk[0]) * (size_t)d0->n_chunks);
			}
			for (int k = 0; k < d0->n_chunks; k++) {
				uint64_t g = emu_proto_grain(d0->proto);
				uint64_t want = g * (1 + ((uint64_t)i + 1 + args[c][0].comm_id +
							  d0->chunks[k].n_bytes / g) % 64);

				wrong += d0->chunk[k] != emu_chunk_final(d0->proto, d0->chunks[k].max_chunk, want);
				parts++;
			}
		}
		CHECK_EQ_U64(disagree, 0);
		CHECK_EQ_U64(wrong, 0);
		CHECK(parts >= calls);
	}
	end_ranks(args);
	emu_close(&pl);
}

/* NCCL_TUNER_PLUGIN=ncclbpf: the short name resolves to libnccl-tuner-ncclbpf.so. */
static void test_short_name_and_reload(void)
{
	for (int cycle = 0; cycle < 3; cycle++) {
		struct emu_plugin pl;
		struct emu_tuner t[2];
		struct emu_decision d;

		emu_set_policy(cycle == 1 ? NULL : emu_policy("t_ring_ll128"));
		CHECK(open_tuner(&pl, "ncclbpf", 5) == 0);
		CHECK_EQ_U64(pl.version, 5);
		CHECK(emu_tuner_init(&t[0], &pl, 5, &topo8, emu_logger) == 0);
		CHECK(emu_tuner_init(&t[1], &pl, 5, &topo8, emu_logger) == 0);
		CHECK(emu_tuner_call(&t[0], &topo8, 4, 1 << 20, &d) == 0);
		if (cycle == 1)
			CHECK(d.algo == d.nccl_algo && d.proto == d.nccl_proto && d.n_channels == 0);
		else
			CHECK(d.algo == 1 && d.proto == 1 && d.n_channels == 4);
		CHECK(emu_tuner_fini(&t[0]) == 0);
		CHECK(emu_tuner_fini(&t[1]) == 0);
		emu_close(&pl);
	}
	/* NCCL 2.28.9 looks for v5 first; 2.30.7 for v6; the newest sources for v7. */
	struct emu_plugin pl;

	CHECK(open_tuner(&pl, EMU_PLUGIN, 6) == 0);
	CHECK_EQ_U64(pl.version, 6);
	CHECK(((const nbpf_tuner_v6_t *)pl.table)->finalize(NULL) == 0);
	emu_close(&pl);
	CHECK(open_tuner(&pl, EMU_PLUGIN, 7) == 0);
	CHECK_EQ_U64(pl.version, 7);
	CHECK(((const nbpf_tuner_v7_t *)pl.table)->finalize(NULL) == 0);
	emu_close(&pl);
}

/*
 * NCCL hands v5+ tuners its default constants to edit in place (v7's rows
 * have a fifth, Rubin, entry).  The plugin keeps NCCL's defaults: every
 * byte of either layout comes back unchanged.
 */
static void test_constants_untouched(void)
{
	nbpf_nvl_domain_info_v5_t nvl = { 1, 8, 8 };
	nbpf_tuner_constants_v5_t c5, w5;
	nbpf_tuner_constants_v7_t c7, w7;
	struct emu_plugin pl;
	void *ctx = NULL;

	memset(&c5, 0x5a, sizeof(c5));
	memset(&c7, 0xa5, sizeof(c7));
	w5 = c5;
	w7 = c7;
	emu_set_policy(emu_policy("t_ring_ll128"));
	for (int v = 5; v <= 7; v++) {
		CHECK(open_tuner(&pl, EMU_PLUGIN, v) == 0);
		if (v == 7) {
			const nbpf_tuner_v7_t *t = pl.table;

			CHECK(t->init(&ctx, 9, 8, 1, emu_logger, &nvl, &c7) == 0 && ctx);
			CHECK(t->finalize(ctx) == 0);
		} else {
			const nbpf_tuner_v5_t *t = pl.table; /* v6 has the same first slots */

			CHECK(t->init(&ctx, 9, 8, 1, emu_logger, &nvl, &c5) == 0 && ctx);
			CHECK(t->finalize(ctx) == 0);
		}
		emu_close(&pl);
	}
	CHECK(!memcmp(&c5, &w5, sizeof(c5)));
	CHECK(!memcmp(&c7, &w7, sizeof(c7)));
}

int main(void)
{
	test_versions();
	test_refusals();
	test_fail_open();
	test_bad_settings();
	test_rank_agreement();
	test_short_name_and_reload();
	test_constants_untouched();
	test_chunk();
	test_chunk_agreement();
	return check_summary("emulator_tuner");
}
