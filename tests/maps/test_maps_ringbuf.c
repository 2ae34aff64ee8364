/*
 * test_maps_ringbuf.c - 4 producers and 1 consumer lose nothing (every
 * submitted record's sequence seen exactly once, discarded ones never);
 * drops are counted when full; records wrapping the end are contiguous;
 * a second handle from open_path consumes; the helpers work as the JIT
 * calls them.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "helpers.h"
#include "maps/map.h"
#include "maps_test.h"

#define NPROD 4

struct rec {
	uint32_t producer, seq, len, check;
	uint8_t payload[];
};

static uint32_t payload_len(uint32_t seq)
{
	return (seq * 37u) % 181u; /* 0..180 bytes: odd sizes exercise padding */
}

static uint8_t pat(uint32_t p, uint32_t seq, uint32_t i)
{
	return (uint8_t)(p * 31 + seq * 7 + i);
}

struct state {
	struct ncclbpf_map *rb;
	long n;
	atomic_int producers_left;
	uint8_t *seen[NPROD];
	uint32_t next[NPROD];
	long bad, dup, order, discarded_seen, got;
	long reserve_fails, misaligned, consume_errors;
};

static int discard_it(uint32_t seq)
{
	return seq % 7 == 3;
}

struct pargs {
	struct state *st;
	uint32_t id;
};

static void *produce(void *p)
{
	struct pargs *a = p;
	const struct nbpf_helper *reserve = nbpf_helper_find(NBPF_HELPER_RINGBUF_RESERVE);
	const struct nbpf_helper *submit = nbpf_helper_find(NBPF_HELPER_RINGBUF_SUBMIT);
	const struct nbpf_helper *discard = nbpf_helper_find(NBPF_HELPER_RINGBUF_DISCARD);
	const struct nbpf_helper *output = nbpf_helper_find(NBPF_HELPER_RINGBUF_OUTPUT);
	long fails = 0;

	for (uint32_t seq = 0; seq < (uint32_t)a->st->n; seq++) {
		uint32_t len = payload_len(seq), sz = (uint32_t)sizeof(struct rec) + len;
		uint8_t buf[sizeof(struct rec) + 200];
		struct rec *r;

		if (seq % 5 == 1) {
			/* bpf_ringbuf_output copies a finished record. */
			r = (struct rec *)buf;
			*r = (struct rec){ a->id, seq, len, a->id ^ seq ^ 0x5a5a5a5a };
			for (uint32_t i = 0; i < len; i++)
				r->payload[i] = pat(a->id, seq, i);
			while (output->fn((uintptr_t)a->st->rb, (uintptr_t)buf, sz, 0, 0) != 0) {
				fails++;
				sched_yield();
			}
			continue;
		}
		while (!(r = (struct rec *)(uintptr_t)reserve->fn((uintptr_t)a->st->rb, sz, 0, 0, 0))) {
			fails++;
			sched_yield();
		}
		if ((uintptr_t)r & 7)
			__atomic_fetch_add(&a->st->misaligned, 1, __ATOMIC_RELAXED);
		*r = (struct rec){ a->id, seq, len, a->id ^ seq ^ 0x5a5a5a5a };
		for (uint32_t i = 0; i < len; i++)
			r->payload[i] = pat(a->id, seq, i);
		if (discard_it(seq))
			discard->fn((uintptr_t)r, 0, 0, 0, 0);
		else
			submit->fn((uintptr_t)r, 0, 0, 0, 0);
	}
	__atomic_fetch_add(&a->st->reserve_fails, fails, __ATOMIC_RELAXED);
	atomic_fetch_sub(&a->st->producers_left, 1);
	return NULL;
}

