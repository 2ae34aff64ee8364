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
 * An open-addressed table in an array, keyed by the kernel object's
 * address, one cache line per slot: claiming is one compare-and-swap on
 * the first slot of the key's four that is free, stale or already the
 * key's, finding one to four loads, freeing one store.  Claim and
 * completion run on different CPUs (a block request: always, on the
 * machines measured), so every line they both touch moves between them:
 * in the common case that is one line each way.  A hash map costs a bucket
 * lock and an element allocation per insert and per delete.  A slot whose
 * owner never completed (the observer attached mid-flight, a completion
 * the program did not see) is taken over after INFL_STALE_J jiffies; a
 * request that finds its four slots busy and fresh is not timed, and
 * counted in infl_full.
 */
#define INFL_STALE_J 60000u /* a minute at HZ=1000, four at HZ=250 */

/* Mmapable for its alignment only: the values start on a page, so each slot is one line. */
struct infl_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, OBS_INFL_SLOTS);
	__type(key, __u32);
	__type(value, struct obs_inflight);
};

struct infl_map rq_infl SEC(".maps");
struct infl_map uring_infl SEC(".maps");

/* Requests not timed because their slots were busy. */
__u64 infl_full = 0;

/* Block completions seen while tests leave some unseen (obs_cfg.blk_test_drop). */
__u64 blk_test_seq = 0;

/*
 * Keys are numbers, not pointers: the verifier lets no shift or mask touch
 * a pointer, nor a program store one in a map.  A typed pointer minus a
 * fixed one (the table's own address) is a number to it, for programs
 * allowed to see addresses (CAP_PERFMON, which observe needs anyway): one
 * subtraction, the same for the object at every tracepoint.
 */
#define INFL_KEY(map, p) ((__u64)(void *)(p) - (__u64)(void *)&(map))

/*
 * A table's shape: its slots less one (a mask) and the jiffies after which
 * a slot is stale.  The block table's can be cut down for tests (obs_cfg).
 */
struct infl_shape {
	__u32 mask, stale_j;
};

static const struct infl_shape uring_shape = { OBS_INFL_SLOTS - 1, INFL_STALE_J };

static __always_inline struct infl_shape blk_shape(void)
{
	return (struct infl_shape){
		.mask = obs_cfg.blk_test_slots ? obs_cfg.blk_test_slots - 1 : OBS_INFL_SLOTS - 1,
		.stale_j = obs_cfg.blk_test_stale_j ? obs_cfg.blk_test_stale_j : INFL_STALE_J,
	};
}

/* The first slot of key: Fibonacci hashing without the low (alignment) bits. */
static __always_inline __u32 infl_first(__u64 key, __u32 mask)
{
	return (__u32)(((key >> 6) * 0x9E3779B97F4A7C15ull) >> 50) & mask;
}

/* Claims free a slot anywhere in the four, so a miss reads all four. */
static __always_inline struct obs_inflight *infl_find(void *map, struct infl_shape sh, __u64 key)
{
	__u32 h = infl_first(key, sh.mask);

	for (int w = 0; w < OBS_INFL_WAYS; w++) {
		__u32 i = (h + w) & sh.mask;
		struct obs_inflight *e = bpf_map_lookup_elem(map, &i);

		if (e && e->key == key)
			return e;
	}
	return NULL;
}

/* What a claimed slot held before: nothing, an earlier life of the same key, another key gone stale. */
enum infl_prior { INFL_FREE, INFL_AGAIN, INFL_STALE };

/*
 * A slot for key, or NULL when its four are busy and fresh.  The slots are
 * tried in order, and the first that is the key's, free or stale is taken
 * (*prior says which; the last two still hold that life's figures): one
 * line read in the common case.  A claim racing for the same slot on
 * another CPU wins, and this one tries the next.  A key can be left in a
 * later slot while an earlier one is free (its completion unseen, the
 * earlier slot freed since): it is found when the key is claimed while
 * the earlier slot is busy, or taken over as stale.
 */
static __always_inline struct obs_inflight *infl_claim(void *map, struct infl_shape sh, __u64 key,
						       enum infl_prior *prior)
{
	__u32 h = infl_first(key, sh.mask), now_j = (__u32)bpf_jiffies64();
	struct obs_inflight *e;

