/*
 * test_loader.c - the loader on real clang-built objects.
 *
 * usage: test_loader OBJDIR SRCDIR
 *   OBJDIR holds loader_{multi,legacy,dataptr,mapinmap}.bpf.o, SRCDIR their
 *   sources (the line-info checks look up MARK comments there).
 *
 * Besides the object's shape (programs, sections, maps, global data,
 * license, tag, line info) it runs the helper-free program `calc` in the
 * interpreter: its result depends on nested bpf-to-bpf calls, .data,
 * .rodata and .bss being linked and relocated exactly right.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "interp.h"
#include "maps/map.h"
#include "ncclbpf/policy.h"
#include "ncclbpf/runtime.h"
#include "object.h"
#include "sha256.h"

static const char *objdir, *srcdir;
static char map_dir[256];

static char *path_of(const char *dir, const char *name)
{
	static char buf[4][512];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, name);
	return buf[k];
}

static uint8_t *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc(n > 0 ? (size_t)n : 1);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* 1-based line number of the first source line containing mark. */
static uint32_t src_line_of(const char *src, const char *mark)
{
	FILE *f = fopen(path_of(srcdir, src), "r");
	char line[512];
	uint32_t n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, mark)) {
			fclose(f);
			return n;
		}
	}
	fclose(f);
	return 0;
}

static struct ncclbpf_open_opts base_opts(void)
{
	return NCCLBPF_OPTS_INIT(ncclbpf_open_opts, .map_dir = map_dir);
}

static void test_sha256_vectors(void)
{
	static const struct { const char *in; const char *hex; } v[] = {
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
	};
	char hex[65];
	uint8_t d[32];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		nbpf_sha256(v[i].in, strlen(v[i].in), d);
		for (int j = 0; j < 32; j++)
			sprintf(hex + 2 * j, "%02x", d[j]);
		CHECK_MSG(!strcmp(hex, v[i].hex), "sha256(\"%s\") = %s", v[i].in, hex);
	}
	/* A million 'a's fed in odd-sized pieces exercises the buffering. */
	{
		struct nbpf_sha256 c;
		char chunk[997];

		memset(chunk, 'a', sizeof(chunk));
		nbpf_sha256_init(&c);
		for (size_t left = 1000000; left;) {
			size_t n = left < sizeof(chunk) ? left : sizeof(chunk);

			nbpf_sha256_update(&c, chunk, n);
			left -= n;
		}
		nbpf_sha256_final(&c, d);
		for (int j = 0; j < 32; j++)
			sprintf(hex + 2 * j, "%02x", d[j]);
		CHECK_MSG(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
			  "sha256(1M a) = %s", hex);
	}
}

/* nettle picks the CPU's SHA instructions itself; the vectors pin the digests. */
static void test_sha256(void)
{
	test_sha256_vectors();
}

/* Distinct bpf-to-bpf call targets; each must be in range and follow an exit/ja. */
static int call_targets(const struct ncclbpf_program *p)
{
	const struct nbpf_insn *in = ncclbpf_program__insns(p);
	size_t n = ncclbpf_program__insn_count(p);
	int64_t seen[16];
	int k = 0;

	for (size_t i = 0; i < n; i++) {
		int64_t t;
		int dup = 0;

		if (in[i].code != NBPF_OP_CALL || in[i].src != NBPF_PSEUDO_CALL)
			continue;
		t = (int64_t)i + in[i].imm + 1;
		CHECK_MSG(t > (int64_t)i && t < (int64_t)n, "%s: call at %zu targets %lld",
			  p->name, i, (long long)t);
		if (t <= 0 || t >= (int64_t)n)
			continue;
		CHECK_MSG(in[t - 1].code == NBPF_OP_EXIT || in[t - 1].code == NBPF_OP_JA,
			  "%s: call target %lld does not start a function", p->name, (long long)t);
		for (int j = 0; j < k; j++)
			dup |= seen[j] == t;
		if (!dup && k < 16)
			seen[k++] = t;
	}
	return k;
}

/* Value bytes of global data map m at off (array value of index 0). */
static const void *gd(struct ncclbpf_map *m, uint32_t off)
{
	return m ? nbpf_map_value_addr(m, off) : NULL;
}

