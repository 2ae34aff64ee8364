/*
 * host.c - per-process plugin state: settings, logging, image load and
 * publish, and the communicator registry.  See host.h for the model.
 *
 * Everything here is created by the first nbpf_host_acquire and destroyed
 * by the last nbpf_host_release, so a dlclose after the last finalize
 * leaves no thread, handler or allocation behind.  No constructors, no
 * atexit handlers.
 */
#include "host.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "epoch.h"
#include "file.h"
#include "host_env.h"
#include "host_priv.h"
#include "load_status.h"

extern char **environ;

_Atomic(struct nbpf_image *) nbpf_host_published;
/* Starts at 1 so that a zeroed cache (ver 0) never matches. */
struct nbpf_host_chain_ver nbpf_host_chain = { .v = 1 };

/*
 * Two locks, always taken in this order.  g_load_lock serialises building
 * images (reading files, verifying, compiling: milliseconds, and whatever a
 * slow file system costs) and keeps the published image alive while a load
 * shares its maps.  g_lock guards everything else and is only held for
 * short, non-blocking work, so a communicator's init or finalize never waits
 * for a reload.
 */
static pthread_mutex_t g_load_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_loaded = PTHREAD_COND_INITIALIZER; /* g_first_loading went false */
static bool g_first_loading;          /* the first acquire is loading NCCLBPF_POLICY, under g_lock */
static int g_refs;                    /* under g_lock */
static struct nbpf_settings g_settings;
static const char *const *g_extra_settings; /* the upper layers' names, under g_lock */
static _Atomic(nbpf_host_logger_t) g_logger;
static _Atomic int g_log_level = NBPF_NCCL_LOG_INFO;
static struct nbpf_image *g_owned;    /* every image the host owns, under g_lock */
static struct nbpf_image *g_rollback; /* what the last publish replaced */
static struct nbpf_comm *g_comms;     /* registry, under g_lock */
static uint64_t g_next_gen = 1, g_next_comm = 1;

uint64_t nbpf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The stamp and the clock at the first acquire: the TSC's rate is measured from there. */
static uint64_t g_stamp0, g_stamp0_ns;

uint64_t nbpf_stats_to_ns(uint64_t stamps)
{
#if defined(__x86_64__)
	uint64_t s = nbpf_stats_stamp(), ns = nbpf_now_ns();

	if (!g_stamp0 || s <= g_stamp0 || ns <= g_stamp0_ns)
		return 0;
	return (uint64_t)((double)stamps * (double)(ns - g_stamp0_ns) / (double)(s - g_stamp0));
#else
	return stamps;
#endif
}

uint64_t nbpf_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void nbpf_host_lock(void) { pthread_mutex_lock(&g_lock); }
void nbpf_host_unlock(void) { pthread_mutex_unlock(&g_lock); }
void nbpf_host_load_lock(void) { pthread_mutex_lock(&g_load_lock); }
void nbpf_host_load_unlock(void) { pthread_mutex_unlock(&g_load_lock); }
pthread_mutex_t *nbpf_host_mutex(void) { return &g_lock; }

/* ---- logging ----------------------------------------------------------- */

void nbpf_host_log(int level, unsigned long flags, const char *fmt, ...)
{
	nbpf_host_logger_t logger = atomic_load_explicit(&g_logger, memory_order_acquire);
	char msg[1024];
	va_list ap;

	if (level > atomic_load_explicit(&g_log_level, memory_order_relaxed))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (logger)
		logger(level, flags, __FILE__, __LINE__, "ncclbpf: %s", msg);
	else
		fprintf(stderr, "ncclbpf %s: %s\n", level <= NBPF_NCCL_LOG_WARN ? "WARN" : "INFO",
			msg);
}

/* Runtime diagnostics and bpf_printk output, routed to NCCL's logger. */
static void runtime_log(int level, const char *msg)
{
	int lvl = level <= NCCLBPF_LOG_WARN ? NBPF_NCCL_LOG_WARN :
		  level == NCCLBPF_LOG_INFO ? NBPF_NCCL_LOG_INFO : NBPF_NCCL_LOG_TRACE;

	nbpf_host_log(lvl, NBPF_NCCL_TUNING, "%s", msg);
}

/* ---- names ------------------------------------------------------------- */

static const char *const algo_names[NCCLBPF_NUM_ALGOS] = {
	"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT",
};
static const char *const proto_names[NCCLBPF_NUM_PROTOS] = { "LL", "LL128", "SIMPLE" };
static const char *const coll_names[NCCLBPF_NUM_COLLS] = {
	"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce",
};

const char *nbpf_algo_name(int a) { return a >= 0 && a < NCCLBPF_NUM_ALGOS ? algo_names[a] : "?"; }
const char *nbpf_proto_name(int p) { return p >= 0 && p < NCCLBPF_NUM_PROTOS ? proto_names[p] : "?"; }
const char *nbpf_coll_name(int c) { return c >= 0 && c < NCCLBPF_NUM_COLLS ? coll_names[c] : "?"; }

static int name_index(const char *const *names, int n, const char *s)
{
	for (int i = 0; s && i < n; i++)
		if (!strcasecmp(names[i], s))
			return i;
	return -1;
}

int nbpf_algo_from_name(const char *s) { return name_index(algo_names, NCCLBPF_NUM_ALGOS, s); }
int nbpf_proto_from_name(const char *s) { return name_index(proto_names, NCCLBPF_NUM_PROTOS, s); }
int nbpf_coll_from_name(const char *s) { return name_index(coll_names, NCCLBPF_NUM_COLLS, s); }

/* ---- settings ---------------------------------------------------------- */

