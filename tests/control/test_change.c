/*
 * test_change.c - agreed changes in one process, through the control
 * socket, with the plugin loaded by the emulator as NCCL loads it: stage,
 * commit, abort, expiry, deadlines, spent ids, a retried commit, a
 * decision-map write at an agreed call, leases; and a communicator created
 * while a change is staged waits for the decision and starts on the image
 * it decides (a new one on the new image at call 0, one the change named
 * at the agreed call).  The last part races getCollInfo on two threads
 * with stages, commits and creations (TSan: label concurrency).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "control/ctl_client.h"
#include "control/ctl_proto.h"
#include "emu_test.h"

#define PROTO_LL     0
#define PROTO_SIMPLE 2

static const struct emu_topo topo = { .n_ranks = 8, .n_nodes = 1 };
static struct emu_plugin tpl;
static struct emu_tuner rk[2]; /* two ranks of communicator 0xabc */
static uint64_t total_calls;

static const char *pol(const char *name)
{
	static char buf[4][1024];
	static int i;
	char *b = buf[i++ % 4];

	snprintf(b, 1024, "%s/%s.bpf.o", CTL_BPF_DIR, name);
	return b;
}

static uint64_t rt_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One call of the two ranks: their proto, -9 if they disagree; *ch gets the channels. */
static int step(int *ch)
{
	struct emu_decision d[2];

	for (int r = 0; r < 2; r++)
		if (emu_tuner_call(&rk[r], &topo, 4, 1 << 20, &d[r]))
			return -8;
	total_calls++;
	if (d[0].proto != d[1].proto || d[0].n_channels != d[1].n_channels)
		return -9;
	if (ch)
		*ch = d[0].n_channels;
	return d[0].proto;
}

/* One request; the response's status (its message into msg). */
static int ctl(int type, const char *payload, char *msg, size_t n)
{
	struct nbpf_ctl_msg m;
	const char *em;
	int err = nbpf_ctl_call_pid(getpid(), type, payload, &m, &em);

	if (msg)
		snprintf(msg, n, "%s", em ? em : "");
	nbpf_ctl_msg_free(&m);
	return err;
}

/* stage id=... deadline=now+dl_ms hold=now+hold_ms owner=... plus what (fields/records). */
static int stage(const char *id, int dl_ms, int hold_ms, const char *owner, const char *what,
		 char *msg, size_t n)
{
	char req[2048];

	snprintf(req, sizeof(req), "stage id=%s deadline=%llu hold=%llu owner=%s%s", id,
		 (unsigned long long)(rt_ns() + (uint64_t)((int64_t)dl_ms * 1000000)),
		 (unsigned long long)(rt_ns() + (uint64_t)hold_ms * 1000000ull), owner, what);
	return ctl(NBPF_CTL_STAGE, req, msg, n);
}

static int commit(const char *id, uint64_t at, const char *known, char *msg, size_t n)
{
	char req[512];

	snprintf(req, sizeof(req), "commit id=%s at_call=%" PRIu64 "%s%s", id, at, known ? " known=" : "",
		 known ? known : "");
	return ctl(NBPF_CTL_COMMIT, req, msg, n);
}

static int abort_id(const char *id)
{
	char req[128];

	snprintf(req, sizeof(req), "abort id=%s", id);
	return ctl(NBPF_CTL_ABORT, req, NULL, 0);
}

/* A communicator created on another thread, as NCCL's init thread would. */
struct birth {
	pthread_t th;
	uint64_t comm_id;
	struct emu_tuner t;
	_Atomic int done;
	double took;
};

static void *birth_main(void *arg)
{
	struct birth *b = arg;
	double t0 = mono_s();

	emu_tuner_init(&b->t, &tpl, b->comm_id, &topo, emu_logger);
	b->took = mono_s() - t0;
	atomic_store(&b->done, 1);
	return NULL;
}

static void birth_start(struct birth *b, uint64_t id)
{
	memset(b, 0, sizeof(*b));
	b->comm_id = id;
	CHECK(pthread_create(&b->th, NULL, birth_main, b) == 0);
}

static int first_proto(struct birth *b)
{
	struct emu_decision d;

	pthread_join(b->th, NULL);
	if (emu_tuner_call(&b->t, &topo, 4, 1 << 20, &d))
		return -8;
	return d.proto;
}

