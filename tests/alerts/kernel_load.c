// SPDX-License-Identifier: Apache-2.0
/*
 * kernel_load.c - a stand-in training process for the dashboard's kernel
 * panels: everything `ncclbpf export --observe` measures happens in it,
 * at a steady rate, until it is killed.
 *
 *   io_uring    4 KiB O_DIRECT reads of FILE at queue depth 8
 *   block       the same reads (and the misses below)
 *   page cache  buffered 256 KiB reads of FILE, its cache dropped each pass
 *   TCP         a loopback stream in a private network namespace whose
 *               loopback drops 3% of data packets (netloss.h): bytes,
 *               retransmits, RTT; reconnected every 2 s, so connections end
 *   GPU         launches, a copy and a synchronize per step, through the
 *               stand-in libcuda
 *   sched       all of it, on whatever CPUs the scheduler picks
 *
 * usage: kernel_load FILE LIBCUDA   (root: the network namespace); prints
 * "ready" once everything runs.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <bpf/libbpf.h>
#include <liburing.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "netloss.h"

static const char *path;

static void *uring_main(void *arg)
{
	struct io_uring ring;
	int fd = open(path, O_RDONLY | O_DIRECT);
	off_t blocks = fd >= 0 ? lseek(fd, 0, SEEK_END) / 4096 : 0;
	void *buf = NULL;

	(void)arg;
	if (fd < 0 || blocks <= 0 || posix_memalign(&buf, 4096, 8 * 4096) || io_uring_queue_init(8, &ring, 0))
		return NULL;
	for (unsigned long i = 0;; i++) {
		struct io_uring_cqe *cqe;

		for (int k = 0; k < 8; k++)
			io_uring_prep_read(io_uring_get_sqe(&ring), fd, (char *)buf + k * 4096, 4096,
					   (off_t)((i * 8 + (unsigned long)k) * 7919 % (unsigned long)blocks) * 4096);
		io_uring_submit(&ring);
		for (int k = 0; k < 8 && !io_uring_wait_cqe(&ring, &cqe); k++)
			io_uring_cqe_seen(&ring, cqe);
		usleep(5000);
	}
	return NULL;
}

static void *cache_main(void *arg)
{
	static char buf[256 << 10];
	int fd = open(path, O_RDONLY);

	(void)arg;
	while (fd >= 0) {
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		for (off_t off = 0; pread(fd, buf, sizeof(buf), off) > 0; off += (off_t)sizeof(buf))
			usleep(2000);
	}
	return NULL;
}

static int lfd;

static void *tcp_rx(void *arg)
{
	char buf[65536];

	(void)arg;
	for (;;) {
		int fd = accept(lfd, NULL, NULL);

		while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
			;
		if (fd >= 0)
			close(fd);
	}
	return NULL;
}

static void *tcp_tx(void *arg)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	static char buf[65536];

	(void)arg;
	getsockname(lfd, (struct sockaddr *)&sa, &sl);
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			close(fd);
			sleep(1);
			continue;
		}
		/* 2 s of a paced stream per connection: 64 KiB every 5 ms. */
		for (int i = 0; i < 400 && write(fd, buf, sizeof(buf)) > 0; i++)
			usleep(5000);
		close(fd);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
		      void *, void **, void **);
	int (*sync)(void *), (*copy)(unsigned long long, const void *, unsigned long);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	LIBBPF_OPTS(bpf_tc_hook, hook, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, tco);
	pthread_t th;
	void *h;

	if (argc < 3)
		return 2;
	path = argv[1];
	h = dlopen(argv[2], RTLD_NOW);
	if (!h || unshare(CLONE_NEWNET) || netloss_lo_up()) {
		fprintf(stderr, "kernel_load: %s\n", h ? strerror(errno) : dlerror());
		return 1;
	}
	launch = (void *)dlsym(h, "cuLaunchKernel");
	sync = (void *)dlsym(h, "cuStreamSynchronize");
	copy = (void *)dlsym(h, "cuMemcpyHtoD_v2");
	hook.ifindex = (int)if_nametoindex("lo");
	tco.prog_fd = netloss_drop_prog(3);
	if (tco.prog_fd < 0 || bpf_tc_hook_create(&hook) || bpf_tc_attach(&hook, &tco)) {
		fprintf(stderr, "kernel_load: no packet loss on lo\n");
		return 1;
	}
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 4))
		return 1;
	pthread_create(&th, NULL, uring_main, NULL);
	pthread_create(&th, NULL, cache_main, NULL);
	pthread_create(&th, NULL, tcp_rx, NULL);
	pthread_create(&th, NULL, tcp_tx, NULL);
	printf("ready\n");
	fflush(stdout);
	/* A step: 20 launches 100 us apart, then a synchronize, 10 ms of host work before the next. */
	for (;;) {
		for (int i = 0; i < 20; i++) {
			launch(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
			usleep(100);
		}
		copy(0, &h, sizeof(h));
		sync(NULL);
		usleep(10000);
	}
}
