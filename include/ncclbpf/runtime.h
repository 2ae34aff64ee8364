/*
 * ncclbpf/runtime.h - host API of the ncclbpf eBPF runtime.
 *
 * The runtime knows nothing about NCCL: it opens BPF objects built by stock
 * clang, verifies programs against a hook contract the caller supplies,
 * compiles them and runs them.  Conventions (libbpf's):
 *   - one prefix, ncclbpf_<object>__<verb>;
 *   - functions returning int give 0 or a negative errno; a message saying
 *     what went wrong is then available from ncclbpf_errmsg() on the same
 *     thread until the next failing call;
 *   - functions returning pointers give NULL on failure (errno-style code in
 *     ncclbpf_errno());
 *   - options come in structs whose first member is their size (opts->sz),
 *     so they can grow without breaking callers.
 */
#ifndef NCCLBPF_RUNTIME_H
#define NCCLBPF_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ncclbpf_object;
struct ncclbpf_program;
struct ncclbpf_map;

/* ---- errors ------------------------------------------------------------ */

/* Message of the last failing call on this thread ("" if none). */
const char *ncclbpf_errmsg(void);
/* Negative errno of the last failing call on this thread (0 if none). */
int ncclbpf_errno(void);

/* ---- hook contracts ---------------------------------------------------- */

/*
 * A hook contract: everything the loader, verifier, engines, CLI and docs
 * need to know about a place programs attach to.  The NCCL layer declares
 * its hooks once (src/host/hooks.c); the runtime only reads them.
 */
enum ncclbpf_field_access {
	NCCLBPF_FIELD_READ  = 1u << 0,
	NCCLBPF_FIELD_WRITE = 1u << 1,
};

enum ncclbpf_field_flags {
	/* Same value on every rank of a communicator for the same call. */
	NCCLBPF_FIELD_RANK_INVARIANT = 1u << 0,
	/* A decision output: must only depend on rank-invariant values. */
	NCCLBPF_FIELD_DECISION       = 1u << 1,
};

struct ncclbpf_ctx_field {
	const char *name;
	uint32_t off;
	uint32_t size;   /* bytes: 1, 2, 4 or 8; accesses must use exactly this width */
	uint32_t access; /* enum ncclbpf_field_access bits */
	uint32_t flags;  /* enum ncclbpf_field_flags bits */
	const char *doc;
};

struct ncclbpf_hook_desc {
	const char *name;         /* "tuner" */
	const char *section;      /* section name; a trailing '/' matches a prefix */
	const char *ctx_type;     /* C type of the context, for messages and docs */
	uint32_t ctx_size;
	const struct ncclbpf_ctx_field *fields;
	uint32_t n_fields;
	const int32_t *helpers;   /* helper ids a program of this hook may call */
	uint32_t n_helpers;
	int64_t ret_min, ret_max; /* allowed range of r0 at exit */
	const char *ret_doc;
	const char *doc;
	/*
	 * NCCLBPF_CTX_CHECK_* (0: none): what the entry function's first
	 * parameter may be, from the object's BTF, against ctx_type.
	 */
	uint32_t ctx_check;
};

/* The first parameter must point to ctx_type (typedefs and qualifiers aside). */
#define NCCLBPF_CTX_CHECK_TYPE    (1u << 0)
/* ... or be `void *` (the hook accepts an untyped context). */
#define NCCLBPF_CTX_CHECK_VOID_OK (1u << 1)

/* ---- objects ----------------------------------------------------------- */

struct ncclbpf_open_opts {
	size_t sz;
	/* Name used in messages instead of the path. */
	const char *object_name;
	/*
	 * Optional map sharing: called before the loader creates a map; return a
	 * referenced map (ncclbpf_map__get) to use it instead, or NULL to create
	 * a new one.  Used to make same-named, same-shaped maps of several
	 * objects one map.
	 */
	struct ncclbpf_map *(*map_reuse)(void *user, const char *name,
					 uint32_t type, uint32_t key_size,
					 uint32_t value_size, uint32_t max_entries);
	void *map_reuse_user;
	/* Directory for the maps' shared-memory files (default: per-user runtime dir). */
	const char *map_dir;
};
#define NCCLBPF_OPTS_INIT(type, ...) \
	((struct type){ .sz = sizeof(struct type), __VA_ARGS__ })

int ncclbpf_object__open_file(const char *path, const struct ncclbpf_open_opts *opts,
			      struct ncclbpf_object **obj);
int ncclbpf_object__open_mem(const void *buf, size_t len, const struct ncclbpf_open_opts *opts,
			     struct ncclbpf_object **obj);
/* Frees the object, its programs (and their compiled code) and drops its map references. */
void ncclbpf_object__close(struct ncclbpf_object *obj);

