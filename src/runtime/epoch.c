/*
 * epoch.c - epoch-based reclamation and the per-thread registry (see epoch.h).
 */
#include "epoch.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ncclbpf/runtime.h"

/*
 * One record per live thread or caller-owned reader, its announcement on
 * its own cache line.  rd.state is written only by its reader:
 * (announced epoch << 1) | 1 inside a section, 0 outside.  Records stay on
 * the registry while the library is loaded; exited threads and freed
 * readers give theirs back (in_use = 0) for the next one.
 */
struct nbpf_thread_rec {
	struct nbpf_epoch_reader rd;   /* first: TLS holds &rd.state */
	atomic_int in_use;
	atomic_bool is_reader;         /* owned through nbpf_epoch_reader_new */
	uint32_t slot;
	bool slot_owned;
	struct nbpf_thread_rec *next;  /* registry list, append-only */
};

struct nbpf_deferred {
	void (*fn)(void *);
	void *arg;
	uint64_t stamp;
	struct nbpf_deferred *next;
};

/* Records of the first threads: part of the library image, never freed. */
#define NBPF_EPOCH_STATIC_RECS 64
static struct nbpf_thread_rec static_recs[NBPF_EPOCH_STATIC_RECS];
static atomic_uint static_used;

_Thread_local struct nbpf_epoch_tls nbpf_epoch_tls_;
/* Own cache line: written at every advance, read by every outermost enter. */
_Alignas(64) _Atomic uint64_t nbpf_epoch_global_ = 2;
/* Fenced until the constructor has registered membarrier (safe either way). */
_Alignas(64) bool nbpf_epoch_fenced_ = true;
static bool use_membarrier;

static struct nbpf_thread_rec *_Atomic registry;
static _Atomic uint64_t slot_bitmap;
static atomic_uint slot_rr;

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t thread_key;
static bool key_ok;

static pthread_mutex_t defer_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nbpf_deferred *defer_head;

static long membarrier(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0, 0);
}

/*
 * Decides the reader mode once, before any section of this library image
 * can run: fence-free readers when the kernel offers private expedited
 * membarrier and registration succeeds, fenced readers otherwise.
 */
__attribute__((constructor)) static void epoch_init(void)
{
#ifndef NBPF_EPOCH_NO_MEMBARRIER
	long q = membarrier(MEMBARRIER_CMD_QUERY);

	if (q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	    membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0) {
		use_membarrier = true;
		nbpf_epoch_fenced_ = false;
	}
#endif
}

bool nbpf_epoch_membarrier(void)
{
	return use_membarrier;
}

/* Thread exit: leave any section, give the slot and the record back. */
static void thread_exit(void *p)
{
	struct nbpf_thread_rec *rec = p;

	if (!rec)
		return;
	atomic_store_explicit(&rec->rd.state, 0, memory_order_release);
	if (rec->slot_owned)
		atomic_fetch_and(&slot_bitmap, ~(1ull << rec->slot));
	rec->slot_owned = false;
	atomic_store_explicit(&rec->in_use, 0, memory_order_release);
}

static void make_key(void)
{
	key_ok = pthread_key_create(&thread_key, thread_exit) == 0;
}

static bool is_static_rec(const struct nbpf_thread_rec *rec)
{
	return rec >= static_recs && rec < static_recs + NBPF_EPOCH_STATIC_RECS;
}

/*
 * Unloading the library (dlclose of a plugin) must leave nothing behind:
 * deleting the key stops glibc from calling thread_exit for threads that
 * outlive us, allocated records are freed (threads that keep a pointer to
 * one in their TLS cannot run our code any more), and callbacks still
 * deferred run now when no thread is inside a section (otherwise they are
 * left alone: freeing under a reader would be worse than a leak).  At
 * process exit this also runs; only the allocated records of threads
 * beyond the first NBPF_EPOCH_STATIC_RECS are freed, and only those outside
 * a section.
 */
__attribute__((destructor)) static void epoch_fini(void)
{
	struct nbpf_thread_rec *rec, *next, *keep = NULL;
	bool quiet = true;

	if (key_ok) {
		pthread_key_delete(thread_key);
		key_ok = false;
	}
	for (rec = atomic_load(&registry); rec; rec = rec->next)
		if (atomic_load(&rec->rd.state) & 1)
			quiet = false;
	if (quiet) {
		struct nbpf_deferred *d;

		pthread_mutex_lock(&defer_lock);
		d = defer_head;
		defer_head = NULL;
		pthread_mutex_unlock(&defer_lock);
		while (d) {
			struct nbpf_deferred *dn = d->next;

			d->fn(d->arg);
			free(d);
			d = dn;
		}
	}
	for (rec = atomic_exchange(&registry, NULL); rec; rec = next) {
		next = rec->next;
		if (is_static_rec(rec) || (atomic_load(&rec->rd.state) & 1)) {
			rec->next = keep;
			keep = rec;
		} else {
			free(rec);
		}
	}
	atomic_store(&registry, keep);
}

