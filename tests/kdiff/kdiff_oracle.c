// SPDX-License-Identifier: Apache-2.0
/*
 * kdiff_oracle.c - the contract (maps, hook, rows), our verdict and the
 * classification against the kernel's.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "kdiff.h"
#include "verifier/verifier.h"

const struct kd_map_desc kd_map_descs[KD_NMAPS] = {
	[KD_MAP_ARR] = { "kd_arr", NCCLBPF_MAP_ARRAY, 4, 16, 4, false },
	[KD_MAP_DATA] = { "kd_data", NCCLBPF_MAP_ARRAY, 4, 64, 1, false },
	[KD_MAP_RODATA] = { "kd_rodata", NCCLBPF_MAP_ARRAY, 4, 32, 1, true },
	[KD_MAP_HASH] = { "kd_hash", NCCLBPF_MAP_HASH, 8, 16, 16, false },
	[KD_MAP_RB] = { "kd_rb", NCCLBPF_MAP_RINGBUF, 0, 0, 4096, false },
};

#define R NCCLBPF_FIELD_READ
#define RW (NCCLBPF_FIELD_READ | NCCLBPF_FIELD_WRITE)
/* What a socket filter may touch of struct __sk_buff (uapi offsets). */
static const struct ncclbpf_ctx_field skb_fields[] = {
	{ "len", 0, 4, R, 0, "" },           { "pkt_type", 4, 4, R, 0, "" },
	{ "mark", 8, 4, R, 0, "" },          { "queue_mapping", 12, 4, R, 0, "" },
	{ "protocol", 16, 4, R, 0, "" },     { "vlan_present", 20, 4, R, 0, "" },
	{ "vlan_tci", 24, 4, R, 0, "" },     { "vlan_proto", 28, 4, R, 0, "" },
	{ "priority", 32, 4, R, 0, "" },     { "ingress_ifindex", 36, 4, R, 0, "" },
	{ "ifindex", 40, 4, R, 0, "" },      { "tc_index", 44, 4, R, 0, "" },
	{ "cb0", 48, 4, RW, 0, "" },         { "cb1", 52, 4, RW, 0, "" },
	{ "cb2", 56, 4, RW, 0, "" },         { "cb3", 60, 4, RW, 0, "" },
	{ "cb4", 64, 4, RW, 0, "" },         { "hash", 68, 4, R, 0, "" },
};
#undef R
#undef RW

static const int32_t skb_helpers[] = {
	NBPF_HELPER_MAP_LOOKUP,     NBPF_HELPER_MAP_UPDATE,      NBPF_HELPER_MAP_DELETE,
	NBPF_HELPER_KTIME_GET_NS,   NBPF_HELPER_PRANDOM_U32,     NBPF_HELPER_SMP_PROC_ID,
	NBPF_HELPER_RINGBUF_OUTPUT, NBPF_HELPER_RINGBUF_RESERVE, NBPF_HELPER_RINGBUF_SUBMIT,
	NBPF_HELPER_RINGBUF_DISCARD, NBPF_HELPER_RINGBUF_QUERY,
};

const struct ncclbpf_hook_desc kd_hook = {
	.name = "kdiff", .section = "kdiff", .ctx_type = "struct __sk_buff", .ctx_size = KD_CTX_SIZE,
	.fields = skb_fields, .n_fields = sizeof(skb_fields) / sizeof(skb_fields[0]),
	.helpers = skb_helpers, .n_helpers = sizeof(skb_helpers) / sizeof(skb_helpers[0]),
	.ret_min = INT64_MIN, .ret_max = INT64_MAX, .ret_doc = "", .doc = "",
};

const char *const kd_class_names[KD_NCLASSES] = {
	[KD_C_BOTH_ACCEPT] = "both_accept", [KD_C_BOTH_REFUSE] = "both_refuse",
	[KD_C_EXPLAINED] = "explained", [KD_C_GAP] = "gap", [KD_C_GAP_PRIV] = "gap_privileged",
	[KD_C_FAIL_ACCEPT] = "FAIL_we_accept_kernel_refuses",
	[KD_C_FAIL_STRICT] = "FAIL_leak_or_uninit", [KD_C_FAIL_RUN] = "FAIL_run",
	[KD_C_FAIL_JIT] = "FAIL_jit",
};

