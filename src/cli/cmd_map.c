/*
 * cmd_map.c - `ncclbpf map list|dump|lookup|update|delete PID [MAP] [key HEX...] [value HEX...]`.
 *
 * The process tells us, over its control socket, where each map's
 * shared-memory file is; we then open the file directly
 * (ncclbpf_map__open_path) so reads and writes never wait on the job.
 *
 * Except writes to a decision map (one the tuner reads: the process marks
 * it `decides`): a write that each process saw the moment it landed would
 * switch ranks on different calls.  `map update|delete PID|all MAP ...`
 * then is an agreed change (change_run.c): every target process stages a
 * copy of the map with the write, and every one switches to it at one
 * call (--sync by default, --at-call N), or none does.  --now writes the
 * file directly, as for any other map: the operator's opt-out, for a write
 * that decides nothing or carries its own activation call.
 * Keys and values are hex bytes in memory order: either one string
 * ("0a000000", optional 0x) or several tokens ("0a 0 0 0"), each token
 * being one or more whole bytes (an odd digit count gets a leading 0).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

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
	       strcmp(argv[*i], "flags") && strncmp(argv[*i], "--", 2);
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
	uint64_t id; /* the shared-memory file's inode: unique while the map exists */
	uint64_t decides; /* the tuner reads it: writes go through an agreed change */
	int pid;
	char obj_path[4096]; /* the object declaring it: its BTF formats the entries */
};

/* BTF of the map's key and value, when its object has it: bpftool's formatted dump. */
struct map_btf {
	struct btf *btf;
	unsigned int key_id, val_id;
};

static void map_btf_load(struct map_btf *mb, const struct map_info *mi)
{
	memset(mb, 0, sizeof(*mb));
	if (!mi->obj_path[0])
		return;
	mb->btf = btf__parse_elf(mi->obj_path, NULL);
	if (libbpf_get_error(mb->btf)) {
		mb->btf = NULL;
		return;
	}
	if (cli_btf_map_types(mb->btf, mi->name, &mb->key_id, &mb->val_id)) {
		btf__free(mb->btf);
		mb->btf = NULL;
	}
}

/*
 * A map's id is the inode of its shared-memory file: two maps of one name
 * (two processes, or two images of one process) have different files, and
 * the id stays the same for as long as any process holds the map.
 */
static uint64_t map_id(const char *path)
{
	struct stat st;

	return path && *path && !stat(path, &st) ? (uint64_t)st.st_ino : 0;
}

static void rec_info(const struct nbpf_ctl_rec *r, int pid, struct map_info *mi)
{
	memset(mi, 0, sizeof(*mi));
	snprintf(mi->name, sizeof(mi->name), "%s", nbpf_ctl_rec_get(r, "name") ?: "");
	snprintf(mi->path, sizeof(mi->path), "%s", nbpf_ctl_rec_get(r, "path") ?: "");
	nbpf_ctl_rec_u64(r, "type", &mi->type);
	nbpf_ctl_rec_u64(r, "key_size", &mi->key_size);
	nbpf_ctl_rec_u64(r, "value_size", &mi->value_size);
	nbpf_ctl_rec_u64(r, "max_entries", &mi->max_entries);
	nbpf_ctl_rec_u64(r, "decides", &mi->decides);
	mi->id = map_id(mi->path);
	mi->pid = pid;
	snprintf(mi->obj_path, sizeof(mi->obj_path), "%s", nbpf_ctl_rec_get(r, "obj_path") ?: "");
}

/*
 * Calls fn on every map of every process in pids (every live one when
 * n is 0), until fn returns non-zero; returns that, or 0.  Processes that
 * went away meanwhile are skipped.
 */
