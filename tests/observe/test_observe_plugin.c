// SPDX-License-Identifier: Apache-2.0
/*
 * test_observe_plugin.c - `ncclbpf observe` with no target: it must find
 * the processes running the plugin through their control sockets, label
 * them with their ranks and communicators, and show their collective P99
 * beside the kernel's columns.  Twice: a job of our own user (its socket in
 * NCCLBPF_CTL_DIR), and, as root, a job of another user in that user's
 * default runtime directory, which the plugin serves only to its own uid.
 *
 * Each job is a child that loads the real profiler and tuner plugins through
 * the NCCL emulator (one communicator, registered by both) and completes one
 * AllReduce every millisecond with a GPU time of 40 us, so its P99 lies in
 * the [32, 64) us histogram bucket.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emu_test.h"

#define RANK 3
#define COMM UINT64_C(0xfeed)
#define LAT_NS 40000

static int failures;

static void job(int ready_fd)
{
	const struct emu_topo topo = { .n_ranks = 8, .n_nodes = 1 };
	const nbpf_profiler_v5_t *prof;
	struct emu_plugin pl, tpl;
	struct emu_tuner tuner;
	char spec[1024], err[512];
	void *ctx = NULL, *other[8] = { 0 };
	int mask = 0;

	snprintf(spec, sizeof(spec), "%s/latency_hist.bpf.o", POLICY_DIR);
	emu_set_policy(spec);
	if (emu_open(&pl, EMU_PROFILER, EMU_PLUGIN, 5, err, sizeof(err))) {
		fprintf(stderr, "job: %s\n", err);
		_exit(1);
	}
	prof = pl.table;
	if (prof->init(&ctx, COMM, &mask, "c", 1, 8, RANK, emu_logger)) {
		fprintf(stderr, "job: profiler init failed\n");
		_exit(1);
	}
	/* One process driving all 8 GPUs of the node: every rank of the communicator is here. */
	for (int r = 0; r < 8; r++)
		if (r != RANK && prof->init(&other[r], COMM, &mask, "c", 1, 8, r, emu_logger)) {
			fprintf(stderr, "job: profiler init of rank %d failed\n", r);
			_exit(1);
		}
	/* The tuner registers the same communicator without knowing the rank: listed once. */
	if (emu_open(&tpl, EMU_TUNER, EMU_PLUGIN, 5, err, sizeof(err)) ||
	    emu_tuner_init(&tuner, &tpl, COMM, &topo, emu_logger)) {
		fprintf(stderr, "job: tuner: %s\n", err);
		_exit(1);
	}
	if (write(ready_fd, "r", 1) != 1)
		_exit(1);
	close(ready_fd);
	for (uint64_t seq = 0;; seq++) { /* until the test kills it: every check finds it running */
		nbpf_prof_descr_v5_t d;
		nbpf_prof_state_args_v4_t a = { .kernelCh = { .pTimer = 1000 + LAT_NS } };
		void *c = NULL, *k = NULL;

		memset(&d, 0, sizeof(d));
		d.type = NBPF_PROF_COLL;
		d.rank = RANK;
		d.coll.seqNumber = seq;
		d.coll.func = "AllReduce";
		d.coll.count = 256;
		d.coll.datatype = "ncclFloat32";
		d.coll.nChannels = 1;
		d.coll.algo = "RING";
		d.coll.proto = "LL";
		prof->startEvent(ctx, &c, &d);
		memset(&d, 0, sizeof(d));
		d.type = NBPF_PROF_KERNEL_CH;
		d.parentObj = c;
		d.rank = RANK;
		d.kernelCh.pTimer = 1000;
		prof->startEvent(ctx, &k, &d);
		prof->recordEventState(k, NBPF_PROF_STATE_KERNEL_CH_STOP, &a);
		prof->stopEvent(k);
		prof->stopEvent(c);
		usleep(1000);
	}
}

