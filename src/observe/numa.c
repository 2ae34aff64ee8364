// SPDX-License-Identifier: Apache-2.0
/*
 * numa.c - where a process's memory is: its resident pages per NUMA node,
 * from /proc/PID/numa_maps (the counts numastat -p shows).  Reading it walks
 * the process's page tables, so callers do it every few seconds, not on
 * every interval of a large job.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
