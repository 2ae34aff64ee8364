/*
 * cmd_map.c - `ncclbpf map list|dump|lookup|update|delete PID [MAP] [key HEX...] [value HEX...]`.
 *
 * The process tells us, over its control socket, where each map's
 * shared-memory file is; we then open the file directly
 * (ncclbpf_map__open_path) so reads and writes never wait on the job.
 * Keys and values are hex bytes in memory order: either one string
 * ("0a000000", optional 0x) or several tokens ("0a 0 0 0"), each token
 * being one or more whole bytes (an odd digit count gets a leading 0).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "control/ctl_client.h"
#include "ncclbpf/runtime.h"

static const char *type_name(uint64_t t)
{
	const char *name = ncclbpf_map_type__name(t);

	return name ? name : "?";
}

static bool is_percpu(enum ncclbpf_map_type t)
{
	return t == NCCLBPF_MAP_PERCPU_HASH || t == NCCLBPF_MAP_PERCPU_ARRAY;
}

/* Parses hex tokens argv[*i..] up to the next keyword into out (exactly want bytes). */
static int parse_hex(int argc, char **argv, int *i, uint8_t *out, size_t want, const char *what)
{
	size_t n = 0;

	for (; *i < argc && strcmp(argv[*i], "key") && strcmp(argv[*i], "value") &&
	       strcmp(argv[*i], "flags");
	     (*i)++) {
		const char *s = argv[*i];
		size_t len;

		if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
			s += 2;
		len = strlen(s);
		if (!len)
			return cli_usage_error("%s: empty hex token", what);
		for (size_t k = 0; k < len; k++)
			if (!isxdigit((unsigned char)s[k]))
				return cli_usage_error("%s: '%s' is not hex", what, argv[*i]);
		for (size_t k = 0; k < len; k += 2) {
			char b[3] = { s[k], (k == 0 && (len & 1)) ? 0 : s[k + 1], 0 };

			if (k == 0 && (len & 1))
				k--; /* an odd first digit is a byte of its own */
			if (n >= want)
				return cli_usage_error("%s: more than %zu bytes", what, want);
			out[n++] = (uint8_t)strtoul(b, NULL, 16);
		}
	}
	if (n != want)
		return cli_usage_error("%s: %zu bytes given, the map needs %zu", what, n, want);
	return 0;
}

static void print_hex(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%s%02x", i ? " " : "", p[i]);
}

static void json_hex(const uint8_t *p, size_t n)
{
	putchar('"');
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
	putchar('"');
}

struct map_info {
	char name[128], path[4096];
	uint64_t type, key_size, value_size, max_entries;
};

/* Finds MAP among the process's maps (by name). */
static int find_map(int pid, const char *name, struct map_info *mi, bool list, struct cli *c)
{
	struct nbpf_ctl_msg m;
	const char *em;
	int err = nbpf_ctl_call_pid(pid, NBPF_CTL_MAPS, NULL, &m, &em), found = -ENOENT;
	bool first = true;

	if (err) {
		fprintf(stderr, "ncclbpf: pid %d: %s\n", pid, em);
		nbpf_ctl_msg_free(&m);
		return err;
	}
	if (list && c->json)
		putchar('[');
	for (uint32_t i = 0; i < m.n_recs; i++) {
		const struct nbpf_ctl_rec *r = &m.recs[i];
		uint64_t t = 0;

		if (strcmp(r->kind, "map"))
			continue;
		nbpf_ctl_rec_u64(r, "type", &t);
		if (list) {
			if (c->json) {
				printf("%s{", first ? "" : ",");
				cli_rec_json_fields(stdout, r);
				printf(",\"type_name\":\"%s\"}", type_name(t));
			} else {
				printf("%-24s %-13s key %-3s value %-5s max_entries %-7s %s\n",
				       nbpf_ctl_rec_get(r, "name"), type_name(t),
				       nbpf_ctl_rec_get(r, "key_size"), nbpf_ctl_rec_get(r, "value_size"),
				       nbpf_ctl_rec_get(r, "max_entries"), nbpf_ctl_rec_get(r, "path"));
			}
			first = false;
			found = 0;
			continue;
		}
		if (strcmp(nbpf_ctl_rec_get(r, "name") ?: "", name))
			continue;
		snprintf(mi->name, sizeof(mi->name), "%s", name);
		snprintf(mi->path, sizeof(mi->path), "%s", nbpf_ctl_rec_get(r, "path") ?: "");
		mi->type = t;
		nbpf_ctl_rec_u64(r, "key_size", &mi->key_size);
		nbpf_ctl_rec_u64(r, "value_size", &mi->value_size);
		nbpf_ctl_rec_u64(r, "max_entries", &mi->max_entries);
		found = 0;
		break;
	}
	if (list) {
		if (c->json)
			puts("]");
		found = 0;
	} else if (found) {
		fprintf(stderr, "ncclbpf: pid %d has no map named '%s'\n", pid, name);
	} else if (!mi->path[0]) {
		fprintf(stderr, "ncclbpf: map '%s' has no shared-memory file\n", name);
		found = -ENOENT;
	}
	nbpf_ctl_msg_free(&m);
	return found;
}

