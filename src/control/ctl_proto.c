/*
 * ctl_proto.c - framing, record parsing/building and the runtime directory
 * of the control protocol (see ctl_proto.h for the wire format).
 */
#include "ctl_proto.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ncclbpf/runtime.h"
#include "runtime/error.h"
#include "runtime/rundir.h"

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void nbpf_ctl_hdr_encode(uint8_t out[NBPF_CTL_HDR_SIZE], uint16_t type, uint32_t len)
{
	put_le32(out, NBPF_CTL_MAGIC);
	put_le16(out + 4, NBPF_CTL_VERSION);
	put_le16(out + 6, type);
	put_le32(out + 8, len);
}

int nbpf_ctl_hdr_decode(const uint8_t in[NBPF_CTL_HDR_SIZE], uint32_t max_len,
			struct nbpf_ctl_hdr *h)
{
	h->magic = get_le32(in);
	h->version = (uint16_t)(in[4] | in[5] << 8);
	h->type = (uint16_t)(in[6] | in[7] << 8);
	h->len = get_le32(in + 8);
	if (h->magic != NBPF_CTL_MAGIC)
		return nbpf_err(-EPROTO, "control: bad frame magic 0x%08x", h->magic);
	if (h->version != NBPF_CTL_VERSION)
		return nbpf_err(-EPROTONOSUPPORT, "control: protocol version %u not supported (want %u)",
				h->version, NBPF_CTL_VERSION);
	if (h->len > max_len)
		return nbpf_err(-EMSGSIZE, "control: frame of %u bytes exceeds the limit of %u",
				h->len, max_len);
	return 0;
}

/* ---- parsing ------------------------------------------------------------ */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/*
 * Decodes a percent-encoded value in place (the result is never longer);
 * refuses escapes that are truncated, not hex, or decode to NUL.
 */
static int decode_value(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (*r != '%') {
			*w++ = *r;
			continue;
		}
		int hi = hexval(r[1]), lo = hi < 0 ? -1 : hexval(r[2]);

		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
			return -EBADMSG;
		*w++ = (char)(hi << 4 | lo);
		r += 2;
	}
	*w = 0;
	return 0;
}

void nbpf_ctl_msg_free(struct nbpf_ctl_msg *msg)
{
	if (!msg)
		return;
	free(msg->recs);
	free(msg->kvs);
	free(msg->text);
	memset(msg, 0, sizeof(*msg));
}

/*
 * Two passes over a private copy: the first counts records and tokens so
 * each array is allocated once (bounded by the limits before allocating),
 * the second splits in place.  Every failure leaves msg freeable.
 */
int nbpf_ctl_msg_parse(uint16_t type, const void *payload, size_t len, struct nbpf_ctl_msg *msg)
{
	size_t n_recs = 0, n_tok = 0;
	char *p, *line, *save_line = NULL;
	uint32_t ri = 0, ki = 0;
	int err = 0;

	memset(msg, 0, sizeof(*msg));
	msg->type = type;
	if (len > NBPF_CTL_MAX_RESPONSE)
		return nbpf_err(-EMSGSIZE, "control: payload of %zu bytes too large", len);
	if (len && memchr(payload, 0, len))
		return nbpf_err(-EBADMSG, "control: payload contains a NUL byte");
	msg->text = malloc(len + 1);
	if (!msg->text)
		return nbpf_err(-ENOMEM, "control: out of memory");
	if (len)
		memcpy(msg->text, payload, len);
	msg->text[len] = 0;

	/* Count: a record per non-empty line, a token per space-separated word. */
	for (p = msg->text; *p;) {
		size_t words = 0;
		bool in_word = false;

		for (; *p && *p != '\n'; p++) {
			if (*p == ' ' || *p == '\r' || *p == '\t') {
				in_word = false;
			} else if (!in_word) {
				in_word = true;
				words++;
			}
		}
		if (*p == '\n')
			p++;
		if (!words)
			continue;
		if (words - 1 > NBPF_CTL_MAX_TOKENS)
			return nbpf_err(-EBADMSG, "control: record %zu has more than %u fields",
					n_recs + 1, NBPF_CTL_MAX_TOKENS);
		if (++n_recs > NBPF_CTL_MAX_RECORDS)
			return nbpf_err(-EBADMSG, "control: more than %u records", NBPF_CTL_MAX_RECORDS);
		n_tok += words - 1;
	}
	msg->recs = calloc(n_recs ? n_recs : 1, sizeof(*msg->recs));
	msg->kvs = calloc(n_tok ? n_tok : 1, sizeof(*msg->kvs));
	if (!msg->recs || !msg->kvs)
		return nbpf_err(-ENOMEM, "control: out of memory");

	for (line = strtok_r(msg->text, "\n", &save_line); line;
	     line = strtok_r(NULL, "\n", &save_line)) {
		char *save_tok = NULL, *tok = strtok_r(line, " \r\t", &save_tok);
		struct nbpf_ctl_rec *rec;

		if (!tok)
			continue;
		rec = &msg->recs[ri++];
		for (const char *c = tok; *c; c++)
			if (!key_char(*c)) {
				err = nbpf_err(-EBADMSG, "control: record %u: bad kind", ri);
				goto out;
			}
		rec->kind = tok;
		rec->kv = &msg->kvs[ki];
		while ((tok = strtok_r(NULL, " \r\t", &save_tok))) {
			char *eq = strchr(tok, '=');

			if (!eq || eq == tok) {
				err = nbpf_err(-EBADMSG, "control: record %u: field without key=value", ri);
				goto out;
			}
			*eq = 0;
			for (const char *c = tok; *c; c++)
				if (!key_char(*c)) {
					err = nbpf_err(-EBADMSG, "control: record %u: bad key", ri);
					goto out;
				}
			if (decode_value(eq + 1)) {
				err = nbpf_err(-EBADMSG, "control: record %u: bad escape in '%s'", ri, tok);
				goto out;
			}
			msg->kvs[ki].key = tok;
			msg->kvs[ki].val = eq + 1;
			ki++;
			rec->n_kv++;
		}
	}
	msg->n_recs = ri;
out:
	return err;
}

