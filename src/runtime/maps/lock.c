/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lock.c - holder registration, liveness checks, bounded waits and
 * take-over of map locks whose holder died (see lock.h).
 *
 * Liveness rests on OFD locks (F_OFD_SETLK): they belong to an open file
 * description, not to a pid, so they are right across pid namespaces and
 * vanish when the last descriptor of a dead process closes.  kill(pid, 0)
 * would not be: pids repeat between namespaces sharing /dev/shm.  Each
 * writable handle holds its slot lock on a description of its own that is
 * never mapped (a mapping, inherited by a forked child, would keep it
 * open); a forked child closes its copy and registers anew if it locks.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lock.h"

#define HOLDER_SLOT_MASK 0xffu
#define HOLDER_GEN_SHIFT 8

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nbpf_map_priv *handles;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_prepare(void)
{
	pthread_mutex_lock(&handles_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&handles_lock);
}

/*
 * The child shares every description with its parent: its locks would
 * carry the parent's holder id, and the parent's liveness description
 * would stay open (so the parent look alive) for as long as the child
 * lives.  So the child drops both; it registers anew if it ever locks.
 * close() is async-signal-safe, as this handler must be.
 */
static void atfork_child(void)
{
	struct nbpf_map_priv *p;

	for (p = handles; p; p = p->next_handle) {
		atomic_store_explicit(&p->holder, 0, memory_order_relaxed);
		if (p->holder_fd >= 0)
			close(p->holder_fd);
		p->holder_fd = -1;
	}
	pthread_mutex_unlock(&handles_lock);
}

static void atfork_register(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

void nbpf_lock_handle_add(struct nbpf_map_priv *p)
{
	pthread_once(&atfork_once, atfork_register);
	pthread_mutex_lock(&handles_lock);
	p->next_handle = handles;
	handles = p;
	pthread_mutex_unlock(&handles_lock);
}

void nbpf_lock_handle_del(struct nbpf_map_priv *p)
{
	struct nbpf_map_priv **pp;

	pthread_mutex_lock(&handles_lock);
	for (pp = &handles; *pp; pp = &(*pp)->next_handle) {
		if (*pp == p) {
			*pp = p->next_handle;
			break;
		}
	}
	pthread_mutex_unlock(&handles_lock);
}

/*
 * A description of the map file used for nothing but this handle's holder
 * slot lock (handles_lock held).  Not the mapped one: a mapping keeps its
 * description open, and a forked child inherits the mapping, so a slot lock
 * there would outlive its holder.
 */
static int liveness_fd(struct ncclbpf_map *map, struct nbpf_map_priv *p)
{
	struct stat a, b;
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", p->lock_fd);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 && map->path) {
		/* No /proc: the path, if it still names our file. */
		fd = open(map->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && (fstat(fd, &a) || fstat(p->lock_fd, &b) || a.st_dev != b.st_dev ||
				a.st_ino != b.st_ino)) {
			close(fd);
			fd = -1;
		}
	}
	return fd;
}

static int slot_lock(int fd, int cmd, short type, uint32_t slot, struct flock *fl)
{
	*fl = (struct flock){
		.l_type = type,
		.l_whence = SEEK_SET,
		.l_start = NBPF_LOCK_BYTE0 + slot,
		.l_len = 1,
	};
	return fcntl(fd, cmd, fl);
}

/*
 * Claims a holder slot.  A program call (may_block false) never waits for
 * the mutex (a fork in progress holds it) and, after a failed claim (every
 * slot taken), tries again only once per NBPF_LOCK_CHECK_NS.
 */
static uint32_t claim_slot(struct ncclbpf_map *map, bool may_block)
{
	struct nbpf_map_priv *p = nbpf_priv(map);
	struct nbpf_shm_hdr *h = p->hdr;
	uint32_t id, slot, gen;
	struct flock fl;

	if (!may_block &&
	    now_ns() < atomic_load_explicit(&p->claim_after, memory_order_relaxed))
		return 0;
	if (!may_block ? pthread_mutex_trylock(&handles_lock) != 0 :
			 pthread_mutex_lock(&handles_lock) != 0)
		return 0;
	id = atomic_load_explicit(&p->holder, memory_order_relaxed);
	if (!id && p->holder_fd < 0)
		p->holder_fd = liveness_fd(map, p);
	for (slot = 0; !id && p->holder_fd >= 0 && slot < NBPF_LOCK_SLOTS; slot++) {
		if (slot_lock(p->holder_fd, F_OFD_SETLK, F_WRLCK, slot, &fl))
			continue;
		/* Holders of an older generation of this slot are dead. */
		gen = atomic_fetch_add_explicit(&h->holders[slot].gen, 1, memory_order_acq_rel) + 1;
		atomic_store_explicit(&h->holders[slot].pid, (int32_t)getpid(), memory_order_relaxed);
		id = (gen << HOLDER_GEN_SHIFT) | (slot + 1);
		atomic_store_explicit(&p->holder, id, memory_order_release);
	}
	if (!id)
		atomic_store_explicit(&p->claim_after, now_ns() + NBPF_LOCK_CHECK_NS,
				      memory_order_relaxed);
	pthread_mutex_unlock(&handles_lock);
	return id;
}

uint32_t nbpf_lock_holder_id(struct ncclbpf_map *map)
{
	struct nbpf_map_priv *p = nbpf_priv(map);
	uint32_t id = atomic_load_explicit(&p->holder, memory_order_acquire);

	return id || !p->writable ? id : claim_slot(map, true);
}