const char *ncclbpf_object__name(const struct ncclbpf_object *obj);
const char *ncclbpf_object__license(const struct ncclbpf_object *obj);
/* Content tag: first 8 bytes of SHA-256 over the object file, as 16 hex digits. */
const char *ncclbpf_object__tag(const struct ncclbpf_object *obj);
size_t ncclbpf_object__prog_count(const struct ncclbpf_object *obj);
struct ncclbpf_program *ncclbpf_object__prog(const struct ncclbpf_object *obj, size_t i);
struct ncclbpf_program *ncclbpf_object__find_program(const struct ncclbpf_object *obj,
						     const char *name);
size_t ncclbpf_object__map_count(const struct ncclbpf_object *obj);
struct ncclbpf_map *ncclbpf_object__map(const struct ncclbpf_object *obj, size_t i);
struct ncclbpf_map *ncclbpf_object__find_map(const struct ncclbpf_object *obj, const char *name);

/* ---- programs ---------------------------------------------------------- */

const char *ncclbpf_program__name(const struct ncclbpf_program *prog);
const char *ncclbpf_program__section(const struct ncclbpf_program *prog);
/* Instruction count, subprograms included (8-byte slots; lddw counts 2). */
size_t ncclbpf_program__insn_count(const struct ncclbpf_program *prog);
/* Raw instruction slots (struct nbpf_insn layout, 8 bytes each). */
const void *ncclbpf_program__insns(const struct ncclbpf_program *prog);
/*
 * The program's tag: 16 hex digits of SHA-256 over its instructions with
 * map references zeroed, as the kernel's prog tag (bpftool prog show).  Each
 * program of an object has its own.  0, or a negative errno.
 */
int ncclbpf_program__tag(const struct ncclbpf_program *prog, char tag[17]);
/* Source location of instruction idx from BTF line info: 0, or -ENOENT. */
int ncclbpf_program__line(const struct ncclbpf_program *prog, size_t idx,
			  const char **file, uint32_t *line, const char **text);

enum ncclbpf_engine {
	NCCLBPF_ENGINE_DEFAULT = 0, /* JIT where available, else interpreter */
	NCCLBPF_ENGINE_INTERP  = 1,
	NCCLBPF_ENGINE_JIT     = 2,
};

/* Verification verdicts, findings and the full log. */
struct ncclbpf_verify_opts {
	size_t sz;
	/* Turn decision-consistency warnings into rejections. */
	bool strict_consistency;
	/* Budgets (0: defaults). */
	uint32_t max_insns_processed;
	uint32_t max_states;
	/*
	 * Time guard in milliseconds of the verifying thread's CPU time (0:
	 * the default, 20000): a program whose verification takes longer is
	 * refused ("verification took too long").  Far above what max_work
	 * costs: the work budget decides.
	 */
	uint32_t max_time_ms;
	/*
	 * Work budget (0: the default, see docs/verifier.md): instructions
	 * processed plus states copied and compared, in units of about one
	 * instruction's work.  It decides, the same on every machine and
	 * under any load, so every rank of a job accepts or refuses alike.
	 */
	uint64_t max_work;
};

enum ncclbpf_finding_kind {
	NCCLBPF_FINDING_ERROR   = 0,
	NCCLBPF_FINDING_WARNING = 1,
};

struct ncclbpf_finding {
	int kind;              /* enum ncclbpf_finding_kind */
	uint32_t insn;         /* instruction index */
	const char *file;      /* from BTF line info, NULL if unknown */
	uint32_t line;
	const char *src;       /* the source line's text, NULL if unknown */
	char reason[256];      /* short reason, e.g. "invalid access to map value" */
	char detail[512];      /* instruction, registers involved */
	char hint[256];        /* how to fix it */
};

struct ncclbpf_verify_result {
	bool accepted;
	uint32_t insns_processed;
	uint32_t states;
	uint32_t peak_states;
	uint32_t stack_depth;       /* bytes, deepest call chain */
	int64_t ret_min, ret_max;   /* r0 range proven at exit */
	struct ncclbpf_finding *findings; /* owned by the program; valid until next verify/close */
	uint32_t n_findings;
	/*
	 * The entry function's context type was compared with the hook's
	 * (false: the hook asks for no check, or the object has no BTF).
	 */
	bool ctx_type_checked;
	uint64_t work;              /* work units done (see ncclbpf_verify_opts.max_work) */
};

/*
 * Verifies prog against hook.  Returns 0 if accepted, -EACCES if rejected
 * (findings say why), another negative errno for invalid arguments.
 * result may be NULL.
 */
int ncclbpf_program__verify(struct ncclbpf_program *prog, const struct ncclbpf_hook_desc *hook,
			    const struct ncclbpf_verify_opts *opts,
			    struct ncclbpf_verify_result *result);

/* Plain function compiled for a hook; r1 = ctx, r2 = ctx_len. */
typedef uint64_t (*ncclbpf_func_t)(void *ctx, uint64_t ctx_len);

struct ncclbpf_prepare_opts {
	size_t sz;
	enum ncclbpf_engine engine;
	const struct ncclbpf_verify_opts *verify;
	struct ncclbpf_verify_result *result; /* optional out */
};

/*
 * Verifies prog against hook and makes it runnable with the chosen engine.
 * There is no way to prepare a program without verifying it.
 */
