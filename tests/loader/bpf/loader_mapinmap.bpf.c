/* loader_mapinmap.bpf.c - a map of maps: must be refused with a clear message. */
#include <ncclbpf/policy.h>

struct inner {
	__uint(type, 2);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} inner1 SEC(".maps");

struct {
	__uint(type, 12); /* BPF_MAP_TYPE_ARRAY_OF_MAPS */
	__type(key, __u32);
	__uint(max_entries, 1);
	__array(values, struct inner);
} outer SEC(".maps") = { .values = { &inner1 } };

SEC("tuner") int use(struct ncclbpf_tuner_ctx *ctx)
{
	return bpf_map_lookup_elem(&outer, &ctx->coll_type) != 0;
}