static int each_map(const int *pids, int n, int (*fn)(const struct map_info *, void *), void *arg)
{
	int *all = NULL, ret = 0;

	if (!n) {
		n = nbpf_ctl_list_pids(&all);
		if (n < 0)
			return n;
		pids = all;
	}
	for (int i = 0; i < n && !ret; i++) {
		struct nbpf_ctl_msg m;
		const char *em;

		if (!nbpf_ctl_call_pid(pids[i], NBPF_CTL_MAPS, NULL, &m, &em))
			for (uint32_t k = 0; k < m.n_recs && !ret; k++) {
				struct map_info mi;

				if (strcmp(m.recs[k].kind, "map"))
					continue;
				rec_info(&m.recs[k], pids[i], &mi);
				ret = fn(&mi, arg);
			}
		nbpf_ctl_msg_free(&m);
	}
	free(all);
	return ret;
}

struct show_state {
	struct cli *c;
	bool first;
};

static int show_one(const struct map_info *mi, void *arg)
{
	struct show_state *s = arg;

	if (s->c->json) {
		printf("%s{\"id\":%" PRIu64 ",\"name\":", s->first ? "" : ",", mi->id);
		cli_json_str(stdout, mi->name);
		printf(",\"type\":\"%s\",\"key_size\":%" PRIu64 ",\"value_size\":%" PRIu64
		       ",\"max_entries\":%" PRIu64 ",\"pid\":%d,\"path\":",
		       type_name(mi->type), mi->key_size, mi->value_size, mi->max_entries, mi->pid);
		cli_json_str(stdout, mi->path);
		putchar('}');
	} else {
		printf("%" PRIu64 ": %s  name %s  key %" PRIu64 "B  value %" PRIu64
		       "B  max_entries %" PRIu64 "  pid %d\n",
		       mi->id, type_name(mi->type), mi->name, mi->key_size, mi->value_size,
		       mi->max_entries, mi->pid);
	}
	s->first = false;
	return 0;
}

/* `map show [PID...]`: every map of the processes, bpftool's one line per map. */
static int map_show(struct cli *c, int argc, char **argv)
{
	struct show_state s = { .c = c, .first = true };
	int *pids = NULL, n = argc ? cli_target_pids(argc, argv, &pids) : 0, err;

	if (n < 0)
		return CLI_USAGE;
	if (cli_check_pids(pids, n)) {
		free(pids);
		return CLI_NO;
	}
	if (c->json) {
		putchar('[');
		c->doc_open = true;
	}
	err = each_map(pids, n, show_one, &s);
	if (c->json)
		puts("]");
	free(pids);
	if (err < 0)
		return cli_err(CLI_NO, "%s", ncclbpf_errmsg());
	return CLI_OK;
}

struct by_id {
	uint64_t id;
	struct map_info *mi;
};

static int match_id(const struct map_info *mi, void *arg)
{
	struct by_id *b = arg;

	if (mi->id != b->id)
		return 0;
	*b->mi = *mi;
	return 1;
}

/* Finds MAP among the process's maps (by name). */
static int find_map(int pid, const char *name, struct map_info *mi, bool list, struct cli *c)
{
	struct nbpf_ctl_msg m;
	const char *em;
	int err = nbpf_ctl_call_pid(pid, NBPF_CTL_MAPS, NULL, &m, &em), found = -ENOENT;
	bool first = true;

	if (err) {
		cli_pid_err(CLI_NO, pid, err, em);
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
				uint64_t lt = 0, lr = 0, ld = 0;

				printf("%-24s %-13s key %-3s value %-5s max_entries %-7s %s\n",
				       nbpf_ctl_rec_get(r, "name"), type_name(t),
				       nbpf_ctl_rec_get(r, "key_size"), nbpf_ctl_rec_get(r, "value_size"),
				       nbpf_ctl_rec_get(r, "max_entries"), nbpf_ctl_rec_get(r, "path"));
				nbpf_ctl_rec_u64(r, "lock_timeouts", &lt);
				nbpf_ctl_rec_u64(r, "lock_recoveries", &lr);
				nbpf_ctl_rec_u64(r, "lock_discarded", &ld);
				/* Only when something went wrong: a dead writer or a stuck lock. */
				if (lt || lr || ld)
					printf("%-24s locks: %" PRIu64 " calls timed out (-EBUSY), %" PRIu64
					       " taken over from dead holders, %" PRIu64 " values discarded\n",
					       "", lt, lr, ld);
			}
			first = false;
			found = 0;
			continue;
		}
		if (strcmp(nbpf_ctl_rec_get(r, "name") ?: "", name))
			continue;
		rec_info(r, pid, mi);
		found = 0;
		break;
	}
	if (list) {
		if (c->json)
			puts("]");
		found = 0;
	} else if (found) {
		cli_err(CLI_NO, "pid %d has no map named '%s' (ncclbpf map show %d lists them)", pid,
			name, pid);
	} else if (!mi->path[0]) {
		cli_err(0, "map '%s' has no shared-memory file", name);
		found = -ENOENT;
	}
	nbpf_ctl_msg_free(&m);
	return found;
}