/* Starts a job (as uid when uid != 0) and waits until its plugin is up. */
static pid_t start_job(uid_t uid)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		if (uid && (setresgid(uid, uid, uid) || setresuid(uid, uid, uid)))
			_exit(3);
		job(p[1]);
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1) {
		close(p[0]);
		return -1;
	}
	close(p[0]);
	return pid;
}

/* Runs `ncclbpf -j observe TARGET...` and checks the job's row in its samples. */
static void check_observe(pid_t job_pid, const char *what, const char *target)
{
	static char line[4 << 20]; /* one sample: every process on the machine */
	char cmd[1024], want_pid[64], want_ranks[96];
	int samples = 0, rows = 0, timed = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s -j observe %s --probes sched --duration 1.6 --interval 400", CTL_CLI,
		 target);
	p = popen(cmd, "r");
	if (!p) {
		failures++;
		return;
	}
	snprintf(want_pid, sizeof(want_pid), "{\"pid\":%d,", (int)job_pid);
	snprintf(want_ranks, sizeof(want_ranks), "\"ranks\":\"0-7/8@0x%016llx\",",
		 (unsigned long long)COMM);
	while (fgets(line, sizeof(line), p)) {
		char *row = strstr(line, want_pid), *end;
		double p99 = 0;

		samples++;
		if (!row)
			continue;
		end = strstr(row, "\"block\":");
		if (end)
			*end = 0;
		rows++;
		if (!strstr(row, want_ranks)) {
			printf("FAIL %s: ranks label missing in %s\n", what, row);
			failures++;
		}
		if (strstr(row, "\"nccl\":{\"calls\":0,") == NULL) {
			char *q = strstr(row, "\"p99_ns\":");

			p99 = q ? atof(q + 9) : 0;
			if (p99 < 32768 || p99 > 65536) {
				printf("FAIL %s: NCCL P99 %.0f ns outside [32768, 65536]\n", what, p99);
				failures++;
			} else {
				timed++;
			}
		}
	}
	if (pclose(p) != 0) {
		printf("FAIL %s: observe exited with an error\n", what);
		failures++;
	}
	printf("%s: %d samples, job %d in %d, with collectives in %d\n", what, samples, (int)job_pid,
	       rows, timed);
	if (samples < 3 || rows != samples || timed < 2) {
		printf("FAIL %s: want >= 3 samples, the job in each, collectives in >= 2\n", what);
		failures++;
	}
}

/*
 * `ncclbpf export --observe` without pids (the plugin processes found) and
 * with the job's pid given: the job's collective and kernel series, joined
 * by ranks.
 */
static void check_export(pid_t job_pid, const char *what, const char *dir, bool given)
{
	/* Every plugin process on the machine is exported: a parallel test run makes it large. */
	static char buf[4 << 20];
	char cmd[1024], path[400], want[256];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/m.prom", dir);
	snprintf(cmd, sizeof(cmd), "%s export --observe sched --textfile %s --count 2 --interval 0.4 %.0d",
		 CTL_CLI, path, given ? (int)job_pid : 0);
	if (system(cmd)) {
		printf("FAIL %s: export --observe failed\n", what);
		failures++;
		return;
	}
	f = fopen(path, "r");
	n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	buf[n] = 0;
	if (f)
		fclose(f);
	unlink(path);
	snprintf(want, sizeof(want), "ncclbpf_collective_latency_seconds_count{communicator=\"0x%016llx\"",
		 (unsigned long long)COMM);
	if (!strstr(buf, want)) {
		printf("FAIL %s: export lacks the job's collective series\n", what);
		failures++;
	}
	snprintf(want, sizeof(want), "ncclbpf_offcpu_seconds_count{pid=\"%d\",process=\"test_observe_pl\","
		 "ranks=\"0-7/8@0x%016llx\"}", (int)job_pid, (unsigned long long)COMM);
	if (!strstr(buf, want)) {
		printf("FAIL %s: export lacks %s\n", what, want);
		failures++;
	}
	printf("%s: export --observe%s has its collective and kernel series\n", what,
	       given ? " PID" : "");
}

