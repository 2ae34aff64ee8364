/*
 * test_policies.c - the shipped policies, run through the real loader,
 * verifier (strict consistency: every shipped tuner must be rank-consistent)
 * and default engine, on hand-made contexts and records.  Checks each
 * policy's decisions at and around its thresholds, that cells NCCL does not
 * offer are never chosen, and what the profiler programs leave in maps.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "host/hooks.h"
#include "ncclbpf/policy.h"
#include "ncclbpf/runtime.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define KEY(coll, bytes) ((coll) * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(bytes))

/* Every Tree and Ring cell offered, as NCCL does for AllReduce on NVLink. */
#define ALL_TREE_RING (NCCLBPF_CELL(0, 0) | NCCLBPF_CELL(0, 1) | NCCLBPF_CELL(0, 2) | \
		       NCCLBPF_CELL(1, 0) | NCCLBPF_CELL(1, 1) | NCCLBPF_CELL(1, 2))

/* Opens POLICY_DIR/name.bpf.o and prepares every program; NULL on failure. */
static struct ncclbpf_object *load(const char *name)
{
	struct ncclbpf_verify_opts vo = { .sz = sizeof(vo), .strict_consistency = true };
	struct ncclbpf_object *obj = NULL;
	char path[512];

	snprintf(path, sizeof(path), "%s/%s.bpf.o", POLICY_DIR, name);
	if (ncclbpf_object__open_file(path, NULL, &obj)) {
		CHECK_MSG(0, "%s: %s", path, ncclbpf_errmsg());
		return NULL;
	}
	for (size_t i = 0; i < ncclbpf_object__prog_count(obj); i++) {
		struct ncclbpf_program *p = ncclbpf_object__prog(obj, i);
		const struct ncclbpf_hook_desc *h =
			ncclbpf_hook_find_section(ncclbpf_program__section(p));
		struct ncclbpf_verify_result res = { 0 };
		struct ncclbpf_prepare_opts po = { .sz = sizeof(po), .verify = &vo, .result = &res };
		int err;

		CHECK_MSG(h != NULL, "%s: %s: unknown section", name, ncclbpf_program__name(p));
		if (!h)
			continue;
		err = ncclbpf_program__prepare(p, h, &po);
		CHECK_MSG(err == 0, "%s: %s: %s", name, ncclbpf_program__name(p), ncclbpf_errmsg());
		for (uint32_t f = 0; f < res.n_findings; f++)
			CHECK_MSG(0, "%s: %s: finding at insn %u: %s", name, ncclbpf_program__name(p),
				  res.findings[f].insn, res.findings[f].reason);
	}
	return obj;
}

static struct ncclbpf_tuner_ctx tctx(uint32_t coll, uint64_t bytes, uint32_t nodes, uint32_t avail)
{
	return (struct ncclbpf_tuner_ctx){
		.n_bytes = bytes, .comm_id = 0x1234, .coll_type = coll, .n_ranks = 8 * nodes,
		.n_nodes = nodes, .num_pipe_ops = 1, .avail_mask = avail,
		.nccl_algo = NCCLBPF_ALGO_RING, .nccl_proto = NCCLBPF_PROTO_SIMPLE,
		.abi_version = 5, .algo = NCCLBPF_KEEP, .proto = NCCLBPF_KEEP,
		.n_channels = NCCLBPF_KEEP,
	};
}

/* Runs the object's tuner program on ctx; returns r0 (or -1 on failure). */
static int64_t tune(struct ncclbpf_object *obj, const char *prog, struct ncclbpf_tuner_ctx *ctx)
{
	struct ncclbpf_program *p = obj ? ncclbpf_object__find_program(obj, prog) : NULL;
	uint64_t ret = 0;

	if (!p || ncclbpf_program__run(p, ctx, sizeof(*ctx), &ret)) {
		CHECK_MSG(0, "run %s: %s", prog, ncclbpf_errmsg());
		return -1;
	}
	return (int64_t)ret;
}

