// SPDX-License-Identifier: Apache-2.0
/*
 * top_net.c - the per-peer pane of `ncclbpf top`: net plugin traffic with
 * each peer address (at most 32 per process plus "other", see docs/net.md),
 * per direction: messages, their rate, throughput and the p50/p99 time
 * from post to completion.
 */
#include <inttypes.h>
#include <stdio.h>

#include "cli.h"
#include "control/ctl_tele.h"

static void fmt_lat(char *out, size_t n, double ns)
{
	if (ns <= 0)
		snprintf(out, n, "-");
	else if (ns < 1e3)
		snprintf(out, n, "%.0fns", ns);
	else if (ns < 1e6)
		snprintf(out, n, "%.1fus", ns / 1e3);
	else
		snprintf(out, n, "%.2fms", ns / 1e6);
}

void cli_top_print_peers(const struct nbpf_tele_set *d, double secs, int iter)
{
	static const char *const dir[2] = { "send", "recv" };
	int header = 0;

	for (size_t i = 0; i < d->n_peers; i++) {
		const struct nbpf_tele_peer *p = &d->peers[i];

		for (int k = 0; k < 2; k++) {
			char p50[16], p99[16], rate[24], bw[24];

			if (!p->msgs[k])
				continue;
			if (!header) {
				printf("%-28s %-4s %10s %9s %10s %9s %9s %6s\n", "NET PEER", "DIR", "MSGS",
				       "MSGS/s", "BYTES/s", "P50", "P99", "ERRORS");
				header = 1;
			}
			fmt_lat(p50, sizeof(p50), nbpf_tele_quantile_ns(p->hist[k], NBPF_LAT_BUCKETS, 0.50));
			fmt_lat(p99, sizeof(p99), nbpf_tele_quantile_ns(p->hist[k], NBPF_LAT_BUCKETS, 0.99));
			if (iter == 1 || secs <= 0) {
				snprintf(rate, sizeof(rate), "-");
				snprintf(bw, sizeof(bw), "-");
			} else {
				snprintf(rate, sizeof(rate), "%.0f", (double)p->msgs[k] / secs);
				snprintf(bw, sizeof(bw), "%.2fM", (double)p->bytes[k] / secs / 1e6);
			}
			printf("%-28s %-4s %10" PRIu64 " %9s %10s %9s %9s %6" PRIu64 "\n", p->peer, dir[k],
			       p->msgs[k], rate, bw, p50, p99, p->errors);
		}
	}
}