/*
 * docs/verifier.md, "Contract differences with the kernel": one case per
 * row in tests/kdiff/cases (row_*.s).  A row with a message explains a
 * refusal carrying it; the kernel-twin row, one the kernel takes back
 * for the program's exact twin (kdiff_twin.c).
 */
const struct kd_row kd_rows[] = {
	{ "misaligned-stack", "misaligned stack access",
	  "stack data at any alignment (the kernel wants natural alignment)" },
	{ "moved-context-pointer", "dereference of modified ctx ptr",
	  "a context access through the context pointer plus a constant" },
	{ "context-field-table", "invalid bpf_context access",
	  "context accesses by our field table (whole adjacent fields at once)" },
	{ "stack-pointer-or", "bitwise operator |= on pointer",
	  "an OR of low bits into an aligned frame pointer, as +=" },
	{ "stack-pointer-sub", "subtraction from stack pointer prohibited",
	  "a frame pointer minus a bounded value" },
	{ "call-chain-stack", "combined stack size of",
	  "each frame of a call chain with its own 512 bytes" },
	{ "zero-size-memory", " size=0",
	  "a zero-length helper memory argument at the end of its region" },
	{ "pointer-null-check", "pointer comparison prohibited",
	  "any pointer compared with 0 (the kernel without CAP_PERFMON: only a nullable one)" },
	{ "kernel-twin", NULL,
	  "operations the kernel models less precisely (its exact twin is accepted)" },
};
const uint32_t kd_n_rows = sizeof(kd_rows) / sizeof(kd_rows[0]);

/* Input sets a program runs on before a refusal of the kernel's is explained. */
#define CANDIDATE_RUNS 64

/*
 * The strict kernel's refusals that our contract shares: a pointer
 * leaking into memory, a helper or r0, a pointer comparison, a read of
 * uninitialised stack.  Its speculation-hardening refusals ("prohibited
 * for !root") are not ours to make.
 */
static const char *const strict_msgs[] = {
	"leaks addr", "pointer comparison prohibited", "invalid read from stack",
	"invalid indirect read from stack", "partial copy of pointer",
};

/* ---- the environment ---- */

int kd_env_map_renew(struct kd_env *e, int i)
{
	const struct kd_map_desc *d = &kd_map_descs[i];
	struct ncclbpf_map_create_opts o = { .sz = sizeof(o), .readonly_prog = d->readonly_prog };
	char name[64];
	int err;

	if (e->maps[i])
		ncclbpf_map__put(e->maps[i]);
	e->maps[i] = NULL;
	snprintf(name, sizeof(name), "%s_%d", d->name, (int)getpid());
	err = ncclbpf_map__create(name, d->type, d->key_size, d->value_size, d->max_entries, &o,
				  &e->maps[i]);
	if (err)
		fprintf(stderr, "kdiff: map %s: %s\n", name, ncclbpf_errmsg());
	return err;
}

int kd_env_open(struct kd_env *e, bool want_kernel)
{
	memset(e, 0, sizeof(*e));
	e->runs = 4;
	nbpf_verify_selfcheck = 1; /* pruning's shortcuts agree with the full tests */
	for (int i = 0; i < KD_NMAPS; i++) {
		int err = kd_env_map_renew(e, i);

		if (err) {
			kd_env_close(e);
			return err;
		}
	}
	if (want_kernel)
		e->have_kernel = kd_kernel_open(&e->kern) == 0;
	return 0;
}

void kd_env_close(struct kd_env *e)
{
	for (int i = 0; i < KD_NMAPS; i++)
		if (e->maps[i])
			ncclbpf_map__put(e->maps[i]);
	if (e->have_kernel)
		kd_kernel_close(&e->kern);
	memset(e, 0, sizeof(*e));
}

/* ---- our verdict ---- */