/*
 * pid >= 0: a fresh cgroup v2 directory with pid in it, its path in cg;
 * false when there is no cgroup2 mount.  pid < 0: moves cg's processes back
 * to the root and removes cg.
 */
static bool job_cgroup(pid_t pid, char *cg, size_t n)
{
	char line[1024], mnt[256] = "", procs[700];
	FILE *m, *f;

	if (pid < 0) {
		char root[700];

		snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
		snprintf(root, sizeof(root), "%s/../cgroup.procs", cg);
		f = fopen(procs, "r");
		while (f && fgets(line, sizeof(line), f)) {
			FILE *r = fopen(root, "w");

			if (r) {
				fputs(line, r);
				fclose(r);
			}
		}
		if (f)
			fclose(f);
		rmdir(cg);
		return true;
	}
	m = fopen("/proc/mounts", "r");
	while (m && fgets(line, sizeof(line), m)) {
		char dev[256], dir[256], type[64];

		if (sscanf(line, "%255s %255s %63s", dev, dir, type) == 3 && !strcmp(type, "cgroup2")) {
			snprintf(mnt, sizeof(mnt), "%s", dir);
			break;
		}
	}
	if (m)
		fclose(m);
	if (!mnt[0])
		return false;
	snprintf(cg, n, "%s/ncclbpf-obs-plugin-%d", mnt, (int)getpid());
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	if (mkdir(cg, 0755) || !(f = fopen(procs, "w"))) {
		cg[0] = 0;
		return false;
	}
	fprintf(f, "%d\n", (int)pid);
	return !fclose(f);
}

int main(void)
{
	char dir[] = "/tmp/ncclbpf-obs-XXXXXX", ctl[300];
	pid_t pid;

	if (geteuid() != 0 || access("/sys/kernel/btf/vmlinux", R_OK)) {
		printf("SKIP observe_plugin: needs root and kernel BTF\n");
		return 77;
	}
	if (!mkdtemp(dir))
		return 1;
	snprintf(ctl, sizeof(ctl), "%s/ctl", dir);
	setenv("NCCLBPF_LOG", "none", 1);

	/* 1. our own job, socket in NCCLBPF_CTL_DIR. */
	setenv("NCCLBPF_CTL_DIR", ctl, 1);
	pid = start_job(0);
	if (pid <= 0) {
		printf("FAIL: job did not start\n");
		return 1;
	}
	check_observe(pid, "own job", "");
	check_export(pid, "own job", dir, false);
	/* The join in every targeting mode: by pid, by name, by cgroup; export given the pid. */
	{
		char arg[700], cg[600] = "";

		snprintf(arg, sizeof(arg), "--pid %d", (int)pid);
		check_observe(pid, "own job, --pid", arg);
		check_observe(pid, "own job, --comm", "--comm test_observe_pl");
		if (job_cgroup(pid, cg, sizeof(cg))) {
			snprintf(arg, sizeof(arg), "--cgroup %s", cg);
			check_observe(pid, "own job, --cgroup", arg);
		}
		check_export(pid, "own job", dir, true);
		if (cg[0]) {
			/* Back out of the test's cgroup, so it can go. */
			job_cgroup(-1, cg, sizeof(cg));
		}
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);

	/* 2. another user's job, found in its default runtime directory. */
	unsetenv("NCCLBPF_CTL_DIR");
	unsetenv("XDG_RUNTIME_DIR");
	pid = start_job(65534);
	if (pid <= 0) {
		printf("SKIP other user's job: it could not start as uid 65534 (plugin unreadable?)\n");
	} else {
		check_observe(pid, "other user's job", "");
		check_export(pid, "other user's job", dir, false);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	rmdir(ctl);
	rmdir(dir);
	return failures ? 1 : 0;
}
