/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * export_alert.h - alert delivery without Prometheus: the exporter checks a
 * built-in threshold set on each collection and POSTs Alertmanager-style
 * JSON (the /api/v2/alerts body: a list of {labels, annotations, startsAt,
 * endsAt}) to a webhook, once when an alert fires and once when it
 * resolves.
 */
#ifndef NCCLBPF_EXPORT_ALERT_H
#define NCCLBPF_EXPORT_ALERT_H

#include <stdbool.h>

#include "telemetry/prom.h"

struct export_alert_key;

struct export_alerts {
	const char *url;                 /* http://HOST:PORT/PATH */
	double p99_bound_s[NBPF_SIZE_CLASSES]; /* 0: no bound for that size class */
	bool refused;                    /* alert on refused policy outputs */
	struct nbpf_tele_set prev;       /* the last collection, for deltas */
	bool have_prev;
	struct export_alert_key *keys;   /* every alert seen, by its full key: firing or not */
	size_t n_keys, cap_keys;
	unsigned long posts, post_errors;
};

/* "4M=0.005,64M=0.05": bounds in seconds per size class; 0 or -EINVAL. */
int export_alert_parse_p99(struct export_alerts *a, const char *spec);
/* Evaluates the thresholds on what completed since the last call and posts changes. */
void export_alert_tick(struct export_alerts *a, const struct nbpf_tele_set *now);
void export_alert_free(struct export_alerts *a);

#endif