static void check_lines(const struct ncclbpf_program *p, const char *mark, uint32_t want_line,
			int want_after_body)
{
	const char *file, *text;
	uint32_t line;
	int found = 0;

	for (size_t i = 0; i < ncclbpf_program__insn_count(p); i++) {
		if (ncclbpf_program__line(p, i, &file, &line, &text))
			continue;
		if (text && strstr(text, mark)) {
			found++;
			CHECK_EQ_U64(line, want_line);
			CHECK_STR_CONTAINS(file, "loader_multi.bpf.c");
			if (want_after_body)
				CHECK_MSG(i > 0, "%s in appended subprogram", mark);
		}
	}
	CHECK_MSG(found, "%s: no instruction maps to the %s line (%u)", p->name, mark, want_line);
}

static void test_multi(void)
{
	struct ncclbpf_open_opts opts = base_opts();
	struct ncclbpf_object *obj = NULL, *obj2 = NULL;
	struct ncclbpf_program *calc, *pick, *prof;
	struct ncclbpf_map *m, *data, *rodata, *bss, *str;
	const struct nbpf_insn *in;
	char want_tag[17];
	uint8_t d[32], *file;
	size_t len;
	int err;

	err = ncclbpf_object__open_file(path_of(objdir, "loader_multi.bpf.o"), &opts, &obj);
	CHECK_MSG(err == 0, "open: %d %s", err, ncclbpf_errmsg());
	if (err)
		return;
	CHECK_STR_CONTAINS(ncclbpf_object__name(obj), "loader_multi.bpf.o");
	CHECK(!strcmp(ncclbpf_object__license(obj), "Dual BSD/GPL"));

	/* Tag: first 8 bytes of SHA-256 of the file; open_mem gives the same. */
	file = read_all(path_of(objdir, "loader_multi.bpf.o"), &len);
	CHECK(file != NULL);
	if (file) {
		nbpf_sha256(file, len, d);
		for (int i = 0; i < 8; i++)
			sprintf(want_tag + 2 * i, "%02x", d[i]);
		CHECK(!strcmp(ncclbpf_object__tag(obj), want_tag));
		opts.object_name = "mem-copy";
		err = ncclbpf_object__open_mem(file, len, &opts, &obj2);
		CHECK_MSG(err == 0, "open_mem: %s", ncclbpf_errmsg());
		if (!err) {
			CHECK(!strcmp(ncclbpf_object__tag(obj2), want_tag));
			CHECK(!strcmp(ncclbpf_object__name(obj2), "mem-copy"));
			CHECK_EQ_U64(ncclbpf_object__prog_count(obj2), 3);
			ncclbpf_object__close(obj2);
		}
		free(file);
	}

	/* Programs: two in section tuner, one in profiler, ELF order. */
	CHECK_EQ_U64(ncclbpf_object__prog_count(obj), 3);
	calc = ncclbpf_object__find_program(obj, "calc");
	pick = ncclbpf_object__find_program(obj, "pick");
	prof = ncclbpf_object__find_program(obj, "prof");
	CHECK(calc && pick && prof);
	CHECK(ncclbpf_object__find_program(obj, "leaf") == NULL);
	CHECK(ncclbpf_object__find_program(obj, "mid") == NULL);
	CHECK(ncclbpf_object__prog(obj, 3) == NULL);
	if (!calc || !pick || !prof)
		goto out;
	CHECK(ncclbpf_object__prog(obj, 0) == calc);
	CHECK(!strcmp(ncclbpf_program__section(calc), "tuner"));
	CHECK(!strcmp(ncclbpf_program__section(pick), "tuner"));
	CHECK(!strcmp(ncclbpf_program__section(prof), "profiler"));
	CHECK(!strcmp(ncclbpf_program__name(prof), "prof"));

	/* Subprograms: calc reaches top, mid and leaf (nested), pick the static
	 * `other` through a section-relative call, prof the static leaf. */
	CHECK_EQ_U64(call_targets(calc), 3);
	CHECK_EQ_U64(call_targets(pick), 1);
	CHECK_EQ_U64(call_targets(prof), 1);

	/* Maps: 5 BTF maps in declaration order, then global data. */
	CHECK_EQ_U64(ncclbpf_object__map_count(obj), 10);
	m = ncclbpf_object__map(obj, 0);
	CHECK(m && !strcmp(ncclbpf_map__name(m), "pairs"));
	m = ncclbpf_object__find_map(obj, "pairs");
	CHECK(m && ncclbpf_map__type(m) == NCCLBPF_MAP_HASH && ncclbpf_map__key_size(m) == 4 &&
	      ncclbpf_map__value_size(m) == 16 && ncclbpf_map__max_entries(m) == 128);
	m = ncclbpf_object__find_map(obj, "arr");
	CHECK(m && ncclbpf_map__type(m) == NCCLBPF_MAP_ARRAY && ncclbpf_map__key_size(m) == 4 &&
	      ncclbpf_map__value_size(m) == 24 && ncclbpf_map__max_entries(m) == 7);
	m = ncclbpf_object__find_map(obj, "pcpu");
	CHECK(m && ncclbpf_map__type(m) == NCCLBPF_MAP_PERCPU_ARRAY && ncclbpf_map__key_size(m) == 4 &&
	      ncclbpf_map__value_size(m) == 8 && ncclbpf_map__max_entries(m) == 4);
	m = ncclbpf_object__find_map(obj, "lru");
	CHECK(m && ncclbpf_map__type(m) == NCCLBPF_MAP_LRU_HASH && ncclbpf_map__key_size(m) == 8 &&
	      ncclbpf_map__value_size(m) == 2 && ncclbpf_map__max_entries(m) == 16);
	m = ncclbpf_object__find_map(obj, "events");
	CHECK(m && ncclbpf_map__type(m) == NCCLBPF_MAP_RINGBUF && ncclbpf_map__max_entries(m) == 4096);

	data = ncclbpf_object__find_map(obj, ".data");
	rodata = ncclbpf_object__find_map(obj, ".rodata");
	bss = ncclbpf_object__find_map(obj, ".bss");
	str = ncclbpf_object__find_map(obj, ".rodata.str1.1");
	CHECK(data && rodata && bss && str);
	if (!data || !rodata || !bss || !str)
		goto out;
	for (int i = 0; i < 4; i++) {
		struct ncclbpf_map *g = ((struct ncclbpf_map *[]){ data, rodata, bss, str })[i];

		CHECK(ncclbpf_map__type(g) == NCCLBPF_MAP_ARRAY && ncclbpf_map__max_entries(g) == 1 &&
		      ncclbpf_map__key_size(g) == 4);
	}
	CHECK(rodata->readonly_prog && str->readonly_prog && !data->readonly_prog && !bss->readonly_prog);
	CHECK_EQ_U64(ncclbpf_map__value_size(data), 16);   /* int counter; u64 big_data */
	CHECK_EQ_U64(*(const int32_t *)gd(data, 0), 42);
	CHECK_EQ_U64(*(const uint64_t *)gd(data, 8), 0x1122334455667788ull);
	CHECK_EQ_U64(ncclbpf_map__value_size(bss), 20);    /* u64 zeroed; u32 zeroed2[3] */
	for (uint32_t i = 0; i < 20; i++)
		CHECK_EQ_U64(*(const uint8_t *)gd(bss, i), 0);
	CHECK(!memcmp(gd(str, 0), "pick %d\n", 9));
	m = ncclbpf_object__find_map(obj, ".data.custom");
	CHECK(m && ncclbpf_map__value_size(m) == 4 && *(const uint32_t *)gd(m, 0) == 0xc0ffee);

	/* lddw relocations: map by index, global data by index + offset. */
	in = ncclbpf_program__insns(pick);
	{
		int saw_map = 0, saw_str = 0;

		for (size_t i = 0; i + 1 < ncclbpf_program__insn_count(pick); i++) {
			if (in[i].code != NBPF_OP_LDDW)
				continue;
			if (in[i].src == NBPF_PSEUDO_MAP_IDX)
				saw_map += ncclbpf_object__map(obj, in[i].imm) ==
					   ncclbpf_object__find_map(obj, "pairs");
			if (in[i].src == NBPF_PSEUDO_MAP_IDX_VALUE &&
			    ncclbpf_object__map(obj, in[i].imm) == str)
				saw_str += !strcmp(gd(str, in[i + 1].imm), "pick %d\n");
			i++;
		}
		CHECK_EQ_U64(saw_map, 1);
		CHECK_EQ_U64(saw_str, 1);
	}
	in = ncclbpf_program__insns(calc);
	{
		int saw_limit = 0, saw_table = 0;

		for (size_t i = 0; i + 1 < ncclbpf_program__insn_count(calc); i++) {
			if (in[i].code != NBPF_OP_LDDW)
				continue;
			if (in[i].src == NBPF_PSEUDO_MAP_IDX_VALUE &&
			    ncclbpf_object__map(obj, in[i].imm) == rodata) {
				if (*(const uint32_t *)gd(rodata, in[i + 1].imm) == 7)
					saw_limit++;
				else if (*(const uint64_t *)gd(rodata, in[i + 1].imm) == 10 &&
					 *(const uint64_t *)gd(rodata, in[i + 1].imm + 24) == 40)
					saw_table++;
			}
			i++;
		}
		CHECK_EQ_U64(saw_limit, 1); /* in the appended leaf */
		CHECK_EQ_U64(saw_table, 1);
	}

	/* Run calc: top(5) + table[2] + (custom_val == 0xc0ffee)
	 *         = (leaf(5) + leaf(6) + 42 - 1) + 30 + 1 = 119, and .bss += 1. */
	{
		struct ncclbpf_tuner_ctx ctx = { .n_ranks = 5, .n_nodes = 2 };
		struct nbpf_env env = { .maps = obj->maps, .n_maps = (uint32_t)obj->n_maps };
		uint64_t ret = 0;

		err = nbpf_interp_run(calc->insns, calc->n_insns, &env, &ctx, sizeof(ctx), NULL,
				      100000, &ret);
		CHECK_MSG(err == 0, "interp: %s", ncclbpf_errmsg());
		CHECK_EQ_U64(ret, 119);
		CHECK_EQ_U64(*(const uint64_t *)gd(bss, 0), 1);
	}

	/*
	 * Prepare (verify + compile) calc against a minimal local hook contract
	 * and run it: close must then free what prepare attached (checked by
	 * ASan/LSan in the sanitizer run).
	 */
	{
		static const struct ncclbpf_ctx_field fields[] = {
			{ "n_ranks", offsetof(struct ncclbpf_tuner_ctx, n_ranks), 4, NCCLBPF_FIELD_READ, 0, "" },
			{ "n_nodes", offsetof(struct ncclbpf_tuner_ctx, n_nodes), 4, NCCLBPF_FIELD_READ, 0, "" },
		};
		static const struct ncclbpf_hook_desc hook = {
			.name = "loader_test", .section = "tuner", .ctx_type = "struct ncclbpf_tuner_ctx",
			.ctx_size = sizeof(struct ncclbpf_tuner_ctx), .fields = fields, .n_fields = 2,
			.ret_min = INT64_MIN, .ret_max = INT64_MAX,
		};
		struct ncclbpf_prepare_opts po = { .sz = sizeof(po) };
		struct ncclbpf_tuner_ctx ctx = { .n_ranks = 5, .n_nodes = 2 };
		uint64_t ret = 0;

		err = ncclbpf_program__prepare(calc, &hook, &po);
		CHECK_MSG(err == 0, "prepare calc: %d %s", err, ncclbpf_errmsg());
		if (!err) {
			CHECK(ncclbpf_program__run(calc, &ctx, sizeof(ctx), &ret) == 0);
			CHECK_EQ_U64(ret, 119);
			CHECK_EQ_U64(*(const uint64_t *)gd(bss, 0), 2);
		}
	}

	/* Line info: the MARK lines, in the body and in appended subprograms. */
	check_lines(calc, "MARK_TABLE", src_line_of("loader_multi.bpf.c", "MARK_TABLE"), 0);
	check_lines(calc, "MARK_LEAF", src_line_of("loader_multi.bpf.c", "MARK_LEAF"), 1);
	check_lines(prof, "MARK_LEAF", src_line_of("loader_multi.bpf.c", "MARK_LEAF"), 1);
	/* pick starts mid-section: its line records are rebased to its own index 0. */
	check_lines(pick, "MARK_PICK", src_line_of("loader_multi.bpf.c", "MARK_PICK"), 0);
	{
		const char *text = NULL;

		CHECK(ncclbpf_program__line(pick, 0, NULL, NULL, &text) == 0);
		CHECK_STR_CONTAINS(text, "pick");
	}
	{
		const char *file = NULL, *text = NULL;
		uint32_t line = 0;

		CHECK(ncclbpf_program__line(calc, 0, &file, &line, &text) == 0);
		CHECK(line >= src_line_of("loader_multi.bpf.c", "SEC(\"tuner\") int calc") &&
		      line <= src_line_of("loader_multi.bpf.c", "MARK_TABLE"));
		CHECK(ncclbpf_program__line(calc, ncclbpf_program__insn_count(calc), &file, &line,
					    &text) == -ENOENT);
		CHECK(ncclbpf_program__line(NULL, 0, NULL, NULL, NULL) == -EINVAL);
	}
out:
	ncclbpf_object__close(obj);
}

