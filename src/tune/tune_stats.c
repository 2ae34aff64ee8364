// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tune_stats.c - confidence intervals and the rule that decides whether a
 * measured cell beats NCCL's own pick.
 */
#include <math.h>

#include "tune.h"

/* Two-sided 95% Student t quantiles for 1..30 degrees of freedom. */
static const double t975[31] = {
	0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
};

static double t_quantile(int df)
{
	if (df < 1)
		return INFINITY;
	if (df <= 30)
		return t975[df];
	return df <= 60 ? 2.000 : df <= 120 ? 1.980 : 1.960;
}

void tune_mean_ci(const double *x, int n, double *mean, double *half)
{
	double s = 0, ss = 0;

	*mean = 0;
	*half = INFINITY;
	if (n < 1)
		return;
	for (int i = 0; i < n; i++)
		s += x[i];
	*mean = s / n;
	if (n < 2)
		return;
	for (int i = 0; i < n; i++)
		ss += (x[i] - *mean) * (x[i] - *mean);
	*half = t_quantile(n - 1) * sqrt(ss / (n - 1)) / sqrt((double)n);
}

/*
 * pick, or the same cell with NCCL's chunk (chunk) or NCCL's channel count
 * (!chunk) when pick forces one and does not beat that cell outside the
 * noise while that cell beats the default too.
 */
static int prefer_nccl_own(const struct tune_meas *def, const struct tune_meas *cells, int n,
			int pick, double min_gain, bool chunk)
{
	const struct tune_meas *p = pick >= 0 ? &cells[pick] : NULL;

	if (!p || !(chunk ? p->chunk : (uint32_t)p->n_channels))
		return pick;
	for (int i = 0; i < n; i++) {
		const struct tune_meas *c = &cells[i];

		if ((chunk ? c->chunk : (uint32_t)c->n_channels) || c->algo != p->algo ||
		    c->proto != p->proto || c->n < 2 ||
		    (chunk ? c->n_channels != p->n_channels : c->chunk != p->chunk))
			continue;
		if (p->hi_us * (1.0 + min_gain) < c->lo_us)
			return pick;
		return c->hi_us * (1.0 + min_gain) < def->lo_us ? i : pick;
	}
	return pick;
}

int tune_choose(const struct tune_meas *def, const struct tune_meas *cells, int n,
		double min_gain)
{
	int pick = -1;

	if (def->n < 2)
		return -1;
	for (int i = 0; i < n; i++) {
		const struct tune_meas *c = &cells[i];

		if (c->n < 2 || c->algo < 0)
			continue;
		/*
		 * The slowest the cell may be against the fastest the default may
		 * be: overlapping intervals, or a gain that only the noise could
		 * carry past min_gain, keep NCCL's pick.
		 */
		if (!(c->hi_us * (1.0 + min_gain) < def->lo_us))
			continue;
		if (pick < 0 || c->mean_us < cells[pick].mean_us)
			pick = i;
	}
	/*
	 * A chunk size, then a channel count, is worth forcing only when it
	 * beats the same cell with NCCL's own chunk (count) outside the noise
	 * too; otherwise that cell, if it also wins against the default,
	 * changes less.
	 */
	pick = prefer_nccl_own(def, cells, n, pick, min_gain, true);
	pick = prefer_nccl_own(def, cells, n, pick, min_gain, false);
	return pick;
}

double tune_bus_factor(int coll, int n)
{
	if (n < 1)
		return 1.0;
	switch (coll) {
	case 4: return 2.0 * (n - 1) / n;            /* AllReduce */
	case 2: case 3: return (double)(n - 1) / n;  /* AllGather, ReduceScatter */
	default: return 1.0;
	}
}
