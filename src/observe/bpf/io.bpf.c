// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * io.bpf.c - data-loader I/O of the job: block requests (issue ->
 * complete latency, size, alignment, per device and process), io_uring
 * requests (submit -> complete, per opcode) and page-cache misses.
 *
 * A block request is attributed to the process that submitted it
 * (block_io_start runs in the submitter's context); where that tracepoint
 * is missing, to the process that issues it (often the same thread, but a
 * plug flushed by a kworker is lost).  The time measured is issue ->
 * complete: the device's share, not the queueing before it.
 */
#include "observe.bpf.h"

#define REQ_OP_MASK_ ((1 << 8) - 1)

struct rq_start {
	__u64 issue_ns; /* 0 until issued */
	__u32 tgid, tid;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* struct request * */
	__type(value, struct rq_start);
} rq_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct obs_blk_key);
	__type(value, struct obs_blk_val);
} blk SEC(".maps");

struct uring_start {
	__u64 ts;
	__u32 tgid, tid, opcode, pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* struct io_kiocb * */
	__type(value, struct uring_start);
} uring_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct obs_uring_key);
	__type(value, struct obs_hist);
} uring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tgid */
	__type(value, struct obs_pcache_val);
} pcache SEC(".maps");

/* Zero values for obs_lookup_init (too large for the BPF stack). */
const struct obs_blk_val blk_zero = {};
const struct obs_hist hist_zero = {};

static __always_inline void rq_claim(struct request *rq)
{
	__u64 key = (__u64)rq, id = bpf_get_current_pid_tgid();
	struct rq_start s = { .tgid = id >> 32, .tid = (__u32)id };

	if (!obs_current_is_target())
		return;
	bpf_map_update_elem(&rq_start, &key, &s, BPF_ANY);
}

/* The submitter's context: who asked for this request. */
SEC("tp_btf/block_io_start")
int BPF_PROG(io_block_start, struct request *rq)
{
	rq_claim(rq);
	return 0;
}

