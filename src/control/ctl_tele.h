/*
 * ctl_tele.h - gathers telemetry from running processes over their control
 * sockets into one aggregated set (src/telemetry/prom.h), for top and export.
 */
#ifndef NCCLBPF_CTL_TELE_H
#define NCCLBPF_CTL_TELE_H

#include <stdio.h>

#include "ctl_proto.h"
#include "telemetry/prom.h"

/*
 * Asks every pid (all live sockets when n_pids is 0) for TELEMETRY and
 * merges the answers into s (which the caller frees with nbpf_tele_free).
 * Processes that do not answer are reported on err (if not NULL) and
 * skipped.  Returns the number of processes that answered, or a negative
 * errno when none could be listed.
 */
int cli_tele_collect(const int *pids, int n_pids, struct nbpf_tele_set *s, FILE *err);
/* Merges one TELEMETRY response into s. */
void cli_tele_merge(struct nbpf_tele_set *s, const struct nbpf_ctl_msg *m);
/*
 * out = now - before, cell by cell (cells absent before count from zero;
 * counters that went backwards, e.g. a restarted process, count from zero).
 */
int cli_tele_delta(struct nbpf_tele_set *out, const struct nbpf_tele_set *now,
		   const struct nbpf_tele_set *before);

#endif