static uint32_t claim_slot(bool *owned)
{
	uint64_t bm = atomic_load(&slot_bitmap);

	while (~bm) {
		uint32_t s = (uint32_t)__builtin_ctzll(~bm);

		if (atomic_compare_exchange_weak(&slot_bitmap, &bm, bm | (1ull << s))) {
			*owned = true;
			return s;
		}
	}
	*owned = false;
	return atomic_fetch_add(&slot_rr, 1) % NCCLBPF_NR_SLOTS;
}

/* A fresh record: from the static pool while it lasts, else allocated. */
static struct nbpf_thread_rec *new_rec(void)
{
	struct nbpf_thread_rec *rec;
	unsigned i = atomic_load_explicit(&static_used, memory_order_relaxed);

	while (i < NBPF_EPOCH_STATIC_RECS)
		if (atomic_compare_exchange_weak(&static_used, &i, i + 1))
			return &static_recs[i];
	return aligned_alloc(_Alignof(struct nbpf_thread_rec), sizeof(*rec));
}

/*
 * Reuses a given-back record or links a new one (NULL only when allocation
 * fails).  The record comes back in use, outside any section.
 */
static struct nbpf_thread_rec *take_rec(bool reader)
{
	struct nbpf_thread_rec *rec;

	for (rec = atomic_load_explicit(&registry, memory_order_acquire); rec; rec = rec->next) {
		int expect = 0;

		if (atomic_load_explicit(&rec->in_use, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_strong(&rec->in_use, &expect, 1))
			break;
	}
	if (!rec) {
		rec = new_rec();
		if (!rec)
			return NULL;
		atomic_init(&rec->rd.state, 0);
		atomic_init(&rec->rd.owner, NULL);
		atomic_init(&rec->in_use, 1);
		atomic_init(&rec->is_reader, reader);
		rec->next = atomic_load_explicit(&registry, memory_order_relaxed);
		/* seq_cst: a reclaimer whose scan misses this record has its
		 * membarrier ordered before our first announcement's loads. */
		while (!atomic_compare_exchange_weak_explicit(&registry, &rec->next, rec,
							      memory_order_seq_cst,
							      memory_order_relaxed))
			;
	}
	atomic_store_explicit(&rec->is_reader, reader, memory_order_relaxed);
	rec->slot_owned = false;
	return rec;
}

/*
 * First use on a thread: reuse a record of an exited thread or take a new
 * one.  A failed allocation cannot be reported from the hot path and a
 * thread without a record would break grace periods, so it aborts.
 */
static struct nbpf_thread_rec *thread_register(void)
{
	struct nbpf_thread_rec *rec;

	pthread_once(&key_once, make_key);
	rec = take_rec(false);
	if (!rec)
		abort(); /* a few bytes per thread: nothing sane to do without them */
	rec->slot = claim_slot(&rec->slot_owned);
	if (key_ok)
		pthread_setspecific(thread_key, rec);
	nbpf_epoch_tls_.state = &rec->rd.state;
	return rec;
}

_Atomic uint64_t *nbpf_epoch_register_(void)
{
	return &thread_register()->rd.state;
}

static inline struct nbpf_thread_rec *thread_rec(void)
{
	_Atomic uint64_t *st = nbpf_epoch_tls_.state;

	/* state is the record's first member */
	return st ? (struct nbpf_thread_rec *)st : thread_register();
}

uint32_t nbpf_epoch_thread_slot(void)
{
	return thread_rec()->slot;
}

struct nbpf_epoch_reader *nbpf_epoch_reader_new(void)
{
	struct nbpf_thread_rec *rec = take_rec(true);

