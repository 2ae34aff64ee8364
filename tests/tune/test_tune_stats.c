// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_tune_stats.c - the decision rule of `ncclbpf tune`: intervals,
 * ties to NCCL's pick, channel counts only when they matter, skew specs,
 * and the emulator's true latency with and without skews.
 */
#include <math.h>

#include "check.h"
#include "tune/tune.h"
#include "tune/tune_backend.h"

static struct tune_meas meas(int algo, int proto, int nch, double mean, double half)
{
	return (struct tune_meas){ .algo = algo, .proto = proto, .n_channels = nch, .n = 10,
				   .mean_us = mean, .lo_us = mean - half, .hi_us = mean + half };
}

int main(void)
{
	double x[5] = { 10, 11, 9, 10, 10 }, m, h;
	struct tune_meas def = meas(-1, -1, 0, 100, 2);
	struct tune_meas cells[4];
	struct tune_skew sk;
	struct tune_emu_opts e = { .topo = EMU_TOPO_DEFAULT };

	/* Mean 10, s = sqrt(0.5), t(4) = 2.776: half = 2.776 * 0.7071 / sqrt(5). */
	tune_mean_ci(x, 5, &m, &h);
	CHECK(fabs(m - 10) < 1e-12);
	CHECK(fabs(h - 2.776 * sqrt(0.5) / sqrt(5.0)) < 1e-9);
	tune_mean_ci(x, 1, &m, &h);
	CHECK(isinf(h));

	/* Overlapping intervals: NCCL keeps its pick even with a lower mean. */
	cells[0] = meas(0, 0, 0, 97, 2);
	CHECK(tune_choose(&def, cells, 1, 0.0) == -1);
	/* Apart, but the gain's lower bound (98 / 95.5) is inside min_gain. */
	cells[0] = meas(0, 0, 0, 95, 0.5);
	CHECK(tune_choose(&def, cells, 1, 0.05) == -1);
	CHECK(tune_choose(&def, cells, 1, 0.01) == 0);
	/* Means 3% apart with min_gain 2%, but intervals that allow less: kept. */
	cells[0] = meas(0, 0, 0, 97, 0.4);
	CHECK(tune_choose(&def, cells, 1, 0.02) == -1);
	/* The fastest of several winners. */
	cells[1] = meas(1, 2, 0, 80, 1);
	CHECK(tune_choose(&def, cells, 2, 0.01) == 1);
	/* A forced channel count indistinguishable from NCCL's count: the latter. */
	cells[0] = meas(0, 0, 0, 80, 1);
	cells[1] = meas(0, 0, 32, 79.5, 1);
	CHECK(tune_choose(&def, cells, 2, 0.01) == 0);
	/* ... unless it wins outside the noise against it too. */
	cells[1] = meas(0, 0, 8, 60, 1);
	CHECK(tune_choose(&def, cells, 2, 0.01) == 1);
	/* A forced chunk size indistinguishable from NCCL's chunk: NCCL's ... */
	cells[0] = meas(0, 0, 0, 80, 1);
	cells[1] = meas(0, 0, 0, 79.5, 1);
	cells[1].chunk = 512 << 10;
	CHECK(tune_choose(&def, cells, 2, 0.01) == 0);
	/* ... unless it wins outside the noise against it too; a chunk of another cell does not count. */
	cells[1].mean_us = 60, cells[1].lo_us = 59, cells[1].hi_us = 61;
	CHECK(tune_choose(&def, cells, 2, 0.01) == 1);
	cells[0].proto = 1;
	cells[1].mean_us = 79.5, cells[1].lo_us = 78.5, cells[1].hi_us = 80.5;
	CHECK(tune_choose(&def, cells, 2, 0.01) == 1);
	/* Too few samples decide nothing. */
	cells[0].n = 1;
	cells[1].n = 1;
	CHECK(tune_choose(&def, cells, 2, 0.01) == -1);
	cells[0].chunk = cells[1].chunk = 0;

	CHECK(tune_parse_skew("allreduce:64K:1M:TREE/LL~0.7", &sk) == 0);
	CHECK(sk.coll == 4 && sk.algo == 0 && sk.proto == 0 && sk.lo == 65536 && sk.hi == 1 << 20 &&
	      sk.rel_nccl && fabs(sk.factor - 0.7) < 1e-12);
	CHECK(tune_parse_skew("AllGather:1K:2K:ring/simple*2", &sk) == 0 && !sk.rel_nccl && sk.algo == 1);
	CHECK(tune_parse_skew("allreduce:1M:64K:TREE/LL~0.7", &sk) < 0);
	CHECK(tune_parse_skew("allreduce:64K:1M:TREE/LL", &sk) < 0);
	CHECK(tune_parse_skew("allreduce:64K:1M:TREE/XX*2", &sk) < 0);
	CHECK(tune_parse_skew("allreduce:64K:1M:TREE/LL*0", &sk) < 0);
	CHECK(tune_parse_skew("allreduce:64K:1M:TREE/LL*2:x", &sk) < 0);
	CHECK(tune_parse_skew("allreduce:64M:256M:RING/SIMPLE@512K*0.8", &sk) == 0 &&
	      sk.chunk == 512 << 10 && sk.algo == 1 && sk.proto == 2);
	CHECK(tune_parse_skew("allreduce:64M:256M:RING/SIMPLE@0*0.8", &sk) < 0);
	CHECK(tune_parse_skew("allreduce:64M:256M:RING/SIMPLE@x*0.8", &sk) < 0);

	/* Truth equals NCCL's model without skews; a relative skew is relative to NCCL's pick. */
	{
		float t[7][3];
		int a, p;

		emu_cost_table(&e.topo, 4, 1 << 17, t);
		emu_pick(t, &a, &p);
		CHECK(fabs(tune_emu_truth(&e, 4, 1 << 17, 0, 0, 0, 0, 0) - t[0][0]) < 1e-6);
		CHECK(tune_emu_truth(&e, 4, 1 << 17, 6, 2, 0, 0, 0) < 0); /* PAT: not offered */
		CHECK(tune_parse_skew("allreduce:64K:1M:TREE/LL~0.7", &e.skews[0]) == 0);
		e.n_skews = 1;
		CHECK(fabs(tune_emu_truth(&e, 4, 1 << 17, 0, 0, 0, 0, 0) - 0.7 * t[a][p]) < 1e-6);
		CHECK(fabs(tune_emu_truth(&e, 4, 1 << 21, 0, 0, 0, 0, 0) - 0.7 * t[a][p]) > 1e-3);
		/* Fewer channels than the node builds never help; more change nothing. */
		CHECK(tune_emu_truth(&e, 4, 1 << 26, 1, 2, 4, 0, 0) > tune_emu_truth(&e, 4, 1 << 26, 1, 2, 0, 0, 0));
		CHECK(tune_emu_truth(&e, 4, 1 << 26, 1, 2, 32, 0, 0) == tune_emu_truth(&e, 4, 1 << 26, 1, 2, 0, 0, 0));
		/* A chunk away from NCCL's costs 2% per factor of two, unless a skew names it. */
		CHECK(fabs(tune_emu_truth(&e, 4, 1 << 26, 1, 2, 0, 1 << 19, 1 << 21) /
			   tune_emu_truth(&e, 4, 1 << 26, 1, 2, 0, 1 << 21, 1 << 21) - 1.04) < 1e-9);
		CHECK(tune_parse_skew("allreduce:64M:256M:RING/SIMPLE@512K*0.8", &e.skews[1]) == 0);
		e.n_skews = 2;
		CHECK(fabs(tune_emu_truth(&e, 4, 1 << 26, 1, 2, 0, 1 << 19, 1 << 21) /
			   tune_emu_truth(&e, 4, 1 << 26, 1, 2, 0, 1 << 21, 1 << 21) - 0.8) < 1e-9);
	}
	return check_summary("tune_stats");
}
