/*
 * loader.c - ncclbpf_object__open_mem/open_file: runs the loader stages
 * (see loader.h) and assembles the struct ncclbpf_object.
 *
 * Maps are created last, after everything else in the object has been
 * validated, so a malformed object never leaves shared-memory files or
 * references to shared maps behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "file.h"
#include "loader.h"
#include "sha256.h"

static int set_license(struct nbpf_loader *ld, struct ncclbpf_object *obj)
{
	const struct nbpf_sec *s;

	if (!ld->license_idx) {
		obj->license = strdup("");
	} else {
		s = &ld->secs[ld->license_idx];
		if (!s->data || !memchr(s->data, '\0', s->size))
			return ld_err(ld, -EINVAL, "section license is not a NUL-terminated string");
		obj->license = strdup((const char *)s->data);
	}
	return obj->license ? 0 : ld_err(ld, -ENOMEM, "out of memory");
}

/*
 * Links every program.  Each program gets its own copy of the subprograms
 * it reaches, so the total is capped too: a hostile object could otherwise
 * make 256 programs each pull in a megabyte of .text.
 */
static int build_programs(struct nbpf_loader *ld, struct ncclbpf_object *obj)
{
	uint64_t total = 0;
	uint32_t n = 0;

	for (uint32_t i = 0; i < ld->n_funcs; i++)
		n += ld->funcs[i].is_prog;
	if (!n)
		return 0;
	obj->progs = calloc(n, sizeof(*obj->progs));
	if (!obj->progs)
		return ld_err(ld, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < ld->n_funcs; i++) {
		const struct nbpf_func *fn = &ld->funcs[i];
		struct ncclbpf_program *prog;
		uint32_t *sub_starts = NULL;
		int err;

		if (!fn->is_prog)
			continue;
		prog = calloc(1, sizeof(*prog));
		if (!prog)
			return ld_err(ld, -ENOMEM, "out of memory");
		obj->progs[obj->n_progs++] = prog;
		prog->obj = obj;
		prog->name = strdup(fn->name);
		prog->section = strdup(ld->secs[fn->sec].name);
		if (!prog->name || !prog->section)
			return ld_err(ld, -ENOMEM, "out of memory");
		err = nbpf_ld_link_program(ld, fn, prog, &sub_starts);
		if (!err)
			err = nbpf_ld_lines(ld, fn, sub_starts, prog);
		free(sub_starts);
		if (err)
			return err;
		total += prog->n_insns;
		if (total > NBPF_LOADER_MAX_TOTAL_INSNS)
			return ld_err(ld, -E2BIG, "programs total more than %u instructions after linking",
				      NBPF_LOADER_MAX_TOTAL_INSNS);
	}
	return 0;
}

static void loader_free(struct nbpf_loader *ld)
{
	for (uint32_t i = 0; ld->secs && i < ld->n_secs; i++) {
		free(ld->secs[i].insns);
		free(ld->secs[i].call_tgt);
		free(ld->secs[i].is_hi);
	}
	free(ld->secs);
	free(ld->syms);
	free(ld->funcs);
	free(ld->maps);
	free(ld->lsecs);
	btf__free(ld->btf);
	nbpf_ld_elf_close(ld);
}

static void make_tag(const void *buf, size_t len, char tag[17])
{
	static const char hex[] = "0123456789abcdef";
	uint8_t d[32];

	nbpf_sha256(buf, len, d);
	for (int i = 0; i < 8; i++) {
		tag[2 * i] = hex[d[i] >> 4];
		tag[2 * i + 1] = hex[d[i] & 15];
	}
	tag[16] = '\0';
}

static int open_named(const void *buf, size_t len, const char *name,
		      const struct ncclbpf_open_opts *opts, struct ncclbpf_object **out)
{
	struct nbpf_loader ld = { .buf = buf, .len = len, .opts = opts };
	struct ncclbpf_object *obj;
	int err;

	obj = calloc(1, sizeof(*obj));
	if (!obj)
		return nbpf_err(-ENOMEM, "out of memory");
	obj->name = strdup(name);
	if (!obj->name) {
		free(obj);
		return nbpf_err(-ENOMEM, "out of memory");
	}
	ld.name = obj->name;
	make_tag(buf, len, obj->tag);

	err = nbpf_ld_elf_open(&ld);
	if (!err)
		err = nbpf_ld_btf_open(&ld);
	if (!err)
		err = nbpf_ld_collect_funcs(&ld);
	if (!err)
		err = nbpf_ld_collect_maps(&ld);
	if (!err)
		err = nbpf_ld_check_data_relocs(&ld);
	if (!err)
		err = nbpf_ld_relocate(&ld);
	if (!err)
		err = nbpf_ld_lines_prepare(&ld);
	if (!err)
		err = set_license(&ld, obj);
	if (!err)
		err = build_programs(&ld, obj);
	if (!err)
		err = nbpf_ld_create_maps(&ld, obj);
	if (!err) {
		obj->btf = ld.btf; /* line info points into it */
		ld.btf = NULL;
	}
	loader_free(&ld);
	if (err) {
		ncclbpf_object__close(obj);
		return err;
	}
	*out = obj;
	return 0;
}

#define OPT_NAME(opts) \
	((opts) && (opts)->sz >= offsetof(struct ncclbpf_open_opts, object_name) + \
	 sizeof((opts)->object_name) ? (opts)->object_name : NULL)

/*
 * Opens an object from memory.  buf is only read during the call; nothing
 * in the object points into it.  On failure *obj is untouched.
 */
int ncclbpf_object__open_mem(const void *buf, size_t len, const struct ncclbpf_open_opts *opts,
			     struct ncclbpf_object **obj)
{
	const char *name = OPT_NAME(opts);

	if (!obj || (!buf && len))
		return nbpf_err(-EINVAL, "open_mem: invalid arguments");
	if (opts && opts->sz < sizeof(size_t))
		return nbpf_err(-EINVAL, "open_mem: opts->sz not set");
	if (len > NBPF_LOADER_MAX_FILE)
		return nbpf_err(-EFBIG, "%s: %zu bytes is too large for a BPF object",
				name ? name : "(memory)", len);
	return open_named(buf ? buf : "", len, name ? name : "(memory)", opts, obj);
}

/* Reads the whole file, then opens it from memory; the object name is the file's base name. */
int ncclbpf_object__open_file(const char *path, const struct ncclbpf_open_opts *opts,
			      struct ncclbpf_object **obj)
{
	const char *name = OPT_NAME(opts), *slash;
	void *buf;
	size_t len;
	int err;

	if (!path || !obj)
		return nbpf_err(-EINVAL, "open_file: invalid arguments");
	if (opts && opts->sz < sizeof(size_t))
		return nbpf_err(-EINVAL, "open_file: opts->sz not set");
	if (!name) {
		slash = strrchr(path, '/');
		name = slash ? slash + 1 : path;
	}
	err = nbpf_read_regular_file(path, NBPF_LOADER_MAX_FILE, &buf, &len);
	if (err)
		return err;
	err = open_named(buf, len, name, opts, obj);
	free(buf);
	return err;
}
