/* A cost model: alpha + n_bytes/beta per cell from a config array, cheapest offered wins. */
#include <ncclbpf/policy.h>

struct cost {
	__u64 alpha_ns;
	__u64 bytes_per_us;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_ALGOS * NCCLBPF_NUM_PROTOS);
	__type(key, __u32);
	__type(value, struct cost);
} model SEC(".maps");

SEC("tuner")
int cost_table(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 best = ~0ull;
	__u32 best_cell = 0xffffffff;

	for (__u32 cell = 0; cell < NCCLBPF_NUM_ALGOS * NCCLBPF_NUM_PROTOS; cell++) {
		struct cost *c;
		__u64 t;

		if (!(ctx->avail_mask & (1u << cell)))
			continue;
		c = bpf_map_lookup_elem(&model, &cell);
		if (!c || c->bytes_per_us == 0)
			continue;
		t = c->alpha_ns + ctx->n_bytes * 1000 / c->bytes_per_us;
		if (t < best) {
			best = t;
			best_cell = cell;
		}
	}
	if (best_cell == 0xffffffff)
		return NCCLBPF_TUNER_SKIP;
	ctx->algo = best_cell / NCCLBPF_NUM_PROTOS;
	ctx->proto = best_cell % NCCLBPF_NUM_PROTOS;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
