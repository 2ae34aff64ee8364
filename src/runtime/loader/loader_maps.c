/*
 * loader_maps.c - the maps an object defines: BTF-defined maps in .maps,
 * legacy struct bpf_map_def entries in "maps", and global data sections
 * (.data*, .rodata*, .bss*) as single-element array maps; then their
 * creation through ncclbpf_map__create (or the caller's map_reuse hook).
 *
 * BTF comes from libbpf's parser (btf__new).  It does not promise that the
 * type ids a struct member names exist, so every lookup is NULL-checked and
 * every walk through modifiers is bounded.
 */
#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "loader.h"
#include "maps/map.h"

/* ---- libbpf diagnostics -------------------------------------------------- */

/*
 * libbpf prints parse warnings to stderr by default.  We keep the last one
 * (per thread) to put into our own error message instead: a rejected policy
 * must be reported once, through the host's logger, not as stray output.
 */
static _Thread_local char libbpf_msg[256];
static pthread_once_t print_once = PTHREAD_ONCE_INIT;

static int libbpf_capture(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	size_t n;

	/* libbpf reports BTF parse errors at debug level too; only the last line is kept. */
	(void)level;
	vsnprintf(libbpf_msg, sizeof(libbpf_msg), fmt, ap);
	n = strlen(libbpf_msg);
	while (n && (libbpf_msg[n - 1] == '\n' || libbpf_msg[n - 1] == ' '))
		libbpf_msg[--n] = '\0';
	return 0;
}

static void print_init(void)
{
	libbpf_set_print(libbpf_capture);
}

int nbpf_ld_btf_open(struct nbpf_loader *ld)
{
	const struct nbpf_sec *s;
	struct btf *btf;

	if (!ld->btf_idx) {
		if (ld->maps_idx)
			return ld_err(ld, -EINVAL, "section .maps needs BTF, but the object has no .BTF section (compile with -g)");
		return 0;
	}
	s = &ld->secs[ld->btf_idx];
	if (!s->data || s->size > UINT32_MAX)
		return ld_err(ld, -EINVAL, "section .BTF is corrupt: empty or too large");
	pthread_once(&print_once, print_init);
	libbpf_msg[0] = '\0';
	btf = btf__new(s->data, (uint32_t)s->size);
	if (!btf || libbpf_get_error(btf))
		return ld_err(ld, -EINVAL, "section .BTF is corrupt%s%s",
			      libbpf_msg[0] ? ": " : "", libbpf_msg);
	ld->btf = btf;
	return 0;
}

/* ---- BTF-defined maps ------------------------------------------------------ */

static const struct btf_type *skip_mods(const struct btf *btf, uint32_t id, uint32_t *res_id)
{
	const struct btf_type *t = btf__type_by_id(btf, id);

	/* Bounded: a typedef cycle in hostile BTF must not hang us. */
	for (int depth = 0; t && depth < 32; depth++) {
		if (!btf_is_mod(t) && !btf_is_typedef(t) && !btf_is_type_tag(t))
			break;
		id = t->type;
		t = btf__type_by_id(btf, id);
	}
	if (t && (btf_is_mod(t) || btf_is_typedef(t)))
		t = NULL;
	if (res_id)
		*res_id = id;
	return t;
}

/* __uint(name, val) is `int (*name)[val]`: a pointer to an array of val elements. */
static int btf_uint_attr(struct nbpf_loader *ld, const char *map, const char *attr,
			 uint32_t type_id, uint32_t *val)
{
	const struct btf_type *t = skip_mods(ld->btf, type_id, NULL);
	const struct btf_type *arr;

	if (!t || !btf_is_ptr(t))
		return ld_err(ld, -EINVAL, "map %s: attribute %s is not __uint() (a pointer to an array)",
			      map, attr);
	arr = skip_mods(ld->btf, t->type, NULL);
	if (!arr || !btf_is_array(arr))
		return ld_err(ld, -EINVAL, "map %s: attribute %s is not __uint() (a pointer to an array)",
			      map, attr);
	*val = btf_array(arr)->nelems;
	return 0;
}

