// SPDX-License-Identifier: MIT
/*
 * btf_json.c - map keys and values as JSON through the map's BTF, the way
 * `bpftool map dump` formats them: struct fields by name, integers as
 * exact numbers (never through a double), char arrays as strings, other
 * arrays as lists.  The BTF comes from the object file that declares the
 * map (its ".maps" variable's key and value pointer types).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>

#include "cli.h"

static int emit(FILE *f, const struct btf *btf, __u32 id, const uint8_t *data, size_t size,
		int depth);

static uint64_t load_le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n && i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void hex_str(FILE *f, const uint8_t *p, size_t n)
{
	fputs("\"0x", f);
	for (size_t i = n; i-- > 0;)
		fprintf(f, "%02x", p[i]);
	fputc('"', f);
}

static void int_value(FILE *f, uint64_t v, unsigned int bits, bool is_signed, bool is_bool)
{
	if (bits < 64)
		v &= (1ull << bits) - 1;
	if (is_bool) {
		fputs(v ? "true" : "false", f);
	} else if (is_signed) {
		int64_t s = bits < 64 && (v >> (bits - 1)) & 1 ? (int64_t)(v | ~((1ull << bits) - 1))
							     : (int64_t)v;
		fprintf(f, "%" PRId64, s);
	} else {
		fprintf(f, "%" PRIu64, v);
	}
}

static bool is_char(const struct btf *btf, __u32 id)
{
	const struct btf_type *t = btf__type_by_id(btf, btf__resolve_type(btf, id));

	return t && btf_is_int(t) && t->size == 1 &&
	       ((btf_int_encoding(t) & BTF_INT_CHAR) ||
		!strcmp(btf__name_by_offset(btf, t->name_off) ?: "", "char"));
}

static int emit_array(FILE *f, const struct btf *btf, const struct btf_type *t,
		      const uint8_t *data, size_t size, int depth)
{
	const struct btf_array *a = btf_array(t);
	__s64 esz = btf__resolve_size(btf, a->type);

	if (esz <= 0 || (size_t)esz * a->nelems > size)
		return -EINVAL;
	if (is_char(btf, a->type)) {
		char buf[256];
		size_t n = a->nelems < sizeof(buf) - 1 ? a->nelems : sizeof(buf) - 1;

		memcpy(buf, data, n);
		buf[n] = 0;
		cli_json_str(f, buf);
		return 0;
	}
	fputc('[', f);
	for (__u32 i = 0; i < a->nelems; i++) {
		int err;

		if (i)
			fputc(',', f);
		err = emit(f, btf, a->type, data + (size_t)esz * i, (size_t)esz, depth + 1);
		if (err)
			return err;
	}
	fputc(']', f);
	return 0;
}

/* Members of a struct or union; anonymous struct/union members are inlined, as in C. */
static int emit_members(FILE *f, const struct btf *btf, const struct btf_type *t,
			const uint8_t *data, size_t size, int depth, bool *first)
{
	const struct btf_member *m = btf_members(t);

	for (__u16 i = 0; i < btf_vlen(t); i++, m++) {
		const char *name = btf__name_by_offset(btf, m->name_off) ?: "";
		__u32 bit_off = btf_member_bit_offset(t, i), bits = btf_member_bitfield_size(t, i);
		__u32 rid = btf__resolve_type(btf, m->type);
		const struct btf_type *mt = btf__type_by_id(btf, rid);
		int err;

		if (!mt)
			return -EINVAL;
		if (!*name && (btf_is_struct(mt) || btf_is_union(mt))) {
			if (bit_off % 8 || bit_off / 8 + mt->size > size)
				return -EINVAL;
			err = emit_members(f, btf, mt, data + bit_off / 8, mt->size, depth + 1, first);
			if (err)
				return err;
			continue;
		}
		if (!*first)
			fputc(',', f);
		*first = false;
		cli_json_str(f, name);
		fputc(':', f);
		if (bits) {
			/* A bitfield: its bits, little-endian, from the containing bytes. */
			size_t lo = bit_off / 8, hi = (bit_off + bits + 7) / 8;
			uint64_t v;

			if (hi > size || hi - lo > 8)
				return -EINVAL;
			v = load_le(data + lo, hi - lo) >> (bit_off % 8);
			int_value(f, v, bits, btf_is_int(mt) && (btf_int_encoding(mt) & BTF_INT_SIGNED),
				  false);
			continue;
		}
		if (bit_off % 8 || bit_off / 8 > size)
			return -EINVAL;
		err = emit(f, btf, m->type, data + bit_off / 8, size - bit_off / 8, depth + 1);
		if (err)
			return err;
	}
	return 0;
}

