// SPDX-License-Identifier: Apache-2.0
/*
 * observe_repin.c - `ncclbpf observe --pin-numa`: the watched processes'
 * threads to the re-pinner (src/observe/repin.h), from two sources: the
 * sched set's NUMA-crossing migration events, acted on as they arrive, and
 * a scan of /proc/PID/task each interval, which gives new threads their
 * home and retries moves the budget refused.
 */
#ifdef NCCLBPF_HAVE_OBSERVE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "observe_cli.h"

/* The CPU the thread last ran on: field 39 of /proc/PID/task/TID/stat, or -1. */
static int task_cpu(int pid, int tid)
{
	char path[64], buf[1024], *p;
	int cpu = -1;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* comm may hold spaces and parentheses: fields count from the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	for (int field = 2; p && field < 39; field++)
		p = strchr(p + 1, ' ');
	if (p)
		cpu = atoi(p + 1);
	return cpu;
}

static void report(const struct obs_event *e, int tid, int from, int home)
{
	fprintf(stderr, "numa re-pin: tid %d", tid);
	if (e)
		fprintf(stderr, " (pid %u) moved from node %d back to node %d\n", e->tgid, from, home);
	else
		fprintf(stderr, " found on node %d, moved back to node %d\n", from, home);
}

void obs_repin_scan(struct obs_state *s, double now_s)
{
	for (size_t i = 0; s->repin && i < s->n_procs; i++) {
		char dir[48];
		struct dirent *de;
		DIR *d;

		snprintf(dir, sizeof(dir), "/proc/%d/task", s->procs[i].pid);
		d = opendir(dir);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			int tid = atoi(de->d_name), cpu;

			if (tid <= 0 || (cpu = task_cpu(s->procs[i].pid, tid)) < 0)
				continue;
			if (nbpf_repin_seen(s->repin, tid, cpu, cpu, now_s) == 1)
				report(NULL, tid, nbpf_repin_node(s->repin, cpu),
				       nbpf_repin_home(s->repin, tid));
		}
		closedir(d);
	}
}

void obs_repin_event(struct obs_state *s, const struct obs_event *e, double now_s)
{
	int tid = (int)e->tid, src = (int)e->a, dst = (int)e->b;

	if (s->repin && nbpf_repin_seen(s->repin, tid, dst, src, now_s) == 1)
		report(e, tid, nbpf_repin_node(s->repin, dst), nbpf_repin_home(s->repin, tid));
}
#endif