/* __type(name, T) is `T *name`: the size of T. */
static int btf_type_attr(struct nbpf_loader *ld, const char *map, const char *attr,
			 uint32_t type_id, uint32_t *size)
{
	const struct btf_type *t = skip_mods(ld->btf, type_id, NULL);
	long long sz;

	if (!t || !btf_is_ptr(t))
		return ld_err(ld, -EINVAL, "map %s: attribute %s is not __type() (a pointer to a type)",
			      map, attr);
	sz = btf__resolve_size(ld->btf, t->type);
	if (sz < 0 || sz > UINT32_MAX)
		return ld_err(ld, -EINVAL, "map %s: cannot size the %s type (BTF type %u)",
			      map, attr, t->type);
	*size = (uint32_t)sz;
	return 0;
}

static int set_size(struct nbpf_loader *ld, const char *map, const char *what, uint32_t *slot,
		    bool *have, uint32_t v)
{
	if (*have && *slot != v)
		return ld_err(ld, -EINVAL, "map %s: %s given twice with different sizes (%u and %u)",
			      map, what, *slot, v);
	*slot = v;
	*have = true;
	return 0;
}

static int parse_btf_map(struct nbpf_loader *ld, const char *name, uint32_t type_id,
			 struct nbpf_mapdef *m)
{
	const struct btf_type *def = skip_mods(ld->btf, type_id, NULL);
	const struct btf_member *mb;
	bool have_key = false, have_value = false;
	int err;

	if (!def || !btf_is_struct(def))
		return ld_err(ld, -EINVAL, "map %s: BTF definition is not a struct", name);
	mb = btf_members(def);
	for (uint32_t i = 0; i < btf_vlen(def); i++, mb++) {
		const char *attr = btf__name_by_offset(ld->btf, mb->name_off);
		uint32_t v = 0;

		if (!attr || !attr[0])
			return ld_err(ld, -EINVAL, "map %s: member %u has no name", name, i);
		if (!strcmp(attr, "key") || !strcmp(attr, "value")) {
			err = btf_type_attr(ld, name, attr, mb->type, &v);
			if (!err)
				err = attr[0] == 'k' ?
				      set_size(ld, name, "key size", &m->key_size, &have_key, v) :
				      set_size(ld, name, "value size", &m->value_size, &have_value, v);
		} else if (!strcmp(attr, "values")) {
			return ld_err(ld, -ENOTSUP, "map %s: map-in-map and program arrays (values) are not supported",
				      name);
		} else if (!strcmp(attr, "type") || !strcmp(attr, "max_entries") ||
			   !strcmp(attr, "map_flags") || !strcmp(attr, "key_size") ||
			   !strcmp(attr, "value_size") || !strcmp(attr, "numa_node") ||
			   !strcmp(attr, "map_extra") || !strcmp(attr, "pinning")) {
			err = btf_uint_attr(ld, name, attr, mb->type, &v);
			if (err)
				return err;
			if (!strcmp(attr, "type"))
				m->type = v;
			else if (!strcmp(attr, "max_entries"))
				m->max_entries = v;
			else if (!strcmp(attr, "map_flags"))
				m->map_flags = v;
			else if (!strcmp(attr, "key_size"))
				err = set_size(ld, name, "key size", &m->key_size, &have_key, v);
			else if (!strcmp(attr, "value_size"))
				err = set_size(ld, name, "value size", &m->value_size, &have_value, v);
			/* numa_node, map_extra and pinning have no meaning here: maps are shared by name. */
		} else {
			return ld_err(ld, -EINVAL, "map %s: unknown attribute '%s'", name, attr);
		}
		if (err)
			return err;
	}
	if (!m->type)
		return ld_err(ld, -EINVAL, "map %s: no map type", name);
	return 0;
}

