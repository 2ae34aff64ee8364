/*
 * test_env.c - the env plugin v1/v2: policy overrides, fallback to the real
 * environment, returned strings stable until the next call for that name,
 * fail-open init, finalize and re-load, and v2's logger carrying the
 * plugin's messages.
 */
#include "check.h"
#include "emu_test.h"

static void run(int maxv)
{
	struct emu_plugin pl;
	char err[512];
	const nbpf_env_v2_t *e2;
	const nbpf_env_v1_t *e1;

	emu_set_policy(emu_policy("t_env"));
	setenv("NCCL_DEBUG_SUBSYS", "INIT", 1);
	setenv("NCCL_ALGO", "Tree", 1); /* the policy overrides it */
	CHECK(emu_open(&pl, EMU_ENV, "ncclbpf", maxv, err, sizeof(err)) == 0);
	CHECK_EQ_U64(pl.version, maxv);
	e1 = pl.table;
	e2 = pl.table;
	emu_log_reset();
	if (maxv == 2)
		CHECK(e2->init(2, 30, 7, "", emu_logger) == 0);
	else
		CHECK(e1->init(2, 28, 9, "") == 0);
	/* v2: the INFO line naming the loaded policy came through NCCL's logger. */
	if (maxv == 2)
		CHECK_STR_CONTAINS(emu_log_buf, "t_env.bpf.o");
	else
		CHECK_EQ_U64(strlen(emu_log_buf), 0);
	const char *a = e1->getEnv("NCCL_ALGO");
	const char *p = e1->getEnv("NCCL_PROTO");
	const char *s = e1->getEnv("NCCL_DEBUG_SUBSYS");

	CHECK(a && !strcmp(a, "Ring"));
	CHECK(p && !strcmp(p, "Simple"));
	CHECK(s && !strcmp(s, "INIT"));
	CHECK(e1->getEnv("NCCL_NO_SUCH_VARIABLE_X") == NULL);
	CHECK(e1->getEnv(NULL) == NULL);
	/* Other names do not disturb a returned string; the same name may. */
	for (int i = 0; i < 100; i++)
		e1->getEnv("NCCL_MIN_NCHANNELS");
	CHECK(!strcmp(a, "Ring") && !strcmp(p, "Simple"));
	const char *a2 = e1->getEnv("NCCL_ALGO");

	CHECK(a2 && !strcmp(a2, "Ring") && !strcmp(a, "Ring"));
	CHECK(e1->finalize() == 0);
	CHECK(e1->finalize() == 0); /* tolerated */
	emu_close(&pl);

	/*
	 * Missing policy: init still succeeds, the real environment answers.
	 * v2 hands init NCCL's logger: the plugin's one WARN goes through it
	 * (v1 gets none: stderr).
	 */
	emu_log_reset();
	emu_set_policy("/nonexistent/env.bpf.o");
	CHECK(emu_open(&pl, EMU_ENV, EMU_PLUGIN, maxv, err, sizeof(err)) == 0);
	e1 = pl.table;
	CHECK(((maxv == 2) ? ((const nbpf_env_v2_t *)pl.table)->init(2, 30, 7, NULL, emu_logger)
			   : e1->init(2, 28, 9, NULL)) == 0);
	a = e1->getEnv("NCCL_ALGO");
	CHECK(a && !strcmp(a, "Tree"));
	CHECK(e1->finalize() == 0);
	emu_close(&pl);
	CHECK_EQ_U64(emu_log_warns, maxv == 2 ? 1 : 0);
	if (maxv == 2)
		CHECK_STR_CONTAINS(emu_log_buf, "/nonexistent/env.bpf.o");
	unsetenv("NCCL_ALGO");
}

int main(void)
{
	run(1);
	run(2);
	return check_summary("emulator_env");
}