static void print_entry(struct cli *c, struct ncclbpf_map *map, const uint8_t *key,
			const uint8_t *val, bool *first)
{
	uint32_t ks = ncclbpf_map__key_size(map), vs = ncclbpf_map__value_size(map);
	bool pc = is_percpu(ncclbpf_map__type(map));

	if (c->json) {
		printf("%s{\"key\":", *first ? "" : ",");
		json_hex(key, ks);
		if (pc) {
			printf(",\"values\":[");
			for (int s = 0; s < NCCLBPF_NR_SLOTS; s++) {
				printf("%s", s ? "," : "");
				json_hex(val + (size_t)s * vs, vs);
			}
			putchar(']');
		} else {
			printf(",\"value\":");
			json_hex(val, vs);
		}
		putchar('}');
	} else {
		printf("key: ");
		print_hex(key, ks);
		if (pc) {
			putchar('\n');
			for (int s = 0; s < NCCLBPF_NR_SLOTS; s++) {
				bool zero = true;

				for (uint32_t b = 0; b < vs && zero; b++)
					zero = !val[(size_t)s * vs + b];
				if (zero)
					continue;
				printf("  slot %2d: ", s);
				print_hex(val + (size_t)s * vs, vs);
				putchar('\n');
			}
		} else {
			printf("  value: ");
			print_hex(val, vs);
			putchar('\n');
		}
	}
	*first = false;
}

