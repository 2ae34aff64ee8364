// SPDX-License-Identifier: Apache-2.0
/*
 * prom_loads.c - per-process counters in the telemetry set and the
 * Prometheus exposition: policy load attempts, refusals (by stage) and
 * rollbacks of each process that answered, and the net policy outputs its
 * net contexts refused (by reason).
 *
 * Labels: pid, and stage ("verifier" / "loader") on refusals.  Loads are
 * a per-process event (each rank loads its own image), and a pid label
 * keeps every series monotonic: when a process exits its series goes
 * stale instead of shrinking a sum.  Cardinality is the number of local
 * processes running the plugin.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "prom.h"

struct nbpf_tele_loads *nbpf_tele_loads(struct nbpf_tele_set *s, uint64_t pid)
{
	struct nbpf_tele_loads *l;

	for (size_t i = 0; i < s->n_loads; i++)
		if (s->loads[i].pid == pid)
			return &s->loads[i];
	if (s->n_loads == s->cap_loads) {
		size_t nc = s->cap_loads ? s->cap_loads * 2 : 8;
		void *q = realloc(s->loads, nc * sizeof(*s->loads));

		if (!q)
			return NULL;
		s->loads = q;
		s->cap_loads = nc;
	}
	l = &s->loads[s->n_loads++];
	*l = (struct nbpf_tele_loads){ .pid = pid };
	return l;
}

int nbpf_prom_write_loads(FILE *f, const struct nbpf_tele_set *s)
{
	static const char *const stage[2] = { "verifier", "loader" };

	fprintf(f, "# HELP ncclbpf_policy_load_attempts_total Policy loads attempted (start, reload, file watch), loaded or refused.\n"
		   "# TYPE ncclbpf_policy_load_attempts_total counter\n");
	for (size_t i = 0; i < s->n_loads; i++)
		fprintf(f, "ncclbpf_policy_load_attempts_total{pid=\"%" PRIu64 "\"} %" PRIu64 "\n",
			s->loads[i].pid, s->loads[i].attempts);
	fprintf(f, "# HELP ncclbpf_policy_load_refusals_total Policy loads refused (the image in use was kept), by the stage that refused.\n"
		   "# TYPE ncclbpf_policy_load_refusals_total counter\n");
	for (size_t i = 0; i < s->n_loads; i++)
		for (int k = 0; k < 2; k++)
			fprintf(f, "ncclbpf_policy_load_refusals_total{pid=\"%" PRIu64 "\",stage=\"%s\"} %" PRIu64 "\n",
				s->loads[i].pid, stage[k],
				k ? s->loads[i].refused_loader : s->loads[i].refused_verifier);
	fprintf(f, "# HELP ncclbpf_policy_rollbacks_total Rollbacks that re-published the previous policy image.\n"
		   "# TYPE ncclbpf_policy_rollbacks_total counter\n");
	for (size_t i = 0; i < s->n_loads; i++)
		fprintf(f, "ncclbpf_policy_rollbacks_total{pid=\"%" PRIu64 "\"} %" PRIu64 "\n",
			s->loads[i].pid, s->loads[i].rollbacks);
	fprintf(f, "# HELP ncclbpf_net_refused_total Net policy outputs refused (the connection kept its configuration), by reason.\n"
		   "# TYPE ncclbpf_net_refused_total counter\n");
	for (size_t i = 0; i < s->n_loads; i++)
		for (int r = 0; s->loads[i].net && r < NBPF_TELE_REFUSE; r++)
			fprintf(f, "ncclbpf_net_refused_total{pid=\"%" PRIu64 "\",reason=\"%s\"} %" PRIu64 "\n",
				s->loads[i].pid, nbpf_tele_refuse_name(r), s->loads[i].net_refused[r]);
	return ferror(f) ? -EIO : 0;
}
