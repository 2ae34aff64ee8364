/*
 * test_reload.c - the control plane end to end, in one process: the plugin
 * is loaded through the NCCL emulator exactly as NCCL loads it, two ranks
 * of one communicator make decisions, and the control socket (directly and
 * through the ncclbpf command) lists, reloads, rolls back, reads and writes
 * maps, exports metrics.  Checks decisions after every swap, that both
 * ranks switch on the same call, that a rejected object changes nothing
 * and reports the verifier's message, that same-shaped maps keep their
 * contents across swaps, and that delayed rollbacks work while the current
 * image still chains to older ones.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <limits.h>
#include "check.h"
#include "control/ctl_client.h"
#include "control/ctl_proto.h"
#include "emu_test.h"
#include "ncclbpf/runtime.h"

static const struct emu_topo topo8 = { .n_ranks = 8, .n_nodes = 1, .nvls = true };
static struct emu_tuner rk[2];
static uint64_t total_calls;
static char tmpdir[] = "/tmp/ncclbpf-reload-XXXXXX";

static const char *pol(const char *name)
{
	static char buf[4][1024];
	static int i;
	char *b = buf[i++ % 4];

	snprintf(b, 1024, "%s/%s.bpf.o", CTL_BPF_DIR, name);
	return b;
}

/* One call on each rank; both must decide alike.  Returns rank 0's proto, or -9 on disagreement. */
static int step(int *n_channels)
{
	struct emu_decision d[2];

	for (int r = 0; r < 2; r++)
		if (emu_tuner_call(&rk[r], &topo8, 4, 1 << 20, &d[r]) != 0)
			return -8;
	total_calls++;
	if (d[0].algo != d[1].algo || d[0].proto != d[1].proto || d[0].n_channels != d[1].n_channels)
		return -9;
	if (n_channels)
		*n_channels = d[0].n_channels;
	return d[0].algo == 1 ? d[0].proto : -1 - d[0].algo;
}

static int call(int type, const char *payload, struct nbpf_ctl_msg *m, const char **em)
{
	return nbpf_ctl_call_pid(getpid(), type, payload, m, em);
}

static const struct nbpf_ctl_rec *find(const struct nbpf_ctl_msg *m, const char *kind, int nth)
{
	for (uint32_t i = 0; i < m->n_recs; i++)
		if (!strcmp(m->recs[i].kind, kind) && nth-- == 0)
			return &m->recs[i];
	return NULL;
}

static int reload(const char *spec, uint64_t at_call, char *msg, size_t msglen)
{
	struct nbpf_ctl_buf b = { 0 };
	struct nbpf_ctl_msg m;
	const char *em;
	int err;

	nbpf_ctl_buf_rec(&b, "reload");
	nbpf_ctl_buf_str(&b, "path", spec);
	nbpf_ctl_buf_u64(&b, "at_call", at_call);
	err = call(NBPF_CTL_RELOAD, b.data, &m, &em);
	if (msg)
		snprintf(msg, msglen, "%s", em);
	nbpf_ctl_msg_free(&m);
	nbpf_ctl_buf_free(&b);
	return err;
}

static uint64_t map_u64(const char *name, uint32_t key)
{
	struct nbpf_ctl_msg m;
	struct ncclbpf_map *map = NULL;
	const char *em, *path = NULL;
	uint64_t v = UINT64_MAX;

	if (call(NBPF_CTL_MAPS, NULL, &m, &em) == 0)
		for (uint32_t i = 0; i < m.n_recs; i++)
			if (!strcmp(m.recs[i].kind, "map") &&
			    !strcmp(nbpf_ctl_rec_get(&m.recs[i], "name") ?: "", name))
				path = nbpf_ctl_rec_get(&m.recs[i], "path");
	if (path && ncclbpf_map__open_path(path, false, &map) == 0) {
		uint8_t val[8] = { 0 };

		if (ncclbpf_map__lookup(map, &key, val) == 0) {
			v = 0;
			memcpy(&v, val, ncclbpf_map__value_size(map) < 8 ? ncclbpf_map__value_size(map) : 8);
		}
		ncclbpf_map__put(map);
	}
	nbpf_ctl_msg_free(&m);
	return v;
}