static const char *const known_settings[] = {
	"NCCLBPF_POLICY", "NCCLBPF_ENGINE", "NCCLBPF_STRICT_CONSISTENCY", "NCCLBPF_LOG",
	"NCCLBPF_STATS", "NCCLBPF_MAP_DIR", "NCCLBPF_PROFILER_MASK", "NCCLBPF_PLUGIN",
	"NCCLBPF_NET", "NCCLBPF_NET_MIN_CHUNK", /* net plugin: docs/net.md */
	"NCCLBPF_NET_TIMEOUT", "NCCLBPF_NET_HELLO_TIMEOUT",
	"NCCLBPF_TEST_SCALE", /* read by the test suite, not the plugin */
	"NCCLBPF_RECORD_DIR", "NCCLBPF_RECORD_TARGET", "NCCLBPF_RECORD_MASK", /* the recorder, libncclbpf-rec.so */
	NULL,
};

static bool setting_known(const char *name, size_t len)
{
	for (const char *const *k = known_settings; *k; k++)
		if (strlen(*k) == len && !strncmp(*k, name, len))
			return true;
	if (g_extra_settings)
		for (const char *const *k = g_extra_settings; *k; k++)
			if (strlen(*k) == len && !strncmp(*k, name, len))
				return true;
	return false;
}

bool nbpf_host_setting_bool(const char *name, bool def)
{
	static const char *const yes[] = { "1", "yes", "on", "true" };
	static const char *const no[] = { "0", "no", "off", "false" };
	const char *v = getenv(name);

	if (!v || !*v)
		return def;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(v, yes[i]))
			return true;
		if (!strcasecmp(v, no[i]))
			return false;
	}
	nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_INIT,
		      "%s=%s: not a boolean (0/1, no/yes, off/on, false/true); using %s", name, v,
		      def ? "1" : "0");
	return def;
}

long long nbpf_host_setting_int(const char *name, long long min, long long max, long long def)
{
	const char *v = getenv(name);
	char *end;
	long long x;

	if (!v || !*v)
		return def;
	errno = 0;
	x = strtoll(v, &end, 10);
	if (errno || *end || end == v || x < min || x > max) {
		nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_INIT,
			      "%s=%s: not a number in %lld..%lld; using %lld", name, v, min, max, def);
		return def;
	}
	return x;
}

/* Reads every NCCLBPF_* variable; bad values and unknown names get one WARN each. */
static void settings_read(struct nbpf_settings *s)
{
	const char *v;

	memset(s, 0, sizeof(*s));
	s->log_level = NBPF_NCCL_LOG_INFO;
	s->profiler_mask = -1;
	v = getenv("NCCLBPF_LOG");
	if (v && *v) {
		if (!strcasecmp(v, "none") || !strcmp(v, "0"))
			s->log_level = 0;
		else if (!strcasecmp(v, "warn"))
			s->log_level = NBPF_NCCL_LOG_WARN;
		else if (!strcasecmp(v, "info"))
			s->log_level = NBPF_NCCL_LOG_INFO;
		else if (!strcasecmp(v, "debug") || !strcasecmp(v, "trace"))
			s->log_level = NBPF_NCCL_LOG_TRACE;
		else
			nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_INIT,
				      "NCCLBPF_LOG=%s: unknown level (none|warn|info|debug); using info", v);
	}
	atomic_store(&g_log_level, s->log_level);

	v = getenv("NCCLBPF_POLICY");
	if (v) {
		if (strlen(v) >= sizeof(s->policy))
			nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_INIT,
				      "NCCLBPF_POLICY is longer than %zu bytes; ignored", sizeof(s->policy) - 1);
		else
			strcpy(s->policy, v);
	}
	v = getenv("NCCLBPF_ENGINE");
	if (v && *v) {
		if (!strcasecmp(v, "jit"))
			s->engine = NCCLBPF_ENGINE_JIT;
		else if (!strcasecmp(v, "interp"))
			s->engine = NCCLBPF_ENGINE_INTERP;
		else
			nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_INIT,
				      "NCCLBPF_ENGINE=%s: unknown engine (jit|interp); using the default", v);
	}
	s->strict_consistency = nbpf_host_setting_bool("NCCLBPF_STRICT_CONSISTENCY", false);
	s->stats = nbpf_host_setting_bool("NCCLBPF_STATS", false);
	v = getenv("NCCLBPF_MAP_DIR");
	if (v && strlen(v) >= sizeof(s->map_dir))
		nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_INIT,
			      "NCCLBPF_MAP_DIR is longer than %zu bytes; using the default directory",
			      sizeof(s->map_dir) - 1);
	else if (v)
		strcpy(s->map_dir, v);
	v = getenv("NCCLBPF_PROFILER_MASK");
	if (v && *v) {
		char *end;
		long m = strtol(v, &end, 0);

		if (*end || m < 0 || m > 0xffff)
			nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_INIT,
				      "NCCLBPF_PROFILER_MASK=%s: not a mask in 0..0xffff; using automatic", v);
		else
			s->profiler_mask = (int)m;
	}
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');

		if (strncmp(*e, "NCCLBPF_", 8) || !eq)
			continue;
		if (!setting_known(*e, (size_t)(eq - *e)))
			nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_INIT,
				      "unknown setting %.*s ignored (see docs/nccl-adapters.md)",
				      (int)(eq - *e), *e);
	}
}

const struct nbpf_settings *nbpf_host_settings(void) { return &g_settings; }

/* ---- images ------------------------------------------------------------ */

struct reuse_ctx {
	struct nbpf_image *img;        /* objects opened so far */
	const struct nbpf_image *cur;  /* published image (host lock held) */
	const char *path;              /* the object being opened */
	char conflict[512];            /* two objects of one image disagree on a map */
	/* A derived image: base's maps of the same object, except the fresh ones. */
	const struct nbpf_image *base;
	uint32_t obj;                  /* index of the object being opened */
	const char *const *fresh;
	uint32_t n_fresh;
};

