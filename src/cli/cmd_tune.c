// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cmd_tune.c - `ncclbpf tune`: measure every (algorithm, protocol,
 * channels) cell per collective and size band through the plugin with the
 * sweep policy, keep NCCL's pick wherever the gain is inside the noise, and
 * write a policy (NAME.bpf.c, NAME.bpf.o verified strictly) and a report
 * (NAME.report.txt, NAME.csv, NAME.svg).  src/tune holds the work.
 */
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "emulator/emu_cli.h"
#include "tune/tune.h"

static int parse_long(const char *s, long min, long max, long *out)
{
	char *end;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	*out = strtol(s, &end, 10);
	return errno || *end || *out < min || *out > max ? -EINVAL : 0;
}

static int parse_double(const char *s, double min, double max, double *out)
{
	char *end;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	*out = strtod(s, &end);
	return errno || *end || !(*out >= min && *out <= max) ? -EINVAL : 0;
}

static int parse_colls(const char *s, bool colls[TUNE_NUM_COLLS])
{
	char buf[256], *save = NULL;
	int n = 0;

	if (!s || strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	memset(colls, 0, TUNE_NUM_COLLS * sizeof(bool));
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int c = emu_coll_from_name(t);

		if (c < 0)
			return -EINVAL;
		colls[c] = true;
		n++;
	}
	return n ? 0 : -EINVAL;
}

static int parse_channels(const char *s, struct tune_opts *o)
{
	char buf[256], *save = NULL;

	if (!s || strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	o->n_channels = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		long v;

		if (o->n_channels == TUNE_MAX_CHANS || parse_long(t, 0, 64, &v))
			return -EINVAL;
		o->channels[o->n_channels++] = (int)v;
	}
	return o->n_channels ? 0 : -EINVAL;
}

static int parse_chunks(const char *s, struct tune_opts *o)
{
	char buf[256], *save = NULL;

	if (!s || strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	o->n_chunks = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (o->n_chunks == TUNE_MAX_CHUNKS || (strcmp(t, "0") && emu_parse_size(t, &v)) ||
		    (strcmp(t, "0") && v > (1u << 30)))
			return -EINVAL;
		o->chunks[o->n_chunks++] = strcmp(t, "0") ? (uint32_t)v : 0;
	}
	return o->n_chunks ? 0 : -EINVAL;
}