void kd_verify_ours(struct kd_env *e, const struct kd_prog *p, struct kd_verdict *v)
{
	struct ncclbpf_verify_opts opts = { .sz = sizeof(opts), .max_time_ms = 600000 };
	struct nbpf_verify_input in = { .insns = p->insns, .n_insns = p->n, .maps = e->maps,
					.n_maps = KD_NMAPS };
	struct ncclbpf_verify_result res;
	int err = nbpf_verify_insns(&in, &kd_hook, &opts, &res);

	v->ours = err == 0;
	v->ours_reason[0] = '\0';
	v->ours_insn = 0;
	v->ret_min = res.ret_min;
	v->ret_max = res.ret_max;
	for (uint32_t i = 0; err && i < res.n_findings; i++) {
		if (res.findings[i].kind != NCCLBPF_FINDING_ERROR)
			continue;
		snprintf(v->ours_reason, sizeof(v->ours_reason), "%s", res.findings[i].reason);
		v->ours_insn = res.findings[i].insn;
		break;
	}
	if (err && !v->ours_reason[0])
		snprintf(v->ours_reason, sizeof(v->ours_reason), "error %d", err);
	free(res.findings);
}

/* ---- classification ---- */

static const struct kd_row *row_by_message(const char *kmsg)
{
	for (uint32_t i = 0; i < kd_n_rows; i++)
		if (kd_rows[i].kmsg && strstr(kmsg, kd_rows[i].kmsg))
			return &kd_rows[i];
	return NULL;
}

/* Shifts tried for variable offsets in the kernel twin (0: none). */
static const int32_t twin_shifts[] = { 0, 16, 512, 1 << 16 };

const struct kd_row *kd_row_for(struct kd_env *e, const struct kd_prog *p, enum kd_kmode mode,
			       const char *kmsg)
{
	static struct kd_prog twin, again;
	const struct kd_row *row = row_by_message(kmsg);

	for (size_t s = 0; !row && s < sizeof(twin_shifts) / sizeof(twin_shifts[0]); s++) {
		char msg[256];
		int k;

		if (!kd_twin(p, KD_RW_KERNEL, twin_shifts[s], &twin))
			continue;
		/* constants the first rewrites exposed (a fill of a constant store) reach comparisons */
		if (kd_twin(&twin, KD_RW_CONST | KD_RW_JSET, 0, &again))
			twin = again;
		k = kd_kernel_verdict(&e->kern, &twin, mode, msg, sizeof(msg));
		if (k == 1)
			return &kd_rows[kd_n_rows - 1];
		/* the twin stopped at another difference: that row, as for the program itself */
		if (k == 0)
			row = row_by_message(msg);
	}
	return row;
}

static bool strict_is_ours(const char *msg)
{
	for (size_t i = 0; i < sizeof(strict_msgs) / sizeof(strict_msgs[0]); i++)
		if (strstr(msg, strict_msgs[i]))
			return true;
	return false;
}

/*
 * Why we refuse what the kernel accepts, where one exact rewrite says so:
 * the first whose twin we accept.
 */
static const char *gap_cause(struct kd_env *e, const struct kd_prog *p)
{
	static const struct { unsigned rw; const char *name; } causes[] = {
		{ KD_RW_CONST, "a constant in a register" },
		{ KD_RW_MUL, "multiplication by a negative constant" },
		{ KD_RW_JSET, "JSET of high bits" },
		{ KD_RW_SIGN_EXT, "a copy through an extension" },
		{ KD_RW_FILL, "a copy through a narrow spill" },
	};
	static struct kd_prog twin;
	struct kd_verdict t;

	for (size_t i = 0; i < sizeof(causes) / sizeof(causes[0]); i++) {
		if (!kd_twin(p, causes[i].rw, 0, &twin))
			continue;
		kd_verify_ours(e, &twin, &t);
		if (t.ours)
			return causes[i].name;
	}
	return NULL;
}

