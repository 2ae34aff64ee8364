/*
 * loader_multi.bpf.c - one object exercising every loader feature the
 * tests check: several program sections, two programs in one section,
 * bpf-to-bpf calls (global and static, nested), BTF maps of several
 * types, global data in .data/.rodata/.bss/.rodata.str1.1, a license,
 * a custom .data.custom section, and source lines the line-info test
 * looks for by their MARK comments.
 */
#include <ncclbpf/policy.h>

#ifndef BPF_MAP_TYPE_HASH
#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_LRU_HASH 9
#define BPF_MAP_TYPE_RINGBUF 27
#endif

struct pair {
	__u64 a;
	__u32 b;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct pair);
	__uint(max_entries, 128);
} pairs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(key_size, 4);
	__uint(value_size, 24);
	__uint(max_entries, 7);
} arr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 4);
} pcpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, __u16);
	__uint(max_entries, 16);
	__uint(map_flags, 0);
} lru SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

int counter = 42;
__u64 big_data = 0x1122334455667788ull;
const volatile __u32 limit = 7;
const volatile __u64 table[4] = { 10, 20, 30, 40 };
__u64 zeroed;
__u32 zeroed2[3];
__u32 custom_val SEC(".data.custom") = 0xc0ffee;
char LICENSE[] SEC("license") = "Dual BSD/GPL";

static __attribute__((noinline)) int leaf(int x)
{
	return x * 3 + limit; /* MARK_LEAF */
}

__attribute__((noinline)) int mid(int x)
{
	return leaf(x) + leaf(x + 1) + counter;
}

__attribute__((noinline)) int top(int x)
{
	return mid(x) - 1;
}

static __attribute__((noinline)) int other(int x)
{
	return x - counter;
}

/* Pure computation (no helpers) so the tests can run it: top(n_ranks) + table[n_nodes & 3] + 1. */
SEC("tuner") int calc(struct ncclbpf_tuner_ctx *ctx)
{
	int v = top(ctx->n_ranks);
	v += table[ctx->n_nodes & 3]; /* MARK_TABLE */
	zeroed += 1;
	return v + (custom_val == 0xc0ffee);
}

SEC("tuner") int pick(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 1;
	struct pair *p = bpf_map_lookup_elem(&pairs, &k);

	if (p)
		ctx->algo = p->b;
	ctx->proto = other(ctx->n_nodes); /* MARK_PICK */
	bpf_trace_printk("pick %d\n", sizeof("pick %d\n"), ctx->algo);
	return 0;
}

SEC("profiler") int prof(struct ncclbpf_coll_record *r)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&arr, &k);
	__u64 *c = bpf_map_lookup_elem(&pcpu, &k);
	__u64 key = r->comm_id;
	__u16 one = 1;

	if (v)
		*v += r->latency_ns;
	if (c)
		*c += 1;
	bpf_map_update_elem(&lru, &key, &one, 0);
	bpf_ringbuf_output(&events, r, sizeof(*r), 0);
	zeroed2[1] = big_data;
	return leaf(r->rank);
}