static int parse_sizes(const char *s, uint64_t *lo, uint64_t *hi)
{
	char buf[64], *colon;

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

/* The running command's directory. */
static int exe_dir(char *buf, size_t n)
{
	char exe[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (len <= 0)
		return -ENOENT;
	exe[len] = 0;
	snprintf(buf, n, "%s", dirname(exe));
	return 0;
}

/* PATH relative to the running executable's directory, if it exists there. */
static const char *beside_exe(const char *rel, char *buf, size_t n)
{
	char dir[PATH_MAX];

	if (exe_dir(dir, sizeof(dir)) || snprintf(buf, n, "%s/%s", dir, rel) >= (int)n)
		return NULL;
	return access(buf, R_OK) ? NULL : buf;
}

/*
 * Where tune's data is: in a build tree (CMakeCache.txt beside the
 * command) the build's and the source's; in an install tree the data and
 * include directories relative to the command (a staged or relocated
 * install finds its own), else the ones the build was configured for.
 */
static const char *find_sweep_obj(char *buf, size_t n)
{
	char probe[PATH_MAX];

	if (beside_exe("CMakeCache.txt", probe, sizeof(probe)))
		return beside_exe("policies/sweep.bpf.o", buf, n);
	if (beside_exe(NCCLBPF_REL_DATADIR "/ncclbpf/policies/sweep.bpf.o", buf, n))
		return buf;
	snprintf(buf, n, "%s", NCCLBPF_FULL_DATADIR "/ncclbpf/policies/sweep.bpf.o");
	return access(buf, R_OK) ? NULL : buf;
}

static const char *find_include_dir(char *buf, size_t n)
{
	char probe[PATH_MAX];

	if (beside_exe("CMakeCache.txt", probe, sizeof(probe)))
		return NCCLBPF_SRC_INCLUDEDIR;
	if (beside_exe(NCCLBPF_REL_INCLUDEDIR "/ncclbpf/policy.h", probe, sizeof(probe))) {
		snprintf(buf, n, "%.*s", (int)(strlen(probe) - strlen("/ncclbpf/policy.h")), probe);
		return buf;
	}
	return NCCLBPF_FULL_INCLUDEDIR;
}

/* Any NVIDIA GPU device node: without one CUDA finds no GPU. */
static bool have_gpu_node(void)
{
	glob_t g;
	bool any = !glob("/dev/nvidia[0-9]*", 0, NULL, &g);

	if (any)
		globfree(&g);
	return any;
}

/* One JSON document: an array with one object per (collective, size). */
static void print_json(const struct tune_result *res)
{
	putchar('[');
	for (int i = 0; i < res->n_pts; i++) {
		const struct tune_point *p = &res->pts[i];
		const struct tune_meas *c = p->choice >= 0 ? &p->cells[p->choice] : NULL;

		printf("%s{\"coll\":", i ? "," : "");
		cli_json_str(stdout, emu_coll_name(p->coll));
		printf(",\"n_bytes\":%llu,\"nccl\":{\"algo\":\"%s\",\"proto\":\"%s\"},"
		       "\"default\":{\"mean_us\":%.4f,\"lo_us\":%.4f,\"hi_us\":%.4f,\"busbw\":%.4f},",
		       (unsigned long long)p->n_bytes, emu_algo_name(p->nccl_algo),
		       emu_proto_name(p->nccl_proto), p->def.mean_us, p->def.lo_us, p->def.hi_us,
		       p->def.busbw);
		if (c)
			printf("\"choice\":{\"algo\":\"%s\",\"proto\":\"%s\",\"n_channels\":%d,"
			       "\"mean_us\":%.4f,\"lo_us\":%.4f,\"hi_us\":%.4f,\"busbw\":%.4f,\"chunk\":%u},",
			       emu_algo_name(c->algo), emu_proto_name(c->proto), c->n_channels,
			       c->mean_us, c->lo_us, c->hi_us, c->busbw, c->chunk);
		else
			printf("\"choice\":null,");
		printf("\"gain\":%.4f}", p->gain);
	}
	puts("]");
}

int cmd_tune(struct cli *c, int argc, char **argv)
{
	enum {
		O_BACKEND = 256, O_COLL, O_SIZES, O_CHANNELS, O_REPS, O_MIN_GAIN, O_OUT, O_NAME,
		O_NO_COMPILE, O_SWEEP_OBJ, O_CLANG, O_INCLUDE, O_RANKS, O_NODES, O_NVLS, O_NOISE,
		O_SKEW, O_SEED, O_SWEEP_BIN, O_PLUGIN, O_NGPUS, O_ITERS, O_WARMUP, O_RUN_TIMEOUT,
		O_CHUNKS,
	};
	static const struct option opts[] = {
		{ "backend", required_argument, NULL, O_BACKEND },
		{ "coll", required_argument, NULL, O_COLL },
		{ "sizes", required_argument, NULL, O_SIZES },
		{ "channels", required_argument, NULL, O_CHANNELS },
		{ "chunks", required_argument, NULL, O_CHUNKS },
		{ "reps", required_argument, NULL, O_REPS },
		{ "min-gain", required_argument, NULL, O_MIN_GAIN },
		{ "out", required_argument, NULL, O_OUT },
		{ "name", required_argument, NULL, O_NAME },
		{ "no-compile", no_argument, NULL, O_NO_COMPILE },
		{ "sweep-obj", required_argument, NULL, O_SWEEP_OBJ },
		{ "clang", required_argument, NULL, O_CLANG },
		{ "include", required_argument, NULL, O_INCLUDE },
		{ "ranks", required_argument, NULL, O_RANKS },
		{ "nodes", required_argument, NULL, O_NODES },
		{ "nvls", no_argument, NULL, O_NVLS },
		{ "emu-noise", required_argument, NULL, O_NOISE },
		{ "emu-skew", required_argument, NULL, O_SKEW },
		{ "seed", required_argument, NULL, O_SEED },
		{ "sweep-bin", required_argument, NULL, O_SWEEP_BIN },
		{ "plugin", required_argument, NULL, O_PLUGIN },
		{ "ngpus", required_argument, NULL, O_NGPUS },
		{ "iters", required_argument, NULL, O_ITERS },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "run-timeout", required_argument, NULL, O_RUN_TIMEOUT },
		{ 0 },
	};
	char sweep_obj[PATH_MAX], sweep_bin[PATH_MAX], plugin[PATH_MAX], inc[PATH_MAX], err[4096] = "";
	char out_dir[64], abs[PATH_MAX];
	struct tune_opts o = {
		.backend = TUNE_BACKEND_EMU, .colls = { [2] = true, [3] = true, [4] = true },
		.min_bytes = 8, .max_bytes = 1ull << 30, .channels = { 0, 8, 32 }, .n_channels = 3,
		.reps = 10, .min_gain = 0.02, .out_dir = NULL, .name = "tuned", .compile = true,
		.include_dir = NULL, .ngpus = 0, .iters = 20, .warmup = 5,
		.run_timeout_s = 300,
		.emu = { .topo = EMU_TOPO_DEFAULT, .noise = 0.01, .seed = 1 },
	};
	struct tune_result res;
	struct stat st;
	int ret, opt;

	/* argv[-1] is the object name "tune": getopt's argv[0]. */
	while ((opt = cli_getopt(argc + 1, argv - 1, "", opts, "tune")) != -1) {
		const char *v = optarg;
		long l;
		double d;

		switch (opt) {
		case O_BACKEND:
			if (!strcmp(v, "emu"))
				o.backend = TUNE_BACKEND_EMU;
			else if (!strcmp(v, "nccl"))
				o.backend = TUNE_BACKEND_NCCL;
			else
				return cli_usage_error("tune: --backend: expected emu or nccl, got '%s'", v);
			break;
		case O_COLL:
			if (parse_colls(v, o.colls))
				return cli_usage_error("tune: --coll: expected a comma-separated list of Broadcast, Reduce, AllGather, ReduceScatter, AllReduce, got '%s'", v);
			break;
		case O_SIZES:
			if (parse_sizes(v, &o.min_bytes, &o.max_bytes))
				return cli_usage_error("tune: --sizes: expected MIN:MAX with suffixes K/M/G, 0 < MIN <= MAX <= 1T, got '%s'", v);
			break;
		case O_CHANNELS:
			if (parse_channels(v, &o))
				return cli_usage_error("tune: --channels: expected up to %d counts 0..64 (0: NCCL's), got '%s'", TUNE_MAX_CHANS, v);
			break;
		case O_CHUNKS:
			if (parse_chunks(v, &o))
				return cli_usage_error("tune: --chunks: expected up to %d chunk sizes 0..1G (K/M suffixes; 0: NCCL's), got '%s'", TUNE_MAX_CHUNKS, v);
			break;
		case O_REPS:
			if (parse_long(v, 2, TUNE_MAX_REPS, &l))
				return cli_usage_error("tune: --reps: expected 2..%d, got '%s'", TUNE_MAX_REPS, v);
			o.reps = (int)l;
			break;
		case O_MIN_GAIN:
			if (parse_double(v, 0, 100, &d))
				return cli_usage_error("tune: --min-gain: expected a percentage 0..100, got '%s'", v);
			o.min_gain = d / 100;
			break;
		case O_OUT:
			o.out_dir = v;
			break;
		case O_NAME:
			for (const char *s = v; *s; s++)
				if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
				      (s > v && *s >= '0' && *s <= '9')))
					return cli_usage_error("tune: --name: '%s' is not a C identifier", v);
			if (!*v)
				return cli_usage_error("tune: --name: empty");
			o.name = v;
			break;
		case O_NO_COMPILE:
			o.compile = false;
			break;
		case O_SWEEP_OBJ:
			o.sweep_obj = v;
			break;
		case O_CLANG:
			o.clang = v;
			break;
		case O_INCLUDE:
			o.include_dir = v;
			break;
		case O_RANKS:
			if (parse_long(v, 2, 65536, &l))
				return cli_usage_error("tune: --ranks: expected 2..65536, got '%s'", v);
			o.emu.topo.n_ranks = (int)l;
			o.ranks = (int)l; /* --backend nccl: that many processes on one GPU */
			break;
		case O_NODES:
			if (parse_long(v, 1, 65536, &l))
				return cli_usage_error("tune: --nodes: expected 1..65536, got '%s'", v);
			o.emu.topo.n_nodes = (int)l;
			break;
		case O_NVLS:
			o.emu.topo.nvls = true;
			break;
		case O_NOISE:
			if (parse_double(v, 0, 0.5, &o.emu.noise))
				return cli_usage_error("tune: --emu-noise: expected a relative deviation 0..0.5, got '%s'", v);
			break;
		case O_SKEW:
			if (o.emu.n_skews == TUNE_MAX_SKEWS || tune_parse_skew(v, &o.emu.skews[o.emu.n_skews]))
				return cli_usage_error("tune: --emu-skew: expected COLL:MIN:MAX:ALGO/PROTO*F (F x its modelled time) or ~F (F x NCCL's pick), at most %d, got '%s'", TUNE_MAX_SKEWS, v);
			o.emu.n_skews++;
			break;
		case O_SEED:
			if (parse_long(v, 1, LONG_MAX, &l))
				return cli_usage_error("tune: --seed: expected a positive integer, got '%s'", v);
			o.emu.seed = (uint64_t)l;
			break;
		case O_SWEEP_BIN:
			o.sweep_bin = v;
			break;
		case O_PLUGIN:
			o.plugin = v;
			break;
		case O_NGPUS:
			if (parse_long(v, 0, 16, &l))
				return cli_usage_error("tune: --ngpus: expected 0..16 (0: all), got '%s'", v);
			o.ngpus = (int)l;
			break;
		case O_ITERS:
			if (parse_long(v, 1, 100000, &l))
				return cli_usage_error("tune: --iters: expected 1..100000, got '%s'", v);
			o.iters = (int)l;
			break;
		case O_WARMUP:
			if (parse_long(v, 0, 100000, &l))
				return cli_usage_error("tune: --warmup: expected 0..100000, got '%s'", v);
			o.warmup = (int)l;
			break;
		case O_RUN_TIMEOUT:
			if (parse_long(v, 1, 86400, &l))
				return cli_usage_error("tune: --run-timeout: expected seconds 1..86400, got '%s'", v);
			o.run_timeout_s = (int)l;
			break;
		default:
			return CLI_USAGE;
		}
	}
	if (cli_optind - 1 < argc)
		return cli_usage_error("tune: unexpected argument '%s' (ncclbpf help tune)", argv[cli_optind - 1]);
	if (o.emu.topo.n_nodes > o.emu.topo.n_ranks)
		return cli_usage_error("tune: --nodes (%d) exceeds --ranks (%d)", o.emu.topo.n_nodes, o.emu.topo.n_ranks);
	if (!o.sweep_obj && !(o.sweep_obj = find_sweep_obj(sweep_obj, sizeof(sweep_obj))))
		return cli_usage_error("tune: no sweep.bpf.o beside the command nor under %s/ncclbpf/policies: give --sweep-obj",
				       NCCLBPF_FULL_DATADIR);
	if (stat(o.sweep_obj, &st) || !S_ISREG(st.st_mode))
		return cli_usage_error("tune: %s: not a readable file", o.sweep_obj);
	if (!o.include_dir)
		o.include_dir = find_include_dir(inc, sizeof(inc));
	if (o.backend == TUNE_BACKEND_NCCL) {
		if (!o.sweep_bin)
			o.sweep_bin = beside_exe("bench/gpu/nccl_sweep", sweep_bin, sizeof(sweep_bin));
		if (!o.sweep_bin)
			o.sweep_bin = beside_exe("nccl_sweep", sweep_bin, sizeof(sweep_bin));
		if (!o.sweep_bin)
			return cli_usage_error("tune: --backend nccl runs nccl_sweep, which a build tree makes where CUDA and NCCL are found (bench/gpu) and no package installs: give --sweep-bin PATH");
		if (!o.plugin && !emu_cli_plugin_path(plugin, sizeof(plugin)))
			o.plugin = plugin;
	}
	/* No --out: a new directory in the current one, never last run's files. */
	if (!o.out_dir) {
		cli_stamp_name(out_dir, sizeof(out_dir), "tune-", "");
		o.out_dir = out_dir;
	}
	ret = cli_mkdirs(o.out_dir);
	if (ret)
		return cli_usage_error("tune: --out %s: %s", o.out_dir, strerror(-ret));
	o.log = c->json ? NULL : stderr;
	ret = tune_run(&o, &res, err, sizeof(err));
	if (ret) {
		tune_result_free(&res);
		if (o.backend == TUNE_BACKEND_NCCL && ret == -ENODEV && !have_gpu_node())
			return cli_err(CLI_NO, "tune: no GPU found on this machine (no /dev/nvidia* device): "
				       "--backend nccl needs two or more; --backend emu needs none (%s)", err);
		return cli_err(ret == -ENOENT || ret == -EINVAL ? CLI_USAGE : CLI_NO, "tune: %s", err);
	}
	/* The files first, so that a JSON document on stdout is the last word. */
	ret = tune_emit_report(&o, &res, err, sizeof(err));
	if (!ret)
		ret = tune_emit_policy(&o, &res, err, sizeof(err));
	if (ret) {
		tune_result_free(&res);
		return cli_err(CLI_NO, "tune: %s", err);
	}
	if (c->json)
		print_json(&res);
	else
		tune_print_table(stdout, &res);
	fprintf(stderr, "tune: wrote %s/%s.{bpf.c%s,report.txt,csv,svg}\n",
		cli_abspath(o.out_dir, abs, sizeof(abs)), o.name,
		o.compile ? ",bpf.o (verified, strict consistency)" : "");
	tune_result_free(&res);
	return CLI_OK;
}
