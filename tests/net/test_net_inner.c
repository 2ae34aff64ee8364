// SPDX-License-Identifier: Apache-2.0
/*
 * test_net_inner.c - NCCLBPF_NET=inner:<plugin>: our library wraps another
 * net plugin (tests/net/inner_plugin.c, exporting only v11 or only v8)
 * and NCCL sees the inner plugin's devices and data path with our hooks
 * around it.  Checks, for the exported table version given on the command
 * line: the inner plugin's properties come through, messages (0-byte,
 * inline, sliced) arrive intact, the counting net program sees every
 * post and completion (read back through the probe tuner of the same
 * library), an acting program's outputs are refused (counted, not
 * applied: the inner plugin owns its sockets), test on a finished
 * request is refused, and a missing inner plugin makes init fail so NCCL
 * moves on to its own transports.
 *
 *   test_net_inner <inner library> <our table version>
 */
#include "check.h"
#include "emu_test.h"
#include "net_drv.h"

#define TMO 10000

static int probe(struct emu_tuner *t, int slot)
{
	struct emu_decision dec;
	struct emu_topo topo = EMU_TOPO_DEFAULT;
	int coll = slot < 4 ? slot : slot - 4;

	if (emu_tuner_call(t, &topo, coll, slot < 4 ? 1 << 20 : 4, &dec))
		return -1;
	return dec.n_channels - 1;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 0, 100, 70000, 3 << 20 };
	char handle[NBPF_NET_HANDLE_MAXSIZE], err[256];
	struct emu_topo topo = EMU_TOPO_DEFAULT;
	struct drv_props pr;
	struct emu_plugin tpl;
	struct emu_tuner t;
	void *lib, *lc = NULL, *sc, *rc, *sr, *rr;
	unsigned char *a, *b;
	int v, n = 0, sz, done;
	struct drv d;
	char spec[600];

	if (argc != 3)
		return 2;
	v = atoi(argv[2]);
	setenv("NCCL_SOCKET_IFNAME", "lo", 0);
	emu_set_policy(EMU_BPF_DIR "/t_net_count.bpf.o:" EMU_BPF_DIR "/t_net_act.bpf.o:" EMU_BPF_DIR
		       "/t_net_probe.bpf.o");

	/* A missing inner plugin: init fails (NCCL skips this plugin), nothing crashes. */
	setenv("NCCLBPF_NET", "inner:/nonexistent/libnccl-net-none.so", 1);
	lib = drv_open(NET_PLUGIN);
	CHECK(lib && drv_bind(&d, lib, 11) == 0);
	if (!lib)
		return check_summary("net_inner");
	CHECK(drv_init(&d, 1, -1, NULL) != 0);
	dlclose(lib);

	snprintf(spec, sizeof(spec), "inner:%s", argv[1]);
	setenv("NCCLBPF_NET", spec, 1);
	lib = drv_open(NET_PLUGIN);
	CHECK(lib && drv_bind(&d, lib, v) == 0);
	CHECK(drv_init(&d, 3, -1, NULL) == 0);
	CHECK(drv_devices(&d, &n) == 0 && n >= 1);
	CHECK(drv_props(&d, 0, &pr) == 0);
	CHECK(pr.name && !strcmp(pr.name, "testinner"));
	CHECK_EQ_U64(pr.speed, 12345);
	CHECK(drv_listen(&d, 0, handle, &lc) == 0 && lc);
	CHECK(drv_pair(&d, 0, handle, lc, &sc, &rc, TMO) == 0 && sc && rc);
	CHECK(drv_close_listen(&d, lc) == 0);
	a = malloc(3 << 20);
	b = malloc(3 << 20);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (size_t k = 0; k < sizes[i]; k++)
			a[k] = (unsigned char)(k * 7 + i);
		memset(b, 0, 3 << 20);
		CHECK(drv_irecv(&d, rc, b, 3 << 20, 1, NULL, &rr) == 0 && rr && rr != (void *)0x1);
		CHECK(drv_isend(&d, sc, a, sizes[i], 1, NULL, &sr) == 0 && sr);
		CHECK(drv_wait(&d, sr, NULL, TMO) == 0);
		sz = -1;
		CHECK(drv_wait(&d, rr, &sz, TMO) == 0);
		CHECK_EQ_U64(sz, sizes[i]);
		CHECK(!memcmp(a, b, sizes[i]));
	}
	/* The last requests are finished: testing them again is refused. */
	CHECK(drv_test(&d, rr, &done, &sz) == NBPF_NCCL_INVALID_ARGUMENT);
	CHECK(drv_test(&d, NULL, &done, &sz) == NBPF_NCCL_INVALID_ARGUMENT);

	CHECK(emu_open(&tpl, EMU_TUNER, NET_PLUGIN, 5, err, sizeof(err)) == 0);
	CHECK(emu_tuner_init(&t, &tpl, 42, &topo, emu_logger) == 0);
	CHECK_EQ_U64(probe(&t, 0), 1);   /* connect (once the connection is made) */
	CHECK_EQ_U64(probe(&t, 1), 1);   /* accept */
	CHECK_EQ_U64(probe(&t, 2), 4);   /* send posts */
	CHECK_EQ_U64(probe(&t, 3), 4);   /* recv posts */
	CHECK_EQ_U64(probe(&t, 4), 4);   /* send completions */
	CHECK_EQ_U64(probe(&t, 5), 4);   /* recv completions */
	CHECK_EQ_U64(probe(&t, 6), (100 + 70000 + (3 << 20)) % 64);
	CHECK_EQ_U64(probe(&t, 7), 8);   /* completions with a latency */
	CHECK(emu_tuner_fini(&t) == 0);
	emu_close(&tpl);

	CHECK(drv_close_send(&d, sc) == 0);
	CHECK(drv_close_recv(&d, rc) == 0);
	CHECK(drv_finalize(&d) == 0);
	dlclose(lib);
	free(a);
	free(b);
	return check_summary("net_inner");
}