static void observe(struct ncclbpf_object *obj, const char *prog, uint32_t coll, uint64_t bytes,
		    uint64_t lat, uint32_t nch)
{
	struct ncclbpf_program *p = obj ? ncclbpf_object__find_program(obj, prog) : NULL;
	struct ncclbpf_coll_record r = {
		.comm_id = 0x1234, .n_bytes = bytes, .latency_ns = lat, .n_ranks = 8,
		.coll_type = coll, .algo = NCCLBPF_ALGO_RING, .proto = NCCLBPF_PROTO_SIMPLE,
		.n_channels = nch, .gpu_timed = 1,
	};
	uint64_t ret = 1;

	CHECK_MSG(p && !ncclbpf_program__run(p, &r, sizeof(r), &ret) && ret == 0, "run %s", prog);
}

/* Expects (algo, proto, channels) after running prog on (coll, bytes, nodes, avail). */
#define EXPECT(obj, prog, coll, bytes, nodes, avail, a, p, ch) do { \
	struct ncclbpf_tuner_ctx c_ = tctx(coll, bytes, nodes, avail); \
	CHECK_EQ_U64(tune(obj, prog, &c_), NCCLBPF_TUNER_APPLY); \
	CHECK_MSG(c_.algo == (a) && c_.proto == (p) && c_.n_channels == (ch), \
		  "%s coll %d %llu B: got %d/%d/%d, want %d/%d/%d", prog, (int)(coll), \
		  (unsigned long long)(bytes), c_.algo, c_.proto, c_.n_channels, (a), (p), (ch)); \
} while (0)

#define K NCCLBPF_KEEP
#define AR NCCLBPF_COLL_ALLREDUCE
#define AG NCCLBPF_COLL_ALLGATHER
#define RING NCCLBPF_ALGO_RING
#define TREE NCCLBPF_ALGO_TREE
#define LL NCCLBPF_PROTO_LL
#define LL128 NCCLBPF_PROTO_LL128
#define SIMPLE NCCLBPF_PROTO_SIMPLE

static void test_noop_and_bad_channels(void)
{
	struct ncclbpf_object *o = load("noop"), *b = load("bad_channels");

	EXPECT(o, "noop", AR, 1 * MiB, 1, ALL_TREE_RING, K, K, K);
	EXPECT(b, "bad_channels", AR, 1 * MiB, 1, ALL_TREE_RING, K, K, 1);
	EXPECT(b, "bad_channels", AG, 1ull << 30, 2, 0, K, K, 1);
	ncclbpf_object__close(o);
	ncclbpf_object__close(b);
}

static void test_size_aware(void)
{
	struct ncclbpf_object *o = load("size_aware");
	const char *p = "size_aware";

	EXPECT(o, p, AR, 8, 1, ALL_TREE_RING, RING, LL, K);
	EXPECT(o, p, AR, 8, 2, ALL_TREE_RING, TREE, LL, K);     /* across nodes */
	EXPECT(o, p, AG, 8, 2, ALL_TREE_RING, RING, LL, K);     /* Tree: AllReduce only */
	EXPECT(o, p, AR, 64 * KiB - 1, 1, ALL_TREE_RING, RING, LL, K);
	EXPECT(o, p, AR, 64 * KiB, 1, ALL_TREE_RING, RING, LL128, K);
	EXPECT(o, p, AR, 8 * MiB - 1, 1, ALL_TREE_RING, RING, LL128, K);
	EXPECT(o, p, AR, 8 * MiB, 1, ALL_TREE_RING, RING, SIMPLE, K);
	/* A cell NCCL does not offer is never chosen. */
	EXPECT(o, p, AR, 1 * MiB, 1, ALL_TREE_RING & ~NCCLBPF_CELL(RING, LL128), K, K, K);
	EXPECT(o, p, AR, 8, 2, ALL_TREE_RING & ~NCCLBPF_CELL(TREE, LL), RING, LL, K);
	EXPECT(o, p, AR, 8, 1, 0, K, K, K);
	ncclbpf_object__close(o);
}

