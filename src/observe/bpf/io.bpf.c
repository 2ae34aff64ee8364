// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * io.bpf.c - data-loader I/O of the job: block requests (latency, size,
 * alignment, per device and process), io_uring requests (submit ->
 * complete, per opcode) and page-cache misses.
 *
 * A block request is attributed to the process that submitted it
 * (block_io_start runs in the submitter's context); where that tracepoint
 * is missing, to the process that issues it (often the same thread, but a
 * plug flushed by a kworker is lost).  The time measured is the block
 * layer's own: from its start stamp (as /sys/block stat times requests,
 * queueing included) to completion.
 */
#include "observe.bpf.h"

#define REQ_OP_MASK_ ((1 << 8) - 1)

/*
 * Requests in flight, from claim (submit) to completion: block requests
 * (ts: the claim's time where the block layer keeps no stamp, else 0) and
 * io_uring requests (ts: submit time).
 * A 4-way set-associative table in an array, keyed by the kernel object's
 * address: claiming a slot is one compare-and-swap, finding it one to four
 * loads, freeing it one store.  A hash map costs a bucket lock and an
 * element allocation per insert and per delete, on every request the job
 * makes.  A slot whose owner never completed (the observer attached
 * mid-flight, a request freed without completion) is taken over after
 * INFL_STALE_J jiffies; a request that finds all four ways busy and fresh
 * is not timed, and counted in infl_full.
 */
#define INFL_SLOTS 16384 /* a power of two */
#define INFL_WAYS 4
#define INFL_STALE_J 60000u /* a minute at HZ=1000, four at HZ=250 */

struct infl_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, INFL_SLOTS);
	__type(key, __u32);
	__type(value, struct obs_inflight);
};

struct infl_map rq_infl SEC(".maps");
struct infl_map uring_infl SEC(".maps");

/* Requests not timed because their set of slots was full. */
__u64 infl_full = 0;

/*
 * Keys are numbers, not pointers: the verifier lets no shift or mask touch
 * a pointer, nor a program store one in a map.  A typed pointer minus a
 * fixed one (the table's own address) is a number to it, for programs
 * allowed to see addresses (CAP_PERFMON, which observe needs anyway): one
 * subtraction, the same for the object at every tracepoint.
 */
#define INFL_KEY(map, p) ((__u64)(void *)(p) - (__u64)(void *)&(map))

/* The set of key: Fibonacci hashing without the low (alignment) bits. */
static __always_inline __u32 infl_set(__u64 key)
{
	return (__u32)(((key >> 6) * 0x9E3779B97F4A7C15ull) >> 50) & (INFL_SLOTS - 1);
}

static __always_inline struct obs_inflight *infl_find(void *map, __u64 key)
{
	__u32 h = infl_set(key);

	for (int w = 0; w < INFL_WAYS; w++) {
		__u32 i = (h + w) & (INFL_SLOTS - 1);
		struct obs_inflight *e = bpf_map_lookup_elem(map, &i);

		if (e && e->key == key)
			return e;
	}
	return NULL;
}

/*
 * A slot for key (its own, if it holds one already: *again says so, and
 * the slot still holds the object's last life), or NULL when the set is
 * full: one pass over the ways, then one compare-and-swap on the first
 * free or stale one (a claim racing for it on another CPU wins, and this
 * one tries the next).
 */