bool nbpf_lock_holder_dead(struct ncclbpf_map *map, uint32_t holder)
{
	struct nbpf_map_priv *p = nbpf_priv(map);
	uint32_t slot = (holder & HOLDER_SLOT_MASK) - 1;
	struct flock fl;

	/* Our own handle: another thread of ours, alive as long as we are. */
	if (holder == atomic_load_explicit(&p->holder, memory_order_relaxed))
		return false;
	/* No holder or no such slot: only a corrupted word looks like this. */
	if (slot >= NBPF_LOCK_SLOTS)
		return true;
	/*
	 * Asked through the mapped description, which never holds a slot lock
	 * itself (even when a forked parent shares it), so every holder's lock
	 * shows as a conflict.  No mutex: program calls check too.
	 */
	if (slot_lock(p->lock_fd, F_OFD_GETLK, F_WRLCK, slot, &fl))
		return false; /* cannot tell: keep treating it as alive */
	if (fl.l_type == F_UNLCK)
		return true;
	/* Slot alive, but claimed again since the holder took the lock? */
	return (atomic_load_explicit(&p->hdr->holders[slot].gen, memory_order_acquire) &
		(UINT32_MAX >> HOLDER_GEN_SHIFT)) != holder >> HOLDER_GEN_SHIFT;
}

void nbpf_lock_count(struct ncclbpf_map *map, _Atomic uint64_t *counter)
{
	/* A read-only mapping cannot be written; its caller sees the error anyway. */
	if (nbpf_priv(map)->writable)
		atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

bool nbpf_lock_takeover(struct ncclbpf_map *map, nbpf_lock_t *l, uint64_t word)
{
	uint64_t me = nbpf_lock_holder_id(map);

	if (!me || !nbpf_priv(map)->writable)
		return false;
	/* The sequence stays odd: readers keep away until the repair is done. */
	if (!atomic_compare_exchange_strong_explicit(l, &word, (me << 32) | (uint32_t)word,
						     memory_order_acquire, memory_order_relaxed))
		return false;
	nbpf_lock_count(map, &nbpf_priv(map)->hdr->lock_recoveries);
	return true;
}

void nbpf_lock_wait_init(struct nbpf_lock_wait *w, enum nbpf_lock_mode mode)
{
	*w = (struct nbpf_lock_wait){ .mode = mode };
}

int nbpf_lock_wait(struct ncclbpf_map *map, struct nbpf_lock_wait *w, uint64_t word)
{
	uint64_t now, budget = w->mode == NBPF_LOCK_PROG ? NBPF_LOCK_PROG_WAIT_NS :
							   NBPF_LOCK_HOST_WAIT_NS;

	/* The first 128 rounds only pause: a live holder is usually that quick. */
	nbpf_spin_pause(&w->spins);
	if (w->spins < 128)
		return 0;
	now = now_ns();
	if (!w->start) {
		w->start = now;
		w->next_check = now + (w->mode == NBPF_LOCK_PROG ? budget : NBPF_LOCK_CHECK_NS);
		return 0;
	}
	if (now >= w->next_check) {
		w->next_check = now + NBPF_LOCK_CHECK_NS;
		if ((word & 1) && nbpf_lock_holder_dead(map, nbpf_lock_holder_of(word)))
			return -EOWNERDEAD;
	}
	return now - w->start >= budget ? -EBUSY : 0;
}

/*
 * A lock that a program call just waited out in vain, still held the same
 * way (same sequence, same live holder): waiting again would only cost the
 * next call its whole budget.  Until its next liveness check is due,
 * program calls fail at once.
 */
static bool known_stuck(struct nbpf_map_priv *p, nbpf_lock_t *l, uint64_t s)
{
	return atomic_load_explicit(&p->stuck_lock, memory_order_relaxed) == l &&
	       atomic_load_explicit(&p->stuck_word, memory_order_relaxed) == s &&
	       now_ns() < atomic_load_explicit(&p->stuck_until, memory_order_relaxed);
}

static void mark_stuck(struct nbpf_map_priv *p, nbpf_lock_t *l, uint64_t s)
{
	atomic_store_explicit(&p->stuck_word, s, memory_order_relaxed);
	atomic_store_explicit(&p->stuck_until, now_ns() + NBPF_LOCK_CHECK_NS, memory_order_relaxed);
	atomic_store_explicit(&p->stuck_lock, l, memory_order_relaxed);
}

int nbpf_lock_slow(struct ncclbpf_map *map, nbpf_lock_t *l, enum nbpf_lock_mode mode)
{
	struct nbpf_map_priv *p = nbpf_priv(map);
	uint64_t me = atomic_load_explicit(&p->holder, memory_order_acquire), s;
	struct nbpf_lock_wait w;
	int r;

	if (!me && p->writable)
		me = claim_slot(map, mode == NBPF_LOCK_HOST);
	if (!me)
		goto busy; /* every holder slot taken by live handles, or a fork under way */
	s = atomic_load_explicit(l, memory_order_relaxed);
	if (mode == NBPF_LOCK_PROG && (s & 1) && known_stuck(p, l, s))
		goto busy;
	nbpf_lock_wait_init(&w, mode);
	for (;;) {
		s = atomic_load_explicit(l, memory_order_relaxed);
		if (!(s & 1) &&
		    atomic_compare_exchange_weak_explicit(l, &s, (me << 32) | (uint32_t)(s + 1),
							  memory_order_acquire, memory_order_relaxed))
			return 0;
		/* Held, or lost the race for it: either way the wait is bounded. */
		r = nbpf_lock_wait(map, &w, s);
		if (r == -EOWNERDEAD && nbpf_lock_takeover(map, l, s))
			return 1;
		if (r == -EBUSY) {
			if (mode == NBPF_LOCK_PROG && (s & 1))
				mark_stuck(p, l, s);
			goto busy;
		}
	}
busy:
	nbpf_lock_count(map, &nbpf_priv(map)->hdr->lock_timeouts);
	return -EBUSY;
}