/* The symbol naming a map object in section sec, by name. */
static const struct nbpf_sym *find_obj_sym(const struct nbpf_loader *ld, uint32_t sec,
					    const char *name)
{
	for (uint32_t i = 0; i < ld->n_syms; i++) {
		const struct nbpf_sym *s = &ld->syms[i];

		if (s->shndx == sec && s->type == STT_OBJECT && !strcmp(s->name, name))
			return s;
	}
	return NULL;
}

static int add_map(struct nbpf_loader *ld, const char *name, struct nbpf_mapdef **out)
{
	struct nbpf_mapdef *m;

	if (ld->n_maps >= NBPF_LOADER_MAX_MAPS)
		return ld_err(ld, -E2BIG, "more than %u maps", NBPF_LOADER_MAX_MAPS);
	if (strlen(name) >= sizeof(m->name))
		return ld_err(ld, -ENAMETOOLONG, "map name '%.32s...' is longer than %zu characters",
			      name, sizeof(m->name) - 1);
	for (uint32_t i = 0; i < ld->n_maps; i++)
		if (!strcmp(ld->maps[i].name, name))
			return ld_err(ld, -EINVAL, "two maps named %s", name);
	if (ld->n_maps == ld->maps_cap) {
		/* Grows: a pointer from here is only valid until the next add. */
		uint32_t cap = ld->maps_cap ? ld->maps_cap * 2 : 8;
		struct nbpf_mapdef *n = realloc(ld->maps, cap * sizeof(*n));

		if (!n)
			return ld_err(ld, -ENOMEM, "out of memory");
		ld->maps = n;
		ld->maps_cap = cap;
	}
	m = &ld->maps[ld->n_maps++];
	memset(m, 0, sizeof(*m));
	strcpy(m->name, name);
	*out = m;
	return 0;
}

static int collect_btf_maps(struct nbpf_loader *ld)
{
	const struct nbpf_sec *sec = &ld->secs[ld->maps_idx];
	const struct btf_var_secinfo *vi;
	const struct btf_type *ds;
	int32_t ds_id;
	int err;

	ds_id = btf__find_by_name_kind(ld->btf, ".maps", BTF_KIND_DATASEC);
	ds = ds_id > 0 ? btf__type_by_id(ld->btf, ds_id) : NULL;
	if (!ds)
		return ld_err(ld, -EINVAL, "section .maps has no BTF description (DATASEC .maps missing from .BTF)");
	if (btf_vlen(ds) > NBPF_LOADER_MAX_MAPS)
		return ld_err(ld, -E2BIG, "more than %u maps", NBPF_LOADER_MAX_MAPS);
	vi = btf_var_secinfos(ds);
	for (uint32_t i = 0; i < btf_vlen(ds); i++, vi++) {
		const struct btf_type *var = btf__type_by_id(ld->btf, vi->type);
		const struct nbpf_sym *sym;
		struct nbpf_mapdef *m;
		const char *name;

		if (!var || !btf_is_var(var))
			return ld_err(ld, -EINVAL, "section .maps: BTF entry %u is not a variable", i);
		name = btf__name_by_offset(ld->btf, var->name_off);
		if (!name || !name[0])
			return ld_err(ld, -EINVAL, "section .maps: BTF variable %u has no name", i);
		sym = find_obj_sym(ld, ld->maps_idx, name);
		if (!sym)
			return ld_err(ld, -EINVAL, "map %s: no symbol in section .maps", name);
		if (sym->value > sec->size || sym->size > sec->size - sym->value)
			return ld_err(ld, -EINVAL, "map %s: symbol lies outside section .maps", name);
		err = add_map(ld, name, &m);
		if (err)
			return err;
		m->sec = ld->maps_idx;
		m->off = sym->value;
		m->sz = sym->size;
		err = parse_btf_map(ld, name, var->type, m);
		if (err)
			return err;
	}
	return 0;
}