static void test_birth_waits(void)
{
	char msg[1024], known[64];
	struct birth b;
	uint64_t at;

	for (int i = 0; i < 10; i++)
		CHECK_EQ_U64(step(NULL), PROTO_LL);
	CHECK(stage("c1", 2000, 3000, "t", " path=", msg, sizeof(msg)) == -EINVAL);
	snprintf(msg, sizeof(msg), " path=%s", pol("ctl_b"));
	CHECK_MSG(stage("c1", 2000, 3000, "t", msg, msg, sizeof(msg)) == 0, "%s", msg);
	/* Staged, not published: decisions unchanged; a second change is refused by name. */
	CHECK_EQ_U64(step(NULL), PROTO_LL);
	snprintf(msg, sizeof(msg), " path=%s", pol("ctl_a"));
	CHECK(stage("c2", 2000, 3000, "t", msg, msg, sizeof(msg)) == -EBUSY);
	CHECK_STR_CONTAINS(msg, "change c1");
	/* A communicator created now waits for the decision. */
	birth_start(&b, 0xdef);
	usleep(200000);
	CHECK(!atomic_load(&b.done));
	at = total_calls + 20;
	snprintf(known, sizeof(known), "%u", 0xabc);
	CHECK_MSG(commit("c1", at, known, msg, sizeof(msg)) == 0, "%s", msg);
	/* It was not among the communicators the change was agreed for: the new image from call 0. */
	CHECK_EQ_U64(first_proto(&b), PROTO_SIMPLE);
	CHECK(b.took >= 0.15);
	emu_tuner_fini(&b.t);
	/* The one it was agreed for switches at the agreed call, on both ranks. */
	while (total_calls < at)
		CHECK_EQ_U64(step(NULL), PROTO_LL);
	CHECK_EQ_U64(step(NULL), PROTO_SIMPLE);
	/* A commit again is answered as it was; the id is spent. */
	CHECK(commit("c1", at, known, NULL, 0) == 0);
	snprintf(msg, sizeof(msg), " path=%s", pol("ctl_a"));
	CHECK(stage("c1", 2000, 3000, "t", msg, msg, sizeof(msg)) == -EEXIST);
}

static void test_abort_expiry_deadline(void)
{
	char msg[1024], what[1100];
	struct birth b;

	snprintf(what, sizeof(what), " path=%s", pol("ctl_a"));
	/* Aborted: the waiting creation goes on, on the current image (B). */
	CHECK(stage("c3", 2000, 3000, "t", what, msg, sizeof(msg)) == 0);
	birth_start(&b, 0x123);
	usleep(100000);
	CHECK(!atomic_load(&b.done));
	CHECK(abort_id("c3") == 0);
	CHECK_EQ_U64(first_proto(&b), PROTO_SIMPLE);
	emu_tuner_fini(&b.t);
	CHECK(commit("c3", total_calls + 10, NULL, msg, sizeof(msg)) == -ESTALE);
	CHECK_STR_CONTAINS(msg, "did NOT apply");
	/* Undecided by its hold: dropped; the creation waited that long at most. */
	CHECK(stage("c4", 2000, 300, "t", what, msg, sizeof(msg)) == 0);
	birth_start(&b, 0x124);
	CHECK_EQ_U64(first_proto(&b), PROTO_SIMPLE);
	CHECK(b.took >= 0.2 && b.took < 3);
	emu_tuner_fini(&b.t);
	CHECK(commit("c4", total_calls + 10, NULL, msg, sizeof(msg)) == -ESTALE);
	CHECK_STR_CONTAINS(msg, "expired");
	CHECK_EQ_U64(step(NULL), PROTO_SIMPLE);
	/* A stage read after its deadline changes nothing. */
	CHECK(stage("c5", -1, 3000, "t", what, msg, sizeof(msg)) == -ETIMEDOUT);
	CHECK_STR_CONTAINS(msg, "nothing staged");
	/* An abort of an id never staged spends it: a stage queued behind it is refused. */
	CHECK(abort_id("c6") == 0);
	CHECK(stage("c6", 2000, 3000, "t", what, msg, sizeof(msg)) == -EEXIST);
	/* The one-phase reload honours its deadline too. */
	snprintf(what, sizeof(what), "reload path=%s at_call=0 deadline=%llu", pol("ctl_a"),
		 (unsigned long long)(rt_ns() - 1));
	CHECK(ctl(NBPF_CTL_RELOAD, what, msg, sizeof(msg)) == -ETIMEDOUT);
	CHECK_EQ_U64(step(NULL), PROTO_SIMPLE);
}

