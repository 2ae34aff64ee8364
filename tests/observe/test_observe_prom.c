// SPDX-License-Identifier: Apache-2.0
/*
 * test_observe_prom.c - the kernel-side Prometheus families from a
 * snapshot built by hand: cumulative buckets in seconds and bytes, +Inf and
 * _count equal to the observations, _sum in base units, entries sharing a
 * label set merged into one series (two sockets to one peer), the label
 * callback's labels used, and the whole output accepted by promtool.
 * Needs no privileges: no kernel is involved.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "observe.h"

static int failures;

#define CHECK_HAS(out, line)                                                        \
	do {                                                                        \
		if (!strstr(out, line "\n")) {                                      \
			fprintf(stderr, "FAIL: missing line: %s\n", line);            \
			failures++;                                                 \
		}                                                                   \
	} while (0)

/* This process's resident bytes on node 0 as a scrape of s shows them. */
static double scrape_mem(struct nbpf_obs_snap *s)
{
	char want[96], *out = NULL, *p;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	double v = -1;

	nbpf_obs_prom_write(f, s, NULL, NULL);
	fclose(f);
	snprintf(want, sizeof(want), "ncclbpf_numa_memory_bytes{pid=\"%d\",node=\"0\"} ", (int)getpid());
	p = strstr(out, want);
	if (p)
		v = strtod(p + strlen(want), NULL);
	free(out);
	return v;
}

/*
 * numa_maps walks the page tables: two scrapes a moment apart read it once,
 * so 64 MiB touched between them shows only after the refresh.
 */
static void numa_cached(void)
{
	struct nbpf_obs_sched sch = { .tgid = (uint32_t)getpid() };
	struct nbpf_obs_snap s = { .sched = &sch, .n_sched = 1 };
	size_t big = 64u << 20;
	double a = scrape_mem(&s), b;
	char *mem = malloc(big);

	if (!mem) {
		failures++;
		return;
	}
	memset(mem, 1, big);
	b = scrape_mem(&s);
	printf("observe_prom: resident on node 0, two scrapes with 64 MiB touched between: %.0f, %.0f\n", a, b);
	if (a <= 0 || b != a) {
		fprintf(stderr, "FAIL: numa_maps read again within a scrape's refresh (%.0f then %.0f)\n", a, b);
		failures++;
	}
	free(mem);
}

static const char *labels(void *ctx, uint32_t tgid)
{
	(void)ctx;
	return tgid == 42 ? "pid=\"42\",process=\"trainer\"" : NULL;
}