static void test_nvlink_ring_mid(void)
{
	struct ncclbpf_object *o = load("nvlink_ring_mid");
	const char *p = "nvlink_ring_mid";

	EXPECT(o, p, AR, 4 * MiB - 1, 1, ALL_TREE_RING, K, K, K);
	EXPECT(o, p, AR, 4 * MiB, 1, ALL_TREE_RING, RING, LL128, K);
	EXPECT(o, p, AR, 32 * MiB, 1, ALL_TREE_RING, RING, LL128, K);
	EXPECT(o, p, AR, 32 * MiB + 1, 1, ALL_TREE_RING, K, K, K);
	EXPECT(o, p, AR, 64 * MiB - 1, 1, ALL_TREE_RING, K, K, K);
	EXPECT(o, p, AR, 64 * MiB, 1, ALL_TREE_RING, RING, SIMPLE, K);
	EXPECT(o, p, AR, 192 * MiB, 1, ALL_TREE_RING, RING, SIMPLE, K);
	EXPECT(o, p, AR, 192 * MiB + 1, 1, ALL_TREE_RING, K, K, K);
	EXPECT(o, p, AG, 8 * MiB, 1, ALL_TREE_RING, K, K, K);   /* AllReduce only */
	EXPECT(o, p, AR, 8 * MiB, 1, ALL_TREE_RING & ~NCCLBPF_CELL(RING, LL128), K, K, K);
	ncclbpf_object__close(o);
}

struct ac_telemetry {
	uint64_t samples, ewma_ns, samples_by_ch[64], sum_by_ch_ns[64];
};

/* adaptive_channels' plan word: ch from call `from` on, prev before. */
static uint64_t plan_word(uint32_t ch, uint32_t prev, uint64_t from)
{
	return ch | (uint64_t)prev << 8 | from << 16;
}

static void test_adaptive_channels(void)
{
	struct ncclbpf_object *o = load("adaptive_channels");
	struct ncclbpf_map *plan = o ? ncclbpf_object__find_map(o, "channel_plan") : NULL;
	struct ncclbpf_map *tel = o ? ncclbpf_object__find_map(o, "latency_ewma") : NULL;
	const char *p = "adaptive_channels_tune";
	struct ac_telemetry t = { 0 };
	uint32_t key = KEY(AR, 1 * MiB);
	uint64_t v;

	CHECK(plan && tel);
	if (!plan || !tel)
		goto out;
	EXPECT(o, p, AR, 1 * MiB, 1, ALL_TREE_RING, K, K, K);   /* empty plan */
	v = plan_word(8, 0, 0);
	CHECK(!ncclbpf_map__update(plan, &key, &v, NCCLBPF_ANY));
	EXPECT(o, p, AR, 1 * MiB, 1, ALL_TREE_RING, K, K, 8);
	EXPECT(o, p, AR, 2 * MiB, 1, ALL_TREE_RING, K, K, K);   /* other bucket */
	/* The plan applies from its call on; before it, the previous count. */
	{
		struct ncclbpf_tuner_ctx c = tctx(AR, 1 * MiB, 1, ALL_TREE_RING);

		v = plan_word(12, 8, 1000);
		CHECK(!ncclbpf_map__update(plan, &key, &v, NCCLBPF_ANY));
		c.call_seq = 999;
		tune(o, p, &c);
		CHECK_EQ_U64(c.n_channels, 8);
		c = tctx(AR, 1 * MiB, 1, ALL_TREE_RING);
		c.call_seq = 1000;
		tune(o, p, &c);
		CHECK_EQ_U64(c.n_channels, 12);
		c = tctx(AR, 1 * MiB, 1, ALL_TREE_RING);
		v = plan_word(12, 0, 1000);                     /* before: NCCL's own */
		CHECK(!ncclbpf_map__update(plan, &key, &v, NCCLBPF_ANY));
		c.call_seq = 5;
		tune(o, p, &c);
		CHECK_EQ_U64(c.n_channels, K);
	}
	v = plan_word(100, 0, 0);                               /* out of range: ignored */
	CHECK(!ncclbpf_map__update(plan, &key, &v, NCCLBPF_ANY));
	EXPECT(o, p, AR, 1 * MiB, 1, ALL_TREE_RING, K, K, K);

	/* Telemetry: first sample seeds the EWMA, then avg += (x - avg) / 8;
	 * per channel count, samples and their sum. */
	observe(o, "adaptive_channels_observe", AR, 1 * MiB, 1000, 4);
	observe(o, "adaptive_channels_observe", AR, 1 * MiB, 2000, 4);
	observe(o, "adaptive_channels_observe", AR, 1 * MiB, 3000, 12);
	CHECK(!ncclbpf_map__lookup(tel, &key, &t));
	CHECK_EQ_U64(t.samples, 3);
	CHECK_EQ_U64(t.ewma_ns, (((1000 * 7 + 2000) >> 3) * 7 + 3000) >> 3);
	CHECK_EQ_U64(t.samples_by_ch[3], 2);
	CHECK_EQ_U64(t.sum_by_ch_ns[3], 3000);
	CHECK_EQ_U64(t.samples_by_ch[11], 1);
	CHECK_EQ_U64(t.sum_by_ch_ns[11], 3000);
	/* The profiler never writes the plan the tuner reads. */
	CHECK(!ncclbpf_map__lookup(plan, &key, &v));
	CHECK_EQ_U64(v, plan_word(100, 0, 0));
out:
	ncclbpf_object__close(o);
}

