// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * progs.bpf.c - bench/cpu's five programs as BPF C on the tuner context,
 * for bench_peers (the same work as bench/cpu's assembler versions and as
 * the native twins in bench_peers.c).
 */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} peer_array SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u64);
} peer_hash SEC(".maps");

SEC("tuner")
int noop(struct ncclbpf_tuner_ctx *ctx)
{
	return 0;
}

SEC("tuner")
int threshold(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 n = ctx->n_bytes;

	ctx->n_channels = ctx->n_ranks > 8 ? 16 : 8;
	if (n < 65536) {
		ctx->algo = 1;
		ctx->proto = 0;
	} else if (n < 4194304) {
		ctx->algo = 1;
		ctx->proto = 1;
	} else {
		ctx->algo = 0;
		ctx->proto = 2;
	}
	return 0;
}

SEC("tuner")
int array_lookup(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = ctx->coll_type;
	__u64 *v = bpf_map_lookup_elem(&peer_array, &key);

	if (v)
		ctx->n_channels = (__s32)*v;
	return 0;
}

SEC("tuner")
int hash_update(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 key = ctx->n_bytes >> 16, val = 1, *v;

	v = bpf_map_lookup_elem(&peer_hash, &key);
	if (v)
		val = *v + 1;
	bpf_map_update_elem(&peer_hash, &key, &val, BPF_ANY);
	return 0;
}

SEC("tuner")
int loop16(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 n = ctx->n_bytes, h = 0;

	for (__u64 i = 0; i < 16; i++)
		h = h * 31 + ((n >> i) & 0xff);
	ctx->n_channels = (__s32)(h & 63) + 1;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
