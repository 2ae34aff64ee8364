/*
 * nccl_sweep.c - collective bandwidth sweep on real NCCL, one process
 * driving every local GPU (ncclCommInitAll), in the manner of nccl-tests,
 * or one rank of a job of several processes (--rank/--nranks/--id-file).
 *
 *   nccl_sweep [--op allreduce|allgather|reducescatter|broadcast|reduce|all|OP,OP...]
 *              [--min-bytes N] [--max-bytes N] [--factor F]
 *              [--iters N] [--warmup N] [--ngpus N] [--repeat N]
 *              [--csv FILE] [--label STR] [--no-check]
 *              [--rank R --nranks N --id-file FILE [--device D]]
 *   nccl_sweep --serve [--ngpus N | --rank R --nranks N --id-file FILE] [--max-bytes N]
 *
 * Several processes.  With --rank R --nranks N --id-file FILE this process
 * is rank R of an N-rank communicator on one GPU (--device, default 0):
 * rank 0 writes ncclGetUniqueId's bytes to FILE (a temporary name, then a
 * rename, so a reader never sees half of it), the others wait up to 120 s
 * for it.  N processes on one GPU, each with its own NCCL_HOSTID, are N
 * ranks on N "hosts" joined by NCCL's network transport (bench/gpu/ranks.sh
 * starts them that way).  Every rank runs the same operations in the same
 * order, checks its own outputs, and prints its own table (its own CUDA
 * event span: the ranks meet in every collective, so the spans agree up to
 * the launch skew); rank 0 alone appends to --csv.
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
 * communicators exist it prints "ready N" (N ranks), then answers each
 * stdin line "OP BYTES ITERS WARMUP" with "ok BYTES TIME_US WRONG" (BYTES
 * as above, rounded down to whole elements per rank), "skip" (less than
 * one element per rank) or "err TEXT", until end of input.  Buffers are
 * sized for --max-bytes of any operation.  Everything else this process
 * (and NCCL) writes to stdout goes to stderr, so the protocol stays clean.
 * Between requests no collective runs: that is when the tool rewrites the
 * cell its sweep policy forces.  With several processes, every rank reads
 * the same requests on its own stdin and answers for itself; the tool takes
 * the slowest rank's time.  Unless
 * --no-check, each size is also checked once: rank r's input is the float
 * whose four bytes are 0x3C+r, and the first and last elements of every
 * output that must hold a known value are compared with it (wrong counts
 * go into the #wrong column), so a policy that broke results would show.
 * --repeat runs the whole sweep (every op, every size) that many times:
 * a long job for the operator actions a check makes while it runs.
 * --until-file F repeats it until F exists (at most --repeat times, when
 * given): after each pass rank 0 looks for F and broadcasts what it found,
 * one 4-byte Broadcast, so every rank stops after the same pass.
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
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define MAX_GPUS 16
#define CHECK_ELEMS 256

enum op { OP_ALLREDUCE, OP_ALLGATHER, OP_REDUCESCATTER, OP_BROADCAST, OP_REDUCE };

static const char *const op_names[] = {
	"allreduce", "allgather", "reducescatter", "broadcast", "reduce",
};

#define NUM_OPS 5

struct opts {
	enum op op;
	unsigned ops;           /* bit per enum op: what the sweep runs, in enum order */
	size_t min_bytes, max_bytes;
	double factor;
	int iters, warmup, ngpus, repeat;
	const char *csv, *label;
	int check;
	int serve;
	/* several processes: this one is rank `rank` of `nranks` (0: one process) */
	int rank, nranks, device;
	const char *id_file, *until_file;
};

/* Who the local GPUs are in the communicator. */
struct job {
	int nlocal;             /* GPUs this process drives */
	int nranks;             /* ranks of the communicator */
	int rank0;              /* global rank of local GPU 0 */
};