static bool name_in(const char *const *names, uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

static struct ncclbpf_map *find_map_obj(struct ncclbpf_object *obj, const char *name,
					uint32_t type, uint32_t ks, uint32_t vs, uint32_t me)
{
	struct ncclbpf_map *m = ncclbpf_object__find_map(obj, name);

	if (m && (uint32_t)ncclbpf_map__type(m) == type && ncclbpf_map__key_size(m) == ks &&
	    ncclbpf_map__value_size(m) == vs && ncclbpf_map__max_entries(m) == me)
		return m;
	return NULL;
}

static struct ncclbpf_map *find_map_in(const struct nbpf_image *img, const char *name,
				       uint32_t type, uint32_t ks, uint32_t vs, uint32_t me)
{
	for (uint32_t i = 0; img && i < img->n_objs; i++) {
		struct ncclbpf_map *m = find_map_obj(img->objs[i], name, type, ks, vs, me);

		if (m)
			return m;
	}
	return NULL;
}

/*
 * Same name and shape: one map.  Global-data maps (names with a '.', which
 * BTF map names cannot have) belong to their object and are never shared.
 */
static struct ncclbpf_map *map_reuse(void *user, const char *name, uint32_t type,
				     uint32_t key_size, uint32_t value_size, uint32_t max_entries)
{
	struct reuse_ctx *rc = user;
	struct ncclbpf_map *m;

	if (!name || strchr(name, '.'))
		return NULL;
	if (rc->base) {
		/* A fresh map is one per image, like any map shared by name. */
		if (name_in(rc->fresh, rc->n_fresh, name))
			m = find_map_in(rc->img, name, type, key_size, value_size, max_entries);
		else
			m = find_map_obj(rc->base->objs[rc->obj], name, type, key_size, value_size,
					 max_entries);
		return m ? ncclbpf_map__get(m) : NULL;
	}
	/*
	 * One name, two shapes in one image: the objects were written to share
	 * the map and would each get their own, silently.  Refuse the load; the
	 * map offered back has the other shape, so the loader fails the object.
	 */
	for (uint32_t i = 0; i < rc->img->n_objs; i++) {
		struct ncclbpf_map *o = ncclbpf_object__find_map(rc->img->objs[i], name);

		if (!o || ((uint32_t)ncclbpf_map__type(o) == type && ncclbpf_map__key_size(o) == key_size &&
			   ncclbpf_map__value_size(o) == value_size &&
			   ncclbpf_map__max_entries(o) == max_entries))
			continue;
		snprintf(rc->conflict, sizeof(rc->conflict),
			 "map %s: %s declares it %s key %u value %u max_entries %u, "
			 "%s declares it %s key %u value %u max_entries %u: objects of one policy "
			 "share maps by name, so give them one shape or different names",
			 name, ncclbpf_object__name(rc->img->objs[i]),
			 ncclbpf_map_type__name(ncclbpf_map__type(o)) ?: "?",
			 ncclbpf_map__key_size(o), ncclbpf_map__value_size(o),
			 ncclbpf_map__max_entries(o), rc->path,
			 ncclbpf_map_type__name((enum ncclbpf_map_type)type) ?: "?", key_size,
			 value_size, max_entries);
		return ncclbpf_map__get(o);
	}
	m = find_map_in(rc->img, name, type, key_size, value_size, max_entries);
	if (!m)
		m = find_map_in(rc->cur, name, type, key_size, value_size, max_entries);
	return m ? ncclbpf_map__get(m) : NULL;
}

void nbpf_host_image_free(struct nbpf_image *img)
{
	if (!img)
		return;
	free(img->known);
	if (img->base) {
		/* Objects, maps, object bytes and env strings belong to the base. */
		free(img->spec);
		free(img);
		return;
	}
	for (uint32_t i = 0; i < img->n_objs; i++) {
		ncclbpf_object__close(img->objs[i]);
		free(img->obj_buf[i]);
	}
	for (uint32_t i = 0; i < img->n_env; i++) {
		free(img->env[i].name);
		free(img->env[i].value);
	}
	free(img->spec);
	free(img);
}

static void note(struct nbpf_image *img, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void note(struct nbpf_image *img, const char *fmt, ...)
{
	size_t len = strlen(img->warnings);
	va_list ap;

	if (len + 3 >= sizeof(img->warnings))
		return;
	if (len)
		strcpy(img->warnings + len, "; "), len += 2;
	va_start(ap, fmt);
	vsnprintf(img->warnings + len, sizeof(img->warnings) - len, fmt, ap);
	va_end(ap);
}

/* The first error finding of prog, formatted "file:line: reason (detail)". */
static void describe_rejection(const struct ncclbpf_verify_result *vr, char *buf, size_t n)
{
	for (uint32_t i = 0; i < vr->n_findings; i++) {
		const struct ncclbpf_finding *f = &vr->findings[i];

		if (f->kind != NCCLBPF_FINDING_ERROR)
			continue;
		if (f->file)
			snprintf(buf, n, "%.120s:%u: insn %u: %.200s%s%.300s", f->file, f->line, f->insn,
				 f->reason, f->detail[0] ? ": " : "", f->detail);
		else
			snprintf(buf, n, "insn %u: %.200s%s%.300s", f->insn, f->reason,
				 f->detail[0] ? ": " : "", f->detail);
		return;
	}
	snprintf(buf, n, "%s", ncclbpf_errmsg());
}

/*
 * Attaches and prepares every program of obj; caller holds the host lock.
 * On a rejection *refused names the program (owned by obj).
 */
static int image_add_programs(struct nbpf_image *img, struct ncclbpf_object *obj,
			      const char *path, const char **refused, char *errbuf,
			      size_t errlen)
{
	size_t n = ncclbpf_object__prog_count(obj);

	for (size_t i = 0; i < n; i++) {
		struct ncclbpf_program *p = ncclbpf_object__prog(obj, i);
		const char *sec = ncclbpf_program__section(p);
		const struct ncclbpf_hook_desc *hook = ncclbpf_hook_find_section(sec);
		struct ncclbpf_verify_opts vo = { .sz = sizeof(vo),
			.strict_consistency = g_settings.strict_consistency };
		struct ncclbpf_verify_result vr = { 0 };
		struct ncclbpf_prepare_opts po = { .sz = sizeof(po), .engine = g_settings.engine,
						   .verify = &vo, .result = &vr };
		struct nbpf_host_prog *hp;
		int err;

		if (!hook) {
			note(img, "%s: program %s: section \"%s\" names no hook; skipped", path,
			     ncclbpf_program__name(p), sec ? sec : "");
			continue;
		}
		const struct nbpf_host_prog *first =
			hook == &ncclbpf_hooks[NCCLBPF_HOOK_TUNER] ? img->tuner :
			hook == &ncclbpf_hooks[NCCLBPF_HOOK_CHUNK] ? img->chunk : NULL;

		if (first) {
			/* Not attached, but a rejected program still refuses the set. */
			err = ncclbpf_program__verify(p, hook, &vo, &vr);
			if (err) {
				char why[700];

				describe_rejection(&vr, why, sizeof(why));
				snprintf(errbuf, errlen, "%s: program %s (%s) rejected: %s", path,
					 ncclbpf_program__name(p), hook->name, why);
				*refused = ncclbpf_program__name(p);
				return err;
			}
			note(img, "%s: program %s: a %s program (%s) is already loaded; only the first one decides, this one is skipped",
			     path, ncclbpf_program__name(p), hook->section, first->name);
			continue;
		}
		if (img->n_progs >= NBPF_HOST_MAX_PROGS) {
			snprintf(errbuf, errlen, "%s: more than %d programs", path, NBPF_HOST_MAX_PROGS);
			return -E2BIG;
		}
		err = ncclbpf_program__prepare(p, hook, &po);
		if (err) {
			char why[700];

			if (err == -EACCES)
				describe_rejection(&vr, why, sizeof(why));
			else
				snprintf(why, sizeof(why), "%s", ncclbpf_errmsg());
			snprintf(errbuf, errlen, "%s: program %s (%s) rejected: %s", path,
				 ncclbpf_program__name(p), hook->name, why);
			*refused = ncclbpf_program__name(p);
			return err;
		}
		hp = &img->progs[img->n_progs];
		hp->prog = p;
		hp->hook = (enum ncclbpf_hook_id)(hook - ncclbpf_hooks);
		hp->func = ncclbpf_program__func(p);
		hp->obj_name = ncclbpf_object__name(obj);
		hp->obj_tag = ncclbpf_object__tag(obj);
		if (ncclbpf_program__tag(p, hp->tag))
			snprintf(hp->tag, sizeof(hp->tag), "%s", "?");
		hp->name = ncclbpf_program__name(p);
		hp->slot = img->n_progs;
		hp->insns = (uint32_t)ncclbpf_program__insn_count(p);
		for (uint32_t k = 0; k < vr.n_findings; k++)
			if (vr.findings[k].kind == NCCLBPF_FINDING_WARNING)
				hp->consistency_warning = true;
		if (hp->consistency_warning)
			note(img, "%s: program %s: verifier warning: %s", path, hp->name,
			     vr.findings[0].reason);
		if (hp->hook == NCCLBPF_HOOK_TUNER)
			img->tuner = hp;
		else if (hp->hook == NCCLBPF_HOOK_CHUNK)
			img->chunk = hp;
		else if (hp->hook == NCCLBPF_HOOK_PROFILER)
			img->profilers[img->n_profilers++] = hp;
		else if (hp->hook == NCCLBPF_HOOK_PROF_EVENT)
			img->prof_events[img->n_prof_events++] = hp;
		img->n_progs++;
	}
	return 0;
}

/* Caller holds the host lock (map sharing reads the published image). */
/* "PATH: cannot load: WHY", naming the path once even when the runtime's message starts with it. */
static void load_error(const char *path, char *errbuf, size_t errlen)
{
	const char *why = ncclbpf_errmsg();
	size_t n = strlen(path);

	if (!strncmp(why, path, n) && !strncmp(why + n, ": ", 2))
		why += n + 2;
	snprintf(errbuf, errlen, "%s: cannot load: %s", path, why);
}

/*
 * Builds an image with g_load_lock held and g_lock not held: from the files
 * of paths, maps shared by name and shape with the published image; or
 * (base not NULL, a map write) from base's object bytes, base's maps shared
 * except the fresh ones.  A map write is no load attempt of the operator's:
 * it is not recorded in the load status.
 */
static int load_image(const char *paths, const struct nbpf_image *base,
		      const char *const *fresh, uint32_t n_fresh, struct nbpf_image **out,
		      char *errbuf, size_t errlen)
{
	const struct nbpf_image *src = base;
	struct nbpf_image *img;
	struct reuse_ctx rc;
	uint64_t t0 = nbpf_now_ns();
	char *list = NULL, *save = NULL, *path;
	const char *bad_obj = NULL, *bad_prog = NULL;
	int err = 0;

	*out = NULL;
	if (errlen)
		errbuf[0] = 0;
	if (base)
		paths = base->spec;
	img = calloc(1, sizeof(*img));
	if (!img || !(img->spec = strdup(paths ? paths : ""))) {
		free(img);
		snprintf(errbuf, errlen, "out of memory");
		pthread_mutex_lock(&g_lock);
		nbpf_load_status_refused_locked(paths, -ENOMEM, NULL, NULL, "out of memory", 0);
		pthread_mutex_unlock(&g_lock);
		return -ENOMEM;
	}
	list = strdup(img->spec);
	if (!list) {
		err = -ENOMEM;
		snprintf(errbuf, errlen, "out of memory");
		goto out;
	}
	memset(&rc, 0, sizeof(rc));
	rc.img = img;
	rc.cur = atomic_load_explicit(&nbpf_host_published, memory_order_acquire);
	rc.base = base;
	rc.fresh = fresh;
	rc.n_fresh = n_fresh;
	for (path = strtok_r(list, ":", &save); path; path = strtok_r(NULL, ":", &save)) {
		struct ncclbpf_open_opts oo = { .sz = sizeof(oo), .map_reuse = map_reuse,
						.map_reuse_user = &rc,
						.map_dir = g_settings.map_dir[0] ? g_settings.map_dir : NULL };
		struct ncclbpf_object *obj = NULL;
		const char *slash = strrchr(path, '/');
		void *buf = NULL;
		size_t len = 0;

		if (!*path)
			continue;
		bad_obj = path;
		rc.path = path;
		rc.obj = img->n_objs;
		if (img->n_objs >= NBPF_HOST_MAX_OBJS || (base && img->n_objs >= base->n_objs)) {
			err = -E2BIG;
			snprintf(errbuf, errlen, "more than %d objects", NBPF_HOST_MAX_OBJS);
			goto out;
		}
		/* One read per file: the object and its env table come from the same bytes. */
		oo.object_name = slash ? slash + 1 : path;
		if (base) {
			len = base->obj_len[img->n_objs];
			buf = malloc(len ? len : 1);
			err = buf ? 0 : -ENOMEM;
			if (buf)
				memcpy(buf, base->obj_buf[img->n_objs], len);
		} else {
			err = nbpf_read_regular_file(path, NBPF_HOST_MAX_FILE, &buf, &len);
		}
		if (!err)
			err = ncclbpf_object__open_mem(buf, len, &oo, &obj);
		if (err && rc.conflict[0]) {
			free(buf);
			snprintf(errbuf, errlen, "%s", rc.conflict);
			goto out;
		}
		if (err) {
			free(buf);
			load_error(path, errbuf, errlen);
			goto out;
		}
		img->obj_buf[img->n_objs] = buf;
		img->obj_len[img->n_objs] = len;
		img->objs[img->n_objs++] = obj;
		err = image_add_programs(img, obj, path, &bad_prog, errbuf, errlen);
		if (!err)
			err = nbpf_env_read_overrides(path, buf, len, img, errbuf, errlen);
		if (err)
			goto out;
	}
	nbpf_host_find_dmaps(img);
	img->load_ns = nbpf_now_ns() - t0;
	img->loaded_at = nbpf_realtime_ns();
out:
	pthread_mutex_lock(&g_lock);
	if (err && !src)
		/* Recorded before the free: bad_obj points into list, bad_prog into img. */
		nbpf_load_status_refused_locked(img->spec, err, bad_obj, bad_prog,
						errlen ? errbuf : "", nbpf_now_ns() - t0);
	else if (!src)
		nbpf_load_status_loaded_locked(img);
	pthread_mutex_unlock(&g_lock);
	free(list);
	if (err) {
		nbpf_host_image_free(img);
		return err;
	}
	*out = img;
	return 0;
}

int nbpf_host_load_from(const struct nbpf_image *base, const char *const *fresh, uint32_t n_fresh,
			struct nbpf_image **out, char *errbuf, size_t errlen)
{
	return load_image(NULL, base, fresh, n_fresh, out, errbuf, errlen);
}

int nbpf_host_load_image(const char *paths, struct nbpf_image **out, char *errbuf,
			 size_t errlen)
{
	int err;

	if (!out)
		return -EINVAL;
	pthread_mutex_lock(&g_load_lock);
	err = load_image(paths, NULL, NULL, 0, out, errbuf, errlen);
	pthread_mutex_unlock(&g_load_lock);
	return err;
}

const struct nbpf_image *nbpf_host_image_fill(struct nbpf_image_cache *cache, uint64_t call)
{
	/* Version first: a publish racing with the walk leaves a newer chain
	 * cached under the older version, which only costs one more refill. */
	uint64_t ver = atomic_load_explicit(&nbpf_host_chain.v, memory_order_acquire);
	const struct nbpf_image *img =
		nbpf_host_image_walk(atomic_load_explicit(&nbpf_host_published, memory_order_acquire),
				     call, cache->comm_id, &cache->until);

	cache->ver = ver;
	cache->img = img;
	cache->tuner = img ? img->tuner : NULL;
	cache->func = cache->tuner ? cache->tuner->func : NULL;
	cache->chunk = img ? img->chunk : NULL;
	cache->chunk_func = cache->chunk ? cache->chunk->func : NULL;
	cache->gen = img ? img->generation : 0;
	return img;
}

struct nbpf_image *nbpf_host_current(void)
{
	return atomic_load_explicit(&nbpf_host_published, memory_order_acquire);
}

/*
 * Some live tuner comm may still need what lies below img: it follows
 * img's at_call and is below it.  Comms that do not follow it switched to
 * img at once, so they never walk past it.  Lock held.
 */
static bool chain_needed(const struct nbpf_image *img, uint64_t at)
{
	for (struct nbpf_comm *c = g_comms; c; c = c->next)
		if (c->kind == NBPF_COMM_TUNER && nbpf_host_image_follows(img, c->comm_id) &&
		    atomic_load_explicit(&c->calls, memory_order_relaxed) < at)
			return true;
	return false;
}

static bool chain_contains(struct nbpf_image *head, const struct nbpf_image *img)
{
	for (; head; head = atomic_load_explicit(&head->prev, memory_order_relaxed))
		if (head == img)
			return true;
	return false;
}

/* Readers reach img, or a live record (or the staged change) borrows its objects; lock held. */
static bool image_live(struct nbpf_image *pub, const struct nbpf_image *img)
{
	const struct nbpf_image *staged = nbpf_change_staged_locked();

	if (chain_contains(pub, img) || img == g_rollback || (staged && staged->base == img))
		return true;
	for (struct nbpf_image *i = g_owned; i; i = i->owned_next)
		if (i->base == img && (chain_contains(pub, i) || i == g_rollback))
			return true;
	return false;
}

/* Tells every resolution cache that the chain changed (after the change). */
static void chain_changed(void)
{
	atomic_fetch_add_explicit(&nbpf_host_chain.v, 1, memory_order_release);
}

/*
 * Cuts chains no live comm can walk any more, then frees every owned image
 * unreachable from the published chain and the rollback target (a base
 * stays while a reachable record borrows from it).  Lock held; the grace
 * period runs with the lock held, which only delays other control-plane
 * calls and comm init/finalize, never the hot path.  The chain version is
 * bumped before the grace period, so no cache can still hold what is freed.
 */
static void collect_locked(void)
{
	struct nbpf_image *pub = atomic_load_explicit(&nbpf_host_published, memory_order_relaxed);
	struct nbpf_image **pp, *dead = NULL;

	for (struct nbpf_image *i = pub; i; i = atomic_load_explicit(&i->prev, memory_order_relaxed)) {
		uint64_t at = atomic_load_explicit(&i->at_call, memory_order_relaxed);

		if (at && !chain_needed(i, at)) {
			atomic_store_explicit(&i->at_call, 0, memory_order_relaxed);
			atomic_store_explicit(&i->prev, NULL, memory_order_release);
			chain_changed();
			break;
		}
	}
	for (pp = &g_owned; *pp;) {
		struct nbpf_image *i = *pp;

		if (image_live(pub, i)) {
			pp = &i->owned_next;
			continue;
		}
		*pp = i->owned_next;
		i->owned_next = dead;
		dead = i;
	}
	if (!dead)
		return;
	nbpf_epoch_synchronize();
	while (dead) {
		struct nbpf_image *next = dead->owned_next;

		nbpf_host_image_free(dead);
		dead = next;
	}
}

unsigned nbpf_host_image_records_locked(void)
{
	unsigned n = 0;

	for (struct nbpf_image *i = g_owned; i; i = i->owned_next)
		n++;
	return n;
}

void nbpf_host_collect(void)
{
	pthread_mutex_lock(&g_lock);
	collect_locked();
	pthread_mutex_unlock(&g_lock);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * img->known: the ids the change was agreed for plus this process's tuner
 * comms, sorted, without repeats; *late counts comms already at at_call.
 * Lock held.
 */
static int set_known(struct nbpf_image *img, const struct nbpf_host_publish_opts *o,
		     uint64_t *late)
{
	uint32_t n = o->n_known, k = 0;
	uint64_t *ids;

	for (struct nbpf_comm *c = g_comms; c; c = c->next)
		if (c->kind == NBPF_COMM_TUNER) {
			n++;
			if (atomic_load_explicit(&c->calls, memory_order_relaxed) >= o->at_call)
				(*late)++;
		}
	ids = malloc((n ? n : 1) * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	if (o->n_known)
		memcpy(ids, o->known, o->n_known * sizeof(*ids));
	n = o->n_known;
	for (struct nbpf_comm *c = g_comms; c; c = c->next)
		if (c->kind == NBPF_COMM_TUNER)
			ids[n++] = c->comm_id;
	qsort(ids, n, sizeof(*ids), cmp_u64);
	for (uint32_t i = 0; i < n; i++)
		if (!k || ids[k - 1] != ids[i])
			ids[k++] = ids[i];
	free(img->known);
	img->known = ids;
	img->n_known = k;
	return 0;
}

int nbpf_host_publish_locked(struct nbpf_image *img, const struct nbpf_host_publish_opts *o,
			     uint64_t *late)
{
	struct nbpf_image *cur = atomic_load_explicit(&nbpf_host_published, memory_order_relaxed);
	uint64_t at_call = o->at_call, n_late = 0;
	bool holder = false;

	if (img && img == cur)
		return -EINVAL;
	if (img) {
		/*
		 * A record is published once: readers may still walk it, and
		 * re-linking it could close a cycle.  Rollback publishes a new
		 * record that borrows the old one's objects instead.
		 */
		for (struct nbpf_image *i = g_owned; i; i = i->owned_next)
			if (i == img)
				return -EINVAL;
	}
	/* Unpublishing with at_call needs a holder for the "nothing" image. */
	if (!img && at_call && cur) {
		img = calloc(1, sizeof(*img));
		if (!img || !(img->spec = strdup(""))) {
			free(img);
			return -ENOMEM;
		}
		holder = true;
	}
	if (img && at_call && set_known(img, o, &n_late)) {
		if (holder)
			nbpf_host_image_free(img);
		return -ENOMEM;
	}
	if (img) {
		img->owned_next = g_owned;
		g_owned = img;
		img->generation = g_next_gen++;
		img->orig_at = at_call;
		snprintf(img->change_id, sizeof(img->change_id), "%s", o->change_id ? o->change_id : "");
		atomic_store_explicit(&img->at_call, at_call, memory_order_relaxed);
		atomic_store_explicit(&img->prev, at_call ? cur : NULL, memory_order_relaxed);
	}
	atomic_store_explicit(&nbpf_host_published, img, memory_order_release);
	chain_changed();
	if (cur && cur->n_objs + cur->n_env && !(img && img->derived))
		g_rollback = cur;
	collect_locked();
	if (late)
		*late = n_late;
	return 0;
}

static int publish_locked(struct nbpf_image *img, uint64_t at_call)
{
	struct nbpf_host_publish_opts o = { .sz = sizeof(o), .at_call = at_call };

	return nbpf_host_publish_locked(img, &o, NULL);
}

int nbpf_host_publish(struct nbpf_image *img, uint64_t at_call)
{
	struct nbpf_host_publish_opts o = { .sz = sizeof(o), .at_call = at_call };

	return nbpf_host_publish_opts(img, &o, NULL);
}

int nbpf_host_publish_opts(struct nbpf_image *img, const struct nbpf_host_publish_opts *o,
			   uint64_t *late)
{
	int err;

	/* The load lock too: a derived image being built reads the published one. */
	pthread_mutex_lock(&g_load_lock);
	pthread_mutex_lock(&g_lock);
	err = nbpf_host_publish_locked(img, o, late);
	pthread_mutex_unlock(&g_lock);
	pthread_mutex_unlock(&g_load_lock);
	return err;
}

struct nbpf_image *nbpf_host_rollback_target_locked(void)
{
	return g_rollback;
}

void nbpf_host_rollback_done_locked(const struct nbpf_image *src)
{
	if (g_rollback == src)
		g_rollback = NULL; /* replaced nothing loaded: no further target */
}

/*
 * A new, unpublished record of src's programs, maps and env overrides,
 * borrowed by reference from src's base (never copied or re-verified):
 * what rollback publishes.  Lock held.  NULL on allocation failure.
 */
struct nbpf_image *nbpf_host_image_borrow(const struct nbpf_image *src)
{
	struct nbpf_image *img = malloc(sizeof(*img));

	if (!img)
		return NULL;
	memcpy(img, src, sizeof(*img));
	img->spec = strdup(src->spec ? src->spec : "");
	if (!img->spec) {
		free(img);
		return NULL;
	}
	img->base = src->base ? src->base : (struct nbpf_image *)src;
	img->generation = 0;
	img->owned_next = NULL;
	img->known = NULL;
	img->n_known = 0;
	img->orig_at = 0;
	img->change_id[0] = 0;
	img->derived = false;
	atomic_store_explicit(&img->at_call, 0, memory_order_relaxed);
	atomic_store_explicit(&img->prev, NULL, memory_order_relaxed);
	/* Dispatch pointers point into src->progs; rebase them on our copy. */
	if (src->tuner)
		img->tuner = &img->progs[src->tuner - src->progs];
	if (src->chunk)
		img->chunk = &img->progs[src->chunk - src->progs];
	for (uint32_t i = 0; i < src->n_profilers; i++)
		img->profilers[i] = &img->progs[src->profilers[i] - src->progs];
	for (uint32_t i = 0; i < src->n_prof_events; i++)
		img->prof_events[i] = &img->progs[src->prof_events[i] - src->progs];
	return img;
}

int nbpf_host_rollback(uint64_t at_call)
{
	struct nbpf_image *img, *src;
	int err = -ENOENT;

	/* g_load_lock first: a load in progress may be sharing the maps of the image we replace. */
	pthread_mutex_lock(&g_load_lock);
	pthread_mutex_lock(&g_lock);
	src = g_rollback;
	if (!src)
		goto out;
	err = -ENOMEM;
	img = nbpf_host_image_borrow(src);
	if (!img)
		goto out;
	err = publish_locked(img, at_call);
	if (err) {
		nbpf_host_image_free(img);
	} else {
		nbpf_load_status_rolled_back_locked();
		nbpf_host_rollback_done_locked(src);
	}
out:
	pthread_mutex_unlock(&g_lock);
	pthread_mutex_unlock(&g_load_lock);
	return err;
}

/* ---- lifetime ---------------------------------------------------------- */

/* One INFO line per loaded program set, or one WARN when loading failed. */
static void log_image(const struct nbpf_image *img)
{
	char buf[900];
	size_t len = 0;

	buf[0] = 0;
	for (uint32_t i = 0; i < img->n_progs && len < sizeof(buf); i++) {
		const struct nbpf_host_prog *p = &img->progs[i];

		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s %s -> %s (tag %s, %u insns, %s, verified%s)",
					i ? ", " : "", p->obj_name, p->name,
					ncclbpf_hooks[p->hook].name, p->tag, p->insns, p->func ? "jit" : "interp",
					p->consistency_warning ? " with warnings" : "");
	}
	nbpf_host_log(NBPF_NCCL_LOG_INFO, NBPF_NCCL_INIT,
		      "policy %s: %u object(s), %u program(s)%s%s; %u env override(s); loaded in %llu us",
		      img->spec, img->n_objs, img->n_progs, img->n_progs ? ": " : "", buf, img->n_env,
		      (unsigned long long)(img->load_ns / 1000));
	if (img->warnings[0])
		nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_INIT, "policy %s: %s", img->spec,
			      img->warnings);
}

void nbpf_host_acquire(nbpf_host_logger_t logger, const char *const *extra_settings)
{
	struct nbpf_image *img = NULL;
	char err[NBPF_HOST_ERRLEN];

	pthread_mutex_lock(&g_lock);
	if (logger) {
		nbpf_host_logger_t none = NULL;

		atomic_compare_exchange_strong(&g_logger, &none, logger);
	}
	/*
	 * Later contexts wait for the first one's policy (two ranks of one
	 * communicator in one process must start on the same image), never for
	 * a reload: reloads run under g_load_lock alone.
	 */
	while (g_first_loading)
		pthread_cond_wait(&g_loaded, &g_lock);
	if (g_refs++ > 0) {
		pthread_mutex_unlock(&g_lock);
		return;
	}
	g_extra_settings = extra_settings;
	settings_read(&g_settings);
	if (!g_stamp0) {
		g_stamp0_ns = nbpf_now_ns();
		g_stamp0 = nbpf_stats_stamp();
	}
	ncclbpf_set_logger(runtime_log);
	if (!g_settings.policy[0]) {
		nbpf_host_log(NBPF_NCCL_LOG_INFO, NBPF_NCCL_INIT,
			      "NCCLBPF_POLICY is not set; NCCL's defaults apply");
		pthread_mutex_unlock(&g_lock);
		return;
	}
	g_first_loading = true;
	pthread_mutex_unlock(&g_lock);

	pthread_mutex_lock(&g_load_lock);
	if (load_image(g_settings.policy, NULL, NULL, 0, &img, err, sizeof(err)))
		nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_INIT,
			      "policy not loaded, NCCL's defaults apply: %s", err);
	else
		log_image(img);
	pthread_mutex_lock(&g_lock);
	if (img)
		publish_locked(img, 0);
	g_first_loading = false;
	pthread_cond_broadcast(&g_loaded);
	pthread_mutex_unlock(&g_lock);
	pthread_mutex_unlock(&g_load_lock);
}

void nbpf_host_release(void)
{
	pthread_mutex_lock(&g_lock);
	if (g_refs > 1) {
		g_refs--;
		pthread_mutex_unlock(&g_lock);
		return;
	}
	pthread_mutex_unlock(&g_lock);
	/* Possibly the last: no load may be sharing the maps we are about to free. */
	pthread_mutex_lock(&g_load_lock);
	pthread_mutex_lock(&g_lock);
	if (g_refs > 0 && --g_refs == 0) {
		nbpf_change_reset_locked();
		atomic_store_explicit(&nbpf_host_published, NULL, memory_order_release);
		chain_changed();
		g_rollback = NULL;
		collect_locked();
		nbpf_epoch_barrier();
		ncclbpf_set_logger(NULL);
		atomic_store(&g_logger, NULL);
		g_extra_settings = NULL;
	}
	pthread_mutex_unlock(&g_lock);
	pthread_mutex_unlock(&g_load_lock);
}

/* ---- registry ---------------------------------------------------------- */

/*
 * A communicator the change was agreed for, created here only after this
 * process dropped what its calls below the agreed call would use (every
 * other comm of it had passed that call): its ranks elsewhere may have
 * started on the old image.  Rare (a rank created long after its peers);
 * said once per communicator.  Lock held.
 */
static void warn_settled_locked(uint64_t comm_id)
{
	struct nbpf_image *pub = atomic_load_explicit(&nbpf_host_published, memory_order_relaxed);

	for (struct nbpf_image *i = pub; i; i = atomic_load_explicit(&i->prev, memory_order_relaxed))
		if (i->orig_at && !atomic_load_explicit(&i->at_call, memory_order_relaxed) &&
		    nbpf_host_image_follows(i, comm_id)) {
			nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_INIT,
				      "communicator 0x%llx was created after this process finished change %s (agreed from call %llu): it starts on image %llu at call 0, its ranks created earlier elsewhere switch at call %llu",
				      (unsigned long long)comm_id, i->change_id[0] ? i->change_id : "-",
				      (unsigned long long)i->orig_at, (unsigned long long)i->generation,
				      (unsigned long long)i->orig_at);
			return;
		}
}