/* JSON of p as the BTF type id, or its hex string without BTF (or when it does not fit). */
static void json_typed(const struct map_btf *mb, unsigned int id, const uint8_t *p, size_t n)
{
	fflush(stdout);
	if (!mb || !mb->btf || !id || cli_btf_json(stdout, mb->btf, id, p, n))
		json_hex(p, n);
}

static void print_entry(struct cli *c, struct ncclbpf_map *map, const struct map_btf *mb,
			const uint8_t *key, const uint8_t *val, bool *first)
{
	uint32_t ks = ncclbpf_map__key_size(map), vs = ncclbpf_map__value_size(map);
	bool pc = is_percpu(ncclbpf_map__type(map));

	if (c->json) {
		printf("%s{\"key\":", *first ? "" : ",");
		json_typed(mb, mb ? mb->key_id : 0, key, ks);
		if (pc) {
			printf(",\"values\":[");
			for (int s = 0; s < NCCLBPF_NR_SLOTS; s++) {
				printf("%s", s ? "," : "");
				json_typed(mb, mb ? mb->val_id : 0, val + (size_t)s * vs, vs);
			}
			putchar(']');
		} else {
			printf(",\"value\":");
			json_typed(mb, mb ? mb->val_id : 0, val, vs);
		}
		putchar('}');
	} else if (mb && mb->btf) {
		/* With BTF, bpftool's plain form: the formatted key and value. */
		printf("key: ");
		json_typed(mb, mb->key_id, key, ks);
		if (pc) {
			putchar('\n');
			for (int s = 0; s < NCCLBPF_NR_SLOTS; s++) {
				bool zero = true;

				for (uint32_t b = 0; b < vs && zero; b++)
					zero = !val[(size_t)s * vs + b];
				if (zero)
					continue;
				printf("  slot %2d: ", s);
				json_typed(mb, mb->val_id, val + (size_t)s * vs, vs);
				putchar('\n');
			}
		} else {
			printf("  value: ");
			json_typed(mb, mb->val_id, val, vs);
			putchar('\n');
		}
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

struct name_pids {
	const char *name;
	int *pids;
	int n;
};

static int add_pid(struct name_pids *np, int pid)
{
	int *v;

	if (np->n && np->pids[np->n - 1] == pid)
		return 0;
	v = realloc(np->pids, (size_t)(np->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	np->pids = v;
	np->pids[np->n++] = pid;
	return 0;
}

static int collect_pid(const struct map_info *mi, void *arg)
{
	struct name_pids *np = arg;

	return strcmp(mi->name, np->name) ? 0 : add_pid(np, mi->pid);
}

/*
 * The targets of `all`: every process whose policy has the map, and every
 * process that does not answer (a stopped one may have it: left out, it
 * would keep the old value while the others switch; in, its stage fails
 * and the change is aborted everywhere).  Processes that are gone are not
 * targets.
 */
static int all_with_map(const char *name, struct name_pids *np)
{
	int *all = NULL, n = nbpf_ctl_list_pids(&all);

	np->name = name;
	for (int i = 0; i < n; i++) {
		struct nbpf_ctl_msg m;
		const char *em;
		int err = nbpf_ctl_call_pid(all[i], NBPF_CTL_MAPS, NULL, &m, &em);
		bool has = err == -ETIMEDOUT;

		for (uint32_t k = 0; !err && k < m.n_recs && !has; k++)
			has = !strcmp(m.recs[k].kind, "map") &&
			      !strcmp(nbpf_ctl_rec_get(&m.recs[k], "name") ?: "", name);
		nbpf_ctl_msg_free(&m);
		if (has && add_pid(np, all[i]) < 0)
			n = -ENOMEM;
	}
	free(all);
	return n;
}

static void put_hex(struct nbpf_ctl_buf *b, const char *k, const uint8_t *p, size_t n)
{
	char *h = malloc(2 * n + 1);

	for (size_t i = 0; h && i < n; i++)
		snprintf(h + 2 * i, 3, "%02x", p[i]);
	nbpf_ctl_buf_str(b, k, h ? h : "");
	free(h);
}

struct map_write {
	bool all, now, del;
	struct cli_change ch;
	uint64_t flags;
};

/* One direct write into pid's file of the map (the map's own semantics: at once). */
static int write_one(int pid, const char *name, const uint8_t *key, const uint8_t *val,
		     const struct map_write *w)
{
	struct ncclbpf_map *m = NULL;
	struct map_info mi;
	int err;

	if (find_map(pid, name, &mi, false, NULL))
		return -ENOENT;
	err = ncclbpf_map__open_path(mi.path, true, &m);
	if (!err)
		err = w->del ? ncclbpf_map__delete(m, key) : ncclbpf_map__update(m, key, val, w->flags);
	if (err)
		cli_err(0, "pid %d: %s: %s", pid, w->del ? "delete" : "update",
			err == -ENOENT && w->del ? "no such key" : ncclbpf_errmsg());
	ncclbpf_map__put(m);
	return err;
}

/*
 * update|delete on a decision map (an agreed change over the targets) or
 * on every process's map (all): the targets are pid, or every process
 * whose policy has the map.
 */
static int write_targets(struct cli *c, const struct map_info *mi, int pid, struct map_write *w,
			 const uint8_t *key, size_t ks, const uint8_t *val, size_t vs)
{
	struct name_pids np = { .name = mi->name };
	struct nbpf_ctl_buf rec = { .max = NBPF_CTL_MAX_REQUEST };
	char summary[256];
	int rc = CLI_OK;

	if (w->all && all_with_map(mi->name, &np) < 0) {
		free(np.pids);
		return cli_err(CLI_NO, "%s", ncclbpf_errmsg());
	}
	if (!w->all && (np.pids = malloc(sizeof(int))))
		np.pids[np.n++] = pid;
	if (!np.n) {
		free(np.pids);
		return cli_err(CLI_NO, "no process has a map named '%s'", mi->name);
	}
	if (!mi->decides || w->now) {
		for (int i = 0; i < np.n; i++)
			if (write_one(np.pids[i], mi->name, key, val, w))
				rc = CLI_NO;
		if (rc == CLI_OK && c->json)
			puts("{\"ok\":true}");
		free(np.pids);
		return rc;
	}
	nbpf_ctl_buf_rec(&rec, "op");
	nbpf_ctl_buf_str(&rec, "map", mi->name);
	put_hex(&rec, "key", key, ks);
	if (!w->del)
		put_hex(&rec, "value", val, vs);
	snprintf(summary, sizeof(summary), "%s %s", w->del ? "deleted a key of" : "wrote", mi->name);
	w->ch.verb = w->del ? "map delete" : "map update";
	w->ch.summary = summary;
	w->ch.records = rec.data;
	w->ch.skip_gone = w->all;
	if (c->json)
		c->doc_open = true;
	rc = rec.err ? cli_usage_error("the write does not fit in one request")
		     : cli_change_run(c, &w->ch, np.pids, np.n);
	nbpf_ctl_buf_free(&rec);
	free(np.pids);
	return rc;
}

int cmd_map(struct cli *c, int argc, char **argv)
{
	struct ncclbpf_map *map = NULL;
	struct map_info mi = { 0 };
	struct map_btf mb = { 0 };
	const char *verb;
	uint8_t *key = NULL, *next = NULL, *val = NULL;
	uint64_t flags = NCCLBPF_ANY;
	bool have_key = false, have_val = false, writable, first = true, have_at = false;
	struct map_write w = { .ch = { .when = CLI_AT_SYNC } };
	size_t val_bytes;
	int pid = 0, rc = CLI_OK, err, i;

	if (argc >= 1 && !strcmp(argv[0], "show"))
		return map_show(c, argc - 1, argv + 1);
	if (argc < 2)
		return cli_usage_error("map %s: which process? (ncclbpf help map)", argc ? argv[0] : "");
	verb = argv[0];
	if (!strcmp(argv[1], "id")) {
		struct by_id b = { .mi = &mi };
		char *end;

		if (argc < 3 || !(b.id = strtoull(argv[2], &end, 10)) || *end)
			return cli_usage_error("map %s: id needs a map id (ncclbpf map show lists them)",
					       verb);
		err = each_map(NULL, 0, match_id, &b);
		if (err <= 0)
			return err < 0 ? cli_err(CLI_NO, "%s", ncclbpf_errmsg())
				       : cli_err(CLI_NO, "no map has id %s (ncclbpf map show lists them)",
						 argv[2]);
	} else if (!strcmp(argv[1], "all") && (!strcmp(verb, "update") || !strcmp(verb, "delete"))) {
		struct name_pids np = { .name = argc > 2 ? argv[2] : "" };

		/* Every process whose policy has the map; the first one describes it. */
		err = each_map(NULL, 0, collect_pid, &np);
		pid = np.n ? np.pids[0] : 0;
		free(np.pids);
		if (err < 0 || !pid)
			return cli_err(CLI_NO, "no process has a map named '%s'", np.name);
		w.all = true;
	} else {
		pid = cli_parse_pid(argv[1]);
		if (pid < 0)
			return cli_usage_error("'%s' is not a process id", argv[1]);
	}
	if (!strcmp(verb, "list"))
		return mi.id || find_map(pid, NULL, &mi, true, c) ? CLI_NO : CLI_OK;
	if (strcmp(verb, "dump") && strcmp(verb, "lookup") && strcmp(verb, "update") &&
	    strcmp(verb, "delete"))
		return cli_usage_error("unknown map verb '%s'", verb);
	if (argc < 3)
		return cli_usage_error("map %s: which map?", verb);
	if (!mi.id && find_map(pid, argv[2], &mi, false, c))
		return CLI_NO;
	writable = !strcmp(verb, "update") || !strcmp(verb, "delete");
	if (!writable)
		map_btf_load(&mb, &mi);
	err = ncclbpf_map__open_path(mi.path, writable, &map);
	if (err) {
		cli_err(0, "map %s: %s", mi.name, ncclbpf_errmsg());
		return CLI_NO;
	}
	if (ncclbpf_map__type(map) == NCCLBPF_MAP_RINGBUF) {
		cli_err(0, "%s is a ring buffer: records are consumed by the job, not dumped", mi.name);
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
		} else if (writable && !strcmp(argv[i], "--sync")) {
			i++; /* the default for a decision map */
		} else if (writable && !strcmp(argv[i], "--now")) {
			w.now = true;
			w.ch.when = CLI_AT_NOW;
			i++;
		} else if (writable && !strcmp(argv[i], "--at-call") && i + 1 < argc) {
			char *end;

			errno = 0;
			w.ch.at_call = strtoull(argv[i + 1], &end, 0);
			if (errno || *end || !*argv[i + 1] || argv[i + 1][0] == '-') {
				rc = cli_usage_error("--at-call needs a call number");
				goto out;
			}
			w.ch.when = CLI_AT_CALL;
			have_at = true;
			i += 2;
		} else if (writable && !strcmp(argv[i], "--id") && i + 1 < argc) {
			if (!*argv[i + 1] || strlen(argv[i + 1]) >= 64) {
				rc = cli_usage_error("--id is 1 to 63 characters");
				goto out;
			}
			w.ch.id = argv[i + 1];
			i += 2;
		} else if (writable && !strcmp(argv[i], "--timeout") && i + 1 < argc) {
			char *end;
			double t = strtod(argv[i + 1], &end);

			if (*end || !(t > 0) || t > 40) {
				rc = cli_usage_error("--timeout needs seconds in (0, 40] (a staged change holds new communicators back for three times that)");
				goto out;
			}
			w.ch.timeout_ms = (int)(t * 1000);
			i += 2;
		} else {
			rc = cli_usage_error("unexpected argument '%s'", argv[i]);
			goto out;
		}
	}
	if (w.now && have_at) {
		rc = cli_usage_error("map %s: --now and --at-call exclude each other", verb);
		goto out;
	}
	if (writable && have_key && (have_val || !strcmp(verb, "delete")) && (w.all || (mi.decides && !w.now))) {
		if (flags != NCCLBPF_ANY && !w.now) {
			rc = cli_usage_error("map %s: flags apply to a direct write (--now); %s decides, so its writes are agreed",
					     verb, mi.name);
			goto out;
		}
		w.del = !strcmp(verb, "delete");
		w.flags = flags;
		rc = write_targets(c, &mi, pid, &w, key, ncclbpf_map__key_size(map), val, val_bytes);
		goto out;
	}
	if (writable && !w.now && have_at) {
		rc = cli_usage_error("map %s: --at-call is for a decision map; %s decides nothing", verb,
				     mi.name);
		goto out;
	}
	if (!strcmp(verb, "dump")) {
		const uint8_t *prev = NULL;

		if (c->json) {
			putchar('[');
			c->doc_open = true;
		}
		while (!(err = ncclbpf_map__next_key(map, prev, next))) {
			memcpy(key, next, ncclbpf_map__key_size(map));
			prev = key;
			err = ncclbpf_map__lookup(map, key, val);
			if (err == -EBUSY) /* a writer stuck or dead in it: say so, go on */
				fprintf(stderr, "ncclbpf: dump: %s\n", ncclbpf_errmsg());
			if (err)
				continue; /* deleted meanwhile */
			print_entry(c, map, &mb, key, val, &first);
		}
		if (c->json)
			puts("]");
		if (err != -ENOENT) {
			cli_err(0, "dump: %s", ncclbpf_errmsg());
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
			cli_err(0, "lookup: %s", err == -ENOENT ? "no such key" : ncclbpf_errmsg());
			rc = CLI_NO;
		} else {
			print_entry(c, map, &mb, key, val, &first);
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
			cli_err(0, "update: %s", ncclbpf_errmsg());
			rc = CLI_NO;
		} else if (c->json) {
			puts("{\"ok\":true}");
		}
	} else {
		err = ncclbpf_map__delete(map, key);
		if (err) {
			cli_err(0, "delete: %s", err == -ENOENT ? "no such key" : ncclbpf_errmsg());
			rc = CLI_NO;
		} else if (c->json) {
			puts("{\"ok\":true}");
		}
	}
out:
	free(key);
	free(next);
	free(val);
	btf__free(mb.btf);
	ncclbpf_map__put(map);
	return rc;
}