static int on_record(void *user, const void *data, uint32_t size)
{
	struct state *st = user;
	const struct rec *r = data;

	st->got++;
	if (size < sizeof(*r) || r->producer >= NPROD || r->seq >= st->n ||
	    size != sizeof(*r) + r->len || r->len != payload_len(r->seq) ||
	    r->check != (r->producer ^ r->seq ^ 0x5a5a5a5a)) {
		st->bad++;
		return 0;
	}
	for (uint32_t i = 0; i < r->len; i++)
		if (r->payload[i] != pat(r->producer, r->seq, i)) {
			st->bad++;
			return 0;
		}
	if (discard_it(r->seq) && r->seq % 5 != 1)
		st->discarded_seen++;
	if (st->seen[r->producer][r->seq]++)
		st->dup++;
	/* One producer's records arrive in its order. */
	if (r->seq < st->next[r->producer])
		st->order++;
	st->next[r->producer] = r->seq + 1;
	return 0;
}

static void test_mpsc(struct ncclbpf_map *rb, struct ncclbpf_map *consumer_handle)
{
	struct state st = { .rb = rb, .n = scaled(30000) };
	struct pargs a[NPROD];
	pthread_t t[NPROD];
	long missing = 0;

	atomic_init(&st.producers_left, NPROD);
	for (int i = 0; i < NPROD; i++)
		st.seen[i] = calloc((size_t)st.n, 1);
	for (int i = 0; i < NPROD; i++) {
		a[i] = (struct pargs){ &st, (uint32_t)i };
		pthread_create(&t[i], NULL, produce, &a[i]);
	}
	for (;;) {
		int left = atomic_load(&st.producers_left);
		int n = ncclbpf_ringbuf__consume(consumer_handle, on_record, &st);

		if (n < 0)
			st.consume_errors++;
		if (n == 0)
			sched_yield();
		if (n < 0 || (!left && n == 0 && nbpf_ringbuf_query(rb, 0) == 0))
			break;
	}
	for (int i = 0; i < NPROD; i++)
		pthread_join(t[i], NULL);
	for (int p = 0; p < NPROD; p++)
		for (long s = 0; s < st.n; s++) {
			int want = !(discard_it((uint32_t)s) && s % 5 != 1);

			if (st.seen[p][s] != want)
				missing++;
		}
	CHECK_EQ_U64(st.consume_errors, 0);
	CHECK_EQ_U64(st.misaligned, 0);
	CHECK_EQ_U64(st.bad, 0);
	CHECK_EQ_U64(st.dup, 0);
	CHECK_EQ_U64(st.order, 0);
	CHECK_EQ_U64(st.discarded_seen, 0);
	CHECK_EQ_U64(missing, 0);
	/* Every failed reservation was counted as a drop. */
	CHECK(ncclbpf_ringbuf__dropped(rb) >= (uint64_t)st.reserve_fails);
	printf("mpsc: %ld records consumed, %ld reservations refused while full\n", st.got,
	       st.reserve_fails);
	for (int i = 0; i < NPROD; i++)
		free(st.seen[i]);
}

static int count_cb(void *user, const void *data, uint32_t size)
{
	uint32_t v;

	memcpy(&v, data, 4);
	CHECK_EQ_U64(v, *(uint32_t *)user);
	CHECK_EQ_U64(size, 100);
	++*(uint32_t *)user;
	return 0;
}

