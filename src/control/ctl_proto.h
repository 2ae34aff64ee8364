/*
 * ctl_proto.h - the control-socket protocol shared by the plugin's control
 * thread and the ncclbpf command.
 *
 * Transport: one Unix stream socket per process instance,
 * <runtime dir>/<pid>.<token>.sock (the token tells apart processes that
 * share a pid in different pid namespaces; see runtime/rundir.h).
 * A connection carries one request and one response.  Each message is a
 * frame: a 12-byte header (little-endian)
 *
 *     u32 magic "NBPC" (0x4350424e)  u16 version (1)  u16 type  u32 length
 *
 * followed by `length` bytes of payload.  Requests are at most
 * NBPF_CTL_MAX_REQUEST bytes, responses at most NBPF_CTL_MAX_RESPONSE.  A
 * response's type is the request's type | NBPF_CTL_REPLY.
 *
 * Payload: text records, one per line.  A record is a kind (a bare word)
 * followed by space-separated key=value tokens; keys are [a-z0-9_]+, values
 * are percent-encoded (every byte outside [A-Za-z0-9._:/,+@-] becomes %XX),
 * so values may hold any bytes but a record never holds a space, '=' or
 * newline it did not mean.  The first record of every response is
 *
 *     status err=<negative errno or 0> msg=<text>
 *
 * and the data records follow.  Unknown kinds and keys are ignored by both
 * sides, so either side can add fields without a version bump.
 */
#ifndef NCCLBPF_CTL_PROTO_H
#define NCCLBPF_CTL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NBPF_CTL_MAGIC        0x4350424eu /* "NBPC" read as little-endian */
#define NBPF_CTL_VERSION      1
#define NBPF_CTL_HDR_SIZE     12
#define NBPF_CTL_MAX_REQUEST  (64u * 1024u)
#define NBPF_CTL_MAX_RESPONSE (16u * 1024u * 1024u)
#define NBPF_CTL_MAX_RECORDS  65536u
#define NBPF_CTL_MAX_TOKENS   256u
#define NBPF_CTL_REPLY        0x8000u

enum nbpf_ctl_type {
	NBPF_CTL_HELLO     = 1, /* process summary: pid, version, comm/prog counts */
	NBPF_CTL_PS        = 2, /* communicators and loaded programs */
	NBPF_CTL_PROGS     = 3, /* programs with statistics */
	NBPF_CTL_MAPS      = 4, /* maps: name, shape, shared-memory path */
	NBPF_CTL_TELEMETRY = 5, /* per communicator x collective counters and histograms */
	NBPF_CTL_RELOAD    = 6, /* req: "reload path=... [at_call=N] [deadline=T]" */
	NBPF_CTL_ROLLBACK  = 7, /* re-publish the previous image [at_call=N] [deadline=T] */
	NBPF_CTL_CALLS     = 8, /* current call number of each communicator */
	/*
	 * Agreed changes (docs/operations.md): stage everywhere, then commit
	 * at one call everywhere or abort.  Times are CLOCK_REALTIME ns set by
	 * the coordinator: a stage read after its deadline is refused, a
	 * staged change not decided by its hold is dropped.
	 *   stage  id= deadline= hold= owner= (path=SPEC | rollback=1 | op records)
	 *          op map= key=HEX [value=HEX]  (no value: delete the key)
	 *   commit id= at_call= [known=ID,ID,...]  (decimal comm ids)
	 *   abort  id=
	 */
	NBPF_CTL_STAGE     = 9,
	NBPF_CTL_COMMIT    = 10,
	NBPF_CTL_ABORT     = 11,
	NBPF_CTL_CHANGES   = 12, /* the staged change and the recent decisions */
	NBPF_CTL_LEASE     = 13, /* "lease name= owner= until= [take=1]" (until 0: release) */
	NBPF_CTL_TYPE_MAX  = 13,
};

struct nbpf_ctl_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t len;
};

void nbpf_ctl_hdr_encode(uint8_t out[NBPF_CTL_HDR_SIZE], uint16_t type, uint32_t len);
/*
 * Decodes and checks a header: -EPROTO for a wrong magic, -EPROTONOSUPPORT
 * for another version, -EMSGSIZE when len exceeds max_len.  The header is
 * filled even on error so the caller can answer with the right type.
 */
int nbpf_ctl_hdr_decode(const uint8_t in[NBPF_CTL_HDR_SIZE], uint32_t max_len,
			struct nbpf_ctl_hdr *h);

/* ---- parsed payloads --------------------------------------------------- */

struct nbpf_ctl_kv {
	const char *key;
	const char *val; /* decoded, NUL-terminated (may contain no NUL itself) */
};