static uint64_t chunk_word(uint32_t now, uint32_t before, uint64_t from)
{
	return (uint64_t)(now / 128) | (uint64_t)(before / 128) << 16 | from << 32;
}

/* prog's chunk for a part of bytes on (algo, proto) at call_seq; NCCLBPF_KEEP: NCCL's. */
static int chunk_of(struct ncclbpf_object *o, const char *prog, uint32_t coll, int algo, int proto,
		    uint64_t bytes, uint64_t call_seq)
{
	struct ncclbpf_program *p = ncclbpf_object__find_program(o, prog);
	static const uint32_t grain[3] = { 16, 1920, 512 };
	struct ncclbpf_chunk_ctx c = {
		.n_bytes = bytes, .comm_id = 0x1234, .call_seq = call_seq, .coll_type = coll,
		.n_ranks = 8, .n_nodes = 1, .algo = algo, .proto = proto,
		.n_channels = 1, .nccl_chunk = 1u << 21, .grain = grain[proto], .abi_version = 7,
		.chunk_size = NCCLBPF_KEEP,
	};
	uint64_t r = 1;

	CHECK(p && ncclbpf_program__run(p, &c, sizeof(c), &r) == 0 && r == NCCLBPF_CHUNK_APPLY);
	return c.chunk_size;
}

static void test_chunk_plan(void)
{
	struct ncclbpf_object *o = load("chunk_plan");
	struct ncclbpf_map *plan = o ? ncclbpf_object__find_map(o, "chunk_plan") : NULL;
	const int S = NCCLBPF_PROTO_SIMPLE, L = NCCLBPF_PROTO_LL;
	uint32_t key = (AR * 3 + S) * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(4 * MiB);
	uint64_t v;

	CHECK(plan != NULL);
	if (!plan)
		goto out;
	CHECK_EQ_U64(chunk_of(o, "chunk_plan_apply", AR, RING, S, 4 * MiB, 0), K);         /* empty plan */
	v = chunk_word(512 * KiB, 0, 0);
	CHECK(!ncclbpf_map__update(plan, &key, &v, NCCLBPF_ANY));
	CHECK_EQ_U64(chunk_of(o, "chunk_plan_apply", AR, RING, S, 4 * MiB, 0), 512 * KiB);
	CHECK_EQ_U64(chunk_of(o, "chunk_plan_apply", AR, RING, S, 5 * MiB, 7), 512 * KiB);  /* same part bucket */
	CHECK_EQ_U64(chunk_of(o, "chunk_plan_apply", AR, RING, S, 8 * MiB, 0), K);          /* another part bucket */
	CHECK_EQ_U64(chunk_of(o, "chunk_plan_apply", AR, RING, L, 4 * MiB, 0), K);          /* another protocol */
	CHECK_EQ_U64(chunk_of(o, "chunk_plan_apply", AG, RING, S, 4 * MiB, 0), K);          /* another collective */
	/* From its call on; before it, the previous chunk (here NCCL's own). */
	v = chunk_word(256 * KiB, 0, 1000);
	CHECK(!ncclbpf_map__update(plan, &key, &v, NCCLBPF_ANY));
	CHECK_EQ_U64(chunk_of(o, "chunk_plan_apply", AR, RING, S, 4 * MiB, 999), K);
	CHECK_EQ_U64(chunk_of(o, "chunk_plan_apply", AR, RING, S, 4 * MiB, 1000), 256 * KiB);
	v = chunk_word(256 * KiB, 128 * KiB, 1000);
	CHECK(!ncclbpf_map__update(plan, &key, &v, NCCLBPF_ANY));
	CHECK_EQ_U64(chunk_of(o, "chunk_plan_apply", AR, RING, S, 4 * MiB, 999), 128 * KiB);
	/* Below the protocol's grain: left to NCCL. */
	v = chunk_word(256, 0, 0);
	CHECK(!ncclbpf_map__update(plan, &key, &v, NCCLBPF_ANY));
	CHECK_EQ_U64(chunk_of(o, "chunk_plan_apply", AR, RING, S, 4 * MiB, 0), K);
out:
	ncclbpf_object__close(o);
}