static void test_legacy(void)
{
	struct ncclbpf_open_opts opts = base_opts();
	struct ncclbpf_object *obj = NULL;
	struct ncclbpf_program *p;
	struct ncclbpf_map *h, *a;
	const struct nbpf_insn *in;
	int err, saw = 0;

	err = ncclbpf_object__open_file(path_of(objdir, "loader_legacy.bpf.o"), &opts, &obj);
	CHECK_MSG(err == 0, "open legacy: %s", ncclbpf_errmsg());
	if (err)
		return;
	CHECK(!strcmp(ncclbpf_object__license(obj), "GPL"));
	CHECK_EQ_U64(ncclbpf_object__map_count(obj), 2);
	h = ncclbpf_object__find_map(obj, "legacy_hash");
	a = ncclbpf_object__find_map(obj, "legacy_arr");
	CHECK(h && ncclbpf_map__type(h) == NCCLBPF_MAP_HASH && ncclbpf_map__key_size(h) == 8 &&
	      ncclbpf_map__value_size(h) == 16 && ncclbpf_map__max_entries(h) == 32);
	CHECK(a && ncclbpf_map__type(a) == NCCLBPF_MAP_ARRAY && ncclbpf_map__key_size(a) == 4 &&
	      ncclbpf_map__value_size(a) == 8 && ncclbpf_map__max_entries(a) == 3);
	p = ncclbpf_object__find_program(obj, "count");
	CHECK(p && !strcmp(ncclbpf_program__section(p), "profiler"));
	if (p) {
		in = ncclbpf_program__insns(p);
		for (size_t i = 0; i < ncclbpf_program__insn_count(p); i++)
			if (in[i].code == NBPF_OP_LDDW && in[i].src == NBPF_PSEUDO_MAP_IDX)
				saw |= ncclbpf_object__map(obj, in[i].imm) == a ? 1 :
				       ncclbpf_object__map(obj, in[i].imm) == h ? 2 : 4;
		CHECK_EQ_U64(saw, 3);
	}
	ncclbpf_object__close(obj);
}

