// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * etcd.c - the few etcd v3 calls the exchange needs, through etcd's JSON
 * gateway (POST /v3/kv/put, /v3/kv/range, /v3/kv/txn, /v3/lease/grant;
 * keys and values base64), with libcurl, jansson and nettle's base64.
 *
 * No consensus of our own: a decision is one etcd transaction that puts a
 * key only if it was never created, so of the nodes proposing, exactly one
 * writes it and every node reads the same value.  Endpoints are tried in
 * turn: a member that is down or partitioned costs one attempt, and any
 * member that answers speaks for the cluster (the gateway serves
 * linearizable reads and writes through the leader).
 *
 * libcurl is opened at run time, by the first etcd call, not linked: linked,
 * it brought twenty more libraries (its TLS, Kerberos, LDAP, SSH stacks) into
 * every start of the command, which doubled the cost of each `ncclbpf map
 * update`, `ps` or `reload` that scripts and the rank tester run by the
 * thousand, for a path only `--etcd` takes.  The package still depends on
 * libcurl4; without it, `--etcd` fails with a message naming the package.
 */
#include "etcd.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <jansson.h>
#include <nettle/base64.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

struct nbpf_etcd {
	CURL *curl;
	char **ep;        /* endpoints, "http://host:port" */
	int n_ep, cur;    /* the one that answered last is tried first */
	int timeout_ms;
};

struct body {
	char *data;
	size_t len;
};

/* The libcurl calls used, resolved once from libcurl.so.4. */
static struct {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *c);
	void (*easy_reset)(CURL *c);
	CURLcode (*easy_setopt)(CURL *c, CURLoption o, ...);
	CURLcode (*easy_perform)(CURL *c);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO i, ...);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
	bool ok;
	char why[256];
} cu;
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
	void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		snprintf(cu.why, sizeof(cu.why), "%s", dlerror());
		return;
	}
	*(void **)&cu.global_init = dlsym(lib, "curl_global_init");
	*(void **)&cu.easy_init = dlsym(lib, "curl_easy_init");
	*(void **)&cu.easy_cleanup = dlsym(lib, "curl_easy_cleanup");
	*(void **)&cu.easy_reset = dlsym(lib, "curl_easy_reset");
	*(void **)&cu.easy_setopt = dlsym(lib, "curl_easy_setopt");
	*(void **)&cu.easy_perform = dlsym(lib, "curl_easy_perform");
	*(void **)&cu.easy_getinfo = dlsym(lib, "curl_easy_getinfo");
	*(void **)&cu.slist_append = dlsym(lib, "curl_slist_append");
	*(void **)&cu.slist_free_all = dlsym(lib, "curl_slist_free_all");
	cu.ok = cu.global_init && cu.easy_init && cu.easy_cleanup && cu.easy_reset && cu.easy_setopt &&
		cu.easy_perform && cu.easy_getinfo && cu.slist_append && cu.slist_free_all &&
		cu.global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
	if (!cu.ok)
		snprintf(cu.why, sizeof(cu.why), "libcurl.so.4 lacks a call or cannot start");
}

static size_t on_data(char *p, size_t size, size_t n, void *user)
{
	struct body *b = user;
	char *d;

	if (b->len + size * n > (64u << 20))
		return 0; /* an answer this large is no answer of ours */
	d = realloc(b->data, b->len + size * n + 1);
	if (!d)
		return 0;
	memcpy(d + b->len, p, size * n);
	b->data = d;
	b->len += size * n;
	d[b->len] = 0;
	return size * n;
}

static char *b64(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(BASE64_ENCODE_RAW_LENGTH(n) + 1);

	if (!out)
		return NULL;
	base64_encode_raw(out, n, (const uint8_t *)s);
	out[BASE64_ENCODE_RAW_LENGTH(n)] = 0;
	return out;
}

static char *unb64(const char *s)
{
	struct base64_decode_ctx ctx;
	size_t n = strlen(s), out_len = BASE64_DECODE_LENGTH(n);
	uint8_t *out = malloc(out_len + 1);

	if (!out)
		return NULL;
	base64_decode_init(&ctx);
	if (!base64_decode_update(&ctx, &out_len, out, n, s) || !base64_decode_final(&ctx)) {
		free(out);
		return NULL;
	}
	out[out_len] = 0;
	return (char *)out;
}

