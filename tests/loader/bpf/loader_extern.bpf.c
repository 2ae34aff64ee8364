/* loader_extern.bpf.c - a kconfig extern: nothing here can resolve it, so it is refused. */
#include <ncclbpf/policy.h>

extern __u32 CONFIG_NCCLBPF_TEST __kconfig;

SEC("tuner") int use(struct ncclbpf_tuner_ctx *ctx)
{
	return CONFIG_NCCLBPF_TEST;
}