static void test_map_write_and_lease(void)
{
	char msg[1024], req[256];
	uint64_t at;
	int ch = -1;

	snprintf(req, sizeof(req), "reload path=%s at_call=0", pol("ctl_a"));
	CHECK(ctl(NBPF_CTL_RELOAD, req, msg, sizeof(msg)) == 0);
	CHECK_EQ_U64(step(&ch), PROTO_LL);
	/* ctl_cfg is read by A's tuner: a decision map, written at an agreed call. */
	CHECK_MSG(stage("m1", 2000, 3000, "t", "\nop map=ctl_cfg key=00000000 value=06000000", msg,
			sizeof(msg)) == 0, "%s", msg);
	at = total_calls + 15;
	CHECK(commit("m1", at, NULL, NULL, 0) == 0);
	while (total_calls < at) {
		CHECK_EQ_U64(step(&ch), PROTO_LL);
		if (ch == 6)
			break;
	}
	CHECK(ch != 6);
	CHECK_EQ_U64(step(&ch), PROTO_LL);
	CHECK_EQ_U64(ch, 6);
	/* Bad writes are refused with the reason. */
	CHECK(stage("m2", 2000, 3000, "t", "\nop map=ctl_cfg key=0000 value=06000000", msg,
		    sizeof(msg)) == -EINVAL);
	CHECK(stage("m3", 2000, 3000, "t", "\nop map=no_such key=00000000 value=06000000", msg,
		    sizeof(msg)) == -ENOENT);
	/* A lease gives the map to one writer. */
	snprintf(req, sizeof(req), "lease name=ctl_cfg owner=loopx until=%llu",
		 (unsigned long long)(rt_ns() + 5000000000ull));
	CHECK(ctl(NBPF_CTL_LEASE, req, NULL, 0) == 0);
	snprintf(req, sizeof(req), "lease name=ctl_cfg owner=loopy until=%llu",
		 (unsigned long long)(rt_ns() + 5000000000ull));
	CHECK(ctl(NBPF_CTL_LEASE, req, msg, sizeof(msg)) == -EBUSY);
	CHECK_STR_CONTAINS(msg, "loopx holds ctl_cfg");
	CHECK(stage("m4", 2000, 3000, "loopy", "\nop map=ctl_cfg key=00000000 value=07000000", msg,
		    sizeof(msg)) == -EBUSY);
	CHECK(stage("m5", 2000, 3000, "loopx", "\nop map=ctl_cfg key=00000000 value=07000000", msg,
		    sizeof(msg)) == 0);
	CHECK(abort_id("m5") == 0);
	snprintf(req, sizeof(req), "lease name=ctl_cfg owner=loopx until=0");
	CHECK(ctl(NBPF_CTL_LEASE, req, NULL, 0) == 0);
}

/* The `decides` field of map name in the MAPS answer, or -1. */
static int map_decides(const char *name)
{
	struct nbpf_ctl_msg m;
	const char *em;
	uint64_t v = 2;

	if (nbpf_ctl_call_pid(getpid(), NBPF_CTL_MAPS, NULL, &m, &em) == 0)
		for (uint32_t i = 0; i < m.n_recs; i++)
			if (!strcmp(m.recs[i].kind, "map") &&
			    !strcmp(nbpf_ctl_rec_get(&m.recs[i], "name") ?: "", name))
				nbpf_ctl_rec_u64(&m.recs[i], "decides", &v);
	nbpf_ctl_msg_free(&m);
	return v > 1 ? -1 : (int)v;
}

/* A map the tuner reads decides; NCCLBPF_MAP_IMMEDIATE takes it out; others never decide. */
static void test_decision_maps(void)
{
	char req[1100];

	CHECK_EQ_U64(map_decides("ctl_cfg"), 1);  /* ctl_a's tuner reads it */
	CHECK_EQ_U64(map_decides("ctl_runs"), 1); /* and counts into this one */
	snprintf(req, sizeof(req), "reload path=%s at_call=0", pol("ctl_imm"));
	CHECK(ctl(NBPF_CTL_RELOAD, req, NULL, 0) == 0);
	CHECK_EQ_U64(map_decides("ctl_cfg"), 0);
	snprintf(req, sizeof(req), "reload path=%s at_call=0", pol("ctl_prof_b"));
	CHECK(ctl(NBPF_CTL_RELOAD, req, NULL, 0) == 0);
	CHECK_EQ_U64(map_decides("prof_stats"), 0); /* a profiler's telemetry */
	snprintf(req, sizeof(req), "reload path=%s at_call=0", pol("ctl_a"));
	CHECK(ctl(NBPF_CTL_RELOAD, req, NULL, 0) == 0);
}

/* Lines of a /proc/self file, or entries of /proc/self/fd. */
static int count_proc(const char *what)
{
	char line[4096];
	int n = 0;

	if (!strcmp(what, "fd")) {
		DIR *d = opendir("/proc/self/fd");
		struct dirent *de;

		while (d && (de = readdir(d)))
			n += de->d_name[0] != '.';
		if (d)
			closedir(d);
		return n;
	}
	FILE *f = fopen(what, "r");

	while (f && fgets(line, sizeof(line), f))
		n++;
	if (f)
		fclose(f);
	return n;
}

/*
 * Map writes, reloads and rollbacks as agreed changes, over and over: each
 * map write is a new image with a new map file; the replaced ones must go
 * (files, mappings, descriptors and memory flat).
 */
