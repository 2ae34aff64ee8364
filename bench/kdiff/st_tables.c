// SPDX-License-Identifier: Apache-2.0
/*
 * st_tables.c - the kernel's own verifier tests (the test_verifier tables,
 * tools/testing/selftests/bpf/verifier/*.c of a kernel source tree) against
 * our verifier.
 *
 * Built by bench/kdiff/selftests.sh, never in the repository's build: the
 * tree's test_verifier.c up to its test array (struct bpf_test, the macros
 * its tables use and the helpers that fill the generated ones) is included
 * first (-include), then the tables into tests[] below.  Nothing of the
 * tree is kept.
 *
 * Each test the contract can express (a socket filter or tc program, maps of the shapes
 * we have: hashes of 8, 16 and 48-byte values, arrays of 48 bytes,
 * read-only, of one byte, a ring buffer; no kfuncs, no BTF functions) is
 * verified by ours against the __sk_buff mirror of tests/kdiff plus
 * bpf_trace_printk, and compared with the tree's expected privileged
 * verdict.  One line per test (tab-separated: verdict class, the test,
 * the expected error, our reason), then a summary.  A test ours refuses
 * for a feature it does not have (a helper, a map or call kind, legacy
 * packet loads, a context field outside the mirror) is counted as not
 * expressible.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kdiff.h"
#include "st_common.h"
#include "verifier/verifier.h"

static struct bpf_test tests[] = {
#define FILL_ARRAY
#include KST_TESTS_H
#undef FILL_ARRAY
};

/* Maps of the fixups' shapes: index = our lddw map index. */
enum { M_HASH_8B, M_HASH_48B, M_HASH_16B, M_ARRAY_48B, M_ARRAY_RO, M_ARRAY_SMALL, M_RINGBUF, NM };

static struct ncclbpf_map *maps[NM];

static int make_maps(void)
{
	static const struct { enum ncclbpf_map_type t; uint32_t k, v, n; bool ro; } d[NM] = {
		[M_HASH_8B] = { NCCLBPF_MAP_HASH, 8, 8, 11, false },
		[M_HASH_48B] = { NCCLBPF_MAP_HASH, 8, 48, 11, false },
		[M_HASH_16B] = { NCCLBPF_MAP_HASH, 8, 16, 11, false },
		[M_ARRAY_48B] = { NCCLBPF_MAP_ARRAY, 4, 48, 1, false },
		[M_ARRAY_RO] = { NCCLBPF_MAP_ARRAY, 4, 48, 1, true },
		[M_ARRAY_SMALL] = { NCCLBPF_MAP_ARRAY, 4, 1, 1, false },
		[M_RINGBUF] = { NCCLBPF_MAP_RINGBUF, 0, 0, 4096, false },
	};

	for (int i = 0; i < NM; i++) {
		struct ncclbpf_map_create_opts o = { .sz = sizeof(o), .readonly_prog = d[i].ro };
		char name[64];

		snprintf(name, sizeof(name), "kst_%d_%d", i, (int)getpid());
		if (ncclbpf_map__create(name, d[i].t, d[i].k, d[i].v, d[i].n, &o, &maps[i])) {
			fprintf(stderr, "st_tables: map: %s\n", ncclbpf_errmsg());
			return -1;
		}
	}
	return 0;
}

/* A table's program ends at its last nonzero slot. */
static uint32_t table_len(const struct bpf_insn *p)
{
	uint32_t n = MAX_INSNS;

	while (n > 1 && !p[n - 1].code && !p[n - 1].imm)
		n--;
	return n;
}

/*
 * Program types whose context is struct __sk_buff and whose return value
 * is free: a socket filter, and tc (where more fields are writable: a test
 * writing them is refused by us as not expressible).
 */
static bool skb_type(int t)
{
	return !t || t == BPF_PROG_TYPE_SOCKET_FILTER || t == BPF_PROG_TYPE_SCHED_CLS ||
	       t == BPF_PROG_TYPE_SCHED_ACT;
}

/* Fixups of map kinds we have none of. */
static bool other_fixups(const struct bpf_test *t)
{
	return t->fixup_map_sockmap[0] || t->fixup_map_sockhash[0] || t->fixup_map_xskmap[0] ||
	       t->fixup_map_stacktrace[0] || t->fixup_prog1[0] || t->fixup_prog2[0] ||
	       t->fixup_map_in_map[0] || t->fixup_cgroup_storage[0] ||
	       t->fixup_percpu_cgroup_storage[0] || t->fixup_map_spin_lock[0] ||
	       t->fixup_map_array_wo[0] || t->fixup_sk_storage_map[0] ||
	       t->fixup_map_event_output[0] || t->fixup_map_reuseport_array[0] ||
	       t->fixup_map_timer[0] || t->fixup_map_kptr[0] || t->fixup_kfunc_btf_id[0].insn_idx ||
	       t->kfunc || t->func_info_cnt;
}