/* Built without -g: legacy maps still work, there is simply no line info; .maps cannot. */
static void test_nobtf(void)
{
	struct ncclbpf_open_opts opts = base_opts();
	struct ncclbpf_object *obj = NULL;
	struct ncclbpf_program *p;
	const char *file;
	uint32_t line;
	int err;

	err = ncclbpf_object__open_file(path_of(objdir, "loader_legacy_nobtf.bpf.o"), &opts, &obj);
	CHECK_MSG(err == 0, "open legacy without BTF: %s", ncclbpf_errmsg());
	if (!err) {
		CHECK(obj->btf == NULL);
		CHECK_EQ_U64(ncclbpf_object__map_count(obj), 2);
		p = ncclbpf_object__find_program(obj, "count");
		CHECK(p && ncclbpf_program__insn_count(p) > 4);
		CHECK(p && ncclbpf_program__line(p, 0, &file, &line, NULL) == -ENOENT);
		ncclbpf_object__close(obj);
	}
	obj = NULL;
	err = ncclbpf_object__open_file(path_of(objdir, "loader_multi_nobtf.bpf.o"), &opts, &obj);
	CHECK(err == -EINVAL && obj == NULL);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "loader_multi_nobtf.bpf.o: section .maps needs BTF");
}

static int reuse_calls;
static struct ncclbpf_map *shared_pairs;
static int reuse_wrong_shape;