int main(void)
{
	struct nbpf_obs_blk blk = { .k = { .tgid = 42, .dev = 7u << 20 | 3, .op = OBS_OP_READ } };
	struct nbpf_obs_conn conn[4] = { { .sk = 1 }, { .sk = 2 }, { .sk = 3 }, { .sk = 0 } };
	struct nbpf_obs_sched sch = { .tgid = 43 };
	struct nbpf_obs_gpu gpu = { .tgid = 42 };
	struct nbpf_obs_snap s = { .blk = &blk, .n_blk = 1, .conn = conn, .n_conn = 4,
				   .sched = &sch, .n_sched = 1, .gpu = &gpu, .n_gpu = 1, .events_lost = 5,
				   .untracked = 3 };
	char *out = NULL, path[] = "/tmp/obs-prom-XXXXXX";
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	/* Latencies: 3 in [1024, 2048) ns, 1 in [2^20, 2^21) ns; sizes: 4 of 4096 bytes. */
	blk.v.lat.slot[10] = 3;
	blk.v.lat.slot[20] = 1;
	blk.v.lat.count = 4;
	blk.v.lat.sum = 3 * 1500 + 1500000;
	blk.v.size.slot[12] = 4;
	blk.v.size.count = 4;
	blk.v.size.sum = 4 * 4096;
	blk.v.small = 4;
	blk.v.unaligned = 1;
	/* Two sockets of pid 42 to 10.0.0.2 (ports differ): one series per family. */
	for (int i = 0; i < 2; i++) {
		conn[i].v.tgid = 42;
		conn[i].v.family = AF_INET;
		conn[i].v.dport = (uint16_t)(5000 + i);
		inet_pton(AF_INET, "10.0.0.2", conn[i].v.daddr);
		conn[i].v.bytes_sent = 1000u * (i + 1);
		conn[i].v.retrans = (uint64_t)i + 2;
		conn[i].v.srtt_us = 100u * (i + 1);
	}
	/*
	 * A closed connection to the same peer (final counters, an RTT that must
	 * not show) and the retired sum of earlier ones: counters add up, the
	 * gauge is the live connections' only.
	 */
	conn[2].v = conn[0].v;
	conn[2].v.closed = 1;
	conn[2].v.bytes_sent = 500;
	conn[2].v.srtt_us = 9000;
	conn[3].v = conn[2].v;
	conn[3].v.retired = 1;
	conn[3].v.bytes_sent = 250;
	conn[3].v.srtt_us = 0;
	/* Launch gaps: 9 near 1 ms, 1 near 64 ms; one gap after a synchronize. */
	gpu.v.launches = 10;
	gpu.v.launch_gap.slot[19] = 9;
	gpu.v.launch_gap.slot[25] = 1;
	gpu.v.launch_gap.count = 10;
	gpu.v.launch_gap.sum = 9 * 600000 + 40000000;
	gpu.v.sync_gap.slot[12] = 1;
	gpu.v.sync_gap.count = 1;
	gpu.v.sync_gap.sum = 5000;
	sch.v.node_ns[1] = 1500000000;
	sch.v.migrations = 7;
	sch.v.cross_node = 2;
	if (nbpf_obs_prom_write(f, &s, labels, NULL)) {
		fprintf(stderr, "FAIL: nbpf_obs_prom_write\n");
		return 1;
	}
	fclose(f);

	CHECK_HAS(out, "ncclbpf_block_request_latency_seconds_bucket{pid=\"42\",process=\"trainer\","
		       "device=\"7:3\",op=\"read\",le=\"2.048e-06\"} 3");
	CHECK_HAS(out, "ncclbpf_block_request_latency_seconds_bucket{pid=\"42\",process=\"trainer\","
		       "device=\"7:3\",op=\"read\",le=\"0.001048576\"} 3");
	CHECK_HAS(out, "ncclbpf_block_request_latency_seconds_bucket{pid=\"42\",process=\"trainer\","
		       "device=\"7:3\",op=\"read\",le=\"0.002097152\"} 4");
	CHECK_HAS(out, "ncclbpf_block_request_latency_seconds_bucket{pid=\"42\",process=\"trainer\","
		       "device=\"7:3\",op=\"read\",le=\"+Inf\"} 4");
	CHECK_HAS(out, "ncclbpf_block_request_latency_seconds_sum{pid=\"42\",process=\"trainer\","
		       "device=\"7:3\",op=\"read\"} 0.0015045");
	CHECK_HAS(out, "ncclbpf_block_request_latency_seconds_count{pid=\"42\",process=\"trainer\","
		       "device=\"7:3\",op=\"read\"} 4");
	CHECK_HAS(out, "ncclbpf_block_request_size_bytes_bucket{pid=\"42\",process=\"trainer\","
		       "device=\"7:3\",op=\"read\",le=\"4096\"} 0");
	CHECK_HAS(out, "ncclbpf_block_request_size_bytes_bucket{pid=\"42\",process=\"trainer\","
		       "device=\"7:3\",op=\"read\",le=\"8192\"} 4");
	CHECK_HAS(out, "ncclbpf_block_request_size_bytes_sum{pid=\"42\",process=\"trainer\","
		       "device=\"7:3\",op=\"read\"} 16384");
	CHECK_HAS(out, "ncclbpf_block_unaligned_requests_total{pid=\"42\",process=\"trainer\","
		       "device=\"7:3\",op=\"read\"} 1");
	/* Merged: bytes and retransmits summed, srtt the larger, in seconds. */
	CHECK_HAS(out, "ncclbpf_tcp_sent_bytes_total{pid=\"42\",process=\"trainer\",peer=\"10.0.0.2\"} 3750");
	CHECK_HAS(out, "ncclbpf_tcp_retransmits_total{pid=\"42\",process=\"trainer\",peer=\"10.0.0.2\"} 9");
	CHECK_HAS(out, "ncclbpf_gpu_launch_gap_seconds_bucket{pid=\"42\",process=\"trainer\",le=\"0.001048576\"} 9");
	CHECK_HAS(out, "ncclbpf_gpu_launch_gap_seconds_count{pid=\"42\",process=\"trainer\"} 10");
	CHECK_HAS(out, "ncclbpf_gpu_sync_gap_seconds_count{pid=\"42\",process=\"trainer\"} 1");
	CHECK_HAS(out, "ncclbpf_numa_cpu_seconds_total{pid=\"43\",node=\"1\"} 1.5");
	CHECK_HAS(out, "ncclbpf_tcp_srtt_seconds{pid=\"42\",process=\"trainer\",peer=\"10.0.0.2\"} 0.0002");
	/* No labels from the callback: the pid alone. */
	CHECK_HAS(out, "ncclbpf_migrations_total{pid=\"43\"} 7");
	CHECK_HAS(out, "ncclbpf_numa_migrations_total{pid=\"43\"} 2");
	CHECK_HAS(out, "ncclbpf_observe_events_lost_total 5");
	CHECK_HAS(out, "ncclbpf_observe_untracked_total 3");
	if (strstr(out, "peer=\"10.0.0.2\"} 1000\n")) {
		fprintf(stderr, "FAIL: sockets to one peer not merged\n");
		failures++;
	}
	if (!access("/usr/bin/promtool", X_OK)) {
		int fd = mkstemp(path), st;
		char cmd[128];

		if (fd < 0 || write(fd, out, len) != (ssize_t)len)
			failures++;
		close(fd);
		snprintf(cmd, sizeof(cmd), "/usr/bin/promtool check metrics < %s", path);
		st = system(cmd);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "FAIL: promtool rejected the exposition\n");
			failures++;
		}
		unlink(path);
	} else {
		printf("SKIP promtool part: promtool not installed\n");
	}
	if (failures)
		fputs(out, stderr);
	free(out);
	numa_cached();
	printf("observe_prom: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
