// EXPECT: untyped context not accepted by hook
// `void *ctx` claims no layout, so the contract's type cannot be checked;
// the tuner hook accepts only its own context type.
#include <ncclbpf/policy.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tuner")
int void_ctx(void *ctx)
{
	const struct ncclbpf_coll_record *r = ctx;

	return r->rank ? NCCLBPF_TUNER_SKIP : NCCLBPF_TUNER_APPLY;
}