struct nbpf_comm *nbpf_host_comm_add(enum nbpf_comm_kind kind, int abi_version,
				     uint64_t comm_id, int rank, uint32_t n_ranks,
				     uint32_t n_nodes)
{
	struct nbpf_comm *c = aligned_alloc(64, (sizeof(*c) + 63) & ~(size_t)63);

	if (!c)
		return NULL;
	memset(c, 0, sizeof(*c));
	c->kind = kind;
	c->abi_version = abi_version;
	c->comm_id = comm_id;
	c->rank = rank;
	c->n_ranks = n_ranks;
	c->n_nodes = n_nodes;
	c->created_at = nbpf_realtime_ns();
	pthread_mutex_lock(&g_lock);
	if (kind == NBPF_COMM_TUNER)
		nbpf_change_wait_locked();
	c->id = g_next_comm++;
	c->next = g_comms;
	g_comms = c;
	if (kind == NBPF_COMM_TUNER)
		warn_settled_locked(comm_id);
	pthread_mutex_unlock(&g_lock);
	return c;
}

void nbpf_host_comm_remove(struct nbpf_comm *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&g_lock);
	for (struct nbpf_comm **pp = &g_comms; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	pthread_mutex_unlock(&g_lock);
	if (!nbpf_epoch_defer(free, c))
		return;
	if (!nbpf_epoch_in_section()) { /* nothing queued: wait instead */
		nbpf_epoch_synchronize();
		free(c);
	}
}