const char *nbpf_ctl_rec_get(const struct nbpf_ctl_rec *rec, const char *key)
{
	for (uint32_t i = 0; rec && i < rec->n_kv; i++)
		if (!strcmp(rec->kv[i].key, key))
			return rec->kv[i].val;
	return NULL;
}

int nbpf_ctl_rec_u64(const struct nbpf_ctl_rec *rec, const char *key, uint64_t *v)
{
	const char *s = nbpf_ctl_rec_get(rec, key);
	char *end;

	if (!s)
		return -ENOENT;
	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return (errno || *end) ? -EINVAL : 0;
}

int nbpf_ctl_rec_i64(const struct nbpf_ctl_rec *rec, const char *key, int64_t *v)
{
	const char *s = nbpf_ctl_rec_get(rec, key);
	char *end;

	if (!s)
		return -ENOENT;
	if (!*s || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	*v = strtoll(s, &end, 0);
	return (errno || *end) ? -EINVAL : 0;
}

int nbpf_ctl_msg_status(const struct nbpf_ctl_msg *msg, const char **errmsg)
{
	int64_t e = 0;
	const char *m = NULL;

	if (msg->n_recs && !strcmp(msg->recs[0].kind, "status")) {
		if (nbpf_ctl_rec_i64(&msg->recs[0], "err", &e) || e > 0 || e < -4095)
			e = -EPROTO;
		m = nbpf_ctl_rec_get(&msg->recs[0], "msg");
	} else {
		e = -EPROTO;
		m = "response without a status record";
	}
	if (errmsg)
		*errmsg = m ? m : "";
	return (int)e;
}

int nbpf_ctl_parse_u64s(const char *s, uint64_t *v, size_t max)
{
	size_t n = 0;

	if (!s)
		return -EINVAL;
	if (!*s)
		return 0;
	for (;;) {
		char *end;

		if (*s < '0' || *s > '9' || n >= max)
			return -EINVAL;
		errno = 0;
		v[n++] = strtoull(s, &end, 10);
		if (errno)
			return -EINVAL;
		if (!*end)
			return (int)n;
		if (*end != ',')
			return -EINVAL;
		s = end + 1;
	}
}

/* ---- building ----------------------------------------------------------- */

void nbpf_ctl_buf_free(struct nbpf_ctl_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

static bool buf_reserve(struct nbpf_ctl_buf *b, size_t more)
{
	size_t max = b->max ? b->max : NBPF_CTL_MAX_RESPONSE;
	size_t want = b->len + more + 1;

	if (b->err)
		return false;
	if (want > max) {
		b->err = -EMSGSIZE;
		return false;
	}
	if (want > b->cap) {
		size_t cap = b->cap ? b->cap : 1024;
		char *d;

		while (cap < want)
			cap *= 2;
		d = realloc(b->data, cap);
		if (!d) {
			b->err = -ENOMEM;
			return false;
		}
		b->data = d;
		b->cap = cap;
	}
	return true;
}

static void buf_raw(struct nbpf_ctl_buf *b, const char *s, size_t n)
{
	if (!buf_reserve(b, n))
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = 0;
}

void nbpf_ctl_buf_append(struct nbpf_ctl_buf *b, const char *s, size_t n)
{
	buf_raw(b, s, n);
}

void nbpf_ctl_buf_rec(struct nbpf_ctl_buf *b, const char *kind)
{
	if (b->len)
		buf_raw(b, "\n", 1);
	buf_raw(b, kind, strlen(kind));
}

static bool plain_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("._:/,+@-", c) != NULL;
}

void nbpf_ctl_buf_str(struct nbpf_ctl_buf *b, const char *key, const char *val)
{
	static const char hex[] = "0123456789ABCDEF";

	buf_raw(b, " ", 1);
	buf_raw(b, key, strlen(key));
	buf_raw(b, "=", 1);
	for (const unsigned char *p = (const unsigned char *)(val ? val : ""); *p; p++) {
		if (plain_char(*p) && *p) {
			buf_raw(b, (const char *)p, 1);
		} else {
			char esc[3] = { '%', hex[*p >> 4], hex[*p & 15] };

			buf_raw(b, esc, 3);
		}
	}
}

void nbpf_ctl_buf_u64(struct nbpf_ctl_buf *b, const char *key, uint64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%" PRIu64, v);
	nbpf_ctl_buf_str(b, key, s);
}

void nbpf_ctl_buf_i64(struct nbpf_ctl_buf *b, const char *key, int64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%" PRId64, v);
	nbpf_ctl_buf_str(b, key, s);
}

void nbpf_ctl_buf_x64(struct nbpf_ctl_buf *b, const char *key, uint64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "0x%016" PRIx64, v);
	nbpf_ctl_buf_str(b, key, s);
}

