// EXPECT: the format is not a constant (it is in map .data, not .rodata)
// A format in writable global data can change at run time (the program or
// an operator may rewrite it), so its conversions cannot be counted: with
// r4 and r5 unset, a '%d' written there later would print stale registers.
#include <ncclbpf/policy.h>

char fmt[] = "bytes %llu";

SEC("tuner")
int printk_data_fmt(struct ncclbpf_tuner_ctx *ctx)
{
	bpf_trace_printk(fmt, sizeof(fmt), ctx->n_bytes);
	return NCCLBPF_TUNER_SKIP;
}
char LICENSE[] SEC("license") = "GPL";