struct nbpf_ctl_rec {
	const char *kind;
	struct nbpf_ctl_kv *kv;
	uint32_t n_kv;
};

struct nbpf_ctl_msg {
	uint16_t type;
	struct nbpf_ctl_rec *recs;
	uint32_t n_recs;
	char *text;              /* owned: decoded copy all strings point into */
	struct nbpf_ctl_kv *kvs; /* owned: all records' tokens */
};

/*
 * Parses a payload into msg (which the caller frees with nbpf_ctl_msg_free,
 * also after a failure).  Refuses with -EBADMSG: NUL bytes, bad percent
 * escapes, keys outside [a-z0-9_], tokens without '=', more than
 * NBPF_CTL_MAX_RECORDS records or NBPF_CTL_MAX_TOKENS tokens in one.
 * Empty lines are skipped.  The message is recorded through nbpf_err.
 */
int nbpf_ctl_msg_parse(uint16_t type, const void *payload, size_t len, struct nbpf_ctl_msg *msg);
void nbpf_ctl_msg_free(struct nbpf_ctl_msg *msg);

/* Value of key in rec, or NULL. */
const char *nbpf_ctl_rec_get(const struct nbpf_ctl_rec *rec, const char *key);
/* Integer value (decimal or 0x hex, optional '-' for the signed form): 0, -ENOENT, -EINVAL. */
int nbpf_ctl_rec_u64(const struct nbpf_ctl_rec *rec, const char *key, uint64_t *v);
int nbpf_ctl_rec_i64(const struct nbpf_ctl_rec *rec, const char *key, int64_t *v);
/* The first record of a response: err (0 if absent) and msg ("" if absent). */
int nbpf_ctl_msg_status(const struct nbpf_ctl_msg *msg, const char **errmsg);

/* ---- building payloads ------------------------------------------------- */

struct nbpf_ctl_buf {
	char *data;
	size_t len, cap;
	size_t max;  /* 0: NBPF_CTL_MAX_RESPONSE */
	int err;     /* sticky: -ENOMEM or -EMSGSIZE once the payload could not grow */
};

void nbpf_ctl_buf_free(struct nbpf_ctl_buf *b);
/* Raw bytes (already in record syntax). */
void nbpf_ctl_buf_append(struct nbpf_ctl_buf *b, const char *s, size_t n);
/* Starts a new record of this kind. */
void nbpf_ctl_buf_rec(struct nbpf_ctl_buf *b, const char *kind);
void nbpf_ctl_buf_str(struct nbpf_ctl_buf *b, const char *key, const char *val);
void nbpf_ctl_buf_u64(struct nbpf_ctl_buf *b, const char *key, uint64_t v);
void nbpf_ctl_buf_i64(struct nbpf_ctl_buf *b, const char *key, int64_t v);
void nbpf_ctl_buf_x64(struct nbpf_ctl_buf *b, const char *key, uint64_t v); /* 0x%016llx */
/* A comma-separated list of unsigned integers (histogram buckets). */
void nbpf_ctl_buf_u64s(struct nbpf_ctl_buf *b, const char *key, const uint64_t *v, size_t n);
/* Parses such a list: count of values stored (at most max), or -EINVAL. */
int nbpf_ctl_parse_u64s(const char *s, uint64_t *v, size_t max);

/* ---- runtime directory ------------------------------------------------- */

/*
 * The per-user directory holding control sockets: $NCCLBPF_CTL_DIR if set,
 * else $XDG_RUNTIME_DIR/ncclbpf, else /run/user/<uid>/ncclbpf when that
 * parent exists, else /tmp/ncclbpf-<uid>.  With create, a missing directory
 * is made 0700.  $NCCLBPF_CTL_DIR must be a real directory (not a symlink),
 * ours and not writable by others, or sticky (like /tmp); it is never
 * chmod'ed.  A default that someone else has, or that is not private, is
 * replaced by a private sibling <dir>.XXXXXX of ours (one WARN).  Returns
 * 0 or a negative errno with a message.
 */
int nbpf_ctl_runtime_dir(char *out, size_t n, bool create);
/* Calls fn for every directory where a process of ours may have its socket. */
int nbpf_ctl_runtime_dir_foreach(int (*fn)(const char *dir, void *arg), void *arg);
/* Socket path of a process instance: <dir>/<instance>.sock (see runtime/rundir.h). */
int nbpf_ctl_sock_path(char *out, size_t n, const char *dir, const char *instance);
/* Is name a socket name "<pid>.<token>.sock"?  *pid gets the pid the process saw. */
bool nbpf_ctl_sock_name(const char *name, long *pid);

#endif