int cmd_map(struct cli *c, int argc, char **argv)
{
	struct ncclbpf_map *map = NULL;
	struct map_info mi = { 0 };
	const char *verb;
	uint8_t *key = NULL, *next = NULL, *val = NULL;
	uint64_t flags = NCCLBPF_ANY;
	bool have_key = false, have_val = false, writable, first = true;
	size_t val_bytes;
	int pid, rc = CLI_OK, err, i;

	if (argc < 2)
		return cli_usage_error("usage: map list|dump|lookup|update|delete PID [MAP] [key HEX] [value HEX]");
	verb = argv[0];
	pid = cli_parse_pid(argv[1]);
	if (pid < 0)
		return cli_usage_error("'%s' is not a process id", argv[1]);
	if (!strcmp(verb, "list"))
		return find_map(pid, NULL, &mi, true, c) ? CLI_NO : CLI_OK;
	if (strcmp(verb, "dump") && strcmp(verb, "lookup") && strcmp(verb, "update") &&
	    strcmp(verb, "delete"))
		return cli_usage_error("unknown map verb '%s'", verb);
	if (argc < 3)
		return cli_usage_error("map %s: which map?", verb);
	if (find_map(pid, argv[2], &mi, false, c))
		return CLI_NO;
	writable = !strcmp(verb, "update") || !strcmp(verb, "delete");
	err = ncclbpf_map__open_path(mi.path, writable, &map);
	if (err) {
		fprintf(stderr, "ncclbpf: %s: %s\n", mi.path, ncclbpf_errmsg());
		return CLI_NO;
	}
	if (ncclbpf_map__type(map) == NCCLBPF_MAP_RINGBUF) {
		fprintf(stderr, "ncclbpf: %s is a ring buffer: records are consumed by the job, not dumped\n",
			mi.name);
		rc = CLI_NO;
		goto out;
	}
	val_bytes = (size_t)ncclbpf_map__value_size(map) *
		    (is_percpu(ncclbpf_map__type(map)) ? NCCLBPF_NR_SLOTS : 1);
	key = calloc(1, ncclbpf_map__key_size(map) + 1);
	next = calloc(1, ncclbpf_map__key_size(map) + 1);
	val = calloc(1, val_bytes + 1);
	if (!key || !next || !val) {
		rc = CLI_NO;
		goto out;
	}
	for (i = 3; i < argc;) {
		if (!strcmp(argv[i], "key")) {
			i++;
			if (parse_hex(argc, argv, &i, key, ncclbpf_map__key_size(map), "key")) {
				rc = CLI_USAGE;
				goto out;
			}
			have_key = true;
		} else if (!strcmp(argv[i], "value")) {
			i++;
			if (parse_hex(argc, argv, &i, val, val_bytes, "value")) {
				rc = CLI_USAGE;
				goto out;
			}
			have_val = true;
		} else if (!strcmp(argv[i], "flags") && i + 1 < argc) {
			const char *f = argv[i + 1];

			flags = !strcmp(f, "any") ? NCCLBPF_ANY : !strcmp(f, "noexist") ? NCCLBPF_NOEXIST
				: !strcmp(f, "exist") ? NCCLBPF_EXIST : 99;
			if (flags == 99) {
				rc = cli_usage_error("flags: any, noexist or exist");
				goto out;
			}
			i += 2;
		} else {
			rc = cli_usage_error("unexpected argument '%s'", argv[i]);
			goto out;
		}
	}
	if (!strcmp(verb, "dump")) {
		const uint8_t *prev = NULL;

		if (c->json)
			putchar('[');
		while (!(err = ncclbpf_map__next_key(map, prev, next))) {
			memcpy(key, next, ncclbpf_map__key_size(map));
			prev = key;
			if (ncclbpf_map__lookup(map, key, val))
				continue; /* deleted meanwhile */
			print_entry(c, map, key, val, &first);
		}
		if (c->json)
			puts("]");
		if (err != -ENOENT) {
			fprintf(stderr, "ncclbpf: dump: %s\n", ncclbpf_errmsg());
			rc = CLI_NO;
		}
		goto out;
	}
	if (!have_key) {
		rc = cli_usage_error("map %s: key HEX is required", verb);
		goto out;
	}
	if (!strcmp(verb, "lookup")) {
		err = ncclbpf_map__lookup(map, key, val);
		if (err) {
			fprintf(stderr, "ncclbpf: lookup: %s\n", err == -ENOENT ? "no such key" : ncclbpf_errmsg());
			rc = CLI_NO;
		} else {
			print_entry(c, map, key, val, &first);
			if (c->json)
				putchar('\n');
		}
	} else if (!strcmp(verb, "update")) {
		if (!have_val) {
			rc = cli_usage_error("map update: value HEX is required");
			goto out;
		}
		err = ncclbpf_map__update(map, key, val, flags);
		if (err) {
			fprintf(stderr, "ncclbpf: update: %s\n", ncclbpf_errmsg());
			rc = CLI_NO;
		} else if (c->json) {
			puts("{\"ok\":true}");
		}
	} else {
		err = ncclbpf_map__delete(map, key);
		if (err) {
			fprintf(stderr, "ncclbpf: delete: %s\n", err == -ENOENT ? "no such key" : ncclbpf_errmsg());
			rc = CLI_NO;
		} else if (c->json) {
			puts("{\"ok\":true}");
		}
	}
out:
	free(key);
	free(next);
	free(val);
	ncclbpf_map__put(map);
	return rc;
}