/* ---- legacy maps ------------------------------------------------------------ */

/* struct bpf_map_def as libbpf before 1.0 defined it; extra trailing bytes must be zero. */
struct legacy_map_def {
	uint32_t type, key_size, value_size, max_entries, map_flags;
};

static int collect_legacy_maps(struct nbpf_loader *ld)
{
	const struct nbpf_sec *sec = &ld->secs[ld->legacy_maps_idx];
	int err;

	for (uint32_t i = 0; i < ld->n_syms; i++) {
		const struct nbpf_sym *s = &ld->syms[i];
		struct legacy_map_def def;
		struct nbpf_mapdef *m;

		if (s->shndx != ld->legacy_maps_idx || s->type != STT_OBJECT)
			continue;
		if (s->size < sizeof(def) || s->value > sec->size || s->size > sec->size - s->value)
			return ld_err(ld, -EINVAL, "legacy map %s: definition at offset %llu size %llu does not fit section maps (%llu bytes, need %zu per map)",
				      s->name, (unsigned long long)s->value, (unsigned long long)s->size,
				      (unsigned long long)sec->size, sizeof(def));
		if (!sec->data)
			return ld_err(ld, -EINVAL, "legacy map %s: section maps has no contents", s->name);
		memcpy(&def, sec->data + s->value, sizeof(def));
		for (uint64_t b = sizeof(def); b < s->size; b++)
			if (sec->data[s->value + b])
				return ld_err(ld, -EINVAL, "legacy map %s: unsupported non-zero fields after map_flags",
					      s->name);
		err = add_map(ld, s->name, &m);
		if (err)
			return err;
		m->sec = ld->legacy_maps_idx;
		m->off = s->value;
		m->sz = s->size;
		m->type = def.type;
		m->key_size = def.key_size;
		m->value_size = def.value_size;
		m->max_entries = def.max_entries;
		m->map_flags = def.map_flags;
	}
	return 0;
}

/* ---- all maps ---------------------------------------------------------------- */

/*
 * Map indices: BTF maps in DATASEC order, legacy maps in symbol order, then
 * global data sections in section order (libbpf's order).
 */
int nbpf_ld_collect_maps(struct nbpf_loader *ld)
{
	int err;

	if (ld->maps_idx) {
		err = collect_btf_maps(ld);
		if (err)
			return err;
	}
	if (ld->legacy_maps_idx) {
		err = collect_legacy_maps(ld);
		if (err)
			return err;
	}
	for (uint32_t i = 1; i < ld->n_secs; i++) {
		struct nbpf_sec *s = &ld->secs[i];
		struct nbpf_mapdef *m;

		if (s->kind != NBPF_SEC_DATA && s->kind != NBPF_SEC_RODATA && s->kind != NBPF_SEC_BSS)
			continue;
		if (!s->size)
			continue;
		if (s->size > NBPF_LOADER_MAX_DATA)
			return ld_err(ld, -E2BIG, "section %s: %llu bytes of global data (limit %u)",
				      s->name, (unsigned long long)s->size, NBPF_LOADER_MAX_DATA);
		err = add_map(ld, s->name, &m);
		if (err)
			return err;
		s->map_idx = (int)(m - ld->maps);
		m->sec = i;
		m->sz = s->size;
		m->type = NCCLBPF_MAP_ARRAY;
		m->key_size = sizeof(uint32_t);
		m->value_size = (uint32_t)s->size;
		m->max_entries = 1;
		m->readonly_prog = s->kind == NBPF_SEC_RODATA;
		m->global_data = true;
		m->init = s->data; /* NULL for NOBITS .bss: the new map is already zero */
		m->init_size = m->init ? s->size : 0;
	}
	return 0;
}

/*
 * The map a relocation's symbol names: a map definition (is_value false)
 * or a place in global data (is_value true, *value_off = offset in the
 * section).  Returns the map index or -ENOENT.
 */
