// SPDX-License-Identifier: Apache-2.0
/*
 * prom_net.c - per-peer series of the net plugin in the telemetry set and
 * the Prometheus exposition (shared by the plugin and the ncclbpf command).
 *
 * Labels: peer (an address, "inner" for an inner plugin's traffic,
 * "other" beyond the bound) and dir ("send" / "recv").  Cardinality is
 * bounded twice: a process reports at most 32 peers plus "other"
 * (src/nccl/net_peers.h), and a merged set keeps NBPF_TELE_MAX_PEERS.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"

struct nbpf_tele_peer *nbpf_tele_peer(struct nbpf_tele_set *s, const char *peer)
{
	struct nbpf_tele_peer *p;

	if (s->n_peers >= NBPF_TELE_MAX_PEERS - 1 && strcmp(peer, "other")) {
		for (size_t i = 0; i < s->n_peers; i++)
			if (!strcmp(s->peers[i].peer, peer))
				return &s->peers[i];
		peer = "other";
	}
	for (size_t i = 0; i < s->n_peers; i++)
		if (!strcmp(s->peers[i].peer, peer))
			return &s->peers[i];
	if (s->n_peers == s->cap_peers) {
		size_t nc = s->cap_peers ? s->cap_peers * 2 : 8;
		void *q = realloc(s->peers, nc * sizeof(*s->peers));

		if (!q)
			return NULL;
		s->peers = q;
		s->cap_peers = nc;
	}
	p = &s->peers[s->n_peers++];
	memset(p, 0, sizeof(*p));
	snprintf(p->peer, sizeof(p->peer), "%s", peer);
	return p;
}

static const char *const dir_names[2] = { "send", "recv" };

int nbpf_prom_write_net(FILE *f, const struct nbpf_tele_set *s)
{
	if (!s->n_peers)
		return 0;
	fputs("# HELP ncclbpf_net_peer_messages_total Net plugin messages completed, by peer and direction.\n"
	      "# TYPE ncclbpf_net_peer_messages_total counter\n", f);
	for (size_t i = 0; i < s->n_peers; i++)
		for (int d = 0; d < 2; d++)
			fprintf(f, "ncclbpf_net_peer_messages_total{peer=\"%s\",dir=\"%s\"} %" PRIu64 "\n",
				s->peers[i].peer, dir_names[d], s->peers[i].msgs[d]);
	fputs("# HELP ncclbpf_net_peer_bytes_total Net plugin bytes moved, by peer and direction.\n"
	      "# TYPE ncclbpf_net_peer_bytes_total counter\n", f);
	for (size_t i = 0; i < s->n_peers; i++)
		for (int d = 0; d < 2; d++)
			fprintf(f, "ncclbpf_net_peer_bytes_total{peer=\"%s\",dir=\"%s\"} %" PRIu64 "\n",
				s->peers[i].peer, dir_names[d], s->peers[i].bytes[d]);
	fputs("# HELP ncclbpf_net_peer_errors_total Net plugin connections that failed, by peer.\n"
	      "# TYPE ncclbpf_net_peer_errors_total counter\n", f);
	for (size_t i = 0; i < s->n_peers; i++)
		fprintf(f, "ncclbpf_net_peer_errors_total{peer=\"%s\"} %" PRIu64 "\n", s->peers[i].peer,
			s->peers[i].errors);
	fputs("# HELP ncclbpf_net_peer_latency_seconds Net plugin message time from post to completion.\n"
	      "# TYPE ncclbpf_net_peer_latency_seconds histogram\n", f);
	for (size_t i = 0; i < s->n_peers; i++) {
		for (int d = 0; d < 2; d++) {
			const struct nbpf_tele_peer *p = &s->peers[i];
			uint64_t cum = 0;

			for (int b = 0; b < NBPF_PROM_FIRST_BUCKET; b++)
				cum += p->hist[d][b];
			for (int b = NBPF_PROM_FIRST_BUCKET; b <= NBPF_PROM_LAST_BUCKET; b++) {
				cum += p->hist[d][b];
				fprintf(f, "ncclbpf_net_peer_latency_seconds_bucket{peer=\"%s\",dir=\"%s\",le=\"%.10g\"} %" PRIu64 "\n",
					p->peer, dir_names[d], ldexp(1e-9, b + 1), cum);
			}
			fprintf(f, "ncclbpf_net_peer_latency_seconds_bucket{peer=\"%s\",dir=\"%s\",le=\"+Inf\"} %" PRIu64 "\n",
				p->peer, dir_names[d], p->msgs[d]);
			fprintf(f, "ncclbpf_net_peer_latency_seconds_sum{peer=\"%s\",dir=\"%s\"} %.9f\n",
				p->peer, dir_names[d], (double)p->sum_ns[d] * 1e-9);
			fprintf(f, "ncclbpf_net_peer_latency_seconds_count{peer=\"%s\",dir=\"%s\"} %" PRIu64 "\n",
				p->peer, dir_names[d], p->msgs[d]);
		}
	}
	return ferror(f) ? -EIO : 0;
}
