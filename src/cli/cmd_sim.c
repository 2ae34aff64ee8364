/*
 * cmd_sim.c - `ncclbpf sim OBJ`: the decision table of a policy without
 * GPUs; `ncclbpf sim --serve [OBJ]`: a live emulated job to operate on.  Loads the real plugin library through the NCCL emulator (the
 * same dlopen and ABI calls NCCL makes, cost tables from the emulator's
 * model of an NVLink node) and prints, per message size, NCCL's own pick
 * and what NCCL runs once the policy's outputs are applied, and the chunk
 * size NCCL plans it with (tuner v7's getChunkSize, per channel part).
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "emulator/emu.h"
#include "emulator/emu_cli.h"
#include "emulator/emu_job.h"

static volatile sig_atomic_t serve_stop;

static void serve_signal(int sig)
{
	serve_stop = 1;
}

/*
 * `sim --serve`: a live emulated job for the operator verbs.  Runs until
 * SIGINT/SIGTERM or --duration, then prints what it did (one JSON document
 * under -j).
 */
static int serve(struct cli *c, const char *obj, const struct emu_topo *topo, unsigned rate,
		 double duration)
{
	struct emu_job_opts o = { .sz = sizeof(o), .policy = obj, .topo = *topo, .rate = rate,
				  .duration_s = duration, .stop = &serve_stop };
	struct sigaction sa = { .sa_handler = serve_signal };
	struct emu_job_stats st;
	char plugin[4096], err[512] = "";
	int rc;

	if (emu_cli_plugin_path(plugin, sizeof(plugin)))
		return cli_usage_error("sim: cannot find libnccl-ncclbpf.so (set NCCLBPF_PLUGIN)");
	o.plugin = plugin;
	/* Often run in the background of a terminal: the plugin's WARNs only, unless asked. */
	if (!getenv("NCCLBPF_LOG"))
		setenv("NCCLBPF_LOG", "warn", 1);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (!c->json) {
		printf("pid %d: %d ranks of one communicator, %s; try `ncclbpf ps`, `ncclbpf top %d`, "
		       "`ncclbpf reload %d OBJ`; Ctrl-C ends it\n",
		       (int)getpid(), topo->n_ranks, obj ? obj : "no policy", (int)getpid(), (int)getpid());
		fflush(stdout);
	}
	rc = emu_job_run(&o, &st, err, sizeof(err));
	if (rc)
		return cli_err(0, "sim --serve: %s", err), CLI_NO;
	if (c->json)
		printf("{\"pid\":%d,\"ranks\":%d,\"collectives\":%llu,\"diverged\":%llu,"
		       "\"tuner_errors\":%llu,\"profiler_errors\":%llu}\n",
		       (int)getpid(), topo->n_ranks, (unsigned long long)st.collectives,
		       (unsigned long long)st.diverged, (unsigned long long)st.tuner_errors,
		       (unsigned long long)st.profiler_errors);
	else
		printf("pid %d: %llu collectives per rank, %llu on which ranks disagreed, "
		       "%llu tuner and %llu profiler errors\n",
		       (int)getpid(), (unsigned long long)st.collectives, (unsigned long long)st.diverged,
		       (unsigned long long)st.tuner_errors, (unsigned long long)st.profiler_errors);
	return st.diverged || st.tuner_errors || st.profiler_errors ? CLI_NO : CLI_OK;
}

/* "2M", "64K", or plain bytes. */
static const char *size_str(char *buf, size_t n, uint64_t v)
{
	if (v && !(v % (1u << 20)))
		snprintf(buf, n, "%lluM", (unsigned long long)(v >> 20));
	else if (v && !(v % 1024))
		snprintf(buf, n, "%lluK", (unsigned long long)(v >> 10));
	else
		snprintf(buf, n, "%llu", (unsigned long long)v);
	return buf;
}

/*
 * The chunk NCCL plans with (getChunkSize, tuner v6+): its own and the one
 * it uses after the policy's answer, for the first channel's part (NCCL asks
 * once per part; -j lists them all).  "-" when NCCL asked nothing.
 */