static struct ncclbpf_map *reuse_cb(void *user, const char *name, uint32_t type, uint32_t ks,
				    uint32_t vs, uint32_t max)
{
	CHECK(user == &reuse_calls);
	CHECK_MSG(name[0] != '.', "global data %s offered for reuse", name);
	reuse_calls++;
	if (!strcmp(name, "pairs") && type == NCCLBPF_MAP_HASH && ks == 4 && vs == 16 && max == 128)
		return ncclbpf_map__get(shared_pairs);
	if (reuse_wrong_shape && !strcmp(name, "arr"))
		return ncclbpf_map__get(shared_pairs);
	return NULL;
}

static void test_reuse(void)
{
	struct ncclbpf_open_opts opts = base_opts();
	struct ncclbpf_object *obj = NULL;
	struct ncclbpf_map_create_opts mo = { .sz = sizeof(mo), .dir = map_dir };
	uint32_t key = 9;
	uint8_t val[16] = { 1, 2, 3 }, got[16];
	int err;

	err = ncclbpf_map__create("pairs", NCCLBPF_MAP_HASH, 4, 16, 128, &mo, &shared_pairs);
	CHECK_MSG(err == 0, "create: %s", ncclbpf_errmsg());
	if (err)
		return;
	CHECK(ncclbpf_map__update(shared_pairs, &key, val, NCCLBPF_ANY) == 0);
	opts.map_reuse = reuse_cb;
	opts.map_reuse_user = &reuse_calls;
	err = ncclbpf_object__open_file(path_of(objdir, "loader_multi.bpf.o"), &opts, &obj);
	CHECK_MSG(err == 0, "open with reuse: %s", ncclbpf_errmsg());
	CHECK_EQ_U64(reuse_calls, 5);
	if (!err) {
		CHECK(ncclbpf_object__find_map(obj, "pairs") == shared_pairs);
		ncclbpf_object__close(obj);
		/* The object's reference is gone, ours remains. */
		CHECK(ncclbpf_map__lookup(shared_pairs, &key, got) == 0 && !memcmp(got, val, 16));
	}
	reuse_wrong_shape = 1;
	obj = NULL;
	err = ncclbpf_object__open_file(path_of(objdir, "loader_multi.bpf.o"), &opts, &obj);
	CHECK(err == -EINVAL && obj == NULL);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "map arr: the shared map offered for reuse has a different shape");
	ncclbpf_map__put(shared_pairs);
}

