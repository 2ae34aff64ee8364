/*
 * nccl_sweep.c - collective bandwidth sweep on real NCCL, one process
 * driving every local GPU (ncclCommInitAll), in the manner of nccl-tests.
 *
 *   nccl_sweep [--op allreduce|allgather|reducescatter|broadcast|reduce]
 *              [--min-bytes N] [--max-bytes N] [--factor F]
 *              [--iters N] [--warmup N] [--ngpus N]
 *              [--csv FILE] [--label STR] [--no-check]
 *   nccl_sweep --serve [--ngpus N] [--max-bytes N]
 *
 * Sizes double (or grow by --factor) from --min-bytes (8) to --max-bytes
 * (1 GiB).  "size" is what nccl-tests prints: the bytes of the largest
 * buffer of the operation (AllGather: the gathered output; ReduceScatter:
 * the full input), of float32 elements.  Each size runs --warmup untimed
 * and --iters timed operations back to back; the time per operation is
 * the largest, over GPUs, of the span between CUDA events recorded on that
 * GPU's stream before and after the timed operations.  Then
 *
 *     algbw = size / time
 *     busbw = algbw * factor   (AllReduce 2(n-1)/n; AllGather and
 *                               ReduceScatter (n-1)/n; Broadcast, Reduce 1)
 *
 * exactly as nccl-tests defines them (docs/PERFORMANCE.md there).
 *
 * --serve is the measuring end of `ncclbpf tune --backend nccl`: once the
 * communicators exist it prints "ready N" (N GPUs), then answers each
 * stdin line "OP BYTES ITERS WARMUP" with "ok BYTES TIME_US WRONG" (BYTES
 * as above, rounded down to whole elements per rank), "skip" (less than
 * one element per rank) or "err TEXT", until end of input.  Buffers are
 * sized for --max-bytes of any operation.  Everything else this process
 * (and NCCL) writes to stdout goes to stderr, so the protocol stays clean.
 * Between requests no collective runs: that is when the tool rewrites the
 * cell its sweep policy forces.  Unless
 * --no-check, each size is also checked once: rank r's input is the float
 * whose four bytes are 0x3C+r, and the first and last elements of every
 * output that must hold a known value are compared with it (wrong counts
 * go into the #wrong column), so a policy that broke results would show.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define MAX_GPUS 16
#define CHECK_ELEMS 256

enum op { OP_ALLREDUCE, OP_ALLGATHER, OP_REDUCESCATTER, OP_BROADCAST, OP_REDUCE };

static const char *const op_names[] = {
	"allreduce", "allgather", "reducescatter", "broadcast", "reduce",
};

struct opts {
	enum op op;
	size_t min_bytes, max_bytes;
	double factor;
	int iters, warmup, ngpus;
	const char *csv, *label;
	int check;
	int serve;
};

struct gpu {
	int dev;
	ncclComm_t comm;
	cudaStream_t stream;
	cudaEvent_t start, stop;
	float *send, *recv;
};

#define CUDA_TRY(call) do { \
	cudaError_t e_ = (call); \
	if (e_ != cudaSuccess) { \
		fprintf(stderr, "nccl_sweep: %s:%d %s: %s\n", __FILE__, __LINE__, #call, \
			cudaGetErrorString(e_)); \
		goto cleanup; \
	} } while (0)

#define NCCL_TRY(call) do { \
	ncclResult_t r_ = (call); \
	if (r_ != ncclSuccess) { \
		fprintf(stderr, "nccl_sweep: %s:%d %s: %s\n", __FILE__, __LINE__, #call, \
			ncclGetErrorString(r_)); \
		goto cleanup; \
	} } while (0)

static double bus_factor(enum op op, int n)
{
	switch (op) {
	case OP_ALLREDUCE:
		return 2.0 * (n - 1) / n;
	case OP_ALLGATHER:
	case OP_REDUCESCATTER:
		return (double)(n - 1) / n;
	default:
		return 1.0;
	}
}

/* Value of a float whose four bytes are all b (what cudaMemset writes). */
static float pattern(int rank)
{
	uint32_t b = 0x3C + (uint32_t)rank, u = b * 0x01010101u;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* Elements per rank buffer (send count) and in the output for size bytes. */
static void counts(enum op op, size_t bytes, int n, size_t *send_cnt, size_t *recv_cnt)
{
	size_t elems = bytes / sizeof(float);

	switch (op) {
	case OP_ALLGATHER:
		*send_cnt = elems / n;
		*recv_cnt = *send_cnt * n;
		break;
	case OP_REDUCESCATTER:
		*recv_cnt = elems / n;
		*send_cnt = *recv_cnt * n;
		break;
	default:
		*send_cnt = *recv_cnt = elems;
	}
}

/* Issues one operation on every GPU inside one group. */
static ncclResult_t launch(const struct opts *o, struct gpu *g, int n, size_t send_cnt)
{
	ncclResult_t r = ncclGroupStart();

	for (int i = 0; i < n && r == ncclSuccess; i++) {
		switch (o->op) {
		case OP_ALLREDUCE:
			r = ncclAllReduce(g[i].send, g[i].recv, send_cnt, ncclFloat, ncclSum,
					  g[i].comm, g[i].stream);
			break;
		case OP_ALLGATHER:
			r = ncclAllGather(g[i].send, g[i].recv, send_cnt, ncclFloat, g[i].comm,
					  g[i].stream);
			break;
		case OP_REDUCESCATTER:
			r = ncclReduceScatter(g[i].send, g[i].recv, send_cnt / n, ncclFloat, ncclSum,
					      g[i].comm, g[i].stream);
			break;
		case OP_BROADCAST:
			r = ncclBroadcast(g[i].send, g[i].recv, send_cnt, ncclFloat, 0, g[i].comm,
					  g[i].stream);
			break;
		case OP_REDUCE:
			r = ncclReduce(g[i].send, g[i].recv, send_cnt, ncclFloat, ncclSum, 0,
				       g[i].comm, g[i].stream);
			break;
		}
	}
	ncclResult_t e = ncclGroupEnd();
	return r != ncclSuccess ? r : e;
}

/* Expected value of output element idx on rank r, or NAN when undefined. */
static double expected(enum op op, int n, int r, size_t idx, size_t send_cnt)
{
	double sum = 0;

	for (int k = 0; k < n; k++)
		sum += pattern(k);
	switch (op) {
	case OP_ALLREDUCE:
	case OP_REDUCESCATTER:
		return sum;
	case OP_ALLGATHER:
		return pattern((int)(idx / send_cnt));
	case OP_BROADCAST:
		return pattern(0);
	case OP_REDUCE:
		return r == 0 ? sum : NAN;
	}
	return NAN;
}

/* Compares head and tail of every output with the expected values. */
static long check_outputs(const struct opts *o, struct gpu *g, int n, size_t send_cnt,
			  size_t recv_cnt)
{
	float host[CHECK_ELEMS];
	long wrong = 0;

	for (int r = 0; r < n; r++) {
		size_t m = recv_cnt < CHECK_ELEMS / 2 ? recv_cnt : CHECK_ELEMS / 2;
		size_t offs[2] = { 0, recv_cnt - m };

		for (int part = 0; part < 2; part++) {
			if (cudaSetDevice(g[r].dev) != cudaSuccess ||
			    cudaMemcpy(host, g[r].recv + offs[part], m * sizeof(float),
				       cudaMemcpyDeviceToHost) != cudaSuccess)
				return -1;
			for (size_t i = 0; i < m; i++) {
				double want = expected(o->op, n, r, offs[part] + i, send_cnt);

				if (!isnan(want) && fabs(host[i] - want) > 1e-4 * fabs(want))
					wrong++;
			}
		}
	}
	return wrong;
}

static int parse_size(const char *s, size_t *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v < 0)
		return -EINVAL;
	switch (*end) {
	case 'G': case 'g': v *= 1024; /* fallthrough */
	case 'M': case 'm': v *= 1024; /* fallthrough */
	case 'K': case 'k': v *= 1024; end++; break;
	case '\0': break;
	default: return -EINVAL;
	}
	if (*end)
		return -EINVAL;
	*out = (size_t)v;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: nccl_sweep [--op allreduce|allgather|reducescatter|broadcast|reduce]\n"
		   "                  [-b|--min-bytes N[K|M|G]] [-e|--max-bytes N[K|M|G]] [-f|--factor F]\n"
		   "                  [-n|--iters N] [-w|--warmup N] [-g|--ngpus N] [-c|--check 0|1]\n"
		   "                  [--csv FILE] [--label STR] [--no-check]\n"
		   "       nccl_sweep --serve [--ngpus N] [--max-bytes N[K|M|G]]\n"
		   "short options mean what they mean to nccl-tests' *_perf binaries\n");
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "op", required_argument, 0, 'o' },
		{ "min-bytes", required_argument, 0, 'b' },
		{ "max-bytes", required_argument, 0, 'e' },
		{ "factor", required_argument, 0, 'f' },
		{ "iters", required_argument, 0, 'n' },
		{ "warmup", required_argument, 0, 'w' },
		{ "ngpus", required_argument, 0, 'g' },
		{ "check", required_argument, 0, 'c' },
		{ "csv", required_argument, 0, 'v' },
		{ "label", required_argument, 0, 'l' },
		{ "no-check", no_argument, 0, 'C' },
		{ "serve", no_argument, 0, 'S' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c, i;

	*o = (struct opts){ .op = OP_ALLREDUCE, .min_bytes = 8, .max_bytes = 1ull << 30,
			    .factor = 2.0, .iters = 20, .warmup = 5, .ngpus = 0,
			    .label = "", .check = 1 };
	/* Short options follow nccl-tests; --op, --csv, --label, --serve have no short form. */
	while ((c = getopt_long(argc, argv, "b:e:f:n:w:g:c:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			for (i = 0; i < 5 && strcmp(optarg, op_names[i]); i++)
				;
			if (i == 5) {
				fprintf(stderr, "nccl_sweep: unknown op '%s'\n", optarg);
				return -EINVAL;
			}
			o->op = (enum op)i;
			break;
		case 'b':
		case 'e':
			if (parse_size(optarg, c == 'b' ? &o->min_bytes : &o->max_bytes)) {
				fprintf(stderr, "nccl_sweep: bad size '%s'\n", optarg);
				return -EINVAL;
			}
			break;
		case 'f': o->factor = atof(optarg); break;
		case 'n': o->iters = atoi(optarg); break;
		case 'w': o->warmup = atoi(optarg); break;
		case 'g': o->ngpus = atoi(optarg); break;
		case 'c':
			if (strcmp(optarg, "0") && strcmp(optarg, "1")) {
				fprintf(stderr, "nccl_sweep: -c/--check takes 0 or 1\n");
				return -EINVAL;
			}
			o->check = optarg[0] == '1';
			break;
		case 'v': o->csv = optarg; break;
		case 'l': o->label = optarg; break;
		case 'C': o->check = 0; break;
		case 'S': o->serve = 1; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -EINVAL;
		}
	}
	if (optind != argc || o->factor <= 1.0 || o->iters < 1 || o->warmup < 0 ||
	    o->ngpus < 0 || o->ngpus > MAX_GPUS || o->min_bytes < 1 ||
	    o->max_bytes < o->min_bytes) {
		usage(stderr);
		return -EINVAL;
	}
	return 0;
}

/*
 * Times one size; returns 0 and fills *time_us and *wrong, or -1 after
 * printing the failure.  Every GPU's events bracket the same timed
 * operations, so the largest span is the collective's time.
 */
static int run_size(const struct opts *o, struct gpu *g, int n, size_t send_cnt,
		    size_t recv_cnt, double *time_us, long *wrong)
{
	float ms, worst = 0;

	for (int i = 0; i < o->warmup; i++)
		NCCL_TRY(launch(o, g, n, send_cnt));
	for (int i = 0; i < n; i++) {
		CUDA_TRY(cudaSetDevice(g[i].dev));
		CUDA_TRY(cudaEventRecord(g[i].start, g[i].stream));
	}
	for (int i = 0; i < o->iters; i++)
		NCCL_TRY(launch(o, g, n, send_cnt));
	for (int i = 0; i < n; i++) {
		CUDA_TRY(cudaSetDevice(g[i].dev));
		CUDA_TRY(cudaEventRecord(g[i].stop, g[i].stream));
	}
	for (int i = 0; i < n; i++) {
		CUDA_TRY(cudaSetDevice(g[i].dev));
		CUDA_TRY(cudaEventSynchronize(g[i].stop));
		CUDA_TRY(cudaEventElapsedTime(&ms, g[i].start, g[i].stop));
		if (ms > worst)
			worst = ms;
	}
	*time_us = worst * 1000.0 / o->iters;
	*wrong = 0;
	if (o->check) {
		/* Outputs of the last timed operation: inputs never change. */
		*wrong = check_outputs(o, g, n, send_cnt, recv_cnt);
		if (*wrong < 0) {
			fprintf(stderr, "nccl_sweep: reading results back failed\n");
			return -1;
		}
	}
	return 0;
cleanup:
	return -1;
}

/*
 * The --serve loop: one request per line on stdin, one answer per line on
 * proto.  Returns 0 at end of input, -1 when a collective failed (the
 * communicators are then unusable).
 */
static int serve(const struct opts *base, struct gpu *g, int n, FILE *proto)
{
	char line[256], opname[32];
	unsigned long long bytes;
	int iters, warmup, i;

	fprintf(proto, "ready %d\n", n);
	fflush(proto);
	while (fgets(line, sizeof(line), stdin)) {
		struct opts o = *base;
		size_t send_cnt, recv_cnt, got;
		double t_us;
		long wrong;

		if (sscanf(line, "%31s %llu %d %d", opname, &bytes, &iters, &warmup) != 4 ||
		    iters < 1 || warmup < 0 || bytes > base->max_bytes) {
			fprintf(proto, "err bad request (OP BYTES ITERS WARMUP, BYTES <= %zu)\n",
				base->max_bytes);
			fflush(proto);
			continue;
		}
		for (i = 0; i < 5 && strcmp(opname, op_names[i]); i++)
			;
		if (i == 5) {
			fprintf(proto, "err unknown op %s\n", opname);
			fflush(proto);
			continue;
		}
		o.op = (enum op)i;
		o.iters = iters;
		o.warmup = warmup;
		counts(o.op, (size_t)bytes, n, &send_cnt, &recv_cnt);
		if (!send_cnt || !recv_cnt) {
			fprintf(proto, "skip\n");
			fflush(proto);
			continue;
		}
		got = (send_cnt > recv_cnt ? send_cnt : recv_cnt) * sizeof(float);
		if (run_size(&o, g, n, send_cnt, recv_cnt, &t_us, &wrong)) {
			fprintf(proto, "err %s %zu B failed\n", opname, got);
			fflush(proto);
			return -1;
		}
		fprintf(proto, "ok %zu %.3f %ld\n", got, t_us, wrong);
		fflush(proto);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct gpu g[MAX_GPUS] = { 0 };
	ncclComm_t comms[MAX_GPUS] = { 0 };
	int devs[MAX_GPUS], n = 0, ver = 0, ret = 1;
	size_t max_send, max_recv;
	FILE *csv = NULL;
	struct opts o;
	FILE *proto = NULL;

	if (parse_args(argc, argv, &o))
		return 2;
	if (o.serve) {
		/* The protocol keeps the real stdout; everything else goes to stderr. */
		int fd = dup(1);

		proto = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (!proto || dup2(2, 1) < 0) {
			fprintf(stderr, "nccl_sweep: --serve: cannot set up the protocol stream\n");
			return 1;
		}
	}
	CUDA_TRY(cudaGetDeviceCount(&n));
	if (o.ngpus && o.ngpus < n)
		n = o.ngpus;
	if (n > MAX_GPUS)
		n = MAX_GPUS;
	if (n < 1) {
		fprintf(stderr, "nccl_sweep: no GPU\n");
		return 1;
	}
	if (o.csv) {
		csv = fopen(o.csv, "a");
		if (!csv) {
			fprintf(stderr, "nccl_sweep: %s: %s\n", o.csv, strerror(errno));
			return 1;
		}
	}

	counts(o.op, o.max_bytes, n, &max_send, &max_recv);
	if (o.serve) /* any operation up to --max-bytes */
		max_send = max_recv = o.max_bytes / sizeof(float);
	for (int i = 0; i < n; i++) {
		struct cudaDeviceProp prop;

		devs[i] = g[i].dev = i;
		CUDA_TRY(cudaSetDevice(i));
		CUDA_TRY(cudaGetDeviceProperties(&prop, i));
		printf("# GPU %d: %s\n", i, prop.name);
		CUDA_TRY(cudaStreamCreateWithFlags(&g[i].stream, cudaStreamNonBlocking));
		CUDA_TRY(cudaEventCreate(&g[i].start));
		CUDA_TRY(cudaEventCreate(&g[i].stop));
		CUDA_TRY(cudaMalloc((void **)&g[i].send, (max_send ? max_send : 1) * sizeof(float)));
		CUDA_TRY(cudaMalloc((void **)&g[i].recv, (max_recv ? max_recv : 1) * sizeof(float)));
		CUDA_TRY(cudaMemset(g[i].send, 0x3C + i, max_send * sizeof(float)));
		CUDA_TRY(cudaMemset(g[i].recv, 0, max_recv * sizeof(float)));
	}
	NCCL_TRY(ncclCommInitAll(comms, n, devs));
	for (int i = 0; i < n; i++)
		g[i].comm = comms[i];
	NCCL_TRY(ncclGetVersion(&ver));
	printf("# NCCL %d.%d.%d, %d GPU(s), op %s, float32, %d warmup + %d timed iterations%s%s\n",
	       ver / 10000, ver / 100 % 100, ver % 100, n, op_names[o.op], o.warmup, o.iters,
	       *o.label ? ", label " : "", o.label);
	if (o.serve) {
		ret = serve(&o, g, n, proto) ? 1 : 0;
		goto cleanup;
	}
	printf("# %12s %12s %10s %12s %12s %8s\n", "size(B)", "count", "time(us)",
	       "algbw(GB/s)", "busbw(GB/s)", "#wrong");

	double busbw_sum = 0;
	long n_sizes = 0, wrong_sum = 0;

	for (double s = (double)o.min_bytes; s <= (double)o.max_bytes; s *= o.factor) {
		size_t send_cnt, recv_cnt, bytes;
		double t_us, algbw, busbw;
		long wrong;

		counts(o.op, (size_t)s, n, &send_cnt, &recv_cnt);
		if (!send_cnt || !recv_cnt)
			continue; /* smaller than one element per rank */
		bytes = (send_cnt > recv_cnt ? send_cnt : recv_cnt) * sizeof(float);
		if (run_size(&o, g, n, send_cnt, recv_cnt, &t_us, &wrong))
			goto cleanup;
		algbw = (double)bytes / (t_us * 1e3); /* bytes/ns = GB/s */
		busbw = algbw * bus_factor(o.op, n);
		printf("  %12zu %12zu %10.2f %12.2f %12.2f %8ld\n", bytes,
		       o.op == OP_REDUCESCATTER ? recv_cnt : send_cnt, t_us, algbw, busbw, wrong);
		if (csv)
			fprintf(csv, "%s,%s,%d,%zu,%.3f,%.3f,%.3f,%ld\n", o.label, op_names[o.op],
				n, bytes, t_us, algbw, busbw, wrong);
		busbw_sum += busbw;
		wrong_sum += wrong;
		n_sizes++;
		fflush(stdout);
	}
	/* nccl-tests' closing lines, so scripts that parse them read ours too. */
	printf("# Out of bounds values : %ld %s\n", wrong_sum, wrong_sum ? "FAILED" : "OK");
	printf("# Avg bus bandwidth    : %g \n", n_sizes ? busbw_sum / (double)n_sizes : 0.0);
	ret = wrong_sum ? 1 : 0;
cleanup:
	for (int i = 0; i < n; i++)
		if (comms[i])
			ncclCommDestroy(comms[i]);
	for (int i = 0; i < n; i++) {
		if (cudaSetDevice(g[i].dev) != cudaSuccess)
			continue;
		cudaFree(g[i].send);
		cudaFree(g[i].recv);
		if (g[i].start)
			cudaEventDestroy(g[i].start);
		if (g[i].stop)
			cudaEventDestroy(g[i].stop);
		if (g[i].stream)
			cudaStreamDestroy(g[i].stream);
	}
	if (csv)
		fclose(csv);
	if (proto)
		fclose(proto);
	return ret;
}