int nbpf_ld_map_by_sym(const struct nbpf_loader *ld, uint32_t sym_idx, uint64_t *value_off,
		       bool *is_value)
{
	const struct nbpf_sym *s = &ld->syms[sym_idx];

	if (!s->shndx || s->shndx >= ld->n_secs)
		return -ENOENT;
	if (s->shndx == ld->maps_idx || s->shndx == ld->legacy_maps_idx) {
		for (uint32_t i = 0; i < ld->n_maps; i++) {
			if (ld->maps[i].sec == s->shndx && ld->maps[i].off == s->value &&
			    s->type != STT_SECTION) {
				*is_value = false;
				*value_off = 0;
				return (int)i;
			}
		}
		return -ENOENT;
	}
	if (ld->secs[s->shndx].map_idx >= 0) {
		*is_value = true;
		*value_off = s->value;
		return ld->secs[s->shndx].map_idx;
	}
	return -ENOENT;
}

/* ---- creation ----------------------------------------------------------------- */

#define OPT(opts, field) \
	((opts) && (opts)->sz >= offsetof(__typeof__(*(opts)), field) + sizeof((opts)->field) ? \
	 (opts)->field : 0)

/*
 * Creates (or, through opts->map_reuse, shares) every map in index order.
 * obj->n_maps grows as maps are made, so a failure midway leaves obj
 * holding exactly the references it must drop.  Global data is never
 * offered for reuse: it is the object's own state (its initial values and
 * constants belong to this version of the program), not a channel between
 * objects.
 */
int nbpf_ld_create_maps(struct nbpf_loader *ld, struct ncclbpf_object *obj)
{
	struct ncclbpf_map *(*reuse)(void *, const char *, uint32_t, uint32_t, uint32_t, uint32_t);
	void *reuse_user;
	const char *dir;

	reuse = OPT(ld->opts, map_reuse);
	reuse_user = OPT(ld->opts, map_reuse_user);
	dir = OPT(ld->opts, map_dir);
	if (!ld->n_maps)
		return 0;
	obj->maps = calloc(ld->n_maps, sizeof(*obj->maps));
	if (!obj->maps)
		return ld_err(ld, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < ld->n_maps; i++) {
		const struct nbpf_mapdef *d = &ld->maps[i];
		struct ncclbpf_map *map = NULL;
		int err;

		if (reuse && !d->global_data) {
			map = reuse(reuse_user, d->name, d->type, d->key_size, d->value_size,
				    d->max_entries);
			if (map && (map->type != (enum ncclbpf_map_type)d->type ||
				    map->key_size != d->key_size || map->value_size != d->value_size ||
				    map->max_entries != d->max_entries)) {
				ncclbpf_map__put(map);
				return ld_err(ld, -EINVAL, "map %s: the shared map offered for reuse has a different shape",
					      d->name);
			}
		}
		if (!map) {
			struct ncclbpf_map_create_opts mo = {
				.sz = sizeof(mo),
				.map_flags = d->map_flags,
				.dir = dir,
				.readonly_prog = d->readonly_prog,
			};
			char why[256];

			err = ncclbpf_map__create(d->name, (enum ncclbpf_map_type)d->type, d->key_size,
						  d->value_size, d->max_entries, &mo, &map);
			if (err) {
				snprintf(why, sizeof(why), "%s", ncclbpf_errmsg());
				return ld_err(ld, err, "map %s (type %u, key %u, value %u, max_entries %u): %s",
					      d->name, d->type, d->key_size, d->value_size,
					      d->max_entries, why);
			}
			if (d->init_size) {
				void *dst = nbpf_map_value_addr(map, 0);

				if (!dst) {
					ncclbpf_map__put(map);
					return ld_err(ld, -EINVAL, "map %s: cannot address the global data value",
						      d->name);
				}
				memcpy(dst, d->init, d->init_size);
			}
		}
		obj->maps[obj->n_maps++] = map;
	}
	return 0;
}
