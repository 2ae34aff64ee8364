// SPDX-License-Identifier: Apache-2.0
/*
 * guard.c - a map file truncated under a live mapping must not kill the
 * process that maps it.
 *
 * The kernel answers an access past the end of a shared file mapping with
 * SIGBUS, and a named tmpfs file cannot be sealed against shrinking (only
 * memfds take F_SEAL_SHRINK; a file made by open() is born F_SEAL_SEAL).
 * So every mapping of a map file is registered here, and a SIGBUS handler
 * that finds the faulting address inside one repairs it and returns, and
 * the access runs again:
 *
 *   writable mapping   the file is grown back to its size (ftruncate) and,
 *                      when the cut reached the header, the header's fixed
 *                      part is written back from a private copy: the job,
 *                      the command and the exporter keep sharing the file;
 *                      what the cut destroyed reads as zeros;
 *   read-only mapping  (the command's map dump, the exporter) the range is
 *                      replaced by private zero pages.
 *
 * One line on stderr says which file was cut.  A SIGBUS anywhere else (or
 * sent with kill) goes to the disposition that was in place before ours.
 * The handler touches only this file's lock-free slot table and calls only
 * fstat, ftruncate, mmap, write and sigaction.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "map_impl.h"

/* Mapped map files one process can guard at once; more map unguarded. */
#define GUARD_SLOTS 1024
/* The header's fixed part: written once by the creator, checked by openers. */
#define GUARD_HDR offsetof(struct nbpf_shm_hdr, free_head)
/* SIGBUS at a guarded address with nothing to repair, this many times in a
 * row: not a truncation (an I/O error, a full tmpfs); the fault is fatal. */
#define GUARD_MAX_IDLE 1024

struct guard_slot {
	_Atomic uintptr_t start; /* 0: free; set last, cleared first */
	size_t len;
	uint64_t file_size;
	int fd;
	bool writable;
	_Atomic bool warned;
	dev_t dev;
	ino_t ino;
	const char *path;
	_Atomic uint32_t idle;
	unsigned char hdr[GUARD_HDR];
};

static struct guard_slot slots[GUARD_SLOTS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction prev_action;
static bool installed;
static _Atomic uint64_t repairs;

static void say(const char *s)
{
	(void)!write(STDERR_FILENO, s, strlen(s));
}

static bool repair(struct guard_slot *s, uintptr_t start)
{
	struct nbpf_shm_hdr *h = (struct nbpf_shm_hdr *)start;
	struct stat st;

	if (fstat(s->fd, &st) || st.st_dev != s->dev || st.st_ino != s->ino)
		return false;
	if ((uint64_t)st.st_size >= s->file_size)
		return atomic_fetch_add(&s->idle, 1) < GUARD_MAX_IDLE; /* another thread repaired it */
	if (s->writable) {
		if (ftruncate(s->fd, (off_t)s->file_size))
			return false;
		if (h->magic != NBPF_SHM_MAGIC)
			memcpy((void *)h, s->hdr, sizeof(s->hdr));
	} else if (mmap((void *)start, s->len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
			-1, 0) == MAP_FAILED) {
		return false;
	}
	atomic_store(&s->idle, 0);
	atomic_fetch_add(&repairs, 1);
	if (!atomic_exchange(&s->warned, true)) {
		say("ncclbpf: map file ");
		say(s->path ? s->path : "(unnamed)");
		say(" was truncated while mapped: restored its size; what was cut reads as zeros\n");
	}
	return true;
}

static void chain(int sig, siginfo_t *si, void *uc)
{
	if (prev_action.sa_flags & SA_SIGINFO) {
		if (prev_action.sa_sigaction)
			prev_action.sa_sigaction(sig, si, uc);
		return;
	}
	if (prev_action.sa_handler != SIG_DFL && prev_action.sa_handler != SIG_IGN) {
		prev_action.sa_handler(sig);
		return;
	}
	/*
	 * The default action: a fault repeats once we return and is delivered
	 * to it; a SIGBUS sent by someone is sent again (blocked until then).
	 */
	signal(sig, SIG_DFL);
	if (si->si_code <= 0)
		raise(sig);
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	int saved = errno;

	if (si->si_code > 0) {
		for (size_t i = 0; i < GUARD_SLOTS; i++) {
			uintptr_t start = atomic_load_explicit(&slots[i].start, memory_order_acquire);

			if (start && a >= start && a - start < slots[i].len) {
				if (repair(&slots[i], start)) {
					errno = saved;
					return;
				}
				break;
			}
		}
	}
	chain(sig, si, uc);
	errno = saved;
}

int nbpf_map_guard_add(void *start, size_t len, int fd, uint64_t file_size, bool writable,
		       const char *path)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus,
				.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART };
	struct stat st;
	int ret = -ENOSPC;

	if (fstat(fd, &st))
		return -errno;
	pthread_mutex_lock(&slots_lock);
	if (!installed) {
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGBUS, &sa, &prev_action)) {
			ret = -errno;
			goto out;
		}
		installed = true;
	}
	for (size_t i = 0; i < GUARD_SLOTS; i++) {
		struct guard_slot *s = &slots[i];

		if (atomic_load_explicit(&s->start, memory_order_relaxed))
			continue;
		s->len = len;
		s->file_size = file_size;
		s->fd = fd;
		s->writable = writable;
		atomic_store(&s->warned, false);
		s->dev = st.st_dev;
		s->ino = st.st_ino;
		s->path = path;
		atomic_store(&s->idle, 0);
		memcpy(s->hdr, start, sizeof(s->hdr));
		atomic_store_explicit(&s->start, (uintptr_t)start, memory_order_release);
		ret = 0;
		break;
	}
out:
	pthread_mutex_unlock(&slots_lock);
	return ret;
}

void nbpf_map_guard_del(void *start)
{
	pthread_mutex_lock(&slots_lock);
	for (size_t i = 0; start && i < GUARD_SLOTS; i++)
		if (atomic_load_explicit(&slots[i].start, memory_order_relaxed) == (uintptr_t)start)
			atomic_store_explicit(&slots[i].start, 0, memory_order_release);
	pthread_mutex_unlock(&slots_lock);
}

uint64_t nbpf_map_guard_repairs(void)
{
	return atomic_load(&repairs);
}