static int fix(struct nbpf_insn *p, uint32_t n, const int *idx, int map)
{
	for (int i = 0; idx[i]; i++) {
		if ((uint32_t)idx[i] >= n || p[idx[i]].code != NBPF_OP_LDDW)
			return -1;
		p[idx[i]].src = p[idx[i]].src == BPF_PSEUDO_MAP_VALUE ? NBPF_PSEUDO_MAP_IDX_VALUE
								       : NBPF_PSEUDO_MAP_IDX;
		p[idx[i]].imm = map;
	}
	return 0;
}

static void tsv(const char *s)
{
	for (; s && *s; s++)
		putchar(*s == '\t' || *s == '\n' ? ' ' : *s);
	putchar('\t');
}

int main(void)
{
	static struct nbpf_insn prog[MAX_TEST_INSNS];
	struct ncclbpf_hook_desc hook = st_hook();
	unsigned total = 0, skipped = 0, unsupported = 0, n[2][2] = { { 0 } };

	if (make_maps())
		return 1;
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		struct bpf_test *t = &tests[i];
		struct ncclbpf_verify_opts opts = { .sz = sizeof(opts), .max_time_ms = 600000 };
		struct ncclbpf_verify_result res;
		struct nbpf_verify_input in = { .insns = prog, .maps = maps, .n_maps = NM };
		const struct bpf_insn *src = t->insns;
		uint32_t len;
		bool expect, ours, bad = false;
		const char *reason = "";

		total++;
		if (t->fill_helper) {
			t->fill_insns = calloc(MAX_TEST_INSNS, sizeof(struct bpf_insn));
			t->fill_helper(t);
			src = t->fill_insns;
			len = (uint32_t)t->prog_len;
		} else {
			len = table_len(t->insns);
		}
		expect = t->result == ACCEPT || t->result == VERBOSE_ACCEPT;
		if (!skb_type(t->prog_type) || other_fixups(t) ||
		    t->result == UNDEF || len > MAX_TEST_INSNS) {
			skipped++;
			printf("skip\t");
			tsv(t->descr);
			printf("\n");
			goto next;
		}
		memcpy(prog, src, len * sizeof(prog[0]));
		bad |= fix(prog, len, t->fixup_map_hash_8b, M_HASH_8B) < 0;
		bad |= fix(prog, len, t->fixup_map_hash_48b, M_HASH_48B) < 0;
		bad |= fix(prog, len, t->fixup_map_hash_16b, M_HASH_16B) < 0;
		bad |= fix(prog, len, t->fixup_map_array_48b, M_ARRAY_48B) < 0;
		bad |= fix(prog, len, t->fixup_map_array_ro, M_ARRAY_RO) < 0;
		bad |= fix(prog, len, t->fixup_map_array_small, M_ARRAY_SMALL) < 0;
		bad |= fix(prog, len, t->fixup_map_ringbuf, M_RINGBUF) < 0;
		for (uint32_t k = 0; k < len; k++) /* a map reference no fixup filled */
			if (prog[k].code == NBPF_OP_LDDW && (prog[k].src == BPF_PSEUDO_MAP_FD ||
							     prog[k].src == BPF_PSEUDO_MAP_VALUE))
				bad = true;
		if (bad) {
			skipped++;
			printf("skip\t");
			tsv(t->descr);
			printf("\n");
			goto next;
		}
		in.n_insns = len;
		ours = nbpf_verify_insns(&in, &hook, &opts, &res) == 0;
		reason = st_tally(&res, ours, expect, n, &unsupported);
		tsv(t->descr);
		tsv(expect ? "" : t->errstr);
		tsv(reason);
		printf("%s\n", expect ? "kernel: accept" : "kernel: refuse");
		free(res.findings);
next:
		if (t->fill_helper) {
			free(t->fill_insns);
			t->fill_insns = NULL;
		}
	}
	printf("SUMMARY\ttests %u\tskipped %u\tnot expressible %u\tcompared %u\t"
	       "kernel accepts %u\twe accept %u of them\tkernel refuses %u\twe accept %u of them\n",
	       total, skipped, unsupported, n[0][0] + n[0][1] + n[1][0] + n[1][1], n[1][0] + n[1][1],
	       n[1][1], n[0][0] + n[0][1], n[0][1]);
	return 0;
}