int ncclbpf_program__prepare(struct ncclbpf_program *prog, const struct ncclbpf_hook_desc *hook,
			     const struct ncclbpf_prepare_opts *opts);
/* JIT-compiled entry point of a prepared program, NULL when interpreted. */
ncclbpf_func_t ncclbpf_program__func(const struct ncclbpf_program *prog);
/* Runs a prepared program once with either engine. */
int ncclbpf_program__run(const struct ncclbpf_program *prog, void *ctx, uint64_t ctx_len,
			 uint64_t *ret);

/* ---- maps -------------------------------------------------------------- */

/* Kernel map type numbers. */
enum ncclbpf_map_type {
	NCCLBPF_MAP_HASH         = 1,
	NCCLBPF_MAP_ARRAY        = 2,
	NCCLBPF_MAP_PERCPU_HASH  = 5,
	NCCLBPF_MAP_PERCPU_ARRAY = 6,
	NCCLBPF_MAP_LRU_HASH     = 9,
	NCCLBPF_MAP_RINGBUF      = 27,
};

/* Update flags (kernel values). */
#define NCCLBPF_ANY     0
#define NCCLBPF_NOEXIST 1
#define NCCLBPF_EXIST   2

/* Number of per-thread value slots of a "percpu" map. */
#define NCCLBPF_NR_SLOTS 64

struct ncclbpf_map_create_opts {
	size_t sz;
	uint32_t map_flags;
	const char *dir;  /* shared-memory directory, NULL: default */
	bool readonly_prog; /* programs may not write values (.rodata) */
};

int ncclbpf_map__create(const char *name, enum ncclbpf_map_type type, uint32_t key_size,
			uint32_t value_size, uint32_t max_entries,
			const struct ncclbpf_map_create_opts *opts, struct ncclbpf_map **map);
/* Opens a map of another process read-only (or read-write) by its file path. */
int ncclbpf_map__open_path(const char *path, bool writable, struct ncclbpf_map **map);
struct ncclbpf_map *ncclbpf_map__get(struct ncclbpf_map *map);
void ncclbpf_map__put(struct ncclbpf_map *map);

const char *ncclbpf_map__name(const struct ncclbpf_map *map);
const char *ncclbpf_map__path(const struct ncclbpf_map *map);
enum ncclbpf_map_type ncclbpf_map__type(const struct ncclbpf_map *map);
uint32_t ncclbpf_map__key_size(const struct ncclbpf_map *map);
uint32_t ncclbpf_map__value_size(const struct ncclbpf_map *map);
uint32_t ncclbpf_map__max_entries(const struct ncclbpf_map *map);
/* "hash", "array", "percpu_hash", ...; NULL for a number that is no map type. */
const char *ncclbpf_map_type__name(uint64_t type);

/*
 * Copy-in/copy-out element access for hosts and tools; never torn.  For
 * per-thread maps, value holds NCCLBPF_NR_SLOTS values back to back.
 */
int ncclbpf_map__lookup(struct ncclbpf_map *map, const void *key, void *value);
int ncclbpf_map__update(struct ncclbpf_map *map, const void *key, const void *value,
			uint64_t flags);
int ncclbpf_map__delete(struct ncclbpf_map *map, const void *key);
/* key NULL: first key.  -ENOENT after the last. */
int ncclbpf_map__next_key(struct ncclbpf_map *map, const void *key, void *next_key);

/*
 * Lock health of a map, shared by every process that uses it.  A lock
 * whose holder died is taken over and repaired by the next writer; a call
 * that cannot get a lock in time fails with -EBUSY instead of waiting (see
 * docs/maps.md).
 */
struct ncclbpf_map_lock_stats {
	uint64_t timeouts;    /* calls that failed with -EBUSY: no lock in time */
	uint64_t recoveries;  /* locks taken over from a dead holder */
	uint64_t discarded;   /* values a dead writer left half-written: removed or zeroed */
};
int ncclbpf_map__lock_stats(const struct ncclbpf_map *map, struct ncclbpf_map_lock_stats *st);

/* Ring buffer consumer: calls fn for each committed record; returns count or -errno. */
typedef int (*ncclbpf_ringbuf_fn)(void *user, const void *data, uint32_t size);
int ncclbpf_ringbuf__consume(struct ncclbpf_map *map, ncclbpf_ringbuf_fn fn, void *user);
/* Records dropped because the buffer was full. */
uint64_t ncclbpf_ringbuf__dropped(const struct ncclbpf_map *map);

/* ---- host logger ------------------------------------------------------- */

enum ncclbpf_log_level { NCCLBPF_LOG_WARN = 2, NCCLBPF_LOG_INFO = 3, NCCLBPF_LOG_DEBUG = 5 };
typedef void (*ncclbpf_log_fn)(int level, const char *msg);
/* Where bpf_trace_printk/bpf_printk output and runtime diagnostics go (default: stderr). */
void ncclbpf_set_logger(ncclbpf_log_fn fn);

#ifdef __cplusplus
}
#endif
#endif