static void test_refused(void)
{
	struct ncclbpf_open_opts opts = base_opts();
	struct ncclbpf_object *obj = NULL;
	int err;

	err = ncclbpf_object__open_file(path_of(objdir, "loader_dataptr.bpf.o"), &opts, &obj);
	CHECK(err == -ENOTSUP && obj == NULL);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "loader_dataptr.bpf.o: section .data: R_BPF_64_ABS64 relocation at offset 0x8 against target would need a pointer");

	err = ncclbpf_object__open_file(path_of(objdir, "loader_mapinmap.bpf.o"), &opts, &obj);
	CHECK(err == -ENOTSUP && obj == NULL);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "map outer: map-in-map and program arrays (values) are not supported");

	err = ncclbpf_object__open_file(path_of(objdir, "loader_extern.bpf.o"), &opts, &obj);
	CHECK(err == -EINVAL && obj == NULL);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "section tuner: insn 0 loads unresolved extern symbol CONFIG_NCCLBPF_TEST");

	err = ncclbpf_object__open_file(path_of(objdir, "no-such-file.o"), &opts, &obj);
	CHECK(err == -ENOENT && obj == NULL);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "no-such-file.o: cannot open");

	err = ncclbpf_object__open_file(objdir, &opts, &obj);
	CHECK(err == -EINVAL);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "not a regular file");

	CHECK(ncclbpf_object__open_mem(NULL, 10, NULL, &obj) == -EINVAL);
	CHECK(ncclbpf_object__open_mem("x", 1, NULL, NULL) == -EINVAL);
	CHECK(ncclbpf_object__open_mem("", 0, NULL, &obj) == -EINVAL);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "(memory): truncated");

	/* Accessors on NULL. */
	CHECK(ncclbpf_object__prog_count(NULL) == 0 && ncclbpf_object__map(NULL, 0) == NULL &&
	      ncclbpf_object__find_program(NULL, "x") == NULL && ncclbpf_program__insns(NULL) == NULL);
	ncclbpf_object__close(NULL);
}

