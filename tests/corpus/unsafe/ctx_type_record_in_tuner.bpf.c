// EXPECT: context type does not match hook
// A tuner program taking the profiler's record (a typedef of it, const):
// rank and n_ranks would read the tuner context's num_pipe_ops and
// reg_buff.
#include <ncclbpf/policy.h>

typedef const struct ncclbpf_coll_record rec_t;
char LICENSE[] SEC("license") = "GPL";

SEC("tuner")
int record_in_tuner(rec_t *r)
{
	return r->rank == 0 && r->n_ranks > 8 ? NCCLBPF_TUNER_SKIP : NCCLBPF_TUNER_APPLY;
}