struct slo_target {
	uint64_t target_ns;
	uint32_t n_channels, reserved;
};

struct slo_counts {
	uint64_t samples, violations, worst_ns;
};

static void set_target(struct ncclbpf_map *m, uint32_t coll, uint64_t bytes, uint64_t ns,
		       uint32_t ch)
{
	struct slo_target t = { .target_ns = ns, .n_channels = ch };
	uint32_t key = KEY(coll, bytes);

	CHECK(!ncclbpf_map__update(m, &key, &t, NCCLBPF_ANY));
}

static void test_slo_enforcer(void)
{
	struct ncclbpf_object *o = load("slo_enforcer");
	struct ncclbpf_map *cfg = o ? ncclbpf_object__find_map(o, "slo_config") : NULL;
	struct ncclbpf_map *st = o ? ncclbpf_object__find_map(o, "slo_stats") : NULL;
	const char *p = "slo_enforcer_tune";
	struct slo_counts c = { 0 };
	uint32_t key;

	CHECK(cfg && st);
	if (!cfg || !st)
		goto out;
	EXPECT(o, p, AR, 1 * MiB, 1, ALL_TREE_RING, K, K, K);   /* no target */
	set_target(cfg, AR, 1 * MiB, 10000, 16);                /* 10 us: tight */
	EXPECT(o, p, AR, 1 * MiB, 1, ALL_TREE_RING, RING, LL128, 16);
	set_target(cfg, AR, 1 * KiB, 10000, 0);
	EXPECT(o, p, AR, 1 * KiB, 1, ALL_TREE_RING, RING, LL, K);
	EXPECT(o, p, AR, 1 * KiB, 2, ALL_TREE_RING, TREE, LL, K);
	/* 128 MiB in 10 ms needs 13 GB/s: loose; in 1 ms 134 GB/s: tight. */
	set_target(cfg, AR, 128 * MiB, 10000000, 0);
	EXPECT(o, p, AR, 128 * MiB, 1, ALL_TREE_RING, K, K, K);
	set_target(cfg, AR, 128 * MiB, 1000000, 0);
	EXPECT(o, p, AR, 128 * MiB, 1, ALL_TREE_RING, RING, SIMPLE, K);
	/* Unoffered cell: protocol kept, channels still applied. */
	EXPECT(o, p, AR, 1 * MiB, 1, ALL_TREE_RING & ~NCCLBPF_CELL(RING, LL128), K, K, 16);

	observe(o, "slo_enforcer_observe", AR, 1 * MiB, 20000, 16);   /* violates 10 us */
	observe(o, "slo_enforcer_observe", AR, 1 * MiB, 5000, 16);
	observe(o, "slo_enforcer_observe", AR, 4 * MiB, 90000, 16);   /* no target there */
	key = KEY(AR, 1 * MiB);
	CHECK(!ncclbpf_map__lookup(st, &key, &c));
	CHECK_EQ_U64(c.samples, 2);
	CHECK_EQ_U64(c.violations, 1);
	CHECK_EQ_U64(c.worst_ns, 20000);
	key = KEY(AR, 4 * MiB);
	CHECK(!ncclbpf_map__lookup(st, &key, &c));
	CHECK_EQ_U64(c.samples, 0);
out:
	ncclbpf_object__close(o);
}

