// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cmd_loop.c - `ncclbpf loop`: closed loop 1 (profiler -> one plan ->
 * every rank's tuner at an agreed call), the aggregator of src/loop;
 * `--kernel` selects loop 2 (loop_kernel.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ncclbpf/runtime.h"
#include "loop.h"

static int parse_list(const char *s, int *out, int max)
{
	int n = 0;

	while (*s) {
		char *end;
		long v = strtol(s, &end, 10);

		if (end == s || n == max || v < 1 || v > 1 << 30)
			return -EINVAL;
		out[n++] = (int)v;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -EINVAL;
	}
	return n;
}

static void print_result(struct cli *c, const struct nbpf_loop_opts *o, const struct nbpf_loop_result *r)
{
	if (c->json) {
		printf("{\"processes\":%d,\"final_call\":%llu,\"late\":%llu,\"steps\":[", r->n_procs,
		       (unsigned long long)r->final_call, (unsigned long long)r->late);
		for (int i = 0; i < r->n_steps; i++)
			printf("%s%llu", i ? "," : "", (unsigned long long)r->step_call[i]);
		printf("],\"keys\":[");
		for (int k = 0; k < r->n_keys; k++) {
			printf("%s{\"key\":%u,\"coll\":%u,\"size_bucket\":%u,\"best\":%d,\"mean_ns\":{", k ? "," : "",
			       r->keys[k].key, r->keys[k].key / 32, r->keys[k].key % 32, r->keys[k].best);
			for (int i = 0; i < o->n_cand; i++)
				printf("%s\"%d\":%.1f", i ? "," : "", o->cand[i], r->keys[k].mean_ns[i]);
			printf("}}");
		}
		printf("]}\n");
		return;
	}
	printf("%d processes; plan from call %llu%s\n", r->n_procs, (unsigned long long)r->final_call,
	       r->late ? " (LATE: some rank was past an activation call)" : "");
	for (int k = 0; k < r->n_keys; k++) {
		printf("key %u (collective %u, size bucket 2^%u): %d channels;", r->keys[k].key,
		       r->keys[k].key / 32, r->keys[k].key % 32, r->keys[k].best);
		for (int i = 0; i < o->n_cand; i++)
			printf(" %d:%.1fus", o->cand[i], r->keys[k].mean_ns[i] / 1e3);
		putchar('\n');
	}
}

int cmd_loop(struct cli *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "channels", required_argument, NULL, 'c' },
		{ "window", required_argument, NULL, 'w' },
		{ "margin", required_argument, NULL, 'm' },
		{ "margin-seconds", required_argument, NULL, 'M' },
		{ "ranks", required_argument, NULL, 'r' },
		{ "pids", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, 't' },
		{ "share-dir", required_argument, NULL, 'd' },
		{ "etcd", required_argument, NULL, 'E' },
		{ "job", required_argument, NULL, 'J' },
		{ "take-over", no_argument, NULL, 'O' },
		{ "node", required_argument, NULL, 'n' },
		{ "nodes", required_argument, NULL, 'N' },
		{ "quiet", no_argument, NULL, 'q' },
		{ 0 },
	};
	struct nbpf_loop_opts o = {
		.cand = { 1, 2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 32 }, .n_cand = 12,
		.window = 2000, .margin_s = 0.2, .timeout_ms = 10000, .nodes = 1, .log = stderr,
	};
	struct nbpf_loop_result r;
	int pids[256], ch, err;

	for (int i = 0; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--kernel"))
			return cmd_loop_kernel(c, argc, argv);
	while ((ch = cli_getopt(argc + 1, argv - 1, "q", opts, "loop")) != -1) {
		switch (ch) {
		case 'c':
			if ((o.n_cand = parse_list(optarg, o.cand, NBPF_LOOP_MAX_CAND)) < 1)
				return cli_usage_error("--channels: a list like 2,4,8,12 (at most %d)",
						       NBPF_LOOP_MAX_CAND);
			break;
		case 'w': o.window = strtoull(optarg, NULL, 10); break;
		case 'm': o.margin = strtoull(optarg, NULL, 10); break;
		case 'M': o.margin_s = strtod(optarg, NULL); break;
		case 'r': o.ranks = atoi(optarg); break;
		case 't': o.timeout_ms = (int)(strtod(optarg, NULL) * 1000); break;
		case 'p':
			if ((o.n_pids = parse_list(optarg, pids, 256)) < 1)
				return cli_usage_error("--pids: a list of process ids");
			o.pids = pids;
			break;
		case 'd': o.share_dir = optarg; break;
		case 'E': o.etcd = optarg; break;
		case 'J': o.job = optarg; break;
		case 'O': o.take_over = true; break;
		case 'n': o.node = optarg; break;
		case 'N': o.nodes = atoi(optarg); break;
		case 'q': o.log = NULL; break;
		default:
			return CLI_USAGE; /* cli_getopt named the option */
		}
	}
	if (cli_optind != argc + 1)
		return cli_usage_error("loop: unexpected argument '%s'", argv[cli_optind - 1]);
	if (o.share_dir && o.etcd)
		return cli_usage_error("--share-dir and --etcd exclude each other");
	if ((o.share_dir || o.etcd) && (!o.node || o.nodes < 1))
		return cli_usage_error("--share-dir and --etcd need --node NAME and --nodes K");
	if (o.window < 1 || o.timeout_ms < 1)
		return cli_usage_error("--window and --timeout must be positive");
	err = nbpf_loop_run(&o, &r);
	if (err)
		return cli_err(CLI_NO, "loop: %s", ncclbpf_errmsg());
	print_result(c, &o, &r);
	return r.late ? CLI_NO : CLI_OK;
}