static void test_full_and_wrap(struct ncclbpf_map *rb)
{
	uint8_t buf[100] = { 0 };
	uint32_t i, ok = 0, expect = 0, ring = ncclbpf_map__max_entries(rb);
	uint64_t d0 = ncclbpf_ringbuf__dropped(rb);
	int n;

	/* 100-byte records take 112 bytes: fill until refused. */
	for (i = 0; i < ring; i++) {
		memcpy(buf, &ok, 4);
		if (nbpf_ringbuf_output(rb, buf, sizeof(buf), 0))
			break;
		ok++;
	}
	CHECK_EQ_U64(ok, ring / 112);
	CHECK_EQ_U64(ncclbpf_ringbuf__dropped(rb) - d0, 1);
	CHECK(nbpf_ringbuf_reserve(rb, 100, 0) == NULL);
	CHECK_EQ_U64(ncclbpf_ringbuf__dropped(rb) - d0, 2);
	CHECK_EQ_U64(nbpf_ringbuf_query(rb, 0), (uint64_t)ok * 112);
	CHECK_EQ_U64(nbpf_ringbuf_query(rb, 1), ring);
	n = ncclbpf_ringbuf__consume(rb, count_cb, &expect);
	CHECK_EQ_U64(n, ok);
	CHECK_EQ_U64(expect, ok);
	/* Now the producer position is not a multiple of the ring: records wrap. */
	expect = 0;
	for (int round = 0; round < 50; round++) {
		uint32_t start = expect;

		for (i = 0; i < 7; i++) {
			uint32_t v = start + i;

			memcpy(buf, &v, 4);
			CHECK_EQ_U64(nbpf_ringbuf_output(rb, buf, sizeof(buf), 0), 0);
		}
		CHECK_EQ_U64(ncclbpf_ringbuf__consume(rb, count_cb, &expect), 7);
	}
	CHECK(nbpf_ringbuf_query(rb, 3) > ring); /* wrapped many times */
	/* Bad requests. */
	CHECK(nbpf_ringbuf_reserve(rb, 0, 0) == NULL);
	CHECK(nbpf_ringbuf_reserve(rb, 8, 1) == NULL);
	CHECK(nbpf_ringbuf_reserve(rb, ring, 0) == NULL); /* header does not fit */
	CHECK_EQ_U64(nbpf_ringbuf_output(rb, buf, 8, 4), -EINVAL);
}

static struct ncclbpf_map *second;
static int nested_rc;

static int nested_cb(void *user, const void *data, uint32_t size)
{
	nested_rc = ncclbpf_ringbuf__consume(second, count_cb, user);
	return -ECANCELED;
}

int main(void)
{
	struct ncclbpf_map *rb = mk("rb", NCCLBPF_MAP_RINGBUF, 0, 0, 16384);
	struct ncclbpf_map *ro = NULL;
	uint32_t x = 0;

	if (!rb) {
		CHECK(0);
		return check_summary("maps_ringbuf");
	}
	CHECK_EQ_U64(ncclbpf_map__lookup(rb, &x, &x), -EINVAL);
	test_mpsc(rb, rb);
	test_full_and_wrap(rb);
	/* Another handle on the same file (as another process would open it). */
	CHECK_EQ_U64(ncclbpf_map__open_path(ncclbpf_map__path(rb), true, &second), 0);
	CHECK_EQ_U64(ncclbpf_map__open_path(ncclbpf_map__path(rb), false, &ro), 0);
	if (second && ro) {
		uint8_t buf[100] = { 0 };

#ifndef __SANITIZE_THREAD__
		/* ThreadSanitizer tracks synchronisation by virtual address, so
		 * it cannot see a consumer on a second mapping of the same
		 * pages synchronise with the producers (a false report). */
		test_mpsc(rb, second);
#endif
		CHECK_EQ_U64(ncclbpf_ringbuf__consume(ro, count_cb, &x), -EPERM);
		/* One consumer at a time; a callback error stops and is returned. */
		CHECK_EQ_U64(nbpf_ringbuf_output(rb, buf, sizeof(buf), 0), 0);
		CHECK_EQ_U64(nbpf_ringbuf_output(rb, buf, sizeof(buf), 0), 0);
		x = 0;
		CHECK_EQ_U64(ncclbpf_ringbuf__consume(rb, nested_cb, &x), -ECANCELED);
		CHECK_EQ_U64(nested_rc, -EBUSY);
		CHECK_EQ_U64(nbpf_ringbuf_query(rb, 0), 112); /* one left */
		x = 0;
		CHECK_EQ_U64(ncclbpf_ringbuf__consume(second, count_cb, &x), 1);
		/* Drops are shared state: visible through every handle. */
		CHECK_EQ_U64(ncclbpf_ringbuf__dropped(ro), ncclbpf_ringbuf__dropped(rb));
	}
	ncclbpf_map__put(ro);
	ncclbpf_map__put(second);
	ncclbpf_map__put(rb);
	test_map_dir_cleanup();
	return check_summary("maps_ringbuf");
}