	for (int w = 0; w < OBS_INFL_WAYS; w++) {
		__u32 i = (h + w) & sh.mask;
		__u64 old;

		e = bpf_map_lookup_elem(map, &i);
		if (!e)
			return NULL;
		old = e->key;
		if (old == key) {
			e->j = now_j;
			*prior = INFL_AGAIN;
			return e;
		}
		if (old && now_j - e->j < sh.stale_j)
			continue;
		/*
		 * The stamp before the key: a claim on another CPU that sees
		 * this key must see this stamp, not the slot's last owner's,
		 * or it takes the slot for stale and the request is lost.
		 * Losing the race, the stamp stays on a slot just claimed (the
		 * same time) or stale anyway.
		 */
		e->j = now_j;
		if (__sync_val_compare_and_swap(&e->key, old, key) == old) {
			*prior = old ? INFL_STALE : INFL_FREE;
			return e;
		}
	}
	__sync_fetch_and_add(&infl_full, 1);
	return NULL;
}

/*
 * Per-CPU figures in arrays, their slots handed out by an index of packed
 * keys (OBS_IO_SLOTS in observe_abi.h): finding a key's slot reads one
 * line of the index, and its figures are then an array element, where a
 * per-CPU hash costs a hash, a bucket, an element and the per-CPU
 * pointer on every request.
 */
struct io_index {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE); /* page-aligned: eight entries per line */
	__uint(max_entries, OBS_IO_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
};

struct io_index blk_ix SEC(".maps");
struct io_index uring_ix SEC(".maps");
struct io_index pcache_ix SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OBS_IO_SLOTS);
	__type(key, __u32);
	__type(value, struct obs_blk_val);
} blk SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OBS_IO_SLOTS);
	__type(key, __u32);
	__type(value, struct obs_hist);
} uring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OBS_IO_SLOTS);
	__type(key, __u32);
	__type(value, struct obs_pcache_val);
} pcache SEC(".maps");

/* Events not counted because the two lines of the index their key may use were full. */
__u64 io_index_full = 0;

/*
 * The figures of key in vals, through index: key's entry, or the first
 * free one (a compare-and-swap: a racing claim of the same entry by the
 * same key is as good), scanning from the start of its line.  Entries are
 * never freed, so the first free one ends a search.
 */
static __always_inline void *io_vals(void *index, void *vals, __u64 key)
{
	__u32 h = (__u32)((key * 0x9E3779B97F4A7C15ull) >> 32) & (OBS_IO_SLOTS - 8);

	for (__u32 w = 0; w < 16; w++) {
		__u32 i = (h + w) & (OBS_IO_SLOTS - 1);
		__u64 *e = bpf_map_lookup_elem(index, &i), old;

		if (!e)
			return NULL;
		old = *e;
		if (!old)
			old = __sync_val_compare_and_swap(e, 0, key);
		if (!old || old == key)
			return bpf_map_lookup_elem(vals, &i);
	}
	__sync_fetch_and_add(&io_index_full, 1);
	return NULL;
}

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

/*
 * The block layer's start stamp of rq, 0 where it has none in this life:
 * it stamps a request as it accounts it (RQF_IO_STAT, right after
 * block_io_start), and a device that keeps no iostats leaves the stamp of
 * the request's last life where it had one (seconds old).  A kernel whose
 * BTF does not name the flag's bit (enum rqf_flags) gets the stamp as it
 * is, as before.
 */
static __always_inline __u64 rq_stamp(struct request *rq)
{
	if (bpf_core_enum_value_exists(enum rqf_flags, __RQF_IO_STAT) &&
	    !(rq->rq_flags & (1u << bpf_core_enum_value(enum rqf_flags, __RQF_IO_STAT))))
		return 0;
	return rq->start_time_ns;
}

/* A claimed request's figures: its process, device and operation's, from its claim. */
static __always_inline struct obs_blk_val *blk_vals(const struct obs_inflight *e)
{
	return io_vals(&blk_ix, &blk, OBS_KEY_BLK(e->tgid, e->dev, e->opcode));
}