static __always_inline struct obs_inflight *infl_claim(void *map, __u64 key, bool *again)
{
	__u32 h = infl_set(key), now_j = (__u32)bpf_jiffies64();
	struct obs_inflight *e, *pick[INFL_WAYS] = {};
	int n = 0;

	for (int w = 0; w < INFL_WAYS; w++) {
		__u32 i = (h + w) & (INFL_SLOTS - 1);
		__u64 old;

		e = bpf_map_lookup_elem(map, &i);
		if (!e)
			return NULL;
		old = e->key;
		if (old == key) {
			e->j = now_j;
			*again = true;
			return e;
		}
		if (!old || now_j - e->j >= INFL_STALE_J)
			pick[n++ & (INFL_WAYS - 1)] = e;
	}
	for (int w = 0; w < INFL_WAYS && w < n; w++) {
		__u64 old;

		e = pick[w];
		if (!e)
			break;
		old = e->key;
		if (!old || now_j - e->j >= INFL_STALE_J) {
			/*
			 * The stamp before the key: a claim on another CPU that
			 * sees this key must see this stamp, not the slot's last
			 * owner's, or it takes the slot for stale and the request
			 * is lost.  Losing the race, the stamp stays on a slot
			 * just claimed (the same time) or stale anyway.
			 */
			e->j = now_j;
			if (__sync_val_compare_and_swap(&e->key, old, key) == old)
				return e;
		}
	}
	__sync_fetch_and_add(&infl_full, 1);
	return NULL;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct obs_blk_key);
	__type(value, struct obs_blk_val);
} blk SEC(".maps");

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

/* The device as user space numbers it (major << 20 | minor); 0 for a queue without a disk. */
static __always_inline __u32 rq_dev(struct request *rq)
{
	struct gendisk *disk = rq->q->disk;

	return disk ? ((__u32)disk->major << 20) | (__u32)disk->first_minor : 0;
}

static __always_inline __u32 rq_op(struct request *rq)
{
	__u32 op = rq->cmd_flags & REQ_OP_MASK_;

	return op == 0 ? OBS_OP_READ : op == 1 ? OBS_OP_WRITE : OBS_OP_OTHER;
}

/* A claimed request's figures: its process, device and operation, from its claim. */
static __always_inline struct obs_blk_key blk_key(const struct obs_inflight *e)
{
	return (struct obs_blk_key){ .tgid = e->tgid, .dev = e->dev, .op = e->opcode };
}

/*
 * A request's last life ended without its completion program running:
 * the kernel completed it (its /sys/block stat counts it, and ftrace
 * records the completion event), but the program attached to that event
 * did not run, and no recursion miss was counted.  Kernel 6.18 does this
 * to about 1 request in 5,000-30,000 under load.  Found when the request
 * is started again: its count and size are known from its claim, its
 * time is not.
 */
static __always_inline void blk_unseen(const struct obs_inflight *e)
{
	struct obs_blk_key k = blk_key(e);
	struct obs_blk_val *v = obs_lookup_init(&blk, &k, &blk_zero);

	if (!v)
		return;
	obs_hist_add(&v->size, e->len);
	v->unseen += 1;
}

/*
 * Two programs per request: the claim in the submitter's context, and the
 * completion.  The latency is the block layer's own, from its start stamp
 * (request.start_time_ns: what /sys/block/DEV/stat's times sum; set as the
 * request is accounted) to completion, so nothing runs at issue.  The
 * claim reads a clock only where a device keeps no stamps (iostats off),
 * as user space found (OBS_CFG_BLK_UNSTAMPED): its time stands in there.
 * It keeps the device, operation and size too, for a completion that
 * never reaches the program (blk_unseen).
 */
static __always_inline void rq_claim(struct request *rq, bool at_start)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct obs_inflight *e;
	bool again = false;

	if (!obs_current_is_target())
		return;
	e = infl_claim(&rq_infl, INFL_KEY(rq_infl, rq), &again);
	if (!e)
		return;
	/* Started once per life; issued again after a requeue, the same life. */
	if (again && !at_start)
		return;
	if (again)
		blk_unseen(e);
	e->ts = obs_cfg.flags & OBS_CFG_BLK_UNSTAMPED ? bpf_ktime_get_ns() : 0;
	e->tgid = id >> 32;
	e->tid = (__u32)id;
	e->dev = rq_dev(rq);
	e->opcode = rq_op(rq);
	e->len = rq->__data_len;
}

/* The submitter's context: who asked for this request. */
SEC("tp_btf/block_io_start")
int BPF_PROG(io_block_start, struct request *rq)
{
	rq_claim(rq, true);
	return 0;
}