static void chunk_text(char *buf, size_t n, const struct emu_decision *d)
{
	char a[32], b[32];

	if (!d->n_chunks) {
		snprintf(buf, n, "-");
		return;
	}
	size_str(a, sizeof(a), d->chunks[0].nccl_chunk);
	if (d->chunk[0] == emu_chunk_final(d->proto, d->chunks[0].max_chunk, d->chunks[0].nccl_chunk))
		snprintf(buf, n, "%s", a);
	else
		snprintf(buf, n, "%s -> %s *", a, size_str(b, sizeof(b), d->chunk[0]));
}

static void chunk_json(const struct emu_decision *d)
{
	printf(",\"chunks\":[");
	for (int i = 0; i < d->n_chunks; i++)
		printf("%s{\"n_bytes\":%llu,\"parts\":%d,\"nccl\":%u,\"policy\":%u}", i ? "," : "",
		       (unsigned long long)d->chunks[i].n_bytes, d->chunks[i].n_parts,
		       emu_chunk_final(d->proto, d->chunks[i].max_chunk, d->chunks[i].nccl_chunk),
		       d->chunk[i]);
	printf("]");
}

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
	char warn[4096] = "";
	int err;

	static const struct option opts[] = {
		{ "coll", required_argument, NULL, 'c' },
		{ "ranks", required_argument, NULL, 'r' },
		{ "nodes", required_argument, NULL, 'n' },
		{ "sizes", required_argument, NULL, 's' },
		{ "nvls", no_argument, NULL, 'v' },
		{ "serve", no_argument, NULL, 'S' },
		{ "rate", required_argument, NULL, 'R' },
		{ "duration", required_argument, NULL, 'D' },
		{ 0 },
	};
	bool serving = false;
	int rate = 1000;
	double duration = 0;
	bool first = true;
	int opt;

	/* argv[-1] is the object name "sim": getopt's argv[0]. */
	while ((opt = cli_getopt(argc + 1, argv - 1, "", opts, "sim")) != -1) {
		const char *v = optarg;

		if (opt == '?') {
			return CLI_USAGE;
		} else if (opt == 'c') {
			if ((coll = emu_coll_from_name(v)) < 0)
				return cli_usage_error("sim: --coll: unknown collective '%s' (Broadcast, Reduce, AllGather, ReduceScatter, AllReduce)", v ? v : "");
		} else if (opt == 'r') {
			if (parse_int(v, 2, 65536, &topo.n_ranks))
				return cli_usage_error("sim: --ranks: expected an integer 2..65536, got '%s'", v ? v : "");
		} else if (opt == 'n') {
			if (parse_int(v, 1, 65536, &topo.n_nodes))
				return cli_usage_error("sim: --nodes: expected an integer 1..65536, got '%s'", v ? v : "");
		} else if (opt == 's') {
			if (parse_range(v, &lo, &hi))
				return cli_usage_error("sim: --sizes: expected MIN:MAX with suffixes K/M/G, 0 < MIN <= MAX <= 1T, got '%s'", v ? v : "");
		} else if (opt == 'S') {
			serving = true;
		} else if (opt == 'R') {
			if (parse_int(v, 0, 10000000, &rate))
				return cli_usage_error("sim: --rate: expected collectives per second 0..10000000 (0: as fast as possible), got '%s'", v ? v : "");
		} else if (opt == 'D') {
			char *end;

			duration = v ? strtod(v, &end) : -1;
			if (!v || *end || !(duration >= 0) || duration > 1e7)
				return cli_usage_error("sim: --duration: expected seconds >= 0, got '%s'", v ? v : "");
		} else {
			topo.nvls = true; /* NCCL_NVLS_ENABLE=1 on NVSwitch nodes */
		}
	}
	for (int i = cli_optind - 1; i < argc; i++) {
		if (!obj)
			obj = argv[i];
		else
			return cli_usage_error("sim: unexpected argument '%s'", argv[i]);
	}
	if (serving && topo.n_ranks > 64)
		return cli_usage_error("sim: --serve runs every rank in this process: at most 64 --ranks");
	if (serving)
		return obj && cli_check_spec(obj, "sim") ? CLI_USAGE
						  : serve(c, obj, &topo, (unsigned)rate, duration);
	if (rate != 1000 || duration)
		return cli_usage_error("sim: --rate and --duration go with --serve");
	if (!obj)
		return cli_usage_error("sim: which object? (ncclbpf help sim)");
	if (topo.n_nodes > topo.n_ranks)
		return cli_usage_error("sim: --nodes (%d) exceeds --ranks (%d)", topo.n_nodes, topo.n_ranks);
	if (cli_check_spec(obj, "sim"))
		return CLI_USAGE;
	/* The newest tuner ABI: its getChunkSize shows the chunk sizes too. */
	err = emu_cli_tuner_open(&pl, &t, obj, 7, &topo, warn, sizeof(warn));
	if (err) {
		warn[strcspn(warn, "\n")] = 0; /* one line: the first says why */
		return cli_usage_error("sim: %s", warn[0] ? warn : "cannot load the plugin");
	}
	if (warn[0])
		fprintf(stderr, "%s", warn);
	if (c->json) {
		putchar('[');
		c->doc_open = true;
	} else
		printf("%-13s %12s  %-22s %-26s %s\n", "coll", "bytes", "nccl (channels)",
		       "policy (channels)", "chunk");
	for (uint64_t n = lo; n && n <= hi; n <<= 1) {
		struct emu_decision d;

		if (emu_tuner_call(&t, &topo, coll, n, &d)) {
			emu_cli_tuner_close(&pl, &t);
			if (c->json)
				puts("]");
			cli_err(0, "sim: getCollInfo failed at %llu bytes", (unsigned long long)n);
			return CLI_NO;
		}
		if (c->json) {
			printf("%s{\"coll\":", first ? "" : ",");
			first = false;
			cli_json_str(stdout, emu_coll_name(coll));
			printf(",\"n_bytes\":%llu,\"nccl\":{\"algo\":\"%s\",\"proto\":\"%s\",\"n_channels\":%d},"
			       "\"policy\":{\"algo\":\"%s\",\"proto\":\"%s\",\"n_channels\":%d},"
			       "\"changed\":{\"algo_proto\":%s,\"channels\":%s}",
			       (unsigned long long)n, emu_algo_name(d.nccl_algo), emu_proto_name(d.nccl_proto),
			       d.nccl_channels, emu_algo_name(d.algo), emu_proto_name(d.proto),
			       d.n_channels ? d.n_channels : d.nccl_channels,
			       d.algo != d.nccl_algo || d.proto != d.nccl_proto ? "true" : "false",
			       d.n_channels && d.n_channels != d.nccl_channels ? "true" : "false");
			chunk_json(&d);
			putchar('}');
		} else {
			char a[64], b[64], ch[80];
			bool same = d.algo == d.nccl_algo && d.proto == d.nccl_proto;
			bool ch_changed = d.n_channels && d.n_channels != d.nccl_channels;

			/* '*' marks what the policy changed: the cell, the channel count, or both. */
			snprintf(a, sizeof(a), "%s/%s (%d)", emu_algo_name(d.nccl_algo),
				 emu_proto_name(d.nccl_proto), d.nccl_channels);
			snprintf(b, sizeof(b), "%s/%s%s (%d%s)", emu_algo_name(d.algo), emu_proto_name(d.proto),
				 same ? "" : " *", d.n_channels ? d.n_channels : d.nccl_channels,
				 ch_changed ? " *" : "");
			chunk_text(ch, sizeof(ch), &d);
			printf("%-13s %12llu  %-22s %-26s %s\n", emu_coll_name(coll), (unsigned long long)n, a,
			       b, ch);
		}
		if (n > UINT64_MAX / 2)
			break;
	}
	emu_cli_tuner_close(&pl, &t);
	if (c->json)
		puts("]");
	return CLI_OK;
}