static void test_latency_hist(void)
{
	struct ncclbpf_object *o = load("latency_hist");
	struct ncclbpf_map *h = o ? ncclbpf_object__find_map(o, "latency_hist") : NULL;
	struct ncclbpf_map *s = o ? ncclbpf_object__find_map(o, "latency_sum") : NULL;
	uint64_t cnt = 0, sum[2] = { 0 };
	uint32_t key;

	CHECK(h && s);
	if (!h || !s)
		goto out;
	observe(o, "latency_hist_record", AR, 1 * MiB, 5000, 8);       /* log2 12 */
	observe(o, "latency_hist_record", AR, 1 * MiB + 7, 8191, 8);   /* same buckets */
	observe(o, "latency_hist_record", AG, 8, 1ull << 40, 8);       /* last bucket */
	observe(o, "latency_hist_record", 7, 8, 100, 8);               /* not a collective */
	key = KEY(AR, 1 * MiB) * 32 + 12;
	CHECK(!ncclbpf_map__lookup(h, &key, &cnt));
	CHECK_EQ_U64(cnt, 2);
	key = KEY(AR, 1 * MiB);
	CHECK(!ncclbpf_map__lookup(s, &key, sum));
	CHECK_EQ_U64(sum[0], 2);
	CHECK_EQ_U64(sum[1], 5000 + 8191);
	key = KEY(AG, 8) * 32 + 31;
	CHECK(!ncclbpf_map__lookup(h, &key, &cnt));
	CHECK_EQ_U64(cnt, 1);
out:
	ncclbpf_object__close(o);
}

/* sweep: forces sweep_cell's cell only when enabled and offered; records what it saw. */
static void test_sweep(void)
{
	struct ncclbpf_object *o = load("sweep");
	struct ncclbpf_map *cell = o ? ncclbpf_object__find_map(o, "sweep_cell") : NULL;
	struct ncclbpf_map *seen = o ? ncclbpf_object__find_map(o, "sweep_seen") : NULL;
	struct { uint32_t enabled; int32_t algo, proto, n_channels; uint32_t chunk; } c = { 0, TREE, LL, 8, 0 };
	struct { uint32_t nccl_chunk, res; uint64_t calls, applied; } cs = { 0 };
	struct ncclbpf_map *cseen = o ? ncclbpf_object__find_map(o, "sweep_chunk_seen") : NULL;
	struct { int32_t na, np; uint32_t mask, res; uint64_t calls, applied; } v = { 0 };
	uint32_t zero = 0, key = KEY(AR, 1 * MiB);

	CHECK(cell && seen);
	if (!cell || !seen)
		goto out;
	EXPECT(o, "sweep", AR, 1 * MiB, 1, ALL_TREE_RING, K, K, K);       /* not enabled */
	c.enabled = 1;
	CHECK(ncclbpf_map__update(cell, &zero, &c, NCCLBPF_ANY) == 0);
	EXPECT(o, "sweep", AR, 1 * MiB, 1, ALL_TREE_RING, TREE, LL, 8);
	EXPECT(o, "sweep", AR, 1 * MiB, 1, NCCLBPF_CELL(1, 2), K, K, K); /* Tree/LL not offered */
	c.n_channels = 0;
	c.algo = 7; /* out of range: nothing forced */
	CHECK(ncclbpf_map__update(cell, &zero, &c, NCCLBPF_ANY) == 0);
	EXPECT(o, "sweep", AR, 1 * MiB, 1, ALL_TREE_RING, K, K, K);
	CHECK(ncclbpf_map__lookup(seen, &key, &v) == 0);
	CHECK(v.calls == 4 && v.applied == 1 && v.mask == (uint32_t)ALL_TREE_RING &&
	      v.na == RING && v.np == SIMPLE);
	/* The chunk: forced on parts of the forced cell, at least one grain; counted per part bucket. */
	c.enabled = 1, c.algo = RING, c.proto = SIMPLE, c.n_channels = 0, c.chunk = 256 * KiB;
	CHECK(cseen && ncclbpf_map__update(cell, &zero, &c, NCCLBPF_ANY) == 0);
	CHECK_EQ_U64(chunk_of(o, "sweep_chunk", AR, RING, SIMPLE, 4 * MiB, 0), 256 * KiB);
	CHECK_EQ_U64(chunk_of(o, "sweep_chunk", AR, RING, LL, 4 * MiB, 0), K);   /* another cell */
	c.chunk = 256;                                                            /* below Simple's grain */
	CHECK(ncclbpf_map__update(cell, &zero, &c, NCCLBPF_ANY) == 0);
	CHECK_EQ_U64(chunk_of(o, "sweep_chunk", AR, RING, SIMPLE, 4 * MiB, 0), K);
	key = KEY(AR, 4 * MiB);
	CHECK(cseen && ncclbpf_map__lookup(cseen, &key, &cs) == 0);
	CHECK(cs.calls == 3 && cs.applied == 1 && cs.nccl_chunk == 2 * MiB);
out:
	ncclbpf_object__close(o);
}