void kd_classify(struct kd_env *e, const struct kd_prog *p, uint64_t seed, struct kd_verdict *v)
{
	memset(v, 0, sizeof(*v));
	v->kern = v->strict = -1;
	kd_verify_ours(e, p, v);
	/* the kernel's message (a second load, with a log) only where it can make a failure */
	if (e->have_kernel)
		v->kern = kd_kernel_verdict(&e->kern, p, KD_K_PRIV, v->kern_msg,
					    v->ours ? sizeof(v->kern_msg) : 0);
	if (!v->ours) {
		if (v->kern != 1) {
			v->cls = KD_C_BOTH_REFUSE;
			return;
		}
		v->strict = kd_kernel_verdict(&e->kern, p, KD_K_STRICT, v->strict_msg, 0);
		v->cls = v->strict == 1 ? KD_C_GAP : KD_C_GAP_PRIV;
		v->gap_cause = gap_cause(e, p);
		return;
	}
	if (v->kern == 0) { /* a failure unless explained: many more inputs first */
		uint32_t runs = e->runs;

		e->runs = CANDIDATE_RUNS;
		v->cls = (enum kd_class)kd_run_checks(e, p, seed, false, v);
		e->runs = runs;
		if (v->cls)
			return;
		v->row = kd_row_for(e, p, KD_K_PRIV, v->kern_msg);
		v->cls = !v->row ? KD_C_FAIL_ACCEPT
				 : (enum kd_class)kd_run_checks(e, p, seed, true, v); /* safe: the JIT too */
		if (v->row && !v->cls)
			v->cls = KD_C_EXPLAINED;
		return;
	}
	v->cls = (enum kd_class)kd_run_checks(e, p, seed, true, v);
	if (v->cls)
		return;
	v->cls = KD_C_BOTH_ACCEPT;
	if (v->kern == 1) {
		v->strict = kd_kernel_verdict(&e->kern, p, KD_K_STRICT, v->strict_msg,
					      sizeof(v->strict_msg));
		if (v->strict == 0 && strict_is_ours(v->strict_msg)) {
			v->row = kd_row_for(e, p, KD_K_STRICT, v->strict_msg);
			v->cls = v->row ? KD_C_EXPLAINED : KD_C_FAIL_STRICT;
		}
	}
}

/* Digits and register numbers blanked, so that one cause is one key. */
static void normalize(const char *in, char *out, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; in[i] && o + 2 < len; i++) {
		char c = in[i];

		if ((c >= '0' && c <= '9') || (c == '-' && in[i + 1] >= '0' && in[i + 1] <= '9')) {
			if (o == 0 || out[o - 1] != 'N')
				out[o++] = 'N';
			while (in[i + 1] == 'x' || (in[i + 1] >= '0' && in[i + 1] <= '9') ||
			       (in[i + 1] >= 'a' && in[i + 1] <= 'f'))
				i++;
			continue;
		}
		out[o++] = c;
	}
	out[o] = '\0';
}

void kd_verdict_key(const struct kd_verdict *v, char *key, size_t len)
{
	char n[256];

	switch (v->cls) {
	case KD_C_EXPLAINED:
		snprintf(key, len, "%s: %s", kd_class_names[v->cls], v->row->id);
		return;
	case KD_C_GAP: case KD_C_GAP_PRIV: case KD_C_BOTH_REFUSE:
		snprintf(key, len, "%s: %s%s%s%s", kd_class_names[v->cls], v->ours_reason,
			 v->gap_cause ? " (" : "", v->gap_cause ? v->gap_cause : "",
			 v->gap_cause ? ")" : "");
		return;
	case KD_C_FAIL_ACCEPT:
		normalize(v->kern_msg, n, sizeof(n));
		break;
	case KD_C_FAIL_STRICT:
		normalize(v->strict_msg, n, sizeof(n));
		break;
	case KD_C_FAIL_RUN: case KD_C_FAIL_JIT: {
		const char *m = strstr(v->run_msg, ": ");

		normalize(m ? m + 2 : v->run_msg, n, sizeof(n));
		break;
	}
	default:
		n[0] = '\0';
		break;
	}
	snprintf(key, len, "%s: %s", kd_class_names[v->cls], n);
}