int nbpf_etcd_open(const char *endpoints, int timeout_ms, struct nbpf_etcd **out)
{
	struct nbpf_etcd *e;
	char *list, *save = NULL;

	*out = NULL;
	pthread_once(&curl_once, curl_init_once);
	if (!cu.ok)
		return nbpf_err(-ENOSYS, "etcd: libcurl (Debian: libcurl4) cannot be used: %s", cu.why);
	e = calloc(1, sizeof(*e));
	list = strdup(endpoints ? endpoints : "");
	if (!e || !list) {
		free(e);
		free(list);
		return -ENOMEM;
	}
	e->timeout_ms = timeout_ms > 0 ? timeout_ms : 2000;
	for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char **v = realloc(e->ep, (size_t)(e->n_ep + 1) * sizeof(*v));

		if (!v)
			break;
		e->ep = v;
		e->ep[e->n_ep] = malloc(strlen(t) + 8);
		if (!e->ep[e->n_ep])
			break;
		/* host:port alone means http, as etcdctl's --endpoints does */
		sprintf(e->ep[e->n_ep++], "%s%s", strstr(t, "://") ? "" : "http://", t);
	}
	free(list);
	e->curl = cu.easy_init();
	if (!e->curl || !e->n_ep) {
		nbpf_etcd_close(e);
		return nbpf_err(-EINVAL, "etcd: no endpoint in '%s'", endpoints ? endpoints : "");
	}
	*out = e;
	return 0;
}

void nbpf_etcd_close(struct nbpf_etcd *e)
{
	if (!e)
		return;
	if (e->curl)
		cu.easy_cleanup(e->curl);
	for (int i = 0; i < e->n_ep; i++)
		free(e->ep[i]);
	free(e->ep);
	free(e);
}

/* POSTs req (consumed) to path on the first endpoint that answers; *resp parsed. */
static int call(struct nbpf_etcd *e, const char *path, json_t *req, json_t **resp)
{
	char *text = json_dumps(req, JSON_COMPACT), url[512], why[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdr = cu.slist_append(NULL, "Content-Type: application/json");
	int err = -EHOSTUNREACH;

	json_decref(req);
	*resp = NULL;
	if (!text || !hdr) {
		free(text);
		cu.slist_free_all(hdr);
		return -ENOMEM;
	}
	for (int k = 0; k < e->n_ep && err; k++) {
		int i = (e->cur + k) % e->n_ep;
		struct body b = { 0 };
		long code = 0;
		CURLcode rc;

		snprintf(url, sizeof(url), "%s%s", e->ep[i], path);
		cu.easy_reset(e->curl);
		cu.easy_setopt(e->curl, CURLOPT_URL, url);
		cu.easy_setopt(e->curl, CURLOPT_HTTPHEADER, hdr);
		cu.easy_setopt(e->curl, CURLOPT_POSTFIELDS, text);
		cu.easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_data);
		cu.easy_setopt(e->curl, CURLOPT_WRITEDATA, &b);
		cu.easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, (long)e->timeout_ms);
		cu.easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)e->timeout_ms);
		cu.easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
		cu.easy_setopt(e->curl, CURLOPT_ERRORBUFFER, why);
		rc = cu.easy_perform(e->curl);
		cu.easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &code);
		if (rc == CURLE_OK && code == 200 && b.data && (*resp = json_loads(b.data, 0, NULL))) {
			e->cur = i;
			err = 0;
		} else if (rc == CURLE_OK) {
			snprintf(why, sizeof(why), "HTTP %ld: %.200s", code, b.data ? b.data : "");
		}
		free(b.data);
	}
	if (err)
		nbpf_err(err, "etcd: no endpoint answered %s (last: %s)", path, why);
	free(text);
	cu.slist_free_all(hdr);
	return err;
}

int nbpf_etcd_lease(struct nbpf_etcd *e, int ttl_s, int64_t *id)
{
	json_t *resp, *v;
	int err = call(e, "/v3/lease/grant", json_pack("{s:i}", "TTL", ttl_s), &resp);

	*id = 0;
	if (err)
		return err;
	v = json_object_get(resp, "ID");
	if (json_is_string(v))
		*id = strtoll(json_string_value(v), NULL, 10);
	else if (json_is_integer(v))
		*id = json_integer_value(v);
	json_decref(resp);
	return *id ? 0 : nbpf_err(-EPROTO, "etcd: lease grant without an ID");
}