static void test_flat(void)
{
	int rounds = (int)(400 * emu_scale()), fds0, maps0, fds, maps;
	char msg[1024], what[1100];

	for (int warm = 0; warm < 2; warm++) {
		snprintf(what, sizeof(what), "\nop map=ctl_cfg key=00000000 value=0%d000000", 1 + warm);
		CHECK(stage(warm ? "fw1" : "fw0", 2000, 3000, "t", what, msg, sizeof(msg)) == 0);
		CHECK(commit(warm ? "fw1" : "fw0", 0, NULL, NULL, 0) == 0);
		step(NULL);
	}
	fds0 = count_proc("fd");
	maps0 = count_proc("/proc/self/maps");
	for (int i = 0; i < rounds; i++) {
		char id[32];

		snprintf(id, sizeof(id), "f%d", i);
		if (i % 4 == 3) {
			snprintf(what, sizeof(what), " rollback=1");
		} else if (i % 4 == 2) {
			snprintf(what, sizeof(what), " path=%s", pol("ctl_a"));
		} else {
			snprintf(what, sizeof(what), "\nop map=ctl_cfg key=00000000 value=%02x000000", 1 + i % 60);
		}
		if (stage(id, 2000, 3000, "t", what, msg, sizeof(msg)) ||
		    commit(id, 0, NULL, msg, sizeof(msg))) {
			CHECK_MSG(0, "round %d: %s", i, msg);
			break;
		}
		if (step(NULL) < 0)
			CHECK(0);
	}
	fds = count_proc("fd");
	maps = count_proc("/proc/self/maps");
	printf("%d agreed map writes, reloads and rollbacks: %d -> %d descriptors, %d -> %d mappings\n",
	       rounds, fds0, fds, maps0, maps);
	CHECK_MSG(fds <= fds0 + 2, "descriptors %d -> %d", fds0, fds);
	CHECK_MSG(maps <= maps0 + 8, "mappings %d -> %d", maps0, maps);
}

/* ---- racing: decisions on two threads while changes and creations go on ----------- */

static _Atomic int race_stop;
static _Atomic uint64_t race_calls, race_bad;

/* Ranks at a job's pace (tens of thousands of calls a second), so an agreed call is ahead of them. */
static void *race_ranks(void *arg)
{
	(void)arg;
	while (!atomic_load(&race_stop)) {
		if (step(NULL) == -9)
			atomic_fetch_add(&race_bad, 1);
		atomic_store(&race_calls, total_calls);
		if (!(total_calls % 16))
			usleep(200);
	}
	return NULL;
}

static void test_race(void)
{
	int rounds = (int)(40 * emu_scale());
	pthread_t th;
	char msg[1024];

	CHECK(pthread_create(&th, NULL, race_ranks, NULL) == 0);
	for (int i = 0; i < rounds; i++) {
		char id[32], what[1100];
		struct birth b;
		uint64_t at = atomic_load(&race_calls) + 20000;

		snprintf(id, sizeof(id), "r%d", i);
		snprintf(what, sizeof(what), " path=%s", pol(i & 1 ? "ctl_a" : "ctl_b"));
		if (stage(id, 2000, 3000, "t", what, msg, sizeof(msg))) {
			CHECK_MSG(0, "round %d: %s", i, msg);
			break;
		}
		birth_start(&b, 0x5000 + (uint64_t)i);
		usleep(1000);
		if (i % 3 == 2)
			CHECK(abort_id(id) == 0);
		else
			CHECK(commit(id, at, "2748", NULL, 0) == 0); /* 2748 = 0xabc */
		CHECK(atomic_load(&race_calls) < at); /* else the test, not the plugin, was late */
		first_proto(&b);
		emu_tuner_fini(&b.t);
	}
	atomic_store(&race_stop, 1);
	pthread_join(th, NULL);
	CHECK_EQ_U64(atomic_load(&race_bad), 0);
	printf("%d staged changes raced with %" PRIu64 " decisions of two ranks\n", rounds, total_calls);
}

int main(void)
{
	char dir[] = "/tmp/ncclbpf-change-XXXXXX", err[256];

	if (!mkdtemp(dir))
		return 1;
	setenv("NCCLBPF_CTL_DIR", dir, 1);
	setenv("NCCLBPF_MAP_DIR", dir, 1);
	emu_set_policy(pol("ctl_a"));
	CHECK(emu_open(&tpl, EMU_TUNER, EMU_PLUGIN, 5, err, sizeof(err)) == 0);
	for (int r = 0; r < 2; r++)
		CHECK(emu_tuner_init(&rk[r], &tpl, 0xabc, &topo, emu_logger) == 0);
	test_birth_waits();
	test_abort_expiry_deadline();
	test_map_write_and_lease();
	test_decision_maps();
	test_flat();
	test_race();
	for (int r = 0; r < 2; r++)
		emu_tuner_fini(&rk[r]);
	emu_close(&tpl);
	rmdir(dir);
	return check_summary("control_change");
}
