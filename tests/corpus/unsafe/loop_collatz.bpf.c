// EXPECT: went round at least 64 times on this path, and its exit test (this insn) was never decided: its bound is not proven (8192 pending branches)
// LINE: 19
/*
 * A Collatz-style while loop: no bound can be proven (nobody knows one),
 * and every iteration forks on n's parity.  The refusal names the loop
 * and why, at its exit test (the `while` line): "loop not proven to
 * terminate: too many pending branches", the loop's head and back edge,
 * and that its exit test was never decided.  (It used to say only
 * "program too complex: too many pending branches".)
 */
#include <ncclbpf/policy.h>

SEC("tuner")
int collatz(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 n = ctx->n_bytes;
	__u32 steps = 0;

	while (n > 1) {
		if (n & 1)
			n = 3 * n + 1;
		else
			n /= 2;
		steps++;
	}
	ctx->n_channels = steps & 7;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
