/*
 * cmd_sim.c - `ncclbpf sim OBJ`: the decision table of a policy without
 * GPUs.  Loads the real plugin library through the NCCL emulator (the
 * same dlopen and ABI calls NCCL makes, cost tables from the emulator's
 * model of an NVLink node) and prints, per message size, NCCL's own pick
 * and what NCCL runs once the policy's outputs are applied.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "emulator/emu.h"
#include "emulator/emu_cli.h"

static int parse_int(const char *s, int min, int max, int *out)
{
	char *end;
	long v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

static int parse_range(const char *s, uint64_t *lo, uint64_t *hi)
{
	char buf[64];
	char *colon;

	if (!s || strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	colon = strchr(buf, ':');
	if (!colon)
		return -EINVAL;
	*colon = 0;
	if (emu_parse_size(buf, lo) || emu_parse_size(colon + 1, hi) || !*lo || *lo > *hi ||
	    *hi > (1ull << 40))
		return -EINVAL;
	return 0;
}

int cmd_sim(struct cli *c, int argc, char **argv)
{
	struct emu_topo topo = EMU_TOPO_DEFAULT;
	uint64_t lo = 8, hi = 1ull << 30;
	const char *obj = NULL;
	int coll = 4;
	struct emu_plugin pl;
	struct emu_tuner t;
	struct stat st;
	char warn[4096] = "";
	int err;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--coll")) {
			if ((coll = emu_coll_from_name(v)) < 0)
				return cli_usage_error("sim: --coll: unknown collective '%s' (Broadcast, Reduce, AllGather, ReduceScatter, AllReduce)", v ? v : "");
			i++;
		} else if (!strcmp(a, "--ranks")) {
			if (parse_int(v, 2, 65536, &topo.n_ranks))
				return cli_usage_error("sim: --ranks: expected an integer 2..65536, got '%s'", v ? v : "");
			i++;
		} else if (!strcmp(a, "--nodes")) {
			if (parse_int(v, 1, 65536, &topo.n_nodes))
				return cli_usage_error("sim: --nodes: expected an integer 1..65536, got '%s'", v ? v : "");
			i++;
		} else if (!strcmp(a, "--sizes")) {
			if (parse_range(v, &lo, &hi))
				return cli_usage_error("sim: --sizes: expected MIN:MAX with suffixes K/M/G, 0 < MIN <= MAX <= 1T, got '%s'", v ? v : "");
			i++;
		} else if (!strcmp(a, "--nvls")) {
			topo.nvls = true; /* NCCL_NVLS_ENABLE=1 on NVSwitch nodes */
		} else if (a[0] == '-') {
			return cli_usage_error("sim: unknown option '%s'", a);
		} else if (!obj) {
			obj = a;
		} else {
			return cli_usage_error("sim: unexpected argument '%s'", a);
		}
	}
	if (!obj)
		return cli_usage_error("usage: ncclbpf sim OBJ [--coll NAME] [--ranks N] [--nodes N] [--sizes MIN:MAX] [--nvls] [-j]");
	if (topo.n_nodes > topo.n_ranks)
		return cli_usage_error("sim: --nodes (%d) exceeds --ranks (%d)", topo.n_nodes, topo.n_ranks);
	if (stat(obj, &st) || !S_ISREG(st.st_mode))
		return cli_usage_error("sim: %s: not a readable file", obj);
	err = emu_cli_tuner_open(&pl, &t, obj, 5, &topo, warn, sizeof(warn));
	if (err) {
		warn[strcspn(warn, "\n")] = 0; /* one line: the first says why */
		return cli_usage_error("sim: %s", warn[0] ? warn : "cannot load the plugin");
	}
	if (warn[0])
		fprintf(stderr, "%s", warn);
	if (!c->json)
		printf("%-13s %12s  %-20s %-20s %s\n", "coll", "bytes", "nccl", "policy", "channels");
	for (uint64_t n = lo; n && n <= hi; n <<= 1) {
		struct emu_decision d;

		if (emu_tuner_call(&t, &topo, coll, n, &d)) {
			emu_cli_tuner_close(&pl, &t);
			fprintf(stderr, "ncclbpf: sim: getCollInfo failed at %llu bytes\n", (unsigned long long)n);
			return CLI_NO;
		}
		if (c->json) {
			printf("{\"coll\":");
			cli_json_str(stdout, emu_coll_name(coll));
			printf(",\"n_bytes\":%llu,\"nccl\":{\"algo\":\"%s\",\"proto\":\"%s\"},"
			       "\"policy\":{\"algo\":\"%s\",\"proto\":\"%s\",\"n_channels\":%d}}\n",
			       (unsigned long long)n, emu_algo_name(d.nccl_algo), emu_proto_name(d.nccl_proto),
			       emu_algo_name(d.algo), emu_proto_name(d.proto), d.n_channels);
		} else {
			char a[48], b[48], ch[16];
			bool same = d.algo == d.nccl_algo && d.proto == d.nccl_proto;

			snprintf(a, sizeof(a), "%s/%s", emu_algo_name(d.nccl_algo), emu_proto_name(d.nccl_proto));
			snprintf(b, sizeof(b), "%s/%s%s", emu_algo_name(d.algo), emu_proto_name(d.proto),
				 same ? "" : " *");
			snprintf(ch, sizeof(ch), "%d", d.n_channels);
			printf("%-13s %12llu  %-20s %-20s %s\n", emu_coll_name(coll), (unsigned long long)n,
			       a, b, d.n_channels ? ch : "nccl");
		}
		if (n > UINT64_MAX / 2)
			break;
	}
	emu_cli_tuner_close(&pl, &t);
	return CLI_OK;
}