	return rec ? &rec->rd : NULL;
}

void nbpf_epoch_reader_free(struct nbpf_epoch_reader *r)
{
	struct nbpf_thread_rec *rec = (struct nbpf_thread_rec *)r;

	if (!rec)
		return;
	atomic_store_explicit(&rec->rd.state, 0, memory_order_release);
	atomic_store_explicit(&rec->in_use, 0, memory_order_release);
}

/*
 * A caller-owned reader in a section entered by this thread?  Scans the
 * registry: only the slow paths (synchronize's deadlock check, map code
 * deciding whether it may wait) ask.
 */
static bool reader_section_here(void)
{
	void *self = __builtin_thread_pointer();
	struct nbpf_thread_rec *rec;

	for (rec = atomic_load_explicit(&registry, memory_order_acquire); rec; rec = rec->next)
		if (atomic_load_explicit(&rec->is_reader, memory_order_relaxed) &&
		    (atomic_load_explicit(&rec->rd.state, memory_order_relaxed) & 1) &&
		    atomic_load_explicit(&rec->rd.owner, memory_order_relaxed) == self)
			return true;
	return false;
}

bool nbpf_epoch_in_section(void)
{
	return nbpf_epoch_tls_.depth != 0 || reader_section_here();
}

/* True when some reader visibly sits in a section of an epoch other than e. */
static bool reader_behind(uint64_t e)
{
	struct nbpf_thread_rec *rec;
	uint64_t s;

	for (rec = atomic_load_explicit(&registry, memory_order_acquire); rec; rec = rec->next) {
		s = atomic_load_explicit(&rec->rd.state, memory_order_acquire);
		if ((s & 1) && (s >> 1) != e)
			return true;
	}
	return false;
}

/*
 * Makes every reader's announcement store visible, or every reader's later
 * loads see our earlier stores (see epoch.h).  False when that cannot be
 * guaranteed (membarrier failing after a successful registration, which
 * the kernel does not do): the caller then does not advance.
 */
static bool readers_fence(void)
{
	if (!use_membarrier)
		return true; /* fenced readers */
	if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
		return true;
	return membarrier(MEMBARRIER_CMD_GLOBAL) == 0;
}

/* Advances the global epoch if every thread inside a section has seen it. */
static bool try_advance(void)
{
	uint64_t e;

	/* Full barrier (locked RMW): unlinks before this are visible to any
	 * thread whose announcement we do not see below. */
	e = atomic_fetch_add_explicit(&nbpf_epoch_global_, 0, memory_order_seq_cst);
	/* A reader already visibly behind blocks us whatever membarrier says;
	 * skip the system call then. */
	if (use_membarrier && reader_behind(e))
		return false;
	if (!readers_fence() || reader_behind(e))
		return false;
	atomic_compare_exchange_strong(&nbpf_epoch_global_, &e, e + 1);
	return true;
}

uint64_t nbpf_epoch_retire_stamp(void)
{
	/* Locked RMW: ordered after the caller's unlink. */
	return atomic_fetch_add_explicit(&nbpf_epoch_global_, 0, memory_order_seq_cst);
}

bool nbpf_epoch_ready(uint64_t stamp)
{
	if (atomic_load_explicit(&nbpf_epoch_global_, memory_order_acquire) >= stamp + 2)
		return true;
	try_advance();
	return atomic_load_explicit(&nbpf_epoch_global_, memory_order_acquire) >= stamp + 2;
}

uint64_t nbpf_epoch_ready_limit(void)
{
	try_advance();
	return atomic_load_explicit(&nbpf_epoch_global_, memory_order_acquire) - 2;
}

/* Pops the deferred callbacks whose grace period is over. */
static struct nbpf_deferred *take_ripe(bool all_before, uint64_t limit)
{
	struct nbpf_deferred *ripe = NULL, **pp, *d;
	uint64_t g = atomic_load_explicit(&nbpf_epoch_global_, memory_order_acquire);

	pthread_mutex_lock(&defer_lock);
	for (pp = &defer_head; (d = *pp);) {
		if (d->stamp + 2 <= g && (!all_before || d->stamp <= limit)) {
			*pp = d->next;
			d->next = ripe;
			ripe = d;
		} else {
			pp = &d->next;
		}
	}
	pthread_mutex_unlock(&defer_lock);
	return ripe;
}

static int run_list(struct nbpf_deferred *d)
{
	int n = 0;

	while (d) {
		struct nbpf_deferred *next = d->next;

		d->fn(d->arg);
		free(d);
		d = next;
		n++;
	}
	return n;
}

int nbpf_epoch_defer(void (*fn)(void *), void *arg)
{
	struct nbpf_deferred *d = malloc(sizeof(*d));

	if (!d)
		return -ENOMEM;
	d->fn = fn;
	d->arg = arg;
	d->stamp = nbpf_epoch_retire_stamp();
	pthread_mutex_lock(&defer_lock);
	d->next = defer_head;
	defer_head = d;
	pthread_mutex_unlock(&defer_lock);
	return 0;
}

int nbpf_epoch_poll(void)
{
	try_advance();
	return run_list(take_ripe(false, 0));
}

/* Waits (yielding, then sleeping briefly) until the epoch reaches target. */
static void wait_epoch(uint64_t target)
{
	unsigned spins = 0;

	while (atomic_load_explicit(&nbpf_epoch_global_, memory_order_acquire) < target) {
		if (try_advance())
			continue;
		if (++spins < 64) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 50000 };

			nanosleep(&ts, NULL);
		}
	}
}

int nbpf_epoch_synchronize(void)
{
	if (nbpf_epoch_in_section())
		return -EDEADLK;
	wait_epoch(nbpf_epoch_retire_stamp() + 2);
	run_list(take_ripe(false, 0));
	return 0;
}

int nbpf_epoch_barrier(void)
{
	uint64_t limit;

	if (nbpf_epoch_in_section())
		return -EDEADLK;
	limit = nbpf_epoch_retire_stamp();
	wait_epoch(limit + 2);
	run_list(take_ripe(true, limit));
	return 0;
}
