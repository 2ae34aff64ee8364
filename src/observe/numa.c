// SPDX-License-Identifier: Apache-2.0
/*
 * numa.c - where a process's memory is: its resident pages per NUMA node,
 * from /proc/PID/numa_maps (the counts numastat -p shows).  Reading it walks
 * the process's page tables, so callers do it every few seconds, not on
 * every interval of a large job.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "observe.h"

int nbpf_obs_numa_mem(int pid, uint64_t *bytes, int max_nodes)
{
	char path[64], line[4096];
	int top = -1;
	FILE *f;

	memset(bytes, 0, (size_t)max_nodes * sizeof(*bytes));
	snprintf(path, sizeof(path), "/proc/%d/numa_maps", pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long kb = 4, pages;
		char *p = strstr(line, "kernelpagesize_kB=");
		int node;

		if (p)
			kb = strtoull(p + 18, NULL, 10);
		for (p = strstr(line, " N"); p; p = strstr(p + 1, " N")) {
			if (sscanf(p, " N%d=%llu", &node, &pages) != 2 || node < 0)
				continue;
			if (node >= max_nodes)
				node = max_nodes - 1;
			bytes[node] += pages * kb * 1024;
			if (node > top)
				top = node;
		}
	}
	fclose(f);
	return top + 1;
}

/*
 * The same, read at most every NUMA_REFRESH_S seconds per process: a
 * scrape every few seconds of a large job would otherwise walk every
 * rank's page tables each time.  Where memory sits changes slowly.  The
 * cache holds NUMA_CACHE processes; an entry not asked for in
 * NUMA_FORGET_S seconds (its process gone or no longer a target) leaves.
 */
#define NUMA_CACHE 256
#define NUMA_REFRESH_S 5
#define NUMA_FORGET_S 60

static struct numa_entry {
	int pid, nodes;
	double read_s, asked_s;
	uint64_t bytes[OBS_NUMA_NODES];
} numa_cache[NUMA_CACHE];
static pthread_mutex_t numa_lock = PTHREAD_MUTEX_INITIALIZER;

static double numa_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int nbpf_obs_numa_mem_cached(int pid, uint64_t *bytes, int max_nodes)
{
	struct numa_entry *e = NULL, *free_e = NULL;
	double now = numa_now();
	int n;

	if (max_nodes <= 0 || max_nodes > OBS_NUMA_NODES)
		return nbpf_obs_numa_mem(pid, bytes, max_nodes);
	pthread_mutex_lock(&numa_lock);
	for (int i = 0; i < NUMA_CACHE; i++) {
		struct numa_entry *c = &numa_cache[i];

		if (c->pid && now - c->asked_s >= NUMA_FORGET_S)
			c->pid = 0;
		if (c->pid == pid)
			e = c;
		else if (!c->pid && !free_e)
			free_e = c;
	}
	if (!e && free_e) {
		e = free_e;
		e->pid = pid;
		e->read_s = -NUMA_REFRESH_S;
	}
	if (!e) {
		pthread_mutex_unlock(&numa_lock);
		return nbpf_obs_numa_mem(pid, bytes, max_nodes);
	}
	if (now - e->read_s >= NUMA_REFRESH_S) {
		e->nodes = nbpf_obs_numa_mem(pid, e->bytes, OBS_NUMA_NODES);
		e->read_s = now;
	}
	e->asked_s = now;
	n = e->nodes;
	memset(bytes, 0, (size_t)max_nodes * sizeof(*bytes));
	for (int i = 0; i < OBS_NUMA_NODES; i++)
		bytes[i < max_nodes ? i : max_nodes - 1] += e->bytes[i];
	pthread_mutex_unlock(&numa_lock);
	return n < 0 || n <= max_nodes ? n : max_nodes;
}