static int emit(FILE *f, const struct btf *btf, __u32 id, const uint8_t *data, size_t size,
		int depth)
{
	__u32 rid = btf__resolve_type(btf, id);
	const struct btf_type *t = btf__type_by_id(btf, rid);
	__s64 tsz = btf__resolve_size(btf, rid);
	bool first = true;

	if (!t || depth > 16 || tsz < 0 || (size_t)tsz > size)
		return -EINVAL;
	if (btf_is_int(t)) {
		__u8 enc = btf_int_encoding(t);

		if (t->size > 8 || btf_int_offset(t)) {
			hex_str(f, data, t->size);
			return 0;
		}
		int_value(f, load_le(data, t->size), btf_int_bits(t), enc & BTF_INT_SIGNED,
			  enc & BTF_INT_BOOL);
		return 0;
	}
	if (btf_is_enum(t) || btf_is_enum64(t)) {
		int_value(f, load_le(data, t->size), t->size * 8, btf_kflag(t), false);
		return 0;
	}
	if (btf_is_array(t))
		return emit_array(f, btf, t, data, size, depth);
	if (btf_is_struct(t) || btf_is_union(t)) {
		int err;

		fputc('{', f);
		err = emit_members(f, btf, t, data, (size_t)tsz, depth, &first);
		fputc('}', f);
		return err;
	}
	/* Pointers, floats and anything else: the bytes, so nothing is rounded. */
	hex_str(f, data, (size_t)tsz);
	return 0;
}

int cli_btf_json(FILE *f, const struct btf *btf, __u32 id, const void *data, size_t size)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m;
	int err;

	/* Into a buffer first: a type that fails half-way prints nothing. */
	m = open_memstream(&buf, &len);
	if (!m)
		return -ENOMEM;
	err = emit(m, btf, id, data, size, 0);
	if (fclose(m))
		err = err ?: -ENOMEM;
	if (!err)
		fwrite(buf, 1, len, f);
	free(buf);
	return err;
}

int cli_btf_map_types(const struct btf *btf, const char *map, __u32 *key_id, __u32 *val_id)
{
	__s32 sec = btf__find_by_name_kind(btf, ".maps", BTF_KIND_DATASEC);
	const struct btf_type *ds;
	const struct btf_var_secinfo *vs;

	*key_id = *val_id = 0;
	if (sec < 0 || !(ds = btf__type_by_id(btf, (__u32)sec)))
		return -ENOENT;
	vs = btf_var_secinfos(ds);
	for (__u16 i = 0; i < btf_vlen(ds); i++, vs++) {
		const struct btf_type *var = btf__type_by_id(btf, vs->type), *def;
		const struct btf_member *m;

		if (!var || strcmp(btf__name_by_offset(btf, var->name_off) ?: "", map))
			continue;
		def = btf__type_by_id(btf, btf__resolve_type(btf, var->type));
		if (!def || !btf_is_struct(def))
			return -ENOENT;
		m = btf_members(def);
		for (__u16 k = 0; k < btf_vlen(def); k++, m++) {
			const char *mn = btf__name_by_offset(btf, m->name_off) ?: "";
			const struct btf_type *pt = btf__type_by_id(btf, m->type);

			if (!pt || !btf_is_ptr(pt))
				continue;
			if (!strcmp(mn, "key"))
				*key_id = pt->type;
			else if (!strcmp(mn, "value"))
				*val_id = pt->type;
		}
		return *key_id || *val_id ? 0 : -ENOENT;
	}
	return -ENOENT;
}