/* net_peer_qos's weights: none until written; a peer's entry wins over the global one. */
static void test_net_peer_share(struct ncclbpf_object *o)
{
	struct ncclbpf_program *p = ncclbpf_object__find_program(o, "net_peer_qos");
	struct ncclbpf_map *all = ncclbpf_object__find_map(o, "net_qos_share");
	struct ncclbpf_map *peer = ncclbpf_object__find_map(o, "net_peer_share");
	struct ncclbpf_net_ctx x = { .event = NCCLBPF_NET_CONNECT, .peer_key = 0x0100007f,
				     .n_socks = 2, .tos = NCCLBPF_KEEP, .priority = NCCLBPF_KEEP,
				     .sock_weight = { 1, 1 } };
	uint8_t w[NCCLBPF_NET_MAX_SOCKS] = { 0 };
	uint64_t ret, key = 0x0100007f;
	uint32_t k = 0;

	CHECK(p && all && peer);
	if (!p || !all || !peer)
		return;
	CHECK(!ncclbpf_program__run(p, &x, sizeof(x), &ret));
	CHECK(x.sock_weight[0] == 1 && x.sock_weight[1] == 1 && x.sock_weight[2] == 0);
	w[0] = 1, w[1] = 3, w[63] = 4;
	CHECK(!ncclbpf_map__update(all, &k, w, 0));
	CHECK(!ncclbpf_program__run(p, &x, sizeof(x), &ret));
	CHECK(!memcmp(x.sock_weight, w, sizeof(w)));
	memset(w, 0, sizeof(w));
	w[2] = 7;
	CHECK(!ncclbpf_map__update(peer, &key, w, 0));
	CHECK(!ncclbpf_program__run(p, &x, sizeof(x), &ret));
	CHECK(!memcmp(x.sock_weight, w, sizeof(w)));
}

/* net_peer_qos: leaves connections alone until an operator writes its maps. */
static void test_net_peer_qos(void)
{
	struct ncclbpf_object *o = load("net_peer_qos");
	struct ncclbpf_program *p = o ? ncclbpf_object__find_program(o, "net_peer_qos") : NULL;
	struct ncclbpf_map *cfg = o ? ncclbpf_object__find_map(o, "net_qos_cfg") : NULL;
	struct ncclbpf_map *bytes = o ? ncclbpf_object__find_map(o, "net_peer_bytes") : NULL;
	struct ncclbpf_net_ctx x = { .event = NCCLBPF_NET_CONNECT, .peer_key = 0x0100007f,
				     .peer_family = 2, .n_socks = 2, .tos = NCCLBPF_KEEP,
				     .priority = NCCLBPF_KEEP };
	uint32_t k, v;
	uint64_t ret = 9, b = 0, key = 0x0100007f;

	CHECK(p && cfg && bytes);
	if (!p || !cfg || !bytes)
		goto out;
	CHECK(!ncclbpf_program__run(p, &x, sizeof(x), &ret) && ret == NCCLBPF_NET_APPLY);
	CHECK(x.n_socks == 2 && x.tos == NCCLBPF_KEEP && x.priority == NCCLBPF_KEEP);
	k = 0, v = 4;
	CHECK(!ncclbpf_map__update(cfg, &k, &v, 0));
	k = 1, v = 0x88;
	CHECK(!ncclbpf_map__update(cfg, &k, &v, 0));
	CHECK(!ncclbpf_program__run(p, &x, sizeof(x), &ret));
	CHECK(x.n_socks == 4 && x.tos == 0x88);
	x = (struct ncclbpf_net_ctx){ .event = NCCLBPF_NET_RECV_DONE, .peer_key = key,
				      .bytes = 1000, .latency_ns = 5000 };
	CHECK(!ncclbpf_program__run(p, &x, sizeof(x), &ret));
	CHECK(!ncclbpf_program__run(p, &x, sizeof(x), &ret));
	CHECK(!ncclbpf_map__lookup(bytes, &key, &b));
	CHECK_EQ_U64(b, 2000);
	test_net_peer_share(o);
out:
	ncclbpf_object__close(o);
}