int nbpf_host_comm_foreach(int (*fn)(void *user, const struct nbpf_comm *c), void *user)
{
	int ret = 0;

	pthread_mutex_lock(&g_lock);
	for (struct nbpf_comm *c = g_comms; c && !ret; c = c->next)
		ret = fn(user, c);
	pthread_mutex_unlock(&g_lock);
	return ret;
}

void nbpf_host_prog_totals(uint32_t slot, uint64_t *runs, uint64_t *ns)
{
	uint64_t r = 0, t = 0;

	pthread_mutex_lock(&g_lock);
	struct nbpf_image *cur = atomic_load_explicit(&nbpf_host_published, memory_order_relaxed);

	for (struct nbpf_comm *c = g_comms; cur && slot < NBPF_HOST_MAX_PROGS && c; c = c->next) {
		if (atomic_load_explicit(&c->stats_gen, memory_order_relaxed) != cur->generation)
			continue;
		r += atomic_load_explicit(&c->prog[slot].runs, memory_order_relaxed);
		t += atomic_load_explicit(&c->prog[slot].ns, memory_order_relaxed);
	}
	pthread_mutex_unlock(&g_lock);
	if (runs)
		*runs = r;
	if (ns)
		*ns = nbpf_stats_to_ns(t);
}

const char *nbpf_host_env_lookup(const char *name, char *buf, size_t n)
{
	const char *ret = NULL;
	struct nbpf_image *cur;

	if (!name || !buf || !n)
		return NULL;
	nbpf_epoch_enter();
	cur = atomic_load_explicit(&nbpf_host_published, memory_order_acquire);
	for (uint32_t i = 0; cur && i < cur->n_env; i++)
		if (!strcmp(cur->env[i].name, name)) {
			snprintf(buf, n, "%s", cur->env[i].value);
			ret = buf;
			break;
		}
	nbpf_epoch_exit();
	return ret;
}
