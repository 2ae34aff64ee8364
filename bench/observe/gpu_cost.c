// SPDX-License-Identifier: Apache-2.0
/*
 * gpu_cost.c - what the gpu probe set adds per call: times 200,000 calls of
 * cuLaunchKernel from a CUDA driver library (the tests' stand-in where
 * there is no GPU) and 200,000 ioctls on /dev/null, after waiting SECONDS
 * so that `ncclbpf observe --pid` can attach first.
 *
 * usage: gpu_cost LIBCUDA [SECONDS]
 *   unobserved: gpu_cost build/tests/observe/libcuda_fake.so
 *   observed:   gpu_cost LIB 2 & NCCLBPF_OBSERVE_LIBCUDA=LIB NCCLBPF_OBSERVE_GPU_MAJORS=1 \
 *               ncclbpf observe --pid $! --probes gpu --duration 4
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			 unsigned, void *, void **, void **);

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	const int n = 200000;
	void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;
	launch_fn launch = h ? (launch_fn)dlsym(h, "cuLaunchKernel") : NULL;
	double t0, t1, t2;
	int fd, x;

	if (!launch) {
		fprintf(stderr, "usage: gpu_cost LIBCUDA [SECONDS] (no cuLaunchKernel found)\n");
		return 2;
	}
	sleep(argc > 2 ? (unsigned)atoi(argv[2]) : 0);
	fd = open("/dev/null", O_RDONLY);
	t0 = now_s();
	for (int i = 0; i < n; i++)
		launch(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	t1 = now_s();
	for (int i = 0; i < n; i++)
		ioctl(fd, FIONREAD, &x);
	t2 = now_s();
	printf("cuLaunchKernel %.0f ns/call, ioctl %.0f ns/call\n", (t1 - t0) / n * 1e9,
	       (t2 - t1) / n * 1e9);
	return 0;
}