/* lossy_peer: marks connections to peers its peer map holds lossy; the tuner follows its plan words. */
static void test_lossy_peer(void)
{
	struct ncclbpf_object *o = load("lossy_peer");
	struct ncclbpf_program *net = o ? ncclbpf_object__find_program(o, "lossy_peer_net") : NULL;
	struct ncclbpf_program *tun = o ? ncclbpf_object__find_program(o, "lossy_peer_tune") : NULL;
	struct ncclbpf_map *peers = o ? ncclbpf_object__find_map(o, "kernel_peer") : NULL;
	struct ncclbpf_map *plan = o ? ncclbpf_object__find_map(o, "kernel_plan") : NULL;
	struct ncclbpf_map *cfg = o ? ncclbpf_object__find_map(o, "lossy_qos_cfg") : NULL;
	struct { uint64_t retrans; uint32_t per_s, srtt_us, lossy, per_gib; } v = { 10, 5, 100, 0, 0 };
	struct ncclbpf_net_ctx x;
	struct ncclbpf_tuner_ctx c;
	uint64_t key = 0x0100007f, ret, w;
	uint32_t k, cv;

	CHECK(net && tun && peers && plan && cfg);
	if (!net || !tun || !peers || !plan || !cfg)
		goto out;
#define NET(ev) (x = (struct ncclbpf_net_ctx){ .event = (ev), .peer_key = key, .tos = NCCLBPF_KEEP, \
					       .priority = NCCLBPF_KEEP },                        \
		 ncclbpf_program__run(net, &x, sizeof(x), &ret))
	CHECK(!NET(NCCLBPF_NET_CONNECT) && x.tos == NCCLBPF_KEEP && x.priority == NCCLBPF_KEEP);
	CHECK(!ncclbpf_map__update(peers, &key, &v, 0));
	CHECK(!NET(NCCLBPF_NET_CONNECT) && x.tos == NCCLBPF_KEEP); /* known, not lossy */
	v.lossy = 1;
	CHECK(!ncclbpf_map__update(peers, &key, &v, 0));
	CHECK(!NET(NCCLBPF_NET_CONNECT) && x.tos == 0x20 && x.priority == 2);
	CHECK(!NET(NCCLBPF_NET_ACCEPT) && x.tos == 0x20 && x.priority == 2);
	CHECK(!NET(NCCLBPF_NET_SEND_DONE) && x.tos == NCCLBPF_KEEP); /* outputs only when connecting */
	k = 0, cv = 1;
	CHECK(!ncclbpf_map__update(cfg, &k, &cv, 0));
	k = 1, cv = 0x04;
	CHECK(!ncclbpf_map__update(cfg, &k, &cv, 0));
	CHECK(!NET(NCCLBPF_NET_CONNECT) && x.tos == 0x04 && x.priority == 1);
	key = 0x0200007f; /* another peer */
	CHECK(!NET(NCCLBPF_NET_CONNECT) && x.tos == NCCLBPF_KEEP);
#undef NET
	/* Plan words: 2 channels and Simple (2 + 1) from call 100, NCCL's own before. */
	k = 0, w = 2 | 0 << 8 | 100ull << 16;
	CHECK(!ncclbpf_map__update(plan, &k, &w, 0));
	k = 1, w = 3 | 0 << 8 | 100ull << 16;
	CHECK(!ncclbpf_map__update(plan, &k, &w, 0));
	c = tctx(NCCLBPF_COLL_ALLREDUCE, 1 * MiB, 1, ALL_TREE_RING);
	c.call_seq = 99;
	CHECK(!ncclbpf_program__run(tun, &c, sizeof(c), &ret));
	CHECK(c.n_channels == NCCLBPF_KEEP && c.proto == NCCLBPF_KEEP);
	c.call_seq = 100;
	CHECK(!ncclbpf_program__run(tun, &c, sizeof(c), &ret));
	CHECK(c.n_channels == 2 && c.proto == NCCLBPF_PROTO_SIMPLE);
out:
	ncclbpf_object__close(o);
}

int main(void)
{
	test_noop_and_bad_channels();
	test_sweep();
	test_chunk_plan();
	test_size_aware();
	test_nvlink_ring_mid();
	test_adaptive_channels();
	test_slo_enforcer();
	test_latency_hist();
	test_net_peer_qos();
	test_lossy_peer();
	return check_summary("policies");
}
