/*
 * test_epoch_reader.c - caller-owned epoch reader records (the tuner
 * adapter's sections): a section entered through a record holds back grace
 * periods like a thread's own section, is seen by nbpf_epoch_in_section()
 * and synchronize's deadlock check on the entering thread only, and frees
 * its record for reuse.  Also reports which reader mode the library chose.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "check.h"
#include "epoch.h"

static atomic_int ran;
static void deferred(void *arg)
{
	(void)arg;
	atomic_fetch_add(&ran, 1);
}

static struct nbpf_epoch_reader *shared_rd;
static atomic_int phase;

/* Other thread: sees no section of its own; its synchronize must wait. */
static void *other(void *p)
{
	(void)p;
	atomic_store(&phase, nbpf_epoch_in_section() ? -1 : 1);
	return NULL;
}

static void *sync_thread(void *p)
{
	(void)p;
	nbpf_epoch_synchronize();
	atomic_store(&phase, 3);
	return NULL;
}

int main(void)
{
	struct nbpf_epoch_reader *rd = nbpf_epoch_reader_new(), *rd2;
	pthread_t t;

	printf("epoch readers: %s\n", nbpf_epoch_membarrier() ? "membarrier (no fence)" : "fenced");
	CHECK(rd != NULL);
	if (!rd)
		return check_summary("tuner_epoch_reader");
	shared_rd = rd;
	CHECK(!nbpf_epoch_in_section());
	nbpf_epoch_enter_rec(rd);
	CHECK(nbpf_epoch_in_section());
	CHECK_EQ_U64(nbpf_epoch_synchronize(), (uint64_t)-EDEADLK);
	CHECK_EQ_U64(nbpf_epoch_barrier(), (uint64_t)-EDEADLK);
	/* Nested TLS section inside the record's. */
	nbpf_epoch_enter();
	nbpf_epoch_exit();
	CHECK(nbpf_epoch_in_section());
	pthread_create(&t, NULL, other, NULL);
	pthread_join(t, NULL);
	CHECK_EQ_U64(atomic_load(&phase), 1);

	/* A grace period cannot complete while the record is inside. */
	CHECK_EQ_U64(nbpf_epoch_defer(deferred, NULL), 0);
	for (int i = 0; i < 50; i++)
		nbpf_epoch_poll();
	CHECK_EQ_U64(atomic_load(&ran), 0);
	atomic_store(&phase, 2);
	pthread_create(&t, NULL, sync_thread, NULL);
	for (int i = 0; i < 2000 && atomic_load(&phase) != 3; i++) {
		struct timespec ts = { 0, 100000 };

		nanosleep(&ts, NULL);
	}
	CHECK_EQ_U64(atomic_load(&phase), 2); /* still blocked after 0.2 s */
	nbpf_epoch_exit_rec(rd);
	pthread_join(t, NULL);
	CHECK_EQ_U64(atomic_load(&phase), 3);
	CHECK(!nbpf_epoch_in_section());
	CHECK_EQ_U64(nbpf_epoch_barrier(), 0);
	CHECK_EQ_U64(atomic_load(&ran), 1);

	/* A freed record is reused; many records at once are all distinct. */
	nbpf_epoch_reader_free(rd);
	rd2 = nbpf_epoch_reader_new();
	CHECK(rd2 == rd);
	struct nbpf_epoch_reader *many[100];

	for (int i = 0; i < 100; i++) {
		many[i] = nbpf_epoch_reader_new();
		CHECK(many[i] != NULL && many[i] != rd2 && (i == 0 || many[i] != many[i - 1]));
	}
	for (int i = 0; i < 100; i++)
		nbpf_epoch_reader_free(many[i]);
	nbpf_epoch_reader_free(rd2);
	nbpf_epoch_reader_free(NULL);
	CHECK_EQ_U64(nbpf_epoch_synchronize(), 0);
	return check_summary("tuner_epoch_reader");
}
