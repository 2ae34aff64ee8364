// EXPECT: warn
// LRU hash keyed by comm_id; the tuner keeps its own per-comm call counter and alternates. (map writes make the lookup rank-local)
#include <ncclbpf/policy.h>

struct comm_state {
	__u64 first_seq;
	__u64 calls;
	__u32 flips;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, struct comm_state);
} comms SEC(".maps");

SEC("tuner")
int lru_tune(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 id = ctx->comm_id;
	struct comm_state *s = bpf_map_lookup_elem(&comms, &id);

	if (!s) {
		struct comm_state init = {};

		init.first_seq = ctx->call_seq;
		init.calls = 1;
		bpf_map_update_elem(&comms, &id, &init, BPF_NOEXIST);
		return NCCLBPF_TUNER_SKIP;
	}
	s->calls++;
	if ((ctx->call_seq & 1) == 0)
		s->flips++;
	ctx->proto = (ctx->call_seq % 2) ? NCCLBPF_PROTO_SIMPLE : NCCLBPF_KEEP;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
