// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * net_traffic.c - a process that uses the plugin as NCCL's net plugin and
 * sends messages to itself over loopback until SIGTERM, so the per-peer
 * net series have a live source (dashboard_live.sh).  Prints "ready" once
 * the first message has gone through; exits 0 on SIGTERM, 1 on an error.
 */
#include <signal.h>
#include <unistd.h>

#include "net_drv.h"

#define TMO 10000

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(void)
{
	static char buf[256 << 10];
	char handle[NBPF_NET_HANDLE_MAXSIZE];
	void *lib, *lc = NULL, *sc, *rc, *sr, *rr;
	struct drv d;
	int err = 1;

	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	setenv("NCCL_SOCKET_IFNAME", "lo", 0);
	unsetenv("NCCLBPF_POLICY");
	lib = drv_open(NET_PLUGIN);
	if (!lib || drv_bind(&d, lib, 11) || drv_init(&d, 0xda5b, -1, NULL))
		return 1;
	if (drv_listen(&d, 0, handle, &lc) || drv_pair(&d, 0, handle, lc, &sc, &rc, TMO))
		goto out;
	for (unsigned long i = 0; !stop; i++) {
		size_t sz = (i % 64 + 1) * 4096;

		if (drv_irecv(&d, rc, buf, sizeof(buf), 0, NULL, &rr) ||
		    drv_isend(&d, sc, buf, sz, 0, NULL, &sr) || drv_wait(&d, sr, NULL, TMO) ||
		    drv_wait(&d, rr, NULL, TMO))
			goto out;
		if (!i) {
			puts("ready");
			fflush(stdout);
		}
		usleep(2000);
	}
	err = 0;
	drv_close_send(&d, sc);
	drv_close_recv(&d, rc);
out:
	drv_close_listen(&d, lc);
	drv_finalize(&d);
	return err;
}
