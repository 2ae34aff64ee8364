// SPDX-License-Identifier: Apache-2.0
/*
 * cuda_job.cu - a CUDA job for `ncclbpf observe --probes gpu` on a real
 * driver: N kernel launches, a cudaDeviceSynchronize every 100 and a
 * cudaMemcpy every 1000, through the runtime API as NCCL and PyTorch call
 * it; it prints what it did so the observer's counts can be compared.
 */
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <cuda_runtime.h>
__global__ void bump(int *p) { if (threadIdx.x == 0) p[0]++; }
int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10000, *d, h = 0;
	cudaMalloc(&d, sizeof(int));
	cudaMemset(d, 0, sizeof(int));
	cudaDeviceSynchronize();
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	sleep(4);
	int syncs = 0, copies = 0;
	for (int i = 0; i < n; i++) {
		bump<<<1, 32>>>(d);
		if (i % 100 == 99) { cudaDeviceSynchronize(); syncs++; }
		if (i % 1000 == 999) { cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost); copies++; }
	}
	cudaDeviceSynchronize();
	printf("launches %d syncs %d copies %d value %d\n", n, syncs + 1, copies, h);
	fflush(stdout);
	sleep(3);
	return 0;
}