struct gpu {
	int dev;
	ncclComm_t comm;
	cudaStream_t stream;
	cudaEvent_t start, stop;
	float *send, *recv;
	int *flag;              /* --until-file's broadcast */
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

/* Issues one operation on every local GPU inside one group. */
static ncclResult_t launch(const struct opts *o, struct gpu *g, const struct job *jb,
			   size_t send_cnt)
{
	ncclResult_t r = ncclGroupStart();
	int n = jb->nranks;

	for (int i = 0; i < jb->nlocal && r == ncclSuccess; i++) {
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

/* Compares head and tail of every local output with the expected values. */
static long check_outputs(const struct opts *o, struct gpu *g, const struct job *jb,
			  size_t send_cnt, size_t recv_cnt)
{
	float host[CHECK_ELEMS];
	long wrong = 0;

	for (int r = 0; r < jb->nlocal; r++) {
		size_t m = recv_cnt < CHECK_ELEMS / 2 ? recv_cnt : CHECK_ELEMS / 2;
		size_t offs[2] = { 0, recv_cnt - m };

		for (int part = 0; part < 2; part++) {
			if (cudaSetDevice(g[r].dev) != cudaSuccess ||
			    cudaMemcpy(host, g[r].recv + offs[part], m * sizeof(float),
				       cudaMemcpyDeviceToHost) != cudaSuccess)
				return -1;
			for (size_t i = 0; i < m; i++) {
				double want = expected(o->op, jb->nranks, jb->rank0 + r,
						       offs[part] + i, send_cnt);

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
	fprintf(f, "usage: nccl_sweep [--op allreduce|allgather|reducescatter|broadcast|reduce|all|OP,OP...]\n"
		   "                  [-b|--min-bytes N[K|M|G]] [-e|--max-bytes N[K|M|G]] [-f|--factor F]\n"
		   "                  [-n|--iters N] [-w|--warmup N] [-g|--ngpus N] [-c|--check 0|1]\n"
		   "                  [--repeat N] [--until-file FILE] [--csv FILE] [--label STR] [--no-check]\n"
		   "                  [--rank R --nranks N --id-file FILE [--device D]]\n"
		   "       nccl_sweep --serve [--ngpus N | --rank R --nranks N --id-file FILE] [--max-bytes N[K|M|G]]\n"
		   "short options mean what they mean to nccl-tests' *_perf binaries\n");
}

/* "allreduce", "all" or "allgather,reducescatter": a bit per op; 0 when unknown. */
static unsigned parse_ops(const char *s)
{
	char buf[256], *save = NULL;
	unsigned ops = 0;

	if (!strcmp(s, "all"))
		return (1u << NUM_OPS) - 1;
	if (strlen(s) >= sizeof(buf))
		return 0;
	strcpy(buf, s);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int i;

		for (i = 0; i < NUM_OPS && strcmp(t, op_names[i]); i++)
			;
		if (i == NUM_OPS) {
			fprintf(stderr, "nccl_sweep: unknown op '%s'\n", t);
			return 0;
		}
		ops |= 1u << i;
	}
	return ops;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	enum { O_REPEAT = 256, O_RANK, O_NRANKS, O_ID_FILE, O_DEVICE, O_UNTIL };
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
		{ "repeat", required_argument, 0, O_REPEAT },
		{ "rank", required_argument, 0, O_RANK },
		{ "nranks", required_argument, 0, O_NRANKS },
		{ "id-file", required_argument, 0, O_ID_FILE },
		{ "device", required_argument, 0, O_DEVICE },
		{ "until-file", required_argument, 0, O_UNTIL },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c;

	*o = (struct opts){ .op = OP_ALLREDUCE, .ops = 1u << OP_ALLREDUCE, .min_bytes = 8,
			    .max_bytes = 1ull << 30, .factor = 2.0, .iters = 20, .warmup = 5,
			    .ngpus = 0, .repeat = 0, .label = "", .check = 1, .rank = -1 };
	/* Short options follow nccl-tests; the others have no short form. */
	while ((c = getopt_long(argc, argv, "b:e:f:n:w:g:c:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->ops = parse_ops(optarg);
			if (!o->ops)
				return -EINVAL;
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
		case O_REPEAT: o->repeat = atoi(optarg); break;
		case O_RANK: o->rank = atoi(optarg); break;
		case O_NRANKS: o->nranks = atoi(optarg); break;
		case O_ID_FILE: o->id_file = optarg; break;
		case O_DEVICE: o->device = atoi(optarg); break;
		case O_UNTIL: o->until_file = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -EINVAL;
		}
	}
	if (optind != argc || o->factor <= 1.0 || o->iters < 1 || o->warmup < 0 ||
	    o->ngpus < 0 || o->ngpus > MAX_GPUS || o->min_bytes < 1 || o->repeat < 0 ||
	    o->max_bytes < o->min_bytes || o->device < 0) {
		usage(stderr);
		return -EINVAL;
	}
	if (!o->repeat)
		o->repeat = o->until_file ? INT32_MAX : 1;
	/* The three go together, and exclude --ngpus. */
	if ((o->rank >= 0 || o->nranks || o->id_file) &&
	    (o->rank < 0 || o->nranks < 1 || o->rank >= o->nranks || !o->id_file || o->ngpus)) {
		fprintf(stderr, "nccl_sweep: --rank R --nranks N --id-file FILE go together "
				"(0 <= R < N), without --ngpus\n");
		return -EINVAL;
	}
	return 0;
}

/*
 * The communicator's unique id through a file: rank 0 creates it and
 * renames it into place, the others wait for it (up to 120 s).
 */
static int exchange_id(const struct opts *o, ncclUniqueId *id)
{
	char tmp[4096];
	FILE *f;

	if (o->rank == 0) {
		ncclResult_t r = ncclGetUniqueId(id);

		if (r != ncclSuccess) {
			fprintf(stderr, "nccl_sweep: ncclGetUniqueId: %s\n", ncclGetErrorString(r));
			return -1;
		}
		snprintf(tmp, sizeof(tmp), "%s.tmp.%d", o->id_file, (int)getpid());
		f = fopen(tmp, "wb");
		if (!f || fwrite(id, sizeof(*id), 1, f) != 1 || fclose(f) || rename(tmp, o->id_file)) {
			fprintf(stderr, "nccl_sweep: cannot write %s: %s\n", o->id_file, strerror(errno));
			return -1;
		}
		return 0;
	}
	for (int waited_ms = 0; waited_ms < 120000; waited_ms += 20) {
		f = fopen(o->id_file, "rb");
		if (f) {
			size_t got = fread(id, sizeof(*id), 1, f);

			fclose(f);
			if (got == 1)
				return 0;
		}
		nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 }, NULL);
	}
	fprintf(stderr, "nccl_sweep: rank %d: no id in %s after 120 s\n", o->rank, o->id_file);
	return -1;
}

/*
 * Times one size; returns 0 and fills *time_us and *wrong, or -1 after
 * printing the failure.  Every local GPU's events bracket the same timed
 * operations, so the largest span is the collective's time.
 */
static int run_size(const struct opts *o, struct gpu *g, const struct job *jb, size_t send_cnt,
		    size_t recv_cnt, double *time_us, long *wrong)
{
	float ms, worst = 0;
	int n = jb->nlocal;

	for (int i = 0; i < o->warmup; i++)
		NCCL_TRY(launch(o, g, jb, send_cnt));
	for (int i = 0; i < n; i++) {
		CUDA_TRY(cudaSetDevice(g[i].dev));
		CUDA_TRY(cudaEventRecord(g[i].start, g[i].stream));
	}
	for (int i = 0; i < o->iters; i++)
		NCCL_TRY(launch(o, g, jb, send_cnt));
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
		*wrong = check_outputs(o, g, jb, send_cnt, recv_cnt);
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
static int serve(const struct opts *base, struct gpu *g, const struct job *jb, FILE *proto)
{
	char line[256], opname[32];
	unsigned long long bytes;
	int iters, warmup, i;

	fprintf(proto, "ready %d\n", jb->nranks);
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
		for (i = 0; i < NUM_OPS && strcmp(opname, op_names[i]); i++)
			;
		if (i == NUM_OPS) {
			fprintf(proto, "err unknown op %s\n", opname);
			fflush(proto);
			continue;
		}
		o.op = (enum op)i;
		o.iters = iters;
		o.warmup = warmup;
		counts(o.op, (size_t)bytes, jb->nranks, &send_cnt, &recv_cnt);
		if (!send_cnt || !recv_cnt) {
			fprintf(proto, "skip\n");
			fflush(proto);
			continue;
		}
		got = (send_cnt > recv_cnt ? send_cnt : recv_cnt) * sizeof(float);
		if (run_size(&o, g, jb, send_cnt, recv_cnt, &t_us, &wrong)) {
			fprintf(proto, "err %s %zu B failed\n", opname, got);
			fflush(proto);
			return -1;
		}
		fprintf(proto, "ok %zu %.3f %ld\n", got, t_us, wrong);
		fflush(proto);
	}
	return 0;
}

/*
 * After a pass: whether --until-file exists, as rank 0 saw it (broadcast,
 * so every rank stops after the same pass).  -1 when a collective failed.
 */
static int until_reached(const struct opts *o, struct gpu *g, const struct job *jb)
{
	int seen = jb->rank0 == 0 && access(o->until_file, F_OK) == 0;

	for (int i = 0; i < jb->nlocal; i++) {
		CUDA_TRY(cudaSetDevice(g[i].dev));
		CUDA_TRY(cudaMemcpy(g[i].flag, &seen, sizeof(seen), cudaMemcpyHostToDevice));
	}
	NCCL_TRY(ncclGroupStart());
	for (int i = 0; i < jb->nlocal; i++)
		NCCL_TRY(ncclBroadcast(g[i].flag, g[i].flag, 1, ncclInt32, 0, g[i].comm, g[i].stream));
	NCCL_TRY(ncclGroupEnd());
	CUDA_TRY(cudaSetDevice(g[0].dev));
	CUDA_TRY(cudaStreamSynchronize(g[0].stream));
	CUDA_TRY(cudaMemcpy(&seen, g[0].flag, sizeof(seen), cudaMemcpyDeviceToHost));
	return seen;
cleanup:
	return -1;
}

/* One pass over the sizes of o->op; 0, or -1 when a collective failed. */
static int sweep_op(const struct opts *o, struct gpu *g, const struct job *jb, FILE *csv,
		    double *busbw_sum, long *n_sizes, long *wrong_sum)
{
	printf("# op %s\n# %12s %12s %10s %12s %12s %8s\n", op_names[o->op], "size(B)", "count",
	       "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
	for (double s = (double)o->min_bytes; s <= (double)o->max_bytes; s *= o->factor) {
		size_t send_cnt, recv_cnt, bytes;
		double t_us, algbw, busbw;
		long wrong;

		counts(o->op, (size_t)s, jb->nranks, &send_cnt, &recv_cnt);
		if (!send_cnt || !recv_cnt)
			continue; /* smaller than one element per rank */
		bytes = (send_cnt > recv_cnt ? send_cnt : recv_cnt) * sizeof(float);
		if (run_size(o, g, jb, send_cnt, recv_cnt, &t_us, &wrong))
			return -1;
		algbw = (double)bytes / (t_us * 1e3); /* bytes/ns = GB/s */
		busbw = algbw * bus_factor(o->op, jb->nranks);
		printf("  %12zu %12zu %10.2f %12.2f %12.2f %8ld\n", bytes,
		       o->op == OP_REDUCESCATTER ? recv_cnt : send_cnt, t_us, algbw, busbw, wrong);
		if (csv)
			fprintf(csv, "%s,%s,%d,%zu,%.3f,%.3f,%.3f,%ld\n", o->label, op_names[o->op],
				jb->nranks, bytes, t_us, algbw, busbw, wrong);
		*busbw_sum += busbw;
		*wrong_sum += wrong;
		(*n_sizes)++;
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct gpu g[MAX_GPUS] = { 0 };
	ncclComm_t comms[MAX_GPUS] = { 0 };
	int devs[MAX_GPUS], n = 0, ver = 0, ret = 1;
	struct job jb = { 0 };
	size_t max_send = 0, max_recv = 0;
	FILE *csv = NULL;
	struct opts o;
	FILE *proto = NULL;
	double busbw_sum = 0;
	long n_sizes = 0, wrong_sum = 0;

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
	if (o.nranks) {
		n = 1;
	} else {
		CUDA_TRY(cudaGetDeviceCount(&n));
		if (o.ngpus && o.ngpus < n)
			n = o.ngpus;
		if (n > MAX_GPUS)
			n = MAX_GPUS;
	}
	if (n < 1) {
		fprintf(stderr, "nccl_sweep: no GPU\n");
		return 1;
	}
	jb.nlocal = n;
	jb.nranks = o.nranks ? o.nranks : n;
	jb.rank0 = o.nranks ? o.rank : 0;
	if (o.csv && jb.rank0 == 0) {
		csv = fopen(o.csv, "a");
		if (!csv) {
			fprintf(stderr, "nccl_sweep: %s: %s\n", o.csv, strerror(errno));
			return 1;
		}
	}

	/* Buffers for the largest size of any op that runs (any op when serving). */
	for (int op = 0; op < NUM_OPS; op++) {
		size_t s_cnt, r_cnt;

		if (!o.serve && !(o.ops & (1u << op)))
			continue;
		counts((enum op)op, o.max_bytes, jb.nranks, &s_cnt, &r_cnt);
		if (s_cnt > max_send)
			max_send = s_cnt;
		if (r_cnt > max_recv)
			max_recv = r_cnt;
	}
	for (int i = 0; i < n; i++) {
		struct cudaDeviceProp prop;
		int dev = o.nranks ? o.device : i;

		devs[i] = g[i].dev = dev;
		CUDA_TRY(cudaSetDevice(dev));
		CUDA_TRY(cudaGetDeviceProperties(&prop, dev));
		printf("# GPU %d: %s (rank %d of %d)\n", dev, prop.name, jb.rank0 + i, jb.nranks);
		CUDA_TRY(cudaStreamCreateWithFlags(&g[i].stream, cudaStreamNonBlocking));
		CUDA_TRY(cudaEventCreate(&g[i].start));
		CUDA_TRY(cudaEventCreate(&g[i].stop));
		CUDA_TRY(cudaMalloc((void **)&g[i].send, (max_send ? max_send : 1) * sizeof(float)));
		CUDA_TRY(cudaMalloc((void **)&g[i].recv, (max_recv ? max_recv : 1) * sizeof(float)));
		CUDA_TRY(cudaMemset(g[i].send, 0x3C + jb.rank0 + i, max_send * sizeof(float)));
		CUDA_TRY(cudaMemset(g[i].recv, 0, max_recv * sizeof(float)));
		CUDA_TRY(cudaMalloc((void **)&g[i].flag, sizeof(int)));
	}
	if (o.nranks) {
		ncclUniqueId id;

		if (exchange_id(&o, &id))
			goto cleanup;
		NCCL_TRY(ncclCommInitRank(&comms[0], o.nranks, id, o.rank));
	} else {
		NCCL_TRY(ncclCommInitAll(comms, n, devs));
	}
	for (int i = 0; i < n; i++)
		g[i].comm = comms[i];
	NCCL_TRY(ncclGetVersion(&ver));
	printf("# NCCL %d.%d.%d, %d rank(s) (%d in this process, pid %d), float32, %d warmup + %d "
	       "timed iterations%s%s\n", ver / 10000, ver / 100 % 100, ver % 100, jb.nranks, n,
	       (int)getpid(), o.warmup, o.iters, *o.label ? ", label " : "", o.label);
	fflush(stdout);
	if (o.serve) {
		ret = serve(&o, g, &jb, proto) ? 1 : 0;
		goto cleanup;
	}
	for (int rep = 0; rep < o.repeat; rep++) {
		int stop;

		for (int op = 0; op < NUM_OPS; op++) {
			struct opts oo = o;

			if (!(o.ops & (1u << op)))
				continue;
			oo.op = (enum op)op;
			if (sweep_op(&oo, g, &jb, rep == 0 ? csv : NULL, &busbw_sum, &n_sizes,
				     &wrong_sum))
				goto cleanup;
		}
		if (o.until_file && (stop = until_reached(&o, g, &jb)) != 0) {
			if (stop < 0)
				goto cleanup;
			printf("# %s seen after pass %d\n", o.until_file, rep + 1);
			break;
		}
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
		cudaFree(g[i].flag);
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
