// SPDX-License-Identifier: Apache-2.0
/*
 * mem_checker.c - see mem_checker.h.
 */
#include "mem_checker.h"

#include <stdint.h>

#include "helpers.h"
#include "maps/map.h"

static const struct ncclbpf_ctx_field *field_at(const struct ncclbpf_hook_desc *h, uint64_t b)
{
	for (uint32_t i = 0; i < h->n_fields; i++)
		if (b >= h->fields[i].off && b < (uint64_t)h->fields[i].off + h->fields[i].size)
			return &h->fields[i];
	return NULL;
}

/*
 * Byte by byte: every byte lies in a field with the right, and a write
 * covers each field it touches entirely (so one access may span whole
 * adjacent fields, as merged stores do).
 */
static int ctx_access(const struct ncclbpf_hook_desc *h, uint64_t off, uint32_t size, int is_write)
{
	for (uint64_t b = off; b < off + size;) {
		const struct ncclbpf_ctx_field *f = field_at(h, b);

		if (!f || !(f->access & (is_write ? NCCLBPF_FIELD_WRITE : NCCLBPF_FIELD_READ)))
			return 1;
		if (is_write && (f->off < off || f->off + f->size > off + size))
			return 1;
		b = f->off + f->size;
	}
	return 0;
}

static int check_mem(void *user, uint64_t addr, uint32_t size, int is_write)
{
	struct mem_checker *mc = user;
	uint64_t c = (uint64_t)(uintptr_t)mc->ctx;

	if (mc->ctx && addr >= c && addr + size <= c + mc->hook->ctx_size)
		return ctx_access(mc->hook, addr - c, size, is_write);
	for (int i = 0; i < mc->n; i++)
		if (addr >= mc->r[i].lo && addr + size <= mc->r[i].hi)
			return is_write && mc->r[i].readonly;
	return 1;
}

static void helper_ret(void *user, const struct nbpf_helper *h, const uint64_t a[5], uint64_t r0)
{
	struct mem_checker *mc = user;

	if (h->id == NBPF_HELPER_MAP_LOOKUP && r0) {
		const struct ncclbpf_map *m = (const struct ncclbpf_map *)(uintptr_t)a[0];

		mem_checker_add(mc, (const void *)(uintptr_t)r0, m->value_size, m->readonly_prog);
	} else if (h->id == NBPF_HELPER_RINGBUF_RESERVE && r0) {
		mem_checker_add(mc, (const void *)(uintptr_t)r0, a[1], false);
	} else if (h->id == NBPF_HELPER_RINGBUF_SUBMIT || h->id == NBPF_HELPER_RINGBUF_DISCARD) {
		for (int i = 0; i < mc->n; i++)
			if (mc->r[i].lo == a[0])
				mc->r[i].lo = mc->r[i].hi = 0; /* gone: any later access traps */
	}
}

void mem_checker_init(struct mem_checker *mc, const struct ncclbpf_hook_desc *hook, void *ctx)
{
	mc->hook = hook;
	mc->ctx = ctx;
	mc->n = 0;
	mc->chk = (struct nbpf_checker){ .mem = check_mem, .helper_ret = helper_ret, .user = mc };
}

void mem_checker_add(struct mem_checker *mc, const void *lo, uint64_t len, bool readonly)
{
	if (mc->n < MEM_CHECKER_MAX_REGIONS) {
		mc->r[mc->n].lo = (uint64_t)(uintptr_t)lo;
		mc->r[mc->n].hi = mc->r[mc->n].lo + len;
		mc->r[mc->n++].readonly = readonly;
	}
}
