// SPDX-License-Identifier: MIT
/*
 * prom_maps.c - a policy's declared maps as Prometheus families (see
 * prom_maps.h; the declaration syntax is documented in policy.h and
 * docs/policy-guide.md).
 */
#include "prom_maps.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"

static int bad(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (errlen)
		vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool name_ok(const char *s, bool metric)
{
	if (!*s || (*s >= '0' && *s <= '9') || (!metric && s[0] == '_' && s[1] == '_'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_' || (metric && *s == ':')))
			return false;
	return true;
}

static const struct { const char *name; enum nbpf_export_kind kind; uint32_t size; } kinds[] = {
	{ "u8", NBPF_EXPORT_U8, 1 },     { "u16", NBPF_EXPORT_U16, 2 },
	{ "u32", NBPF_EXPORT_U32, 4 },   { "u64", NBPF_EXPORT_U64, 8 },
	{ "hex", NBPF_EXPORT_HEX, 8 },   { "coll", NBPF_EXPORT_COLL, 4 },
	{ "algo", NBPF_EXPORT_ALGO, 4 }, { "proto", NBPF_EXPORT_PROTO, 4 },
};

/* "label:kind,label:kind": offsets follow C's natural alignment. */
static int parse_key(char *v, struct nbpf_export_spec *sp, char *err, size_t errlen)
{
	uint32_t off = 0, align = 1;
	char *save = NULL;

	for (char *f = strtok_r(v, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
		struct nbpf_export_field *fd = &sp->fields[sp->n_fields];
		char *colon = strchr(f, ':');
		size_t k;

		if (sp->n_fields >= NBPF_EXPORT_MAX_FIELDS)
			return bad(err, errlen, "more than %d key fields", NBPF_EXPORT_MAX_FIELDS);
		if (!colon)
			return bad(err, errlen, "key field '%s': want label:kind", f);
		*colon = 0;
		for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
			if (!strcmp(colon + 1, kinds[k].name))
				break;
		if (k == sizeof(kinds) / sizeof(kinds[0]))
			return bad(err, errlen, "key field '%s': unknown kind '%s' (u8, u16, u32, u64, hex, coll, algo, proto)",
				   f, colon + 1);
		if (strcmp(f, "_") && (!name_ok(f, false) || !strcmp(f, "le") || strlen(f) >= sizeof(fd->label)))
			return bad(err, errlen, "key field '%s': not a label name", f);
		snprintf(fd->label, sizeof(fd->label), "%s", f);
		fd->kind = kinds[k].kind;
		fd->size = kinds[k].size;
		off = (off + fd->size - 1) / fd->size * fd->size;
		fd->off = off;
		off += fd->size;
		if (fd->size > align)
			align = fd->size;
		sp->n_fields++;
	}
	if (!sp->n_fields)
		return bad(err, errlen, "key: no fields");
	sp->key_size = (off + align - 1) / align * align;
	return 0;
}

int nbpf_export_spec_parse(const char *text, struct nbpf_export_spec *sp, char *err,
			   size_t errlen)
{
	char buf[1024], *save = NULL;
	bool have_type = false;
	int ret;

	memset(sp, 0, sizeof(*sp));
	if (strlen(text) >= sizeof(buf))
		return bad(err, errlen, "declaration longer than %zu bytes", sizeof(buf) - 1);
	strcpy(buf, text);
	for (char *kv = strtok_r(buf, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
		char *v = strchr(kv, '=');

		if (!v)
			return bad(err, errlen, "'%s': want key=value", kv);
		*v++ = 0;
		if (!strcmp(kv, "map")) {
			snprintf(sp->map, sizeof(sp->map), "%s", v);
		} else if (!strcmp(kv, "name")) {
			if (!name_ok(v, true) || strlen(v) >= sizeof(sp->name))
				return bad(err, errlen, "name '%s': not a metric name", v);
			strcpy(sp->name, v);
		} else if (!strcmp(kv, "help")) {
			snprintf(sp->help, sizeof(sp->help), "%s", v);
		} else if (!strcmp(kv, "type")) {
			have_type = true;
			if (!strcmp(v, "counter"))
				sp->type = NBPF_EXPORT_COUNTER;
			else if (!strcmp(v, "gauge"))
				sp->type = NBPF_EXPORT_GAUGE;
			else if (!strcmp(v, "histogram"))
				sp->type = NBPF_EXPORT_HISTOGRAM;
			else
				return bad(err, errlen, "type '%s': counter, gauge or histogram", v);
		} else if (!strcmp(kv, "key")) {
			if ((ret = parse_key(v, sp, err, errlen)))
				return ret;
		} else {
			return bad(err, errlen, "unknown field '%s' (map, type, name, help, key)", kv);
		}
	}
	if (!sp->map[0] || !sp->name[0] || !have_type || !sp->n_fields)
		return bad(err, errlen, "map, type, name and key are required");
	/* Prometheus's own naming rules, which promtool enforces. */
	if (sp->type == NBPF_EXPORT_COUNTER &&
	    (strlen(sp->name) < 7 || strcmp(sp->name + strlen(sp->name) - 6, "_total")))
		return bad(err, errlen, "counter %s: the name must end in _total", sp->name);
	if (sp->type != NBPF_EXPORT_COUNTER && strlen(sp->name) > 6 &&
	    !strcmp(sp->name + strlen(sp->name) - 6, "_total"))
		return bad(err, errlen, "%s: only counters end in _total", sp->name);
	if (!sp->help[0])
		snprintf(sp->help, sizeof(sp->help), "Map %s of a policy.", sp->map);
	return 0;
}

int nbpf_export_value_check(const struct nbpf_export_spec *sp, uint32_t val_size, char *err,
			    size_t errlen)
{
	if (sp->type != NBPF_EXPORT_HISTOGRAM) {
		if (val_size != 4 && val_size != 8)
			return bad(err, errlen, "%s: a %s value is one __u32 or __u64, not %u bytes",
				   sp->map, sp->type == NBPF_EXPORT_GAUGE ? "gauge" : "counter", val_size);
		return 0;
	}
	if (val_size % 8 || val_size < 16 || val_size / 8 - 1 > NBPF_EXPORT_MAX_BUCKETS)
		return bad(err, errlen, "%s: a histogram value is __u64 sum then 1..%d __u64 buckets, not %u bytes",
			   sp->map, NBPF_EXPORT_MAX_BUCKETS, val_size);
	return 0;
}

static uint64_t field_u64(const uint8_t *key, const struct nbpf_export_field *fd)
{
	uint8_t b1;
	uint16_t b2;
	uint32_t b4;
	uint64_t b8;

	switch (fd->size) {
	case 1: memcpy(&b1, key + fd->off, 1); return b1;
	case 2: memcpy(&b2, key + fd->off, 2); return b2;
	case 4: memcpy(&b4, key + fd->off, 4); return b4;
	default: memcpy(&b8, key + fd->off, 8); return b8;
	}
}

static void render_labels(const struct nbpf_export_spec *sp, const uint8_t *key, char *out,
			  size_t n)
{
	size_t used = 0;

	out[0] = 0;
	for (uint32_t i = 0; i < sp->n_fields && used < n; i++) {
		const struct nbpf_export_field *fd = &sp->fields[i];
		uint64_t v = field_u64(key, fd);
		char val[32];

		if (!strcmp(fd->label, "_"))
			continue;
		switch (fd->kind) {
		case NBPF_EXPORT_HEX:
			snprintf(val, sizeof(val), "0x%016" PRIx64, v);
			break;
		case NBPF_EXPORT_COLL:
			snprintf(val, sizeof(val), "%s", nbpf_tele_coll_name(v < 64 ? (int)v : -1));
			break;
		case NBPF_EXPORT_ALGO:
			snprintf(val, sizeof(val), "%s", nbpf_tele_algo_name((int32_t)(uint32_t)v));
			break;
		case NBPF_EXPORT_PROTO:
			snprintf(val, sizeof(val), "%s", nbpf_tele_proto_name((int32_t)(uint32_t)v));
			break;
		default:
			snprintf(val, sizeof(val), "%" PRIu64, v);
		}
		used += (size_t)snprintf(out + used, n - used, "%s%s=\"%s\"", used ? "," : "",
					 fd->label, val);
	}
}

/* One family, one label set: the same label names in the same order. */
static bool same_labels(const struct nbpf_export_spec *a, const struct nbpf_export_spec *b)
{
	uint32_t i = 0, k = 0;

	for (;; i++, k++) {
		while (i < a->n_fields && !strcmp(a->fields[i].label, "_"))
			i++;
		while (k < b->n_fields && !strcmp(b->fields[k].label, "_"))
			k++;
		if (i == a->n_fields || k == b->n_fields)
			return i == a->n_fields && k == b->n_fields;
		if (strcmp(a->fields[i].label, b->fields[k].label))
			return false;
	}
}

static struct nbpf_export_family *family_for(struct nbpf_export_set *s,
					     const struct nbpf_export_spec *sp, uint32_t n_buckets)
{
	struct nbpf_export_family *f;

	for (size_t i = 0; i < s->n; i++) {
		f = &s->fams[i];
		if (strcmp(f->spec.name, sp->name))
			continue;
		if (f->spec.type != sp->type || f->n_buckets != n_buckets || !same_labels(&f->spec, sp))
			return NULL;
		return f;
	}
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 8;
		void *p = realloc(s->fams, nc * sizeof(*s->fams));

		if (!p)
			return NULL;
		s->fams = p;
		s->cap = nc;
	}
	f = &s->fams[s->n++];
	memset(f, 0, sizeof(*f));
	f->spec = *sp;
	f->n_buckets = n_buckets;
	return f;
}

int nbpf_export_declare(struct nbpf_export_set *s, const struct nbpf_export_spec *sp,
			uint32_t val_size)
{
	if (nbpf_export_value_check(sp, val_size, NULL, 0))
		return -EINVAL;
	return family_for(s, sp, sp->type == NBPF_EXPORT_HISTOGRAM ? val_size / 8 - 1 : 0)
		       ? 0 : -EEXIST;
}

int nbpf_export_add(struct nbpf_export_set *s, const struct nbpf_export_spec *sp,
		    const void *key, const void *val, uint32_t val_size)
{
	uint32_t nb = sp->type == NBPF_EXPORT_HISTOGRAM ? val_size / 8 - 1 : 0;
	struct nbpf_export_family *f;
	struct nbpf_export_series *se = NULL;
	char labels[sizeof(se->labels)];
	uint64_t v = 0;

	if (nbpf_export_value_check(sp, val_size, NULL, 0))
		return -EINVAL;
	f = family_for(s, sp, nb);
	if (!f)
		return -EEXIST;
	render_labels(sp, key, labels, sizeof(labels));
	for (size_t i = 0; i < f->n && !se; i++)
		if (!strcmp(f->series[i].labels, labels))
			se = &f->series[i];
	if (!se) {
		if (f->n == f->cap) {
			size_t nc = f->cap ? f->cap * 2 : 16;
			void *p = realloc(f->series, nc * sizeof(*f->series));

			if (!p)
				return -ENOMEM;
			f->series = p;
			f->cap = nc;
		}
		se = &f->series[f->n++];
		memset(se, 0, sizeof(*se));
		strcpy(se->labels, labels);
	}
	if (val_size == 4) {
		uint32_t v4;

		memcpy(&v4, val, 4);
		v = v4;
	} else {
		memcpy(&v, val, 8);
	}
	if (sp->type == NBPF_EXPORT_GAUGE) {
		if (v > se->value)
			se->value = v;
	} else {
		se->value += v; /* histogram: the sum comes first */
	}
	for (uint32_t b = 0; b < nb; b++) {
		uint64_t c;

		memcpy(&c, (const uint8_t *)val + 8 * (b + 1), 8);
		se->buckets[b] += c;
	}
	return 0;
}

static void help_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void sample(FILE *f, const char *name, const char *suffix, const char *labels,
		   const char *extra)
{
	bool any = labels[0] || extra[0];

	fprintf(f, "%s%s%s%s%s%s%s", name, suffix, any ? "{" : "", labels,
		labels[0] && extra[0] ? "," : "", extra, any ? "}" : "");
}

/*
 * Histogram bucket i counts [2^i, 2^(i+1)) ns and the policy's last bucket
 * holds everything above, so the last one is only in +Inf.
 */
static void write_histogram(FILE *f, const struct nbpf_export_family *fam,
			    const struct nbpf_export_series *se)
{
	uint64_t cum = 0;
	char le[48];

	for (uint32_t b = 0; b < fam->n_buckets; b++) {
		cum += se->buckets[b];
		if (b + 1 == fam->n_buckets)
			break;
		snprintf(le, sizeof(le), "le=\"%.10g\"", ldexp(1e-9, (int)b + 1));
		sample(f, fam->spec.name, "_bucket", se->labels, le);
		fprintf(f, " %" PRIu64 "\n", cum);
	}
	sample(f, fam->spec.name, "_bucket", se->labels, "le=\"+Inf\"");
	fprintf(f, " %" PRIu64 "\n", cum);
	sample(f, fam->spec.name, "_sum", se->labels, "");
	fprintf(f, " %.9f\n", (double)se->value * 1e-9);
	sample(f, fam->spec.name, "_count", se->labels, "");
	fprintf(f, " %" PRIu64 "\n", cum);
}

int nbpf_export_write(FILE *f, const struct nbpf_export_set *s)
{
	static const char *const type_names[] = { "counter", "gauge", "histogram" };

	for (size_t i = 0; i < s->n; i++) {
		const struct nbpf_export_family *fam = &s->fams[i];

		fprintf(f, "# HELP %s ", fam->spec.name);
		help_text(f, fam->spec.help);
		fprintf(f, "\n# TYPE %s %s\n", fam->spec.name, type_names[fam->spec.type]);
		for (size_t k = 0; k < fam->n; k++) {
			const struct nbpf_export_series *se = &fam->series[k];

			if (fam->spec.type == NBPF_EXPORT_HISTOGRAM) {
				write_histogram(f, fam, se);
				continue;
			}
			sample(f, fam->spec.name, "", se->labels, "");
			fprintf(f, " %" PRIu64 "\n", se->value);
		}
	}
	return ferror(f) ? -EIO : 0;
}

void nbpf_export_free(struct nbpf_export_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->fams[i].series);
	free(s->fams);
	memset(s, 0, sizeof(*s));
}