static json_t *put_req(const char *key, const char *val, int64_t lease)
{
	char *k = b64(key), *v = b64(val), ls[32];
	json_t *r = NULL;

	snprintf(ls, sizeof(ls), "%lld", (long long)lease);
	if (k && v)
		r = lease ? json_pack("{s:s,s:s,s:s}", "key", k, "value", v, "lease", ls)
			  : json_pack("{s:s,s:s}", "key", k, "value", v);
	free(k);
	free(v);
	return r;
}

int nbpf_etcd_put(struct nbpf_etcd *e, const char *key, const char *val, int64_t lease)
{
	json_t *req = put_req(key, val, lease), *resp;
	int err;

	if (!req)
		return -ENOMEM;
	err = call(e, "/v3/kv/put", req, &resp);
	json_decref(resp);
	return err;
}

/* The kvs array of a range response into out (keys and values decoded). */
static int kvs_of(json_t *range, struct nbpf_etcd_kv **out, int *n)
{
	json_t *kvs = json_object_get(range, "kvs"), *kv;
	size_t i;

	*out = NULL;
	*n = 0;
	if (!json_is_array(kvs) || !json_array_size(kvs))
		return 0;
	*out = calloc(json_array_size(kvs), sizeof(**out));
	if (!*out)
		return -ENOMEM;
	json_array_foreach(kvs, i, kv) {
		const char *k = json_string_value(json_object_get(kv, "key"));
		const char *v = json_string_value(json_object_get(kv, "value"));

		(*out)[*n].key = k ? unb64(k) : strdup("");
		(*out)[*n].value = v ? unb64(v) : strdup(""); /* an empty value is left out */
		if ((*out)[*n].key && (*out)[*n].value)
			(*n)++;
	}
	return 0;
}

void nbpf_etcd_kvs_free(struct nbpf_etcd_kv *kvs, int n)
{
	for (int i = 0; kvs && i < n; i++) {
		free(kvs[i].key);
		free(kvs[i].value);
	}
	free(kvs);
}

int nbpf_etcd_range_prefix(struct nbpf_etcd *e, const char *prefix, struct nbpf_etcd_kv **kvs,
			   int *n)
{
	size_t len = strlen(prefix);
	char *end = malloc(len + 1), *k = b64(prefix), *ke = NULL;
	json_t *resp = NULL;
	int err = -ENOMEM;

	*kvs = NULL;
	*n = 0;
	if (end && k && len) {
		/* The range end of a prefix: its last byte plus one (our prefixes end in '/'). */
		memcpy(end, prefix, len + 1);
		end[len - 1]++;
		ke = b64(end);
	}
	if (ke && !(err = call(e, "/v3/kv/range", json_pack("{s:s,s:s}", "key", k, "range_end", ke),
			       &resp)))
		err = kvs_of(resp, kvs, n);
	json_decref(resp);
	free(end);
	free(k);
	free(ke);
	return err;
}

int nbpf_etcd_create(struct nbpf_etcd *e, const char *key, const char *val, int64_t lease,
		     char **existing)
{
	char *k = b64(key);
	json_t *put = put_req(key, val, lease), *req, *resp = NULL, *r;
	int err = -ENOMEM;

	*existing = NULL;
	if (!k || !put) {
		free(k);
		json_decref(put);
		return -ENOMEM;
	}
	/* Put only if the key was never created; else read what is there. */
	req = json_pack("{s:[{s:s,s:s,s:s,s:s}],s:[{s:o}],s:[{s:{s:s}}]}",
			"compare", "key", k, "target", "CREATE", "result", "EQUAL", "create_revision", "0",
			"success", "request_put", put,
			"failure", "request_range", "key", k);
	free(k);
	if (req)
		err = call(e, "/v3/kv/txn", req, &resp);
	if (err)
		return err;
	if (json_is_true(json_object_get(resp, "succeeded"))) {
		json_decref(resp);
		return 0;
	}
	r = json_array_get(json_object_get(resp, "responses"), 0);
	r = json_object_get(r, "response_range");
	{
		struct nbpf_etcd_kv *kvs;
		int n;

		err = kvs_of(r, &kvs, &n);
		if (!err && n)
			*existing = strdup(kvs[0].value);
		nbpf_etcd_kvs_free(kvs, n);
	}
	json_decref(resp);
	if (err)
		return err;
	return *existing ? 1 : nbpf_err(-EPROTO, "etcd: %s exists but could not be read", key);
}
