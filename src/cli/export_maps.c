// SPDX-License-Identifier: MIT
/*
 * export_maps.c - `ncclbpf export` of the maps a policy declares with
 * NCCLBPF_EXPORT: the declarations are read from each object's
 * ".ncclbpf.export" section (the objects of every process's current image),
 * the maps from their shared-memory files, never through the job's threads;
 * src/telemetry/prom_maps.c turns the entries into families.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "control/ctl_client.h"
#include "ncclbpf/runtime.h"
#include "telemetry/prom_maps.h"

/* The ".ncclbpf.export" section of path, malloc'ed (NUL-separated strings); NULL if none. */
static char *export_section(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *out = NULL;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	Elf *e;

	*len = 0;
	if (fd < 0)
		return NULL;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_getshdrstrndx(e, &shstrndx))
		goto out;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".ncclbpf.export"))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || !d->d_size || d->d_size > (1u << 20))
			break;
		out = malloc(d->d_size + 1);
		if (out) {
			memcpy(out, d->d_buf, d->d_size);
			out[d->d_size] = 0;
			*len = d->d_size;
		}
		break;
	}
out:
	if (e)
		elf_end(e);
	close(fd);
	return out;
}

struct proc_maps {
	const struct nbpf_ctl_msg *maps;
	ino_t seen[64];
	int n_seen;
};

static const char *map_path(const struct nbpf_ctl_msg *m, const char *name)
{
	for (uint32_t i = 0; i < m->n_recs; i++)
		if (!strcmp(m->recs[i].kind, "map") &&
		    !strcmp(nbpf_ctl_rec_get(&m->recs[i], "name") ?: "", name))
			return nbpf_ctl_rec_get(&m->recs[i], "path");
	return NULL;
}

/* Every entry of one declared map into set; per-thread slots are added up. */
static int export_map(struct nbpf_export_set *set, const struct nbpf_export_spec *sp,
		      const char *path, const char *obj)
{
	struct ncclbpf_map *map = NULL;
	enum ncclbpf_map_type t;
	uint32_t ks, vs, slots;
	uint8_t *key = NULL, *next = NULL, *val = NULL, *sum = NULL;
	const uint8_t *prev = NULL;
	char why[256];
	int err;

	if ((err = ncclbpf_map__open_path(path, false, &map)))
		return cli_err(err, "export: %s: map %s: %s", obj, sp->map, ncclbpf_errmsg());
	t = ncclbpf_map__type(map);
	ks = ncclbpf_map__key_size(map);
	vs = ncclbpf_map__value_size(map);
	slots = t == NCCLBPF_MAP_PERCPU_ARRAY || t == NCCLBPF_MAP_PERCPU_HASH ? NCCLBPF_NR_SLOTS : 1;
	if (ks != sp->key_size) {
		err = cli_err(-EINVAL, "export: %s: map %s: key is %u bytes, the declared key %u",
			      obj, sp->map, ks, sp->key_size);
		goto out;
	}
	if (t == NCCLBPF_MAP_RINGBUF || nbpf_export_value_check(sp, vs, why, sizeof(why))) {
		err = cli_err(-EINVAL, "export: %s: %s", obj,
			      t == NCCLBPF_MAP_RINGBUF ? "a ring buffer cannot be exported" : why);
		goto out;
	}
	if (nbpf_export_declare(set, sp, vs) == -EEXIST) {
		err = cli_err(-EEXIST, "export: %s: %s is declared twice with different types, labels or buckets",
			      obj, sp->name);
		goto out;
	}
	key = calloc(1, ks);
	next = calloc(1, ks);
	val = calloc(slots, vs);
	sum = calloc(1, vs);
	if (!key || !next || !val || !sum) {
		err = -ENOMEM;
		goto out;
	}
	while (!(err = ncclbpf_map__next_key(map, prev, next))) {
		memcpy(key, next, ks);
		prev = key;
		if (ncclbpf_map__lookup(map, key, val))
			continue; /* deleted meanwhile */
		/* Slots add field by field: every exported value is __u32 or __u64 words. */
		memset(sum, 0, vs);
		for (uint32_t s = 0; s < slots; s++)
			for (uint32_t w = 0; w < vs; w += (vs == 4 ? 4 : 8)) {
				uint64_t a = 0, b = 0;

				memcpy(&a, sum + w, vs == 4 ? 4 : 8);
				memcpy(&b, val + (size_t)s * vs + w, vs == 4 ? 4 : 8);
				a += b;
				memcpy(sum + w, &a, vs == 4 ? 4 : 8);
			}
		if ((err = nbpf_export_add(set, sp, key, sum, vs)) == -EEXIST) {
			err = cli_err(err, "export: %s: %s is declared twice with different types, labels or buckets",
				      obj, sp->name);
			goto out;
		}
	}
	err = err == -ENOENT ? 0 : err;
out:
	free(key);
	free(next);
	free(val);
	free(sum);
	ncclbpf_map__put(map);
	return err;
}

/* The declarations of one object, against the maps of its process. */
static void export_object(struct nbpf_export_set *set, const char *obj, struct proc_maps *pm)
{
	size_t len;
	char *sec = export_section(obj, &len);

	for (size_t off = 0; sec && off < len; off += strlen(sec + off) + 1) {
		struct nbpf_export_spec sp;
		const char *path;
		struct stat st;
		char why[256];
		bool dup = false;

		if (!sec[off])
			continue;
		if (nbpf_export_spec_parse(sec + off, &sp, why, sizeof(why))) {
			cli_err(0, "export: %s: %s", obj, why);
			continue;
		}
		path = map_path(pm->maps, sp.map);
		if (!path || stat(path, &st)) {
			cli_err(0, "export: %s: the process has no map %s", obj, sp.map);
			continue;
		}
		/* A map two objects share is exported once. */
		for (int i = 0; i < pm->n_seen; i++)
			dup |= pm->seen[i] == st.st_ino;
		if (dup)
			continue;
		if (pm->n_seen < 64)
			pm->seen[pm->n_seen++] = st.st_ino;
		export_map(set, &sp, path, obj);
	}
	free(sec);
}

static const char *current_spec(const struct nbpf_ctl_msg *m)
{
	for (uint32_t i = 0; i < m->n_recs; i++)
		if (!strcmp(m->recs[i].kind, "image") &&
		    !strcmp(nbpf_ctl_rec_get(&m->recs[i], "state") ?: "", "current"))
			return nbpf_ctl_rec_get(&m->recs[i], "spec");
	return NULL;
}

void cli_export_policy_maps(struct nbpf_export_set *set, const int *pids, int n_pids)
{
	int *all = NULL;

	if (!n_pids) {
		n_pids = nbpf_ctl_list_pids(&all);
		pids = all;
	}
	for (int i = 0; i < n_pids; i++) {
		struct nbpf_ctl_msg ps = { 0 }, maps = { 0 };
		const char *em, *spec;

		if (!nbpf_ctl_call_pid(pids[i], NBPF_CTL_PS, NULL, &ps, &em) &&
		    !nbpf_ctl_call_pid(pids[i], NBPF_CTL_MAPS, NULL, &maps, &em) &&
		    (spec = current_spec(&ps))) {
			struct proc_maps pm = { .maps = &maps };
			char *list = strdup(spec), *save = NULL;

			for (char *p = list ? strtok_r(list, ":", &save) : NULL; p;
			     p = strtok_r(NULL, ":", &save))
				export_object(set, p, &pm);
			free(list);
		}
		nbpf_ctl_msg_free(&ps);
		nbpf_ctl_msg_free(&maps);
	}
	free(all);
}
