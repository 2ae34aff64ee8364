/*
 * test_env_only.c - an env-only policy object (an ncclbpf_env table and no
 * programs, as policies/env_overrides.bpf.c ships) loads cleanly through
 * the plugin: the env plugin answers from its table, and the tuner, given
 * no tuner program, leaves every decision to NCCL without a WARN.
 */
#define EMU_BPF_DIR ""
#include "check.h"
#include "emu_test.h"

static void env_plugin(void)
{
	struct emu_plugin pl;
	char err[512];
	const nbpf_env_v2_t *e;

	emu_log_reset();
	if (emu_open(&pl, EMU_ENV, EMU_PLUGIN, 2, err, sizeof(err))) {
		CHECK_MSG(0, "open env plugin: %s", err);
		return;
	}
	e = pl.table;
	CHECK(e->init(2, 30, 7, "", emu_logger) == 0);
	const char *ch = e->getEnv("NCCL_MAX_NCHANNELS");
	const char *sub = e->getEnv("NCCL_DEBUG_SUBSYS");

	CHECK(ch && !strcmp(ch, "16"));
	CHECK(sub && !strcmp(sub, "INIT,TUNING"));
	CHECK(e->getEnv("NCCL_NO_SUCH_VARIABLE_X") == NULL);
	CHECK(e->finalize() == 0);
	CHECK_MSG(emu_log_warns == 0, "env plugin warned:\n%s", emu_log_buf);
	emu_close(&pl);
}

static void tuner_plugin(void)
{
	struct emu_topo topo = EMU_TOPO_DEFAULT;
	struct emu_plugin pl;
	struct emu_tuner t;
	char err[512];

	emu_log_reset();
	if (emu_open(&pl, EMU_TUNER, EMU_PLUGIN, 5, err, sizeof(err))) {
		CHECK_MSG(0, "open tuner plugin: %s", err);
		return;
	}
	CHECK(emu_tuner_init(&t, &pl, 0x1234, &topo, emu_logger) == 0);
	for (uint64_t n = 8; n <= (1ull << 30); n <<= 4) {
		struct emu_decision d;

		CHECK(emu_tuner_call(&t, &topo, 4, n, &d) == 0);
		CHECK_MSG(d.algo == d.nccl_algo && d.proto == d.nccl_proto && d.n_channels == 0,
			  "%llu bytes: NCCL's pick changed with no tuner program",
			  (unsigned long long)n);
	}
	CHECK(emu_tuner_fini(&t) == 0);
	CHECK_MSG(emu_log_warns == 0, "tuner plugin warned:\n%s", emu_log_buf);
	emu_close(&pl);
}

int main(void)
{
	emu_set_policy(ENV_ONLY_OBJ);
	unsetenv("NCCL_MAX_NCHANNELS");
	env_plugin();
	tuner_plugin();
	return check_summary("cli_env_only");
}