/*
 * A request's last life ended without its completion program running:
 * the kernel completed it (its /sys/block stat counts it, and ftrace
 * records the completion event), but the program attached to that event
 * did not run, and no recursion miss was counted.  Kernel 6.18 does this
 * to about 1 request in 5,000-30,000 under load.  Found when the request
 * is started again, or when its slot is taken over as stale: its count
 * and size are known from its claim, its time is not.
 */
static __always_inline void blk_unseen(const struct obs_inflight *e)
{
	struct obs_blk_val *v = blk_vals(e);

	if (!v)
		return;
	obs_hist_add(&v->size, e->len);
	v->size.sum -= e->done; /* its earlier parts' bytes are in already */
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
	enum infl_prior prior = INFL_FREE;
	struct obs_inflight *e;

	if (!obs_current_is_target())
		return;
	e = infl_claim(&rq_infl, blk_shape(), INFL_KEY(rq_infl, rq), &prior);
	if (!e)
		return;
	/* Started once per life; issued again after a requeue, the same life. */
	if (prior == INFL_AGAIN && !at_start)
		return;
	if (prior != INFL_FREE)
		blk_unseen(e);
	e->ts = obs_cfg.flags & OBS_CFG_BLK_UNSTAMPED ? bpf_ktime_get_ns() : 0;
	e->tgid = id >> 32;
	e->tid = (__u32)id;
	e->dev = rq_dev(rq);
	e->opcode = rq_op(rq);
	e->len = rq->__data_len;
	e->done = 0;
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
	struct obs_inflight *e = infl_find(&rq_infl, blk_shape(), INFL_KEY(rq_infl, rq));

	if (e)
		e->key = 0;
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(io_block_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	struct obs_inflight *e = infl_find(&rq_infl, blk_shape(), INFL_KEY(rq_infl, rq));
	struct obs_blk_val *v;
	__u64 lat, off, t0 = rq_stamp(rq);
	__u32 bytes, tgid, tid, dev;

	if (!e)
		return 0;
	v = blk_vals(e);
	/*
	 * __data_len is what is left: less than that completing is a part (a
	 * short read the driver retries, a driver completing in chunks).  Its
	 * bytes count now, as the disk counts them; the request counts once,
	 * timed and sized at its last part.
	 */
	if (nr_bytes < rq->__data_len) {
		if (v)
			v->size.sum += nr_bytes;
		e->done += nr_bytes;
		return 0;
	}
	/* Tests: this completion left unseen, as the kernel sometimes leaves one. */
	if (obs_cfg.blk_test_drop && __sync_fetch_and_add(&blk_test_seq, 1) % obs_cfg.blk_test_drop == 0)
		return 0;
	/* Neither stamp (a device that stopped keeping iostats since observe began): no time. */
	if (!t0)
		t0 = e->ts ? e->ts : bpf_ktime_get_ns();
	tgid = e->tgid;
	tid = e->tid;
	dev = e->dev;
	bytes = nr_bytes;
	off = (__u64)rq->__sector << 9;
	/* The last of several parts: sized and aligned as the whole request was claimed. */
	if (bytes < e->len) {
		off -= e->len - bytes;
		bytes = e->len;
	}
	e->key = 0; /* free: everything needed is read */
	lat = bpf_ktime_get_ns() - t0;
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
	obs_latency_event(OBS_EV_BLOCK, tgid, tid, lat, dev, bytes);
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
	enum infl_prior prior = INFL_FREE;
	struct obs_inflight *e;

	e = infl_claim(&uring_infl, uring_shape, key, &prior);
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
	struct obs_inflight *e = infl_find(&uring_infl, uring_shape, (__u64)req);
	struct obs_hist *h;
	__u32 tgid, tid, opcode;
	__u64 lat;

	if (!e)
		return;
	lat = bpf_ktime_get_ns() - e->ts;
	tgid = e->tgid;
	tid = e->tid;
	opcode = e->opcode;
	e->key = 0;
	h = io_vals(&uring_ix, &uring, OBS_KEY_URING(tgid, opcode));
	if (h)
		obs_hist_add(h, lat);
	obs_latency_event(OBS_EV_URING, tgid, tid, lat, opcode, 0);
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
	struct obs_pcache_val *v = io_vals(&pcache_ix, &pcache, tgid);

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
