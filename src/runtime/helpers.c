/*
 * helpers.c - the production helper table (see helpers.h).
 *
 * Every helper is a plain C function of five u64 arguments so the JIT can
 * call .fn directly.  Pointer arguments have been proven by the verifier
 * against the prototype here; no helper reads or writes memory beyond
 * what its prototype declares.
 */
#include "helpers.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "epoch.h"
#include "error.h"
#include "maps/map.h"

#define U2P(x) ((void *)(uintptr_t)(x))

uint32_t nbpf_thread_slot(void)
{
	return nbpf_epoch_thread_slot();
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t h_map_lookup(uint64_t map, uint64_t key, uint64_t r3, uint64_t r4, uint64_t r5)
{
	struct ncclbpf_map *m = U2P(map);

	return (uint64_t)(uintptr_t)m->ops->lookup_elem(m, U2P(key));
}

static uint64_t h_map_update(uint64_t map, uint64_t key, uint64_t value, uint64_t flags,
			     uint64_t r5)
{
	struct ncclbpf_map *m = U2P(map);

	if (m->readonly_prog)
		return (uint64_t)-EPERM;
	return (uint64_t)m->ops->update_elem(m, U2P(key), U2P(value), flags);
}

static uint64_t h_map_delete(uint64_t map, uint64_t key, uint64_t r3, uint64_t r4, uint64_t r5)
{
	struct ncclbpf_map *m = U2P(map);

	if (m->readonly_prog)
		return (uint64_t)-EPERM;
	return (uint64_t)m->ops->delete_elem(m, U2P(key));
}

static uint64_t h_ktime_get_ns(uint64_t r1, uint64_t r2, uint64_t r3, uint64_t r4, uint64_t r5)
{
	return now_ns();
}

/* ---- bpf_trace_printk -------------------------------------------------- */

#define PRINTK_INTERVAL_NS 100000000ull /* 10 lines per second ... */
#define PRINTK_BURST       10ull        /* ... with bursts of 10 */

static _Atomic uint64_t printk_tat;        /* theoretical arrival time (GCRA) */
static _Atomic uint64_t printk_suppressed;

/* Token bucket in GCRA form: one atomic word, no lock. */
static bool printk_allow(void)
{
	uint64_t now = now_ns(), tat = atomic_load(&printk_tat), next;

	do {
		next = (tat > now ? tat : now) + PRINTK_INTERVAL_NS;
		if (next - now > PRINTK_BURST * PRINTK_INTERVAL_NS) {
			atomic_fetch_add(&printk_suppressed, 1);
			return false;
		}
	} while (!atomic_compare_exchange_weak(&printk_tat, &tat, next));
	return true;
}

static void append(char *out, size_t cap, size_t *len, const char *s, size_t n)
{
	if (*len + 1 >= cap)
		return;
	if (n > cap - 1 - *len)
		n = cap - 1 - *len;
	memcpy(out + *len, s, n);
	*len += n;
	out[*len] = '\0';
}

/*
 * The next piece of a bpf_printk format at fmt[i]: a literal byte, "%%", a
 * conversion %[flags 0+- ][width][l|ll](d|i|u|x|X|c) (like the kernel;
 * width at most 64) or an unsupported one (notably %s and %p, which would
 * read or reveal memory), or the end (len or the first NUL).  Returns the
 * index after it.  The helper prints with it and the verifier counts
 * conversions with it, so the two cannot disagree on a format.
 */
size_t nbpf_printk_next(const char *fmt, size_t len, size_t i, struct nbpf_printk_tok *t)
{
	size_t sl = 0;
	unsigned width = 0;
	char conv;

	memset(t, 0, sizeof(*t));
	t->start = i;
	if (i >= len || !fmt[i]) {
		t->kind = NBPF_PRINTK_END;
		return t->end = i;
	}
	if (fmt[i] != '%') {
		t->kind = NBPF_PRINTK_TEXT;
		return t->end = i + 1;
	}
	i++;
	if (i < len && fmt[i] == '%') {
		t->kind = NBPF_PRINTK_PERCENT;
		return t->end = i + 1;
	}
	t->spec[sl++] = '%';
	while (i < len && fmt[i] && strchr("0+- ", fmt[i]) && sl < 6)
		t->spec[sl++] = fmt[i++];
	while (i < len && fmt[i] >= '0' && fmt[i] <= '9' && width < 1000) {
		width = width * 10 + (unsigned)(fmt[i] - '0');
		t->spec[sl++] = fmt[i++];
		if (sl > 9)
			break;
	}
	t->spec[sl] = '\0';
	while (i < len && fmt[i] == 'l' && t->lng < 2) {
		t->lng++;
		i++;
	}
	conv = i < len ? fmt[i] : '\0';
	if (conv)
		i++;
	t->conv = conv;
	t->kind = !conv || !strchr("diuxXc", conv) || width > 64 || (conv == 'c' && t->lng)
			  ? NBPF_PRINTK_BAD : NBPF_PRINTK_CONV;
	return t->end = i;
}

int nbpf_printk_nargs(const char *fmt, size_t len, size_t *bad)
{
	struct nbpf_printk_tok t;
	size_t i = 0;
	int n = 0;

	for (;;) {
		i = nbpf_printk_next(fmt, len, i, &t);
		switch (t.kind) {
		case NBPF_PRINTK_END:
			return n;
		case NBPF_PRINTK_BAD:
			if (bad)
				*bad = t.start;
			return -EINVAL;
		case NBPF_PRINTK_CONV:
			n++;
			break;
		default:
			break;
		}
	}
}

/*
 * Formats a bpf_printk format with up to three u64 arguments (see
 * nbpf_printk_next); %d/%i/%u/%x without 'l' take the low 32 bits.  An
 * unsupported conversion prints a marker instead and consumes no
 * argument, and so does one beyond the third.  Returns the formatted length.
 */
size_t nbpf_printk_format(const char *fmt, size_t fmt_len, const uint64_t args[3], char *out,
			  size_t cap)
{
	struct nbpf_printk_tok t;
	size_t len = 0, i = 0, nargs = 0;

	out[0] = '\0';
	for (;;) {
		char spec[24], buf[96];
		int n;
		uint64_t a;

		i = nbpf_printk_next(fmt, fmt_len, i, &t);
		if (t.kind == NBPF_PRINTK_END)
			break;
		if (t.kind == NBPF_PRINTK_TEXT) {
			append(out, cap, &len, &fmt[t.start], 1);
			continue;
		}
		if (t.kind == NBPF_PRINTK_PERCENT) {
			append(out, cap, &len, "%", 1);
			continue;
		}
		if (t.kind == NBPF_PRINTK_BAD) {
			n = snprintf(buf, sizeof(buf), "<unsupported %.*s>",
				     (int)(t.end - t.start < 12 ? t.end - t.start : 12), &fmt[t.start]);
			append(out, cap, &len, buf, (size_t)n);
			continue;
		}
		if (nargs >= 3) {
			append(out, cap, &len, "<too many args>", 15);
			continue;
		}
		a = args[nargs++];
		if (t.conv == 'c') {
			snprintf(spec, sizeof(spec), "%sc", t.spec);
			n = snprintf(buf, sizeof(buf), spec, (int)(unsigned char)a);
		} else {
			snprintf(spec, sizeof(spec), "%sll%c", t.spec, t.conv);
			if (t.conv == 'd' || t.conv == 'i')
				n = snprintf(buf, sizeof(buf), spec,
					     t.lng ? (long long)(int64_t)a : (long long)(int32_t)a);
			else
				n = snprintf(buf, sizeof(buf), spec,
					     t.lng ? (unsigned long long)a : (unsigned long long)(uint32_t)a);
		}
		if (n > 0)
			append(out, cap, &len, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
	}
	return len;
}

/*
 * bpf_trace_printk(fmt, fmt_size, a1, a2, a3): fmt must be NUL-terminated
 * within fmt_size (-EINVAL otherwise, as in the kernel).  Lines beyond the
 * rate limit are counted and the count is reported with the next line
 * that gets through.  Returns the line's length, or 0 when suppressed.
 */
static uint64_t h_trace_printk(uint64_t fmt, uint64_t fmt_size, uint64_t a1, uint64_t a2,
			       uint64_t a3)
{
	const char *f = U2P(fmt);
	const uint64_t args[3] = { a1, a2, a3 };
	char out[256];
	size_t len;
	uint64_t sup;

	if (!f || fmt_size == 0 || fmt_size > 4096 || f[fmt_size - 1] != '\0')
		return (uint64_t)-EINVAL;
	len = nbpf_printk_format(f, fmt_size, args, out, sizeof(out));
	if (len && out[len - 1] == '\n')
		out[--len] = '\0';
	if (!printk_allow())
		return 0;
	sup = atomic_exchange(&printk_suppressed, 0);
	if (sup)
		nbpf_log(NCCLBPF_LOG_WARN, "bpf_trace_printk: %llu lines suppressed by the rate limit",
			 (unsigned long long)sup);
	nbpf_log(NCCLBPF_LOG_INFO, "bpf_trace_printk: %s", out);
	return len;
}

/* xorshift64*, one state per thread, seeded from the clock and the state's address. */
static uint64_t h_prandom_u32(uint64_t r1, uint64_t r2, uint64_t r3, uint64_t r4, uint64_t r5)
{
	static _Thread_local uint64_t state;
	uint64_t x = state;

	if (!x) {
		x = now_ns() ^ ((uint64_t)(uintptr_t)&state * 0x9e3779b97f4a7c15ull);
		if (!x)
			x = 0x2545f4914f6cdd1dull;
	}
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	state = x;
	return (uint32_t)((x * 0x2545f4914f6cdd1dull) >> 32);
}

static uint64_t h_smp_processor_id(uint64_t r1, uint64_t r2, uint64_t r3, uint64_t r4,
				   uint64_t r5)
{
	return nbpf_thread_slot();
}

/* ---- ring buffer ------------------------------------------------------- */

static uint64_t h_ringbuf_output(uint64_t map, uint64_t data, uint64_t size, uint64_t flags,
				 uint64_t r5)
{
	return (uint64_t)nbpf_ringbuf_output(U2P(map), U2P(data), size, flags);
}

static uint64_t h_ringbuf_reserve(uint64_t map, uint64_t size, uint64_t flags, uint64_t r4,
				  uint64_t r5)
{
	return (uint64_t)(uintptr_t)nbpf_ringbuf_reserve(U2P(map), size, flags);
}

static uint64_t h_ringbuf_submit(uint64_t data, uint64_t flags, uint64_t r3, uint64_t r4,
				 uint64_t r5)
{
	nbpf_ringbuf_commit(U2P(data), false);
	return 0;
}

static uint64_t h_ringbuf_discard(uint64_t data, uint64_t flags, uint64_t r3, uint64_t r4,
				  uint64_t r5)
{
	nbpf_ringbuf_commit(U2P(data), true);
	return 0;
}

static uint64_t h_ringbuf_query(uint64_t map, uint64_t flags, uint64_t r3, uint64_t r4,
				uint64_t r5)
{
	return nbpf_ringbuf_query(U2P(map), flags);
}

static const struct nbpf_helper helpers[] = {
	{ NBPF_HELPER_MAP_LOOKUP, "map_lookup_elem", h_map_lookup,
	  NBPF_RET_PTR_TO_MAP_VALUE_OR_NULL,
	  { NBPF_ARG_CONST_MAP_PTR, NBPF_ARG_PTR_TO_MAP_KEY }, 0 },
	{ NBPF_HELPER_MAP_UPDATE, "map_update_elem", h_map_update, NBPF_RET_INTEGER,
	  { NBPF_ARG_CONST_MAP_PTR, NBPF_ARG_PTR_TO_MAP_KEY, NBPF_ARG_PTR_TO_MAP_VALUE,
	    NBPF_ARG_ANYTHING }, 0 },
	{ NBPF_HELPER_MAP_DELETE, "map_delete_elem", h_map_delete, NBPF_RET_INTEGER,
	  { NBPF_ARG_CONST_MAP_PTR, NBPF_ARG_PTR_TO_MAP_KEY }, 0 },
	{ NBPF_HELPER_KTIME_GET_NS, "ktime_get_ns", h_ktime_get_ns, NBPF_RET_INTEGER, { 0 },
	  NBPF_HELPER_RANK_LOCAL },
	{ NBPF_HELPER_TRACE_PRINTK, "trace_printk", h_trace_printk, NBPF_RET_INTEGER,
	  { NBPF_ARG_PTR_TO_RO_STR, NBPF_ARG_CONST_SIZE, NBPF_ARG_ANYTHING, NBPF_ARG_ANYTHING,
	    NBPF_ARG_ANYTHING }, 0 },
	{ NBPF_HELPER_PRANDOM_U32, "get_prandom_u32", h_prandom_u32, NBPF_RET_INTEGER, { 0 },
	  NBPF_HELPER_RANK_LOCAL },
	{ NBPF_HELPER_SMP_PROC_ID, "get_smp_processor_id", h_smp_processor_id, NBPF_RET_INTEGER,
	  { 0 }, NBPF_HELPER_RANK_LOCAL },
	{ NBPF_HELPER_RINGBUF_OUTPUT, "ringbuf_output", h_ringbuf_output, NBPF_RET_INTEGER,
	  { NBPF_ARG_CONST_MAP_PTR, NBPF_ARG_PTR_TO_MEM, NBPF_ARG_CONST_SIZE_OR_ZERO,
	    NBPF_ARG_ANYTHING }, 0 },
	{ NBPF_HELPER_RINGBUF_RESERVE, "ringbuf_reserve", h_ringbuf_reserve,
	  NBPF_RET_PTR_TO_RINGBUF_MEM_OR_NULL,
	  { NBPF_ARG_CONST_MAP_PTR, NBPF_ARG_CONST_ALLOC_SIZE, NBPF_ARG_ANYTHING }, 0 },
	{ NBPF_HELPER_RINGBUF_SUBMIT, "ringbuf_submit", h_ringbuf_submit, NBPF_RET_VOID,
	  { NBPF_ARG_PTR_TO_RINGBUF_MEM, NBPF_ARG_ANYTHING }, 0 },
	{ NBPF_HELPER_RINGBUF_DISCARD, "ringbuf_discard", h_ringbuf_discard, NBPF_RET_VOID,
	  { NBPF_ARG_PTR_TO_RINGBUF_MEM, NBPF_ARG_ANYTHING }, 0 },
	{ NBPF_HELPER_RINGBUF_QUERY, "ringbuf_query", h_ringbuf_query, NBPF_RET_INTEGER,
	  { NBPF_ARG_CONST_MAP_PTR, NBPF_ARG_ANYTHING }, NBPF_HELPER_RANK_LOCAL },
};

const struct nbpf_helper *nbpf_helper_find(int32_t id)
{
	for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]); i++)
		if (helpers[i].id == id)
			return &helpers[i];
	return NULL;
}
