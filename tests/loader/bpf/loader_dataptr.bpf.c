/* loader_dataptr.bpf.c - global data holding a pointer: must be refused. */
#include <ncclbpf/policy.h>

int target = 5;
int *ptr = &target;

SEC("tuner") int use(struct ncclbpf_tuner_ctx *ctx)
{
	return *ptr;
}
