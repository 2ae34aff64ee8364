/*
 * test_watch.c - NCCLBPF_WATCH=1: replacing the policy file (written aside
 * and renamed over it, as deployment tools do) reloads it on the control
 * thread; a replacement that fails verification changes nothing and is
 * reported with a WARN; a good one activates at an agreed call number on
 * both ranks.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "control/ctl_client.h"
#include "control/ctl_proto.h"
#include "emu_test.h"

static const struct emu_topo topo8 = { .n_ranks = 8, .n_nodes = 1, .nvls = true };
static struct emu_tuner rk[2];
static uint64_t total_calls;

static int step(void)
{
	struct emu_decision d[2];

	for (int r = 0; r < 2; r++)
		if (emu_tuner_call(&rk[r], &topo8, 4, 1 << 20, &d[r]) != 0)
			return -8;
	total_calls++;
	if (d[0].algo != d[1].algo || d[0].proto != d[1].proto)
		return -9;
	return d[0].proto;
}

static int copy_over(const char *from, const char *to)
{
	char tmp[1100], buf[65536];
	FILE *in = fopen(from, "rb"), *out;
	size_t n;

	snprintf(tmp, sizeof(tmp), "%s.new", to);
	out = fopen(tmp, "wb");
	if (!in || !out)
		return -1;
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, n, out);
	fclose(in);
	fclose(out);
	return rename(tmp, to);
}

/* The log is written by the control thread too: read it under its lock. */
static bool log_has(const char *needle)
{
	bool hit;

	pthread_mutex_lock(&emu_log_lock);
	hit = strstr(emu_log_buf, needle) != NULL;
	pthread_mutex_unlock(&emu_log_lock);
	return hit;
}

/* Current image generation and activation call, from a PS request. */
static int current_image(uint64_t *gen, uint64_t *at)
{
	struct nbpf_ctl_msg m;
	const char *em;
	int err = nbpf_ctl_call_pid(getpid(), NBPF_CTL_PS, NULL, &m, &em);

	*gen = *at = 0;
	for (uint32_t i = 0; !err && i < m.n_recs; i++)
		if (!strcmp(m.recs[i].kind, "image") &&
		    !strcmp(nbpf_ctl_rec_get(&m.recs[i], "state") ?: "", "current")) {
			nbpf_ctl_rec_u64(&m.recs[i], "gen", gen);
			nbpf_ctl_rec_u64(&m.recs[i], "at_call", at);
		}
	nbpf_ctl_msg_free(&m);
	return err;
}

int main(void)
{
	char dir[] = "/tmp/ncclbpf-watch-XXXXXX", live[600], ctl[600], err[512], a[1024], b[1024],
	     bad[1024], cmd[700];
	struct emu_plugin pl;
	uint64_t gen0, gen, at;

	snprintf(a, sizeof(a), "%s/ctl_a.bpf.o", CTL_BPF_DIR);
	snprintf(b, sizeof(b), "%s/ctl_b.bpf.o", CTL_BPF_DIR);
	snprintf(bad, sizeof(bad), "%s/ctl_bad.bpf.o", CTL_BPF_DIR);
	CHECK(mkdtemp(dir) != NULL);
	snprintf(live, sizeof(live), "%s/live.bpf.o", dir);
	snprintf(ctl, sizeof(ctl), "%s/ctl", dir);
	CHECK(copy_over(a, live) == 0);
	setenv("NCCLBPF_CTL_DIR", ctl, 1);
	setenv("NCCLBPF_WATCH", "1", 1);
	emu_set_policy(live);
	CHECK(emu_open(&pl, EMU_TUNER, EMU_PLUGIN, 5, err, sizeof(err)) == 0);
	CHECK(emu_tuner_init(&rk[0], &pl, 0x77, &topo8, emu_logger) == 0);
	CHECK(emu_tuner_init(&rk[1], &pl, 0x77, &topo8, emu_logger) == 0);
	CHECK(log_has("watching"));
	for (int i = 0; i < 20; i++)
		CHECK(step() == 0); /* A: LL */
	CHECK(current_image(&gen0, &at) == 0 && gen0 > 0);

	/* A replacement the verifier rejects: nothing changes, one WARN says why. */
	CHECK(copy_over(bad, live) == 0);
	/* Up to 20 s: the watcher's reload runs on a control thread that a loaded machine starves. */
	for (int i = 0; i < 400 && !log_has("was not reloaded"); i++)
		usleep(50 * 1000);
	CHECK(log_has("was not reloaded"));
	CHECK(log_has("pick_bad"));
	CHECK(current_image(&gen, &at) == 0 && gen == gen0);
	CHECK(step() == 0);

	/* A good replacement: both ranks switch at the announced call. */
	CHECK(copy_over(b, live) == 0);
	for (int i = 0; i < 400 && gen == gen0; i++) {
		usleep(50 * 1000);
		current_image(&gen, &at);
	}
	CHECK(gen > gen0);
	CHECK_MSG(at > total_calls, "activation %" PRIu64 " not ahead of %" PRIu64, at, total_calls);
	while (total_calls < at)
		if (step() != 0) {
			CHECK_MSG(0, "call %" PRIu64 " switched before %" PRIu64, total_calls - 1, at);
			break;
		}
	CHECK(step() == 2); /* B: SIMPLE from call `at` */

	CHECK(emu_tuner_fini(&rk[0]) == 0);
	CHECK(emu_tuner_fini(&rk[1]) == 0);
	emu_close(&pl);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
	return check_summary("control_watch");
}