void nbpf_ctl_buf_u64s(struct nbpf_ctl_buf *b, const char *key, const uint64_t *v, size_t n)
{
	char s[24];

	buf_raw(b, " ", 1);
	buf_raw(b, key, strlen(key));
	buf_raw(b, "=", 1);
	for (size_t i = 0; i < n; i++) {
		int k = snprintf(s, sizeof(s), "%s%" PRIu64, i ? "," : "", v[i]);

		buf_raw(b, s, (size_t)k);
	}
}

/* ---- runtime directory -------------------------------------------------- */

/*
 * The directory candidate: $NCCLBPF_CTL_DIR (explicit: used as given or
 * refused, never chmod'ed), else a predictable default that falls back to
 * a private sibling when someone else has it (runtime/rundir.c).
 */
static int ctl_dir_candidate(char *out, size_t n, unsigned *flags)
{
	const char *env = getenv("NCCLBPF_CTL_DIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char run_user[64];
	struct stat st;
	int k;

	*flags = 0;
	snprintf(run_user, sizeof(run_user), "/run/user/%u", (unsigned)geteuid());
	if (env && *env) {
		k = snprintf(out, n, "%s", env);
		*flags = NBPF_RUNDIR_EXPLICIT;
	} else if (xdg && *xdg && xdg[0] == '/') {
		k = snprintf(out, n, "%s/ncclbpf", xdg);
	} else if (!stat(run_user, &st) && S_ISDIR(st.st_mode) && st.st_uid == geteuid()) {
		k = snprintf(out, n, "%s/ncclbpf", run_user);
	} else {
		k = snprintf(out, n, "/tmp/ncclbpf-%u", (unsigned)geteuid());
	}
	if (k < 0 || (size_t)k >= n)
		return nbpf_err(-ENAMETOOLONG, "control: runtime directory path too long");
	return 0;
}

int nbpf_ctl_runtime_dir(char *out, size_t n, bool create)
{
	char cand[4096], why[768];
	unsigned flags;
	int err = ctl_dir_candidate(cand, sizeof(cand), &flags);

	if (err)
		return err;
	err = nbpf_rundir_resolve(cand, flags | (create ? NBPF_RUNDIR_CREATE : 0),
				  "set NCCLBPF_CTL_DIR (and the same for the ncclbpf command) to a directory of your own to silence this",
				  out, n);
	if (err) {
		snprintf(why, sizeof(why), "%s", ncclbpf_errmsg());
		return nbpf_err(err, "control directory %s", why);
	}
	return 0;
}

int nbpf_ctl_runtime_dir_foreach(int (*fn)(const char *dir, void *arg), void *arg)
{
	char cand[4096];
	unsigned flags;
	int err = ctl_dir_candidate(cand, sizeof(cand), &flags);

	return err ? err : nbpf_rundir_foreach(cand, flags, fn, arg);
}

int nbpf_ctl_sock_path(char *out, size_t n, const char *dir, const char *instance)
{
	int k = snprintf(out, n, "%s/%s.sock", dir, instance);

	/* sun_path holds 108 bytes including the NUL. */
	if (k < 0 || (size_t)k >= n || k >= 108)
		return nbpf_err(-ENAMETOOLONG, "control: socket path %s/%s.sock too long", dir,
				instance);
	return 0;
}

bool nbpf_ctl_sock_name(const char *name, long *pid)
{
	size_t k = nbpf_instance_prefix(name, pid);

	return k && !strcmp(name + k, ".sock");
}
