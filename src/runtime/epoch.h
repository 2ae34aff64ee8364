/*
 * epoch.h - epoch-based reclamation: free shared memory only after every
 * thread that could still hold a pointer to it has left its read section.
 *
 * Readers (every program run, in-process host lookups) bracket their
 * accesses with nbpf_epoch_enter()/nbpf_epoch_exit().  Sections nest and
 * are nearly free: the outermost enter loads the global epoch and stores
 * this thread's announcement in its own cache line (a plain store on
 * x86-64), exit is one release store.  No locks, no fences, no writes to
 * shared cache lines.  The one thread-local access is general-dynamic
 * (initial-exec would force the whole plugin's TLS, over 1 KiB with the
 * error buffers, into glibc's small static-TLS surplus, and dlopen could
 * then fail in a process with other such libraries).
 *
 * A caller whose sections are serialised by other means (the tuner
 * adapter: NCCL never calls one tuner context concurrently) can own a
 * reader record instead, nbpf_epoch_reader_new(), and bracket with
 * nbpf_epoch_enter_rec()/nbpf_epoch_exit_rec(): no thread-local at all.
 * Such a section does not nest with itself, but TLS sections may run
 * inside it, and nbpf_epoch_in_section()/synchronize() see it on the
 * thread that entered it (the record remembers the thread pointer).
 *
 * Fences are asymmetric (the "memb" scheme of liburcu): instead of every
 * reader ordering its announcement before its loads with a full fence, the
 * reclaimer runs membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) before it
 * scans the announcements, which executes a full barrier on every CPU that
 * runs one of our threads.  After it, each reader either has its
 * announcement visible to the scan, or performs every later load after the
 * reclaimer's earlier stores (the unlink).  Where membarrier is missing
 * (old kernel, seccomp) or the runtime is built with
 * -DNBPF_EPOCH_NO_MEMBARRIER, readers add a seq_cst fence instead; the mode
 * is decided once, when the library is loaded.
 *
 * Writers unlink an object first (so no new reader can reach it), then
 * either
 *   - call nbpf_epoch_synchronize(), which blocks until every thread that
 *     was inside a section has left it (never call it inside a section:
 *     it returns -EDEADLK), and free the object; or
 *   - call nbpf_epoch_defer(fn, arg): fn(arg) runs after a grace period,
 *     from a later nbpf_epoch_synchronize()/nbpf_epoch_poll()/
 *     nbpf_epoch_barrier() on whichever thread calls them.  Usable inside
 *     a section (it never blocks).  Hot reload frees old program images
 *     this way; maps use the stamp/ready pair below for pool elements.
 *
 * Grace periods follow the classic epoch scheme: a global epoch advances
 * only when every thread inside a section has announced the current epoch,
 * so an object retired at epoch E (nbpf_epoch_retire_stamp() read after
 * the unlink) is unreachable once the global epoch reaches E + 2.
 *
 * Thread records are recycled when threads exit (a pthread key destructor
 * that the library's own destructor unregisters, so an unloaded plugin
 * leaves no destructor pointing into unmapped code).  The first 64
 * records live in the library image; more are allocated, and freed by the
 * library destructor.  Each record also owns
 * the thread's slot for per-thread ("percpu") maps.
 */
#ifndef NCCLBPF_EPOCH_H
#define NCCLBPF_EPOCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- hot path (inline; the state below is private to epoch.c) -------- */

struct nbpf_epoch_tls {
	_Atomic uint64_t *state;  /* this thread's announcement word, NULL until registered */
	uint32_t depth;           /* section nesting */
};

extern _Thread_local struct nbpf_epoch_tls nbpf_epoch_tls_;
extern _Atomic uint64_t nbpf_epoch_global_;
/* Readers fence (no membarrier).  Written only before the first section. */
extern bool nbpf_epoch_fenced_;

/* First section of a thread: finds or allocates its record. */
_Atomic uint64_t *nbpf_epoch_register_(void);