/* The loader only reads the caller's buffer: open it from read-only pages. */
static void test_readonly_buffer(void)
{
	struct ncclbpf_open_opts opts = base_opts();
	struct ncclbpf_object *obj = NULL;
	size_t len, sz;
	uint8_t *file = read_all(path_of(objdir, "loader_multi.bpf.o"), &len);
	void *ro;
	int err;

	CHECK(file != NULL);
	if (!file)
		return;
	sz = (len + 4095) & ~(size_t)4095;
	ro = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(ro != MAP_FAILED);
	if (ro != MAP_FAILED) {
		memcpy(ro, file, len);
		CHECK(mprotect(ro, sz, PROT_READ) == 0);
		err = ncclbpf_object__open_mem(ro, len, &opts, &obj);
		CHECK_MSG(err == 0, "open read-only: %s", ncclbpf_errmsg());
		CHECK_EQ_U64(ncclbpf_object__prog_count(obj), 3);
		ncclbpf_object__close(obj);
		munmap(ro, sz);
	}
	free(file);
}

/* Opens from several threads at once: per-thread errors, one-time library setup. */
struct par {
	const uint8_t *buf;
	size_t len;
	int ok, bad_msg;
};

static void *par_open(void *arg)
{
	struct par *p = arg;
	struct ncclbpf_open_opts opts = base_opts();

	for (int i = 0; i < 40; i++) {
		struct ncclbpf_object *obj = NULL;

		if (ncclbpf_object__open_mem(p->buf, p->len, &opts, &obj) == 0 &&
		    ncclbpf_object__prog_count(obj) == 3)
			p->ok++;
		ncclbpf_object__close(obj);
		/* A failing open on this thread reports its own message. */
		if (ncclbpf_object__open_mem(p->buf, 40, &opts, &obj) != -EINVAL ||
		    !strstr(ncclbpf_errmsg(), "truncated: 40 bytes"))
			p->bad_msg++;
	}
	return NULL;
}

static void test_threads(void)
{
	size_t len;
	uint8_t *file = read_all(path_of(objdir, "loader_multi.bpf.o"), &len);
	struct par p[4];
	pthread_t t[4];

	CHECK(file != NULL);
	if (!file)
		return;
	for (int i = 0; i < 4; i++) {
		p[i] = (struct par){ .buf = file, .len = len };
		CHECK(pthread_create(&t[i], NULL, par_open, &p[i]) == 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		CHECK_EQ_U64(p[i].ok, 40);
		CHECK_EQ_U64(p[i].bad_msg, 0);
	}
	free(file);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s OBJDIR SRCDIR\n", argv[0]);
		return 2;
	}
	objdir = argv[1];
	srcdir = argv[2];
	snprintf(map_dir, sizeof(map_dir), "/tmp/ncclbpf-test-loader-%d", (int)getpid());

	test_sha256();
	test_multi();
	test_legacy();
	test_nobtf();
	test_reuse();
	test_refused();
	test_readonly_buffer();
	test_threads();
	rmdir(map_dir);
	return check_summary("test_loader");
}