/* Runs the ncclbpf command; returns its exit status and its stdout in out. */
static int cli(char *out, size_t outlen, const char *fmt, ...)
{
	char args[2048], cmd[4096];
	va_list ap;
	FILE *p;
	size_t n = 0;
	int st;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "%s %s", CTL_CLI, args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (out && outlen) {
		out[0] = 0;
		while (n + 1 < outlen) {
			size_t k = fread(out + n, 1, outlen - 1 - n, p);

			if (!k)
				break;
			n += k;
		}
		out[n] = 0;
	} else {
		char sink[4096];

		while (fread(sink, 1, sizeof(sink), p) > 0)
			;
	}
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_listing(void)
{
	struct nbpf_ctl_msg m;
	const struct nbpf_ctl_rec *r;
	const char *em;
	uint64_t v;

	CHECK(call(NBPF_CTL_PS, NULL, &m, &em) == 0);
	r = find(&m, "proc", 0);
	CHECK(r && nbpf_ctl_rec_u64(r, "pid", &v) == 0 && v == (uint64_t)getpid());
	CHECK(r && nbpf_ctl_rec_u64(r, "n_comms", &v) == 0 && v == 2);
	r = find(&m, "comm", 0);
	CHECK(r && !strcmp(nbpf_ctl_rec_get(r, "kind") ?: "", "tuner"));
	CHECK(r && nbpf_ctl_rec_u64(r, "comm_id", &v) == 0 && v == 0xabcULL);
	CHECK(r && nbpf_ctl_rec_u64(r, "ranks", &v) == 0 && v == 8);
	CHECK(find(&m, "comm", 1) != NULL);
	r = find(&m, "prog", 0);
	CHECK(r && !strcmp(nbpf_ctl_rec_get(r, "name") ?: "", "pick_a"));
	CHECK(r && !strcmp(nbpf_ctl_rec_get(r, "hook") ?: "", "tuner"));
	CHECK(r && strlen(nbpf_ctl_rec_get(r, "tag") ?: "") == 16);
	nbpf_ctl_msg_free(&m);

	CHECK(call(NBPF_CTL_PROGS, NULL, &m, &em) == 0);
	r = find(&m, "progstat", 0);
	CHECK(r && nbpf_ctl_rec_u64(r, "runs", &v) == 0 && v == 2 * total_calls);
	nbpf_ctl_msg_free(&m);
}

static void test_swaps(void)
{
	char msg[1024];
	struct nbpf_ctl_msg m;
	const char *em;
	uint64_t at, runs_before;
	int p, ch;

	/* Immediate swap to B. */
	CHECK(reload(pol("ctl_b"), 0, msg, sizeof(msg)) == 0);
	CHECK_EQ_U64(step(NULL), 2); /* SIMPLE */
	/* ctl_runs kept its count across the swap (2 ranks run the program per step). */
	CHECK_EQ_U64(map_u64("ctl_runs", 0), 2 * total_calls);

	/* A rejected object changes nothing and the requester reads the verifier's reason. */
	runs_before = map_u64("ctl_runs", 0);
	CHECK(reload(pol("ctl_bad"), 0, msg, sizeof(msg)) == -EACCES);
	CHECK_STR_CONTAINS(msg, "pick_bad");
	printf("rejected reload said: %s\n", msg);
	CHECK(reload("/nonexistent/x.bpf.o", 0, msg, sizeof(msg)) < 0);
	CHECK_STR_CONTAINS(msg, "/nonexistent/x.bpf.o");
	/* A FIFO is refused at once: the control thread never waits for a writer. */
	{
		char fifo[PATH_MAX];

		snprintf(fifo, sizeof(fifo), "%s/policy.fifo", tmpdir);
		CHECK(mkfifo(fifo, 0600) == 0);
		alarm(20);
		CHECK(reload(fifo, 0, msg, sizeof(msg)) == -EINVAL);
		CHECK_STR_CONTAINS(msg, "policy.fifo: cannot load: not a regular file");
		alarm(0);
		unlink(fifo);
	}
	CHECK_EQ_U64(step(NULL), 2);
	CHECK_EQ_U64(map_u64("ctl_runs", 0), runs_before + 2);

	/* Delayed swap: both ranks switch exactly at call `at`. */
	at = total_calls + 5;
	CHECK(reload(pol("ctl_a"), at, msg, sizeof(msg)) == 0);
	while (total_calls < at) {
		p = step(NULL);
		CHECK_MSG(p == 2, "call %" PRIu64 ": proto %d before the switch", total_calls - 1, p);
	}
	p = step(NULL);
	CHECK_MSG(p == 0, "call %" PRIu64 ": proto %d at the switch", total_calls - 1, p);
	CHECK_EQ_U64(map_u64("ctl_runs", 0), 2 * total_calls);

	/*
	 * ctl_cfg (A's shape) is operator-written and A's tuner reads it: a
	 * decision map.  The CLI agrees the write like a reload (no call
	 * advances while it samples, so at the margin's floor of 1000): every
	 * rank reads the old value up to the agreed call and the new one from it.
	 */
	{
		char out[8192], *at_s;
		uint64_t at_w = 0;

		CHECK(cli(out, sizeof(out), "-j map update %d ctl_cfg key 0 0 0 0 value 4 0 0 0",
			  getpid()) == 0);
		at_s = strstr(out, "\"at_call\":");
		CHECK(at_s && sscanf(at_s, "\"at_call\":%" SCNu64, &at_w) == 1);
		CHECK_MSG(at_w == total_calls + 1000, "map update at %" PRIu64 " calls %" PRIu64, at_w,
			  total_calls);
		while (total_calls < at_w) {
			CHECK(step(&ch) == 0);
			if (ch == 4) {
				CHECK_MSG(ch != 4, "call %" PRIu64 " saw the write before %" PRIu64,
					  total_calls - 1, at_w);
				break;
			}
		}
		CHECK(step(&ch) == 0 && ch == 4);
	}
	CHECK(cli(msg, sizeof(msg), "map lookup %d ctl_cfg key 00000000", getpid()) == 0);
	CHECK_STR_CONTAINS(msg, "key: 0  value: 4\n"); /* formatted with the map's BTF */
	CHECK(cli(NULL, 0, "map lookup %d ctl_cfg key 0 0 0", getpid()) == 2); /* wrong size */
	CHECK(cli(NULL, 0, "map dump %d no_such_map", getpid()) == 1);

	/* Rollback (immediate) returns to B. */
	CHECK(call(NBPF_CTL_ROLLBACK, "rollback at_call=0", &m, &em) == 0);
	nbpf_ctl_msg_free(&m);
	CHECK_EQ_U64(step(NULL), 2);
	/* And rollback again returns to A, whose ctl_cfg survived. */
	CHECK(call(NBPF_CTL_ROLLBACK, NULL, &m, &em) == 0);
	nbpf_ctl_msg_free(&m);
	CHECK(step(&ch) == 0 && ch == 4);

	/* reload --sync through the command: all ranks switch at the announced call. */
	{
		char out[8192], *at_s;
		uint64_t sync_at = 0;

		CHECK(cli(out, sizeof(out), "-j reload %d %s --sync --margin 50", getpid(),
			  pol("ctl_b")) == 0);
		at_s = strstr(out, "\"at_call\":");
		CHECK(at_s && sscanf(at_s, "\"at_call\":%" SCNu64, &sync_at) == 1);
		CHECK_MSG(sync_at == total_calls + 50, "sync at %" PRIu64 " calls %" PRIu64, sync_at,
			  total_calls);
		while (total_calls < sync_at)
			CHECK(step(NULL) == 0);
		CHECK(step(NULL) == 2);
	}

	/*
	 * With no activation flag the command agrees a call, as --sync does (no
	 * call advances while it samples, so the margin is its floor of 1000);
	 * only --now switches on the next call.
	 */
	{
		char out[8192], *at_s;
		uint64_t at = UINT64_MAX;

		CHECK(cli(out, sizeof(out), "-j reload %d %s", getpid(), pol("ctl_a")) == 0);
		at_s = strstr(out, "\"at_call\":");
		CHECK(at_s && sscanf(at_s, "\"at_call\":%" SCNu64, &at) == 1);
		CHECK_MSG(at == total_calls + 1000, "default reload at %" PRIu64 " calls %" PRIu64,
			  at, total_calls);
		while (total_calls < at)
			CHECK(step(NULL) == 2);
		CHECK(step(NULL) == 0);
		CHECK(cli(out, sizeof(out), "-j reload %d %s --now", getpid(), pol("ctl_b")) == 0);
		at_s = strstr(out, "\"at_call\":");
		CHECK(at_s && sscanf(at_s, "\"at_call\":%" SCNu64, &at) == 1 && at == 0);
		CHECK(step(NULL) == 2);
		CHECK(cli(out, sizeof(out), "reload %d %s --now --sync", getpid(), pol("ctl_b")) == 2);
	}
}

/* The "proc" record's field, or UINT64_MAX. */
static uint64_t proc_u64(const char *field)
{
	struct nbpf_ctl_msg m;
	const struct nbpf_ctl_rec *r;
	const char *em;
	uint64_t v = UINT64_MAX;

	if (call(NBPF_CTL_PS, NULL, &m, &em) == 0 && (r = find(&m, "proc", 0)))
		nbpf_ctl_rec_u64(r, field, &v);
	nbpf_ctl_msg_free(&m);
	return v;
}

static int rollback_at(uint64_t at)
{
	char payload[64];
	struct nbpf_ctl_msg m;
	const char *em;
	int err;

	snprintf(payload, sizeof(payload), "rollback at_call=%" PRIu64, at);
	err = call(NBPF_CTL_ROLLBACK, payload, &m, &em);
	if (err)
		printf("rollback at %" PRIu64 ": %s\n", at, em);
	nbpf_ctl_msg_free(&m);
	return err;
}

/* Steps until call `until` (exclusive) expecting proto on both ranks. */
static void expect_until(uint64_t until, int proto, const char *what)
{
	while (total_calls < until) {
		int p = step(NULL);

		CHECK_MSG(p == proto, "%s: call %" PRIu64 ": proto %d, want %d", what, total_calls - 1,
			  p, proto);
		if (p != proto)
			return;
	}
}

/*
 * Delayed rollbacks while the current image still chains to the one it
 * replaced (the rollback target), and while another activation is pending:
 * the rollback publishes a new record, so the chain the hot path walks has
 * no cycle, both ranks switch on the same call, and once everything has
 * activated a later publish leaves only the records still needed.
 */
static void test_rollback_pending(void)
{
	char msg[1024];
	uint64_t at0, at1, at2, gen0, recs;

	/* Current: B, activated at a call number, still chained to A. */
	CHECK_EQ_U64(step(NULL), 2);
	gen0 = proc_u64("image_gen");
	at0 = total_calls + 5;
	CHECK(rollback_at(at0) == 0);
	CHECK(proc_u64("image_gen") > gen0); /* a new record, not the old one re-linked */
	expect_until(at0, 2, "before the rollback");
	expect_until(at0 + 3, 0, "after the rollback"); /* A again, ctl_cfg's 4 channels kept */

	/* Rollback at a call number while a reload is still pending. */
	at1 = total_calls + 10;
	at2 = total_calls + 20;
	CHECK(reload(pol("ctl_b"), at1, msg, sizeof(msg)) == 0);
	CHECK(rollback_at(at2) == 0);
	expect_until(at1, 0, "before the pending reload");
	expect_until(at2, 2, "between the reload and the rollback");
	expect_until(at2 + 3, 0, "after the second rollback");

	/* A rollback at a call number already passed switches on the next call. */
	CHECK(rollback_at(1) == 0);
	expect_until(total_calls + 2, 2, "rollback at a passed call");

	/* Everything has activated: an immediate publish collects the chain. */
	CHECK(reload(pol("ctl_b"), 0, msg, sizeof(msg)) == 0);
	CHECK_EQ_U64(step(NULL), 2);
	recs = proc_u64("image_records");
	/* The current image and the rollback target (plus the base it borrows from). */
	CHECK_MSG(recs >= 2 && recs <= 3, "%" PRIu64 " image records kept", recs);
}

/*
 * map show lists ids that dump by id reads; reload picks processes by
 * communicator id and executable (a refused object keeps the test's
 * policy, and -j says which pids were asked).
 */
static void test_cli_select(void)
{
	char out[65536], want[64], *l;
	unsigned long long id;

	CHECK(cli(out, sizeof(out), "map show %d", getpid()) == 0);
	l = strstr(out, "name ctl_runs");
	CHECK(l != NULL);
	if (!l)
		return;
	while (l > out && l[-1] != '\n')
		l--;
	id = strtoull(l, NULL, 10);
	CHECK(id > 0);
	snprintf(want, sizeof(want), "pid %d", getpid());
	CHECK_STR_CONTAINS(out, want);
	CHECK(cli(out, sizeof(out), "-j map dump id %llu", id) == 0);
	CHECK_STR_CONTAINS(out, "[{\"key\":0,\"value\":"); /* numbers, from BTF */
	snprintf(want, sizeof(want), "\"pid\":%d,\"ok\":false", getpid());
	CHECK(cli(out, sizeof(out), "-j reload --comm 0xabc %s --now", pol("ctl_bad")) == 1);
	CHECK_STR_CONTAINS(out, want);
	CHECK(cli(out, sizeof(out), "-j reload --comm=0xabc --exe test_ctl_reload %s --now",
		  pol("ctl_bad")) == 1);
	CHECK_STR_CONTAINS(out, want);
	CHECK(cli(out, sizeof(out), "-j reload --comm 0xdef %s --now", pol("ctl_bad")) == 1);
	CHECK(strstr(out, want) == NULL);
	CHECK_STR_CONTAINS(out, "no process running the plugin matches");
	CHECK(cli(out, sizeof(out), "-j rollback --exe no-such-exe --now") == 1);
	CHECK_STR_CONTAINS(out, "matches");
	/* --policy: the current image runs ctl_a or ctl_b, so exactly one of them selects us. */
	{
		bool a, b;

		cli(out, sizeof(out), "-j reload --policy %s %s --now", pol("ctl_a"), pol("ctl_bad"));
		a = strstr(out, want) != NULL;
		cli(out, sizeof(out), "-j reload --policy %s %s --now", pol("ctl_b"), pol("ctl_bad"));
		b = strstr(out, want) != NULL;
		CHECK_MSG(a != b, "--policy ctl_a selected %d, ctl_b %d", a, b);
	}
}

static void test_cli_views(void)
{
	char out[65536], path[512], cmd[1024];
	int st;

	CHECK(cli(out, sizeof(out), "ps") == 0);
	CHECK_STR_CONTAINS(out, "0x0000000000000abc");
	CHECK(cli(out, sizeof(out), "-j ps %d", getpid()) == 0);
	CHECK_STR_CONTAINS(out, "\"comms\":[{");
	CHECK_STR_CONTAINS(out, "\"name\":\"pick_b\"");
	CHECK(cli(out, sizeof(out), "prog show %d", getpid()) == 0);
	CHECK_STR_CONTAINS(out, "pick_b");
	CHECK_STR_CONTAINS(out, "ns/run");
	CHECK(cli(out, sizeof(out), "-j prog list") == 0);
	CHECK_STR_CONTAINS(out, "\"refused\":{");
	CHECK(cli(out, sizeof(out), "map list %d", getpid()) == 0);
	CHECK_STR_CONTAINS(out, "ctl_runs");
	CHECK(cli(out, sizeof(out), "-j map list %d", getpid()) == 0);
	CHECK_STR_CONTAINS(out, "\"lock_timeouts\"");
	CHECK(cli(out, sizeof(out), "-j map dump %d ctl_runs", getpid()) == 0);
	CHECK_STR_CONTAINS(out, "[{\"key\":0,\"value\":"); /* numbers, from BTF */
	CHECK(cli(out, sizeof(out), "-j top %d 0.05 2", getpid()) == 0);
	CHECK_STR_CONTAINS(out, "\"tuners\":[{\"comm_id\":\"0x0000000000000abc\"");
	CHECK(cli(out, sizeof(out), "reload %d %s", getpid(), pol("ctl_bad")) == 1);
	CHECK(cli(out, sizeof(out), "reload 999999999 %s", pol("ctl_a")) != 0);
	test_cli_select();

	snprintf(path, sizeof(path), "%s/metrics.prom", tmpdir);
	CHECK(cli(NULL, 0, "export --textfile %s --count 1", path) == 0);
	CHECK(access(path, R_OK) == 0);
	{
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;

		out[n] = 0;
		if (f)
			fclose(f);
		/* Map lock health, from the map files' shared counters. */
		CHECK_STR_CONTAINS(out, "ncclbpf_map_lock_timeouts_total{map=\"ctl_runs\"} 0");
	}
	if (access("/usr/bin/promtool", X_OK) == 0) {
		snprintf(cmd, sizeof(cmd), "/usr/bin/promtool check metrics < %s", path);
		st = system(cmd);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	/* --listen: one scrape over HTTP, then the exporter exits (--count 1). */
	if (access("/usr/bin/curl", X_OK) == 0) {
		int port = 20000 + getpid() % 20000;
		FILE *p;
		size_t n;

		snprintf(cmd, sizeof(cmd),
			 "timeout 20 %s export --listen 127.0.0.1:%d --count 1 & pid=$!; "
			 "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.2; "
			 "c=$(curl -s -o /dev/null -w '%%{http_code}' -X POST http://127.0.0.1:%d/metrics); "
			 "[ \"$c\" = 405 ] && break; done; echo \"POST $c\"; "
			 "curl -sf http://127.0.0.1:%d/metrics; wait $pid",
			 CTL_CLI, port, port, port);
		p = popen(cmd, "r");
		CHECK(p != NULL);
		n = p ? fread(out, 1, sizeof(out) - 1, p) : 0;
		out[n] = 0;
		CHECK(p && pclose(p) == 0);
		CHECK_STR_CONTAINS(out, "POST 405"); /* other methods: 405, and no scrape counted */
		CHECK_STR_CONTAINS(out, "# TYPE ncclbpf_collective_latency_seconds histogram");
		CHECK_STR_CONTAINS(out, "ncclbpf_tuner_calls_total{communicator=\"0x0000000000000abc\"");
	}
	CHECK(cli(out, sizeof(out), "export") == 0);
	CHECK_STR_CONTAINS(out, "ncclbpf_tuner_calls_total{communicator=\"0x0000000000000abc\",collective=\"AllReduce\"}");
	CHECK_STR_CONTAINS(out, "ncclbpf_processes 1");
	CHECK_STR_CONTAINS(out, "ncclbpf_build_info{version=\"");

	/* A policy that declares its maps for export: they appear as its families. */
	snprintf(path, sizeof(path), "%s/../../../policies/coll_stats.bpf.o:%s", CTL_BPF_DIR,
		 pol("ctl_a"));
	CHECK(cli(out, sizeof(out), "reload %d %s --now", getpid(), path) == 0);
	CHECK(cli(out, sizeof(out), "export") == 0);
	CHECK_STR_CONTAINS(out, "# TYPE ncclbpf_policy_collectives_total counter");
	CHECK_STR_CONTAINS(out, "# TYPE ncclbpf_policy_collective_latency_seconds histogram");
	/* The array's entries exist from the start: one histogram per collective. */
	CHECK_STR_CONTAINS(out, "ncclbpf_policy_collective_latency_seconds_count{collective=\"AllReduce\"} 0");
	if (access("/usr/bin/promtool", X_OK) == 0) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/metrics2.prom", tmpdir);
		f = fopen(path, "w");
		CHECK(f && fputs(out, f) >= 0);
		if (f)
			fclose(f);
		snprintf(cmd, sizeof(cmd), "/usr/bin/promtool check metrics < %s", path);
		st = system(cmd);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}	/* A struct value by field name, its array as a list: bpftool's formatted dump. */
	CHECK(cli(out, sizeof(out), "-j map dump %d coll_latency", getpid()) == 0);
	CHECK_STR_CONTAINS(out, "{\"key\":4,\"value\":{\"sum_ns\":0,\"buckets\":[0,0,");
}

int main(void)
{
	struct emu_plugin pl;
	char err[512], dir[600], sock[700];

	CHECK(mkdtemp(tmpdir) != NULL);
	snprintf(dir, sizeof(dir), "%s/ctl", tmpdir);
	setenv("NCCLBPF_CTL_DIR", dir, 1);
	setenv("NCCLBPF_STATS", "1", 1);
	emu_set_policy(pol("ctl_a"));
	CHECK(emu_open(&pl, EMU_TUNER, EMU_PLUGIN, 5, err, sizeof(err)) == 0);
	CHECK(emu_tuner_init(&rk[0], &pl, 0xabc, &topo8, emu_logger) == 0);
	CHECK(emu_tuner_init(&rk[1], &pl, 0xabc, &topo8, emu_logger) == 0);
	{
		struct nbpf_ctl_proc *procs = NULL;
		int n = nbpf_ctl_list(&procs);

		/* Found by its socket, named <pid>.<token>.sock, with the pid we see. */
		CHECK(n == 1 && procs[0].pid == getpid() && procs[0].ns_pid == getpid());
		snprintf(sock, sizeof(sock), "%s", n == 1 ? procs[0].path : "");
		CHECK(!strncmp(sock, dir, strlen(dir)) && strstr(sock, ".sock"));
		free(procs);
	}
	CHECK(access(sock, F_OK) == 0);
	for (int i = 0; i < 10; i++)
		CHECK_EQ_U64(step(NULL), 0); /* A: RING/LL */

	test_listing();
	test_swaps();
	test_rollback_pending();
	test_cli_views();

	/* Control-plane log lines carry the plugin's prefix once. */
	CHECK_STR_CONTAINS(emu_log_buf, "ncclbpf: control socket ");
	CHECK_STR_CONTAINS(emu_log_buf, "ncclbpf: rolled back at call ");
	CHECK_MSG(!strstr(emu_log_buf, "ncclbpf: ncclbpf:"), "doubled prefix in the log:\n%s",
		  emu_log_buf);

	CHECK(emu_tuner_fini(&rk[0]) == 0);
	CHECK(emu_tuner_fini(&rk[1]) == 0);
	CHECK(access(sock, F_OK) != 0); /* the last release stopped the thread and removed the socket */
	emu_close(&pl);
	rmdir(dir);
	{
		char cmd[700];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		CHECK(system(cmd) == 0);
	}
	return check_summary("control_reload");
}