/* Kernels before block_io_start (6.5): the accounting function it replaced. */
SEC("fentry/__blk_account_io_start")
int BPF_PROG(io_block_start_fentry, struct request *rq)
{
	rq_claim(rq, true);
	return 0;
}

/* Neither of those on this kernel: the request claimed as it is issued, by the issuer. */
SEC("tp_btf/block_rq_issue")
int BPF_PROG(io_block_issue, struct request *rq)
{
	rq_claim(rq, false);
	return 0;
}

/*
 * A request merged into another ends without a completion of its own (its
 * bytes complete with the other's, and the disk counts one request): its
 * slot is freed, or its reuse would count it as a completion not seen.
 */
SEC("tp_btf/block_rq_merge")
int BPF_PROG(io_block_merge, struct request *rq)
{
	struct obs_inflight *e = infl_find(&rq_infl, INFL_KEY(rq_infl, rq));

	if (e)
		e->key = 0;
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(io_block_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	struct obs_inflight *e = infl_find(&rq_infl, INFL_KEY(rq_infl, rq));
	struct obs_blk_key k;
	struct obs_blk_val *v;
	__u64 lat, off, t0 = rq->start_time_ns;
	__u32 bytes, tid;

	if (!e)
		return 0;
	k = blk_key(e);
	/*
	 * __data_len is what is left: less than that completing is a part (a
	 * short read the driver retries, a driver completing in chunks).  Its
	 * bytes count now, as the disk counts them; the request counts once,
	 * timed and sized at its last part.
	 */
	if (nr_bytes < rq->__data_len) {
		v = obs_lookup_init(&blk, &k, &blk_zero);
		if (v)
			v->size.sum += nr_bytes;
		return 0;
	}
	/* Neither stamp (a device without iostats attached since observe began): no time. */
	if (!t0)
		t0 = e->ts ? e->ts : bpf_ktime_get_ns();
	tid = e->tid;
	bytes = nr_bytes;
	off = (__u64)rq->__sector << 9;
	/* The last of several parts: sized and aligned as the whole request was claimed. */
	if (bytes < e->len) {
		off -= e->len - bytes;
		bytes = e->len;
	}
	e->key = 0; /* free: everything needed is read */
	lat = bpf_ktime_get_ns() - t0;
	v = obs_lookup_init(&blk, &k, &blk_zero);
	if (v) {
		obs_hist_add(&v->lat, lat);
		obs_hist_add(&v->size, bytes);
		v->size.sum -= bytes - nr_bytes; /* the earlier parts' bytes are in already */
		/* Lowest set bit of offset | length: the request's alignment (1 GiB when both are 0). */
		obs_hist_add(&v->align, (off | bytes) ? (off | bytes) & -(off | bytes) : 1ULL << 30);
		if (bytes < OBS_SMALL_IO)
			v->small += 1;
		if ((off | bytes) & (OBS_ALIGN - 1))
			v->unaligned += 1;
		if (error)
			v->errors += 1;
	}
	obs_latency_event(OBS_EV_BLOCK, k.tgid, tid, lat, k.dev, bytes);
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

/* key: the request's address (a number here: see INFL_KEY); the caller checked the target. */
static __always_inline void uring_submit(__u64 key, __u32 opcode)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct obs_inflight *e;
	bool again = false;

	e = infl_claim(&uring_infl, key, &again);
	if (!e)
		return;
	e->tgid = id >> 32;
	e->tid = (__u32)id;
	e->opcode = opcode;
	e->ts = bpf_ktime_get_ns();
}

/*
 * Each tracepoint has a typed raw form (tp_btf: the arguments as the
 * kernel passes them, no trace record built) and a classic one, the
 * fallback user space picks where the kernel's BTF lacks the first.
 */
SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(io_uring_submit_btf, struct io_kiocb *req)
{
	__u64 key = 0;

	if (!obs_current_is_target())
		return 0;
	/*
	 * The completion's request is an untyped void *, a number; this one is
	 * typed.  Its address as a number: copied out of the argument slot.
	 */
	bpf_probe_read_kernel(&key, sizeof(key), ctx);
	uring_submit(key, req->opcode);
	return 0;
}

SEC("tp/io_uring/io_uring_submit_req")
int io_uring_submit(struct trace_event_raw_io_uring_submit_req *ctx)
{
	if (obs_current_is_target())
		uring_submit((__u64)ctx->req, ctx->opcode);
	return 0;
}

SEC("tp/io_uring/io_uring_submit_sqe")
int io_uring_submit_old(struct trace_event_raw_io_uring_submit_sqe___old *ctx)
{
	if (obs_current_is_target())
		uring_submit((__u64)BPF_CORE_READ(ctx, req), BPF_CORE_READ(ctx, opcode));
	return 0;
}

static __always_inline void uring_done(void *req)
{
	struct obs_inflight *e = infl_find(&uring_infl, (__u64)req);
	struct obs_uring_key k = {};
	struct obs_hist *h;
	__u64 lat;
	__u32 tid;

	if (!e)
		return;
	lat = bpf_ktime_get_ns() - e->ts;
	k.tgid = e->tgid;
	k.opcode = e->opcode;
	tid = e->tid;
	e->key = 0;
	h = obs_lookup_init(&uring, &k, &hist_zero);
	if (h)
		obs_hist_add(h, lat);
	obs_latency_event(OBS_EV_URING, k.tgid, tid, lat, k.opcode, 0);
}

SEC("tp_btf/io_uring_complete")
int BPF_PROG(io_uring_done_btf, void *ctx_, void *req)
{
	__u64 key = 0;

	/*
	 * req is an untyped void * (a number to the verifier) on the kernels
	 * seen so far, which user space checked in the BTF; should a kernel
	 * type it, the slot is copied out instead, so the key is a number
	 * either way (the branch not taken is never verified).
	 */
	if (obs_cfg.flags & OBS_CFG_URING_REQ_VOID)
		key = (__u64)req;
	else
		bpf_probe_read_kernel(&key, sizeof(key), &ctx[1]);
	uring_done((void *)key);
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

/*
 * The read a thread is in: filemap_get_pages runs once per batch of
 * folios of one read() and reports, each time, the whole range from where
 * the read has got to up to its end.  Counting every report counts a large
 * read's pages again and again (a third too many for 1 MiB reads).  A read
 * is counted once, at its first report: the next reports of the same
 * read (same file, same end, further on) add nothing.
 */
struct pc_read {
	__u64 file, index, last;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pc_read);
} pc_read SEC(".maps");

static __always_inline void pcache_lookup(__u64 file, __u64 index, __u64 last)
{
	struct pc_read *r = bpf_task_storage_get(&pc_read, bpf_get_current_task_btf(), 0,
						 BPF_LOCAL_STORAGE_GET_F_CREATE);
	bool more = r && r->file == file && r->last == last && index > r->index && index <= last;

	if (r) {
		r->file = file;
		r->index = index;
		r->last = last;
	}
	if (!more && last >= index)
		pcache_count(last - index + 1, 0);
}

SEC("tp_btf/mm_filemap_get_pages")
int BPF_PROG(io_pcache_get_btf, struct address_space *mapping, unsigned long index,
	     unsigned long last_index)
{
	__u64 size, last = last_index;

	if (!obs_current_is_target())
		return 0;
	/* A read asks for its whole buffer: pages past the end of the file are not looked up. */
	size = mapping->host->i_size;
	if (size && last > (size - 1) >> 12)
		last = (size - 1) >> 12;
	pcache_lookup((__u64)mapping->host->i_ino, index, last);
	return 0;
}

SEC("tp/filemap/mm_filemap_get_pages")
int io_pcache_get(struct trace_event_raw_mm_filemap_op_page_cache_range *ctx)
{
	if (obs_current_is_target())
		pcache_lookup(ctx->i_ino ^ ((__u64)ctx->s_dev << 40), ctx->index, ctx->last_index);
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