/* Kernels before block_io_start (6.5): the accounting function it replaced. */
SEC("fentry/__blk_account_io_start")
int BPF_PROG(io_block_start_fentry, struct request *rq)
{
	rq_claim(rq);
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(io_block_issue, struct request *rq)
{
	__u64 key = (__u64)rq;
	struct rq_start *s = bpf_map_lookup_elem(&rq_start, &key);

	if (!s) {
		/* No block_io_start on this kernel (or accounting off): the issuer. */
		rq_claim(rq);
		s = bpf_map_lookup_elem(&rq_start, &key);
		if (!s)
			return 0;
	}
	s->issue_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(io_block_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq, now = bpf_ktime_get_ns(), lat, off;
	struct rq_start *s = bpf_map_lookup_elem(&rq_start, &key);
	struct obs_blk_key k = {};
	struct obs_blk_val *v;
	struct gendisk *disk;
	__u32 op, bytes;

	if (!s)
		return 0;
	if (!s->issue_ns) {
		bpf_map_delete_elem(&rq_start, &key);
		return 0;
	}
	lat = now - s->issue_ns;
	k.tgid = s->tgid;
	disk = rq->q->disk;
	if (disk)
		k.dev = ((__u32)disk->major << 20) | (__u32)disk->first_minor;
	op = rq->cmd_flags & REQ_OP_MASK_;
	k.op = op == 0 ? OBS_OP_READ : op == 1 ? OBS_OP_WRITE : OBS_OP_OTHER;
	/* __data_len is what is left: at completion of the whole request, nr_bytes is the size. */
	bytes = nr_bytes;
	off = (__u64)rq->__sector << 9;
	v = obs_lookup_init(&blk, &k, &blk_zero);
	if (v) {
		obs_hist_add(&v->lat, lat);
		obs_hist_add(&v->size, bytes);
		/* Lowest set bit of offset | length: the request's alignment (1 GiB when both are 0). */
		obs_hist_add(&v->align, (off | bytes) ? (off | bytes) & -(off | bytes) : 1ULL << 30);
		if (bytes < OBS_SMALL_IO)
			v->small += 1;
		if ((off | bytes) & (OBS_ALIGN - 1))
			v->unaligned += 1;
		if (error)
			v->errors += 1;
	}
	obs_latency_event(OBS_EV_BLOCK, s->tgid, s->tid, lat, k.dev, bytes);
	bpf_map_delete_elem(&rq_start, &key);
	return 0;
}

/*
 * io_uring: the submit tracepoint is io_uring_submit_req since 5.19 and
 * io_uring_submit_sqe before; user space loads the one the kernel has.
 * Both carry the request pointer, which the completion carries too.
 */
struct trace_event_raw_io_uring_submit_sqe___old {
	void *ctx;
	void *req;
	__u8 opcode;
} __attribute__((preserve_access_index));

static __always_inline void uring_submit(void *req, __u32 opcode)
{
	__u64 key = (__u64)req, id = bpf_get_current_pid_tgid();
	struct uring_start s;

	if (!obs_current_is_target())
		return;
	s.ts = bpf_ktime_get_ns();
	s.tgid = id >> 32;
	s.tid = (__u32)id;
	s.opcode = opcode;
	s.pad = 0;
	bpf_map_update_elem(&uring_start, &key, &s, BPF_ANY);
}

/*
 * Each tracepoint has a typed raw form (tp_btf: the arguments as the
 * kernel passes them, no trace record built) and a classic one, the
 * fallback user space picks where the kernel's BTF lacks the first.
 */
SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(io_uring_submit_btf, struct io_kiocb *req)
{
	uring_submit(req, req->opcode);
	return 0;
}

SEC("tp/io_uring/io_uring_submit_req")
int io_uring_submit(struct trace_event_raw_io_uring_submit_req *ctx)
{
	uring_submit(ctx->req, ctx->opcode);
	return 0;
}

SEC("tp/io_uring/io_uring_submit_sqe")
int io_uring_submit_old(struct trace_event_raw_io_uring_submit_sqe___old *ctx)
{
	uring_submit(BPF_CORE_READ(ctx, req), BPF_CORE_READ(ctx, opcode));
	return 0;
}

static __always_inline void uring_done(void *req)
{
	__u64 key = (__u64)req, lat;
	struct uring_start *s = bpf_map_lookup_elem(&uring_start, &key);
	struct obs_uring_key k = {};
	struct obs_hist *h;

	if (!s)
		return;
	lat = bpf_ktime_get_ns() - s->ts;
	k.tgid = s->tgid;
	k.opcode = s->opcode;
	h = obs_lookup_init(&uring, &k, &hist_zero);
	if (h)
		obs_hist_add(h, lat);
	obs_latency_event(OBS_EV_URING, s->tgid, s->tid, lat, s->opcode, 0);
	bpf_map_delete_elem(&uring_start, &key);
}

SEC("tp_btf/io_uring_complete")
int BPF_PROG(io_uring_done_btf, void *ctx_, void *req)
{
	uring_done(req);
	return 0;
}

SEC("tp/io_uring/io_uring_complete")
int io_uring_done(struct trace_event_raw_io_uring_complete *ctx)
{
	uring_done(BPF_CORE_READ(ctx, req));
	return 0;
}

/* Page cache: pages looked up by the job's reads, and pages its threads had to add. */
static __always_inline void pcache_count(__u64 accessed, __u64 added)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct obs_pcache_val zero = {}, *v;

	v = obs_lookup_init(&pcache, &tgid, &zero);
	if (!v)
		return;
	v->accessed += accessed;
	v->added += added;
}

SEC("tp_btf/mm_filemap_get_pages")
int BPF_PROG(io_pcache_get_btf, struct address_space *mapping, unsigned long index,
	     unsigned long last_index)
{
	if (obs_current_is_target())
		pcache_count(last_index - index + 1, 0);
	return 0;
}

SEC("tp/filemap/mm_filemap_get_pages")
int io_pcache_get(struct trace_event_raw_mm_filemap_op_page_cache_range *ctx)
{
	if (obs_current_is_target())
		pcache_count(ctx->last_index - ctx->index + 1, 0);
	return 0;
}

/* Older layouts of struct folio, for CO-RE: the order in its own byte (6.0 to 6.8). */
struct folio___old {
	__u8 _folio_order;
} __attribute__((preserve_access_index));

/*
 * Pages in a folio, as folio_order() tells the classic tracepoint: a head
 * flag, then the order in the low byte of the second page's flags (6.9+)
 * or in _folio_order before.
 */
static __always_inline __u64 folio_pages(struct folio *f)
{
	unsigned long flags = 0;

	bpf_core_read(&flags, sizeof(flags), &f->flags);
	if (!(flags & (1UL << bpf_core_enum_value(enum pageflags, PG_head))))
		return 1;
	if (bpf_core_field_exists(f->_flags_1))
		return 1ULL << (BPF_CORE_READ(f, _flags_1) & 0x1f);
	if (bpf_core_field_exists(((struct folio___old *)f)->_folio_order))
		return 1ULL << (BPF_CORE_READ((struct folio___old *)f, _folio_order) & 0x1f);
	return 1;
}

SEC("tp_btf/mm_filemap_add_to_page_cache")
int BPF_PROG(io_pcache_add_btf, struct folio *folio)
{
	if (obs_current_is_target())
		pcache_count(0, folio_pages(folio));
	return 0;
}

SEC("tp/filemap/mm_filemap_add_to_page_cache")
int io_pcache_add(struct trace_event_raw_mm_filemap_op_page_cache *ctx)
{
	__u64 pages = 1;

	if (!obs_current_is_target())
		return 0;
	if (bpf_core_field_exists(ctx->order))
		pages = 1ULL << (BPF_CORE_READ(ctx, order) & 31);
	pcache_count(0, pages);
	return 0;
}