/* Announces e in *st and orders it before the section's loads. */
static inline void nbpf_epoch_announce_(_Atomic uint64_t *st)
{
	/* Acquire: a reader that sees epoch E also sees every unlink that was
	 * stamped before E was reached, so it cannot pick up those objects. */
	uint64_t e = atomic_load_explicit(&nbpf_epoch_global_, memory_order_acquire);

	atomic_store_explicit(st, (e << 1) | 1, memory_order_release);
	if (__builtin_expect(nbpf_epoch_fenced_, 0))
		atomic_thread_fence(memory_order_seq_cst);
	else
		atomic_signal_fence(memory_order_seq_cst); /* the reclaimer's membarrier fences for us */
}

static inline void nbpf_epoch_enter(void)
{
	struct nbpf_epoch_tls *t = &nbpf_epoch_tls_;
	_Atomic uint64_t *st;

	if (t->depth++)
		return;
	st = t->state;
	if (__builtin_expect(!st, 0))
		st = nbpf_epoch_register_();
	nbpf_epoch_announce_(st);
}

static inline void nbpf_epoch_exit(void)
{
	struct nbpf_epoch_tls *t = &nbpf_epoch_tls_;

	if (!t->depth || --t->depth)
		return;
	atomic_store_explicit(t->state, 0, memory_order_release);
}

/* True while this thread is inside a section (TLS or a reader record). */
bool nbpf_epoch_in_section(void);

/* ---- caller-owned reader records ----------------------------------------- */

struct nbpf_epoch_reader {
	_Alignas(64) _Atomic uint64_t state;  /* as a thread record's */
	_Atomic(void *) owner;                /* thread pointer of the entering thread */
};

/* A record for one serialised reader; NULL when none can be allocated
 * (then use nbpf_epoch_enter/exit).  Free with nbpf_epoch_reader_free. */
struct nbpf_epoch_reader *nbpf_epoch_reader_new(void);
/* Gives the record back (outside its section; NULL ok). */
void nbpf_epoch_reader_free(struct nbpf_epoch_reader *r);

static inline void nbpf_epoch_enter_rec(struct nbpf_epoch_reader *r)
{
	atomic_store_explicit(&r->owner, __builtin_thread_pointer(), memory_order_relaxed);
	nbpf_epoch_announce_(&r->state);
}

static inline void nbpf_epoch_exit_rec(struct nbpf_epoch_reader *r)
{
	atomic_store_explicit(&r->state, 0, memory_order_release);
}

/* ---- reclaimer side ---------------------------------------------------- */

/* Blocks until every thread inside a section at the call has left it, then
 * runs ripe deferred callbacks.  -EDEADLK when called inside a section. */
int nbpf_epoch_synchronize(void);

/* Runs fn(arg) after a grace period.  0, or -ENOMEM (then nothing is
 * queued and the caller still owns arg). */
int nbpf_epoch_defer(void (*fn)(void *), void *arg);
/* Non-blocking: tries to advance the epoch and runs ripe callbacks.
 * Returns the number of callbacks run. */
int nbpf_epoch_poll(void);
/* Synchronizes until every callback deferred before the call has run
 * (shutdown, tests).  -EDEADLK inside a section. */
int nbpf_epoch_barrier(void);

/* Epoch to stamp an object with right after unlinking it (issues a fence). */
uint64_t nbpf_epoch_retire_stamp(void);
/* True when objects stamped with `stamp` can be reused; tries to advance
 * the epoch first, never blocks. */
bool nbpf_epoch_ready(uint64_t stamp);
/* Tries to advance (never blocks) and returns the newest stamp that is
 * ready now: objects with stamp <= the result can be reused. */
uint64_t nbpf_epoch_ready_limit(void);

/* This thread's per-thread map slot, 0..NCCLBPF_NR_SLOTS-1.  Slots are
 * exclusive while at most NCCLBPF_NR_SLOTS threads are alive; beyond that,
 * later threads share slots round-robin. */
uint32_t nbpf_epoch_thread_slot(void);

/* True when readers run fence-free (membarrier registered); for tests and
 * diagnostics. */
bool nbpf_epoch_membarrier(void);

#endif
