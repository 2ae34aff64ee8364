// SPDX-License-Identifier: Apache-2.0
/*
 * fake_cuda.c - a stand-in for the CUDA driver library with the entry
 * points observe's uprobes look for, so the gpu probe set is tested where
 * no GPU exists.  Synchronize sleeps, so time blocked in it is known.
 */
#include <time.h>

int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		   unsigned bz, unsigned shmem, void *stream, void **params, void **extra)
{
	__asm__ volatile("" ::: "memory"); /* keep the symbol a real function */
	return 0;
}

int cuStreamSynchronize(void *stream)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	return 0;
}

/* What cudaDeviceSynchronize calls on recent drivers (its own body: no nested probe). */
int cuCtxSynchronize_v2(void *ctx)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	return 0;
}

int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, unsigned long n)
{
	__asm__ volatile("" ::: "memory");
	return 0;
}
