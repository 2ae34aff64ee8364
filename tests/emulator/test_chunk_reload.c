/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_chunk_reload.c - chunk decisions follow the same activation as
 * every other decision: a reload at an agreed call switches every rank's
 * SEC("tuner/chunk") program at the same point.  A chunk call sees the
 * image the communicator's next getCollInfo uses, so with an activation at
 * call N the chunks of collective N-1 (asked after getCollInfo N-1) are
 * already the new program's, on every rank alike; before that, the old
 * program's; and an immediate reload changes nothing mid-collective.
 * Four ranks of one communicator (tuner v7), reloads over the control
 * socket as `ncclbpf reload --at-call` sends them.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "control/ctl_client.h"
#include "emu_test.h"

#define RANKS 4

static const struct emu_topo topo = EMU_TOPO_DEFAULT;
static struct emu_tuner rk[RANKS];
static uint64_t calls;
static char tmpdir[] = "/tmp/ncclbpf-emu-chunkreload-XXXXXX";

/* This process's control socket, found afresh (each dlopen serves a new one). */
static int reload(const char *spec, uint64_t at_call)
{
	struct nbpf_ctl_proc *procs = NULL;
	struct nbpf_ctl_buf b = { 0 };
	struct nbpf_ctl_msg m = { 0 };
	const char *em = NULL;
	int n = nbpf_ctl_list(&procs), err = -ESRCH;

	nbpf_ctl_buf_rec(&b, "reload");
	nbpf_ctl_buf_str(&b, "path", spec);
	nbpf_ctl_buf_u64(&b, "at_call", at_call);
	for (int i = 0; i < n; i++)
		if (procs[i].pid == getpid()) {
			err = nbpf_ctl_call_path(procs[i].path, NBPF_CTL_RELOAD, b.data, &m, &em);
			break;
		}
	CHECK_MSG(err == 0, "reload %s at %llu: %s", spec, (unsigned long long)at_call, em ? em : "");
	nbpf_ctl_msg_free(&m);
	nbpf_ctl_buf_free(&b);
	free(procs);
	return err;
}

/* One 64 MiB AllReduce (Ring/Simple) on every rank: the chunk all ranks used, 0 if they differ. */
static uint32_t step(void)
{
	uint32_t chunk = 0;

	for (int r = 0; r < RANKS; r++) {
		struct emu_decision d;

		CHECK(emu_tuner_call(&rk[r], &topo, 4, 64u << 20, &d) == 0);
		CHECK(d.n_chunks >= 1 && d.proto == 2);
		for (int i = 0; i < d.n_chunks; i++) {
			if (!r && !i)
				chunk = d.chunk[0];
			else if (d.chunk[i] != chunk)
				chunk = 0;
		}
	}
	calls++;
	return chunk;
}

int main(void)
{
	struct emu_plugin pl;
	char err[512], dir[600];
	uint64_t at;

	CHECK(mkdtemp(tmpdir) != NULL);
	snprintf(dir, sizeof(dir), "%s/ctl", tmpdir);
	setenv("NCCLBPF_CTL_DIR", dir, 1);
	emu_set_policy(emu_policy("t_chunk"));
	CHECK(emu_open(&pl, EMU_TUNER, EMU_PLUGIN, 7, err, sizeof(err)) == 0);
	for (int r = 0; r < RANKS; r++)
		CHECK(emu_tuner_init(&rk[r], &pl, 0xc4a11, &topo, emu_logger) == 0);
	CHECK_EQ_U64(step(), 64u << 10);

	/* Activation at call `at`: chunk calls see the next getCollInfo's image. */
	at = calls + 5;
	CHECK(reload(emu_policy("t_chunk_b"), at) == 0);
	while (calls + 1 < at)
		CHECK_MSG(step() == 64u << 10, "collective %llu: not t_chunk's 64 KiB",
			  (unsigned long long)calls);
	CHECK_MSG(step() == 256u << 10, "collective %llu (at_call - 1): not t_chunk_b's 256 KiB",
		  (unsigned long long)calls - 1);
	for (int i = 0; i < 5; i++)
		CHECK_EQ_U64(step(), 256u << 10);

	/* And back, immediately: from the next collective on, on every rank. */
	CHECK(reload(emu_policy("t_chunk"), 0) == 0);
	for (int i = 0; i < 5; i++)
		CHECK_EQ_U64(step(), 64u << 10);

	for (int r = 0; r < RANKS; r++)
		CHECK(emu_tuner_fini(&rk[r]) == 0);
	emu_close(&pl);
	rmdir(dir);
	CHECK(rmdir(tmpdir) == 0);
	return check_summary("emulator_chunk_reload");
}
