/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "http/webconfig.h"

#include <crypt.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>

#include "base/ratelimit.h"
#include "base/util.h"
#include "http/clientlimit.h"

/* The key of the login cache's HMAC: random per process, so cached digests mean nothing
 * outside it. */
static uint8_t cache_key[32];
static pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;

static void cache_key_init(void)
{
	size_t got = 0;

	while (got < sizeof(cache_key)) {
		ssize_t n = getrandom(cache_key + got, sizeof(cache_key) - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			break; /* no cache key: the cache is still keyed by the (zero) key */
		}
		got += (size_t)n;
	}
}

static int build_priorities(struct webconfig *wc);

/* ---- parsing ---- */

struct parse {
	yaml_document_t *doc;
	const char *source;
	char **ret_error;
	struct webconfig *wc;
};

/* Sets the error to "SOURCE:LINE:COLUMN: what" for node n (or the file when n is NULL). */
__attribute__((format(printf, 3, 4))) static int fail(struct parse *p, const yaml_node_t *n,
						      const char *fmt, ...)
{
	_cleanup_free_ char *msg = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	if (!msg)
		return -ENOMEM;
	if (n)
		r = asprintf(p->ret_error, "%s:%zu:%zu: %s", p->source, n->start_mark.line + 1,
			     n->start_mark.column + 1, msg);
	else
		r = asprintf(p->ret_error, "%s: %s", p->source, msg);
	if (r < 0) {
		*p->ret_error = NULL;
		return -ENOMEM;
	}
	return -EINVAL;
}

static bool scalar_is(const yaml_node_t *n, const char *s)
{
	size_t len = strlen(s);

	return n->data.scalar.length == len && memcmp(n->data.scalar.value, s, len) == 0;
}

/* A plain scalar that YAML reads as null: "", "~", "null". */
static bool node_is_null(const yaml_node_t *n)
{
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	return scalar_is(n, "") || scalar_is(n, "~") || scalar_is(n, "null") ||
	       scalar_is(n, "Null") || scalar_is(n, "NULL");
}

/* The scalar as a C string; refuses embedded NULs and non-scalars. NULL is stored for null. */
static int get_string(struct parse *p, const yaml_node_t *n, const char *key, char **ret)
{
	char *s;

	if (node_is_null(n)) {
		*ret = NULL;
		return 0;
	}
	if (n->type != YAML_SCALAR_NODE)
		return fail(p, n, "%s: want a string", key);
	if (memchr(n->data.scalar.value, '\0', n->data.scalar.length))
		return fail(p, n, "%s: NUL byte in the value", key);
	s = strndup((const char *)n->data.scalar.value, n->data.scalar.length);
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

static int get_bool(struct parse *p, const yaml_node_t *n, const char *key, bool *ret)
{
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON" };
	static const char *const no[] = { "false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF" };

	if (n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
		for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
			if (scalar_is(n, yes[i])) {
				*ret = true;
				return 0;
			}
			if (scalar_is(n, no[i])) {
				*ret = false;
				return 0;
			}
		}
	}
	return fail(p, n, "%s: want true or false", key);
}

/* An empty sequence or null is fine; anything else is refused with why. */
static int refuse_unless_empty(struct parse *p, const yaml_node_t *n, const char *key,
			       const char *why)
{
	if (node_is_null(n))
		return 0;
	if (n->type == YAML_SEQUENCE_NODE && n->data.sequence.items.start == n->data.sequence.items.top)
		return 0;
	return fail(p, n, "%s: not supported by this exporter (%s)", key, why);
}

typedef int (*pair_fn)(struct parse *p, const yaml_node_t *key, const yaml_node_t *value);

/*
 * Calls fn for every key of the mapping n (null counts as empty). Keys must be strings and
 * must not repeat.
 */
static int for_each_pair(struct parse *p, const yaml_node_t *n, const char *what, pair_fn fn)
{
	if (node_is_null(n))
		return 0;
	if (n->type != YAML_MAPPING_NODE)
		return fail(p, n, "%s: want a mapping", what);
	for (yaml_node_pair_t *a = n->data.mapping.pairs.start; a < n->data.mapping.pairs.top; a++) {
		yaml_node_t *k = yaml_document_get_node(p->doc, a->key);
		yaml_node_t *v = yaml_document_get_node(p->doc, a->value);
		int r;

		if (!k || !v)
			return fail(p, n, "%s: broken mapping", what);
		if (k->type != YAML_SCALAR_NODE)
			return fail(p, k, "%s: keys must be strings", what);
		for (yaml_node_pair_t *b = n->data.mapping.pairs.start; b < a; b++) {
			yaml_node_t *k2 = yaml_document_get_node(p->doc, b->key);

			if (k2 && k2->type == YAML_SCALAR_NODE &&
			    k2->data.scalar.length == k->data.scalar.length &&
			    memcmp(k2->data.scalar.value, k->data.scalar.value, k->data.scalar.length) == 0)
				return fail(p, k, "%s: key \"%.*s\" given twice", what,
					    (int)k->data.scalar.length, (const char *)k->data.scalar.value);
		}
		r = fn(p, k, v);
		if (r < 0)
			return r;
	}
	return 0;
}

static int unknown_key(struct parse *p, const yaml_node_t *k, const char *where)
{
	return fail(p, k, "unknown key \"%.*s\" in %s", (int)k->data.scalar.length > 64 ? 64 : (int)k->data.scalar.length,
		    (const char *)k->data.scalar.value, where);
}

static int parse_tls_version(struct parse *p, const yaml_node_t *n, const char *key,
			     enum webconfig_tls_version *ret)
{
	static const char *const names[] = { "TLS10", "TLS11", "TLS12", "TLS13" };

	if (n->type == YAML_SCALAR_NODE)
		for (size_t i = 0; i < ELEMENTSOF(names); i++)
			if (scalar_is(n, names[i])) {
				*ret = (enum webconfig_tls_version)i;
				return 0;
			}
	return fail(p, n, "%s: want TLS10, TLS11, TLS12 or TLS13", key);
}

static const char *const client_auth_names[] = {
	[WEBCONFIG_NO_CLIENT_CERT] = "NoClientCert",
	[WEBCONFIG_REQUEST_CLIENT_CERT] = "RequestClientCert",
	[WEBCONFIG_REQUIRE_ANY_CLIENT_CERT] = "RequireAnyClientCert",
	[WEBCONFIG_VERIFY_CLIENT_CERT_IF_GIVEN] = "VerifyClientCertIfGiven",
	[WEBCONFIG_REQUIRE_AND_VERIFY_CLIENT_CERT] = "RequireAndVerifyClientCert",
};

const char *webconfig_client_auth_name(enum webconfig_client_auth a)
{
	return (size_t)a < ELEMENTSOF(client_auth_names) ? client_auth_names[a] : "?";
}

static int parse_client_auth(struct parse *p, const yaml_node_t *n,
			     enum webconfig_client_auth *ret)
{
	if (node_is_null(n)) {
		*ret = WEBCONFIG_NO_CLIENT_CERT;
		return 0;
	}
	if (n->type == YAML_SCALAR_NODE)
		for (size_t i = 0; i < ELEMENTSOF(client_auth_names); i++)
			if (scalar_is(n, client_auth_names[i])) {
				*ret = (enum webconfig_client_auth)i;
				return 0;
			}
	return fail(p, n,
		    "client_auth_type: want NoClientCert, RequestClientCert, RequireAnyClientCert, "
		    "VerifyClientCertIfGiven or RequireAndVerifyClientCert");
}

/*
 * Go's cipher suite names (crypto/tls CipherSuites() and InsecureCipherSuites()) as GnuTLS'
 * key exchange, cipher and MAC. The TLS 1.3 suites have no key exchange of their own: they
 * are always on, as in Go, where they cannot be configured.
 */
struct suite {
	const char *name;
	const char *kx, *cipher, *mac;
};

static const struct suite suites[] = {
	{ "TLS_AES_128_GCM_SHA256", NULL, "AES-128-GCM", "AEAD" },
	{ "TLS_AES_256_GCM_SHA384", NULL, "AES-256-GCM", "AEAD" },
	{ "TLS_CHACHA20_POLY1305_SHA256", NULL, "CHACHA20-POLY1305", "AEAD" },
	{ "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA", "AES-128-GCM", "AEAD" },
	{ "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA", "AES-256-GCM", "AEAD" },
	{ "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA", "AES-128-GCM", "AEAD" },
	{ "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA", "AES-256-GCM", "AEAD" },
	{ "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA", "CHACHA20-POLY1305", "AEAD" },
	{ "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA", "CHACHA20-POLY1305", "AEAD" },
	{ "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA", "AES-128-CBC", "SHA1" },
	{ "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA", "AES-256-CBC", "SHA1" },
	{ "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA", "AES-128-CBC", "SHA1" },
	{ "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA", "AES-256-CBC", "SHA1" },
	{ "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE-ECDSA", "AES-128-CBC", "SHA256" },
	{ "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA", "AES-128-CBC", "SHA256" },
	{ "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", "ECDHE-RSA", "3DES-CBC", "SHA1" },
	{ "TLS_RSA_WITH_AES_128_GCM_SHA256", "RSA", "AES-128-GCM", "AEAD" },
	{ "TLS_RSA_WITH_AES_256_GCM_SHA384", "RSA", "AES-256-GCM", "AEAD" },
	{ "TLS_RSA_WITH_AES_128_CBC_SHA", "RSA", "AES-128-CBC", "SHA1" },
	{ "TLS_RSA_WITH_AES_256_CBC_SHA", "RSA", "AES-256-CBC", "SHA1" },
	{ "TLS_RSA_WITH_AES_128_CBC_SHA256", "RSA", "AES-128-CBC", "SHA256" },
	{ "TLS_RSA_WITH_3DES_EDE_CBC_SHA", "RSA", "3DES-CBC", "SHA1" },
};

/* Go's curve names, as GnuTLS groups; the default order is Go's. */
static const char *const curves[][2] = {
	{ "X25519", "GROUP-X25519" },
	{ "CurveP256", "GROUP-SECP256R1" },
	{ "CurveP384", "GROUP-SECP384R1" },
	{ "CurveP521", "GROUP-SECP521R1" },
};

typedef int (*item_fn)(struct parse *p, const yaml_node_t *item);

/* Calls fn for every item of the sequence n (null counts as empty). */
static int for_each_item(struct parse *p, const yaml_node_t *n, const char *what, item_fn fn)
{
	if (node_is_null(n))
		return 0;
	if (n->type != YAML_SEQUENCE_NODE)
		return fail(p, n, "%s: want a list", what);
	for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
		yaml_node_t *item = yaml_document_get_node(p->doc, *i);
		int r;

		if (!item)
			return fail(p, n, "%s: broken list", what);
		if (item->type != YAML_SCALAR_NODE)
			return fail(p, item, "%s: want names", what);
		r = fn(p, item);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Appends index i to list (n entries, room for max) unless it is there already. */
static int add_index(struct parse *p, const yaml_node_t *item, const char *what, uint8_t *list,
		     size_t *n, size_t max, size_t i)
{
	for (size_t j = 0; j < *n; j++)
		if (list[j] == i)
			return 0;
	if (*n >= max)
		return fail(p, item, "%s: more than %zu entries", what, max);
	list[(*n)++] = (uint8_t)i;
	return 0;
}

static int suite_item(struct parse *p, const yaml_node_t *item)
{
	struct webconfig *wc = p->wc;

	for (size_t i = 0; i < ELEMENTSOF(suites); i++)
		if (scalar_is(item, suites[i].name))
			return add_index(p, item, "cipher_suites", wc->suites, &wc->n_suites,
					 WEBCONFIG_MAX_SUITES, i);
	return fail(p, item, "cipher_suites: unknown cipher suite \"%.*s\" (want Go's names, "
		    "e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256; RC4 is not offered)",
		    (int)item->data.scalar.length > 64 ? 64 : (int)item->data.scalar.length,
		    (const char *)item->data.scalar.value);
}

static int curve_item(struct parse *p, const yaml_node_t *item)
{
	struct webconfig *wc = p->wc;

	for (size_t i = 0; i < ELEMENTSOF(curves); i++)
		if (scalar_is(item, curves[i][0]))
			return add_index(p, item, "curve_preferences", wc->curves, &wc->n_curves,
					 WEBCONFIG_MAX_CURVES, i);
	return fail(p, item, "curve_preferences: unknown curve \"%.*s\" (want CurveP256, CurveP384, "
		    "CurveP521 or X25519)",
		    (int)item->data.scalar.length > 64 ? 64 : (int)item->data.scalar.length,
		    (const char *)item->data.scalar.value);
}

static int set_pem_file(struct parse *p, const yaml_node_t *v, const char *key,
			struct webconfig_pem *pem)
{
	return get_string(p, v, key, &pem->file);
}

static int set_pem_inline(struct parse *p, const yaml_node_t *v, const char *key,
			  struct webconfig_pem *pem)
{
	int r = get_string(p, v, key, &pem->data);

	if (r == 0 && pem->data)
		pem->len = strlen(pem->data);
	return r;
}

static int tls_pair(struct parse *p, const yaml_node_t *k, const yaml_node_t *v)
{
	struct webconfig *wc = p->wc;

	if (scalar_is(k, "cert_file"))
		return set_pem_file(p, v, "cert_file", &wc->cert);
	if (scalar_is(k, "key_file"))
		return set_pem_file(p, v, "key_file", &wc->key);
	if (scalar_is(k, "client_ca_file"))
		return set_pem_file(p, v, "client_ca_file", &wc->client_ca);
	if (scalar_is(k, "cert"))
		return set_pem_inline(p, v, "cert", &wc->cert);
	if (scalar_is(k, "key"))
		return set_pem_inline(p, v, "key", &wc->key);
	if (scalar_is(k, "client_ca"))
		return set_pem_inline(p, v, "client_ca", &wc->client_ca);
	if (scalar_is(k, "client_auth_type"))
		return parse_client_auth(p, v, &wc->client_auth);
	if (scalar_is(k, "min_version"))
		return parse_tls_version(p, v, "min_version", &wc->min_version);
	if (scalar_is(k, "max_version"))
		return parse_tls_version(p, v, "max_version", &wc->max_version);
	if (scalar_is(k, "prefer_server_cipher_suites"))
		return get_bool(p, v, "prefer_server_cipher_suites", &wc->prefer_server_cipher_suites);
	if (scalar_is(k, "cipher_suites"))
		return for_each_item(p, v, "cipher_suites", suite_item);
	if (scalar_is(k, "curve_preferences"))
		return for_each_item(p, v, "curve_preferences", curve_item);
	if (scalar_is(k, "client_allowed_sans"))
		return refuse_unless_empty(p, v, "client_allowed_sans", "any certificate the CA signed is let in");
	return unknown_key(p, k, "tls_server_config");
}

/* The response headers exporter-toolkit lets a config set, with the values it allows. */
static int header_pair(struct parse *p, const yaml_node_t *k, const yaml_node_t *v)
{
	static const char *const allowed[] = { "Strict-Transport-Security", "X-Content-Type-Options",
					       "X-Frame-Options", "X-XSS-Protection",
					       "Content-Security-Policy" };
	struct webconfig *wc = p->wc;
	struct webconfig_header *h;
	const char *name = NULL;
	_cleanup_free_ char *value = NULL;
	int r;

	for (size_t i = 0; i < ELEMENTSOF(allowed); i++)
		if (k->data.scalar.length == strlen(allowed[i]) &&
		    strncasecmp((const char *)k->data.scalar.value, allowed[i], strlen(allowed[i])) == 0)
			name = allowed[i];
	if (!name)
		return fail(p, k, "headers: header \"%.*s\" cannot be set (allowed: %s, %s, %s, %s, %s)",
			    (int)k->data.scalar.length > 64 ? 64 : (int)k->data.scalar.length,
			    (const char *)k->data.scalar.value, allowed[0], allowed[1], allowed[2],
			    allowed[3], allowed[4]);
	r = get_string(p, v, name, &value);
	if (r < 0)
		return r;
	if (!value || !value[0])
		return fail(p, v, "headers: %s: empty value", name);
	for (const char *c = value; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return fail(p, v, "headers: %s: control character in the value", name);
	if (strcmp(name, "X-Content-Type-Options") == 0 && strcasecmp(value, "nosniff") != 0)
		return fail(p, v, "headers: X-Content-Type-Options: want nosniff");
	if (strcmp(name, "X-Frame-Options") == 0 && strcasecmp(value, "deny") != 0 &&
	    strcasecmp(value, "sameorigin") != 0)
		return fail(p, v, "headers: X-Frame-Options: want deny or sameorigin");
	h = reallocarray(wc->headers, wc->n_headers + 1, sizeof(*wc->headers));
	if (!h)
		return -ENOMEM;
	wc->headers = h;
	h[wc->n_headers].name = strdup(name);
	if (!h[wc->n_headers].name)
		return -ENOMEM;
	h[wc->n_headers++].value = TAKE_PTR(value);
	return 0;
}

static int http_pair(struct parse *p, const yaml_node_t *k, const yaml_node_t *v)
{
	bool http2;

	if (scalar_is(k, "headers"))
		return for_each_pair(p, v, "headers", header_pair);
	if (scalar_is(k, "http2"))
		return get_bool(p, v, "http2", &http2); /* HTTP/1.1 only; accepted, as the toolkit does */
	return unknown_key(p, k, "http_server_config");
}

/* bcrypt: $2a$, $2b$ or $2y$, a two-digit cost, 22 characters of salt and 31 of hash. */
static bool is_bcrypt(const char *h)
{
	static const char alphabet[] = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	int cost;

	if (strlen(h) != 60 || h[0] != '$' || h[1] != '2' || !strchr("aby", h[2]) || h[2] == '\0' ||
	    h[3] != '$' || h[4] < '0' || h[4] > '9' || h[5] < '0' || h[5] > '9' || h[6] != '$')
		return false;
	cost = (h[4] - '0') * 10 + (h[5] - '0');
	if (cost < 4 || cost > 31)
		return false;
	return strspn(h + 7, alphabet) == 53;
}

static int user_pair(struct parse *p, const yaml_node_t *k, const yaml_node_t *v)
{
	struct webconfig *wc = p->wc;
	struct webconfig_user *u;
	_cleanup_free_ char *name = NULL, *hash = NULL;
	int r;

	r = get_string(p, k, "basic_auth_users", &name);
	if (r < 0)
		return r;
	if (!name || !name[0])
		return fail(p, k, "basic_auth_users: empty user name");
	for (const char *c = name; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == ':')
			return fail(p, k, "basic_auth_users: a user name holds no ':' and no control character");
	r = get_string(p, v, name, &hash);
	if (r < 0)
		return r;
	if (!hash || !is_bcrypt(hash))
		return fail(p, v, "basic_auth_users: %s: want a bcrypt hash ($2y$10$ and 53 characters, "
			    "e.g. from htpasswd -nBC 10)", name);
	u = reallocarray(wc->users, wc->n_users + 1, sizeof(*wc->users));
	if (!u)
		return -ENOMEM;
	wc->users = u;
	u[wc->n_users++] = (struct webconfig_user){ .name = TAKE_PTR(name), .hash = TAKE_PTR(hash) };
	return 0;
}

static int top_pair(struct parse *p, const yaml_node_t *k, const yaml_node_t *v)
{
	if (scalar_is(k, "tls_server_config"))
		return for_each_pair(p, v, "tls_server_config", tls_pair);
	if (scalar_is(k, "http_server_config"))
		return for_each_pair(p, v, "http_server_config", http_pair);
	if (scalar_is(k, "basic_auth_users"))
		return for_each_pair(p, v, "basic_auth_users", user_pair);
	return unknown_key(p, k, "the web config");
}

static bool has_tls12_suite(const struct webconfig *wc)
{
	for (size_t i = 0; i < wc->n_suites; i++)
		if (suites[wc->suites[i]].kx)
			return true;
	return false;
}

/* The rules between keys that exporter-toolkit applies. */
static int check_tls(struct parse *p, const yaml_node_t *root)
{
	struct webconfig *wc = p->wc;
	bool has_cert = wc->cert.file || wc->cert.data, has_key = wc->key.file || wc->key.data;
	bool has_ca = wc->client_ca.file || wc->client_ca.data;

	if (wc->cert.file && wc->cert.data)
		return fail(p, root, "tls_server_config: cert_file and cert are exclusive");
	if (wc->key.file && wc->key.data)
		return fail(p, root, "tls_server_config: key_file and key are exclusive");
	if (wc->client_ca.file && wc->client_ca.data)
		return fail(p, root, "tls_server_config: client_ca_file and client_ca are exclusive");
	if (has_cert != has_key)
		return fail(p, root, "tls_server_config: %s given without %s",
			    has_cert ? "a certificate" : "a key", has_cert ? "its key" : "a certificate");
	wc->tls = has_cert;
	if (!wc->tls && (has_ca || wc->client_auth != WEBCONFIG_NO_CLIENT_CERT))
		return fail(p, root, "tls_server_config: client certificates need cert_file and key_file");
	if (has_ca && wc->client_auth == WEBCONFIG_NO_CLIENT_CERT)
		return fail(p, root, "tls_server_config: client_ca_file given but client_auth_type is "
			    "NoClientCert (want VerifyClientCertIfGiven or RequireAndVerifyClientCert)");
	if (!has_ca && (wc->client_auth == WEBCONFIG_VERIFY_CLIENT_CERT_IF_GIVEN ||
			wc->client_auth == WEBCONFIG_REQUIRE_AND_VERIFY_CLIENT_CERT))
		return fail(p, root, "tls_server_config: client_auth_type %s needs client_ca_file",
			    webconfig_client_auth_name(wc->client_auth));
	if (wc->min_version > wc->max_version)
		return fail(p, root, "tls_server_config: min_version is above max_version");
	if (wc->max_version < WEBCONFIG_TLS13 && wc->n_suites > 0 && !has_tls12_suite(wc))
		return fail(p, root, "tls_server_config: cipher_suites lists no suite below TLS 1.3 "
			    "(TLS 1.3's are not configurable), but max_version is %s",
			    wc->max_version == WEBCONFIG_TLS12 ? "TLS12" : "below TLS12");
	return 0;
}

static struct webconfig *webconfig_new(void)
{
	struct webconfig *wc = calloc(1, sizeof(*wc));

	if (!wc)
		return NULL;
	wc->min_version = WEBCONFIG_TLS12; /* exporter-toolkit's default */
	wc->max_version = WEBCONFIG_TLS13;
	pthread_mutex_init(&wc->cache_lock, NULL);
	return wc;
}

static void pem_done(struct webconfig_pem *pem)
{
	free(pem->file);
	if (pem->data)
		explicit_bzero(pem->data, pem->len);
	free(pem->data);
}

void webconfig_free(struct webconfig *wc)
{
	if (!wc)
		return;
	pem_done(&wc->cert);
	pem_done(&wc->key);
	pem_done(&wc->client_ca);
	free(wc->priorities);
	for (size_t i = 0; i < wc->n_users; i++) {
		free(wc->users[i].name);
		free(wc->users[i].hash);
		explicit_bzero(wc->users[i].good, sizeof(wc->users[i].good));
	}
	free(wc->users);
	for (size_t i = 0; i < wc->n_headers; i++) {
		free(wc->headers[i].name);
		free(wc->headers[i].value);
	}
	free(wc->headers);
	explicit_bzero(wc->failed, sizeof(wc->failed));
	pthread_mutex_destroy(&wc->cache_lock);
	free(wc);
}

static void webconfig_freep(struct webconfig **wc)
{
	webconfig_free(*wc);
}

static int parse_document(struct parse *p, yaml_parser_t *parser)
{
	yaml_node_t *root;
	yaml_document_t next;
	int r;

	root = yaml_document_get_root_node(p->doc);
	if (!root)
		return 0; /* an empty file: plain HTTP, no auth */
	r = node_is_null(root) ? 0 : for_each_pair(p, root, "the web config", top_pair);
	if (r < 0)
		return r;
	r = check_tls(p, root);
	if (r < 0)
		return r;
	/* A second document would be silently ignored; say so instead. */
	if (!yaml_parser_load(parser, &next))
		return fail(p, NULL, "%zu:%zu: %s", parser->problem_mark.line + 1,
			    parser->problem_mark.column + 1,
			    parser->problem ? parser->problem : "YAML error");
	if (yaml_document_get_root_node(&next)) {
		yaml_node_t *n = yaml_document_get_root_node(&next);

		r = fail(p, NULL, "%zu:%zu: more than one YAML document", n->start_mark.line + 1,
			 n->start_mark.column + 1);
	}
	yaml_document_delete(&next);
	return r;
}

int webconfig_parse(const char *buf, size_t len, const char *source, struct webconfig **ret,
		    char **ret_error)
{
	_cleanup_(webconfig_freep) struct webconfig *wc = NULL;
	yaml_parser_t parser;
	yaml_document_t doc;
	struct parse p = { .doc = &doc, .source = source, .ret_error = ret_error };
	int r;

	*ret_error = NULL;
	wc = webconfig_new();
	if (!wc)
		return -ENOMEM;
	p.wc = wc;
	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, &doc)) {
		if (parser.error == YAML_MEMORY_ERROR)
			r = -ENOMEM;
		else if (asprintf(ret_error, "%s:%zu:%zu: %s%s%s", source,
				  parser.problem_mark.line + 1, parser.problem_mark.column + 1,
				  parser.problem ? parser.problem : "YAML error",
				  parser.context ? " " : "", parser.context ? parser.context : "") < 0) {
			*ret_error = NULL;
			r = -ENOMEM;
		} else
			r = -EINVAL;
		yaml_parser_delete(&parser);
		return r;
	}
	r = parse_document(&p, &parser);
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (r == 0)
		r = build_priorities(wc);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(wc);
	return 0;
}

/* ---- loading ---- */

__attribute__((format(printf, 2, 3))) static int load_fail(char **ret_error, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(ret_error, fmt, ap);
	va_end(ap);
	if (r < 0)
		*ret_error = NULL;
	return -EINVAL;
}

/* Reads a regular file of at most WEBCONFIG_MAX_FILE_SIZE bytes; never blocks on a FIFO. */
static int read_small_file(const char *path, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t len = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (st.st_size > WEBCONFIG_MAX_FILE_SIZE)
		return -EFBIG;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	while (len < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break; /* shrank while reading */
		len += (size_t)n;
	}
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

/* Makes pem->file absolute (relative to dir) and reads it into pem->data. */
static int load_pem(struct webconfig_pem *pem, const char *dir, const char *key,
		    const char *source, char **ret_error)
{
	char *abs;
	int r;

	if (!pem->file)
		return 0;
	if (pem->file[0] == '\0')
		return load_fail(ret_error, "%s: %s is empty", source, key);
	if (pem->file[0] != '/') {
		if (asprintf(&abs, "%s/%s", dir, pem->file) < 0)
			return -ENOMEM;
		free(pem->file);
		pem->file = abs;
	}
	r = read_small_file(pem->file, &pem->data, &pem->len);
	if (r < 0)
		return load_fail(ret_error, "%s: %s %s: %s", source, key, pem->file,
				 r == -EINVAL ? "not a regular file" : strerror(-r));
	return 0;
}

static const char *gnutls_why(int e)
{
	return gnutls_strerror(e);
}

/* Loads the certificate, key and CA into scratch credentials, as the server will. */
static int check_tls_material(const struct webconfig *wc, const char *source, char **ret_error)
{
	gnutls_certificate_credentials_t cred;
	gnutls_datum_t cert = { (unsigned char *)wc->cert.data, (unsigned)wc->cert.len };
	gnutls_datum_t key = { (unsigned char *)wc->key.data, (unsigned)wc->key.len };
	int e, r = 0;

	if (!wc->tls)
		return 0;
	if (gnutls_certificate_allocate_credentials(&cred) < 0)
		return -ENOMEM;
	e = gnutls_certificate_set_x509_key_mem(cred, &cert, &key, GNUTLS_X509_FMT_PEM);
	if (e < 0)
		r = load_fail(ret_error, "%s: certificate %s and key %s do not load: %s", source,
			      wc->cert.file ? wc->cert.file : "(inline)",
			      wc->key.file ? wc->key.file : "(inline)", gnutls_why(e));
	if (r == 0 && wc->client_ca.data) {
		gnutls_datum_t ca = { (unsigned char *)wc->client_ca.data, (unsigned)wc->client_ca.len };

		e = gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM);
		if (e <= 0)
			r = load_fail(ret_error, "%s: client CA %s: %s", source,
				      wc->client_ca.file ? wc->client_ca.file : "(inline)",
				      e == 0 ? "no certificate in it" : gnutls_why(e));
	}
	gnutls_certificate_free_credentials(cred);
	return r;
}

int webconfig_load(const char *path, struct webconfig **ret, char **ret_error)
{
	_cleanup_(webconfig_freep) struct webconfig *wc = NULL;
	_cleanup_free_ char *buf = NULL, *dir = NULL;
	size_t len;
	char *slash;
	int r;

	*ret_error = NULL;
	r = read_small_file(path, &buf, &len);
	if (r < 0) {
		load_fail(ret_error, "%s: %s", path, r == -EINVAL ? "not a regular file" : strerror(-r));
		return r;
	}
	r = webconfig_parse(buf, len, path, &wc, ret_error);
	if (r < 0)
		return r;
	dir = strdup(path);
	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	r = load_pem(&wc->cert, dir, "cert_file", path, ret_error);
	if (r == 0)
		r = load_pem(&wc->key, dir, "key_file", path, ret_error);
	if (r == 0)
		r = load_pem(&wc->client_ca, dir, "client_ca_file", path, ret_error);
	if (r == 0)
		r = check_tls_material(wc, path, ret_error);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(wc);
	return 0;
}

size_t webconfig_files(const struct webconfig *wc, const char *ret_files[4])
{
	size_t n = 0;

	if (wc->cert.file)
		ret_files[n++] = wc->cert.file;
	if (wc->key.file)
		ret_files[n++] = wc->key.file;
	if (wc->client_ca.file)
		ret_files[n++] = wc->client_ca.file;
	ret_files[n] = NULL;
	return n;
}

/* ---- the GnuTLS priority string ---- */

#define PRIO_MAX 1024

/* Appends ":+tok" to buf unless it is there already. */
static void prio_add(char *buf, const char *tok)
{
	size_t len = strlen(buf), tlen = strlen(tok);

	for (const char *at = strstr(buf, tok); at; at = strstr(at + 1, tok))
		if (at >= buf + 2 && at[-2] == ':' && at[-1] == '+' && (at[tlen] == ':' || !at[tlen]))
			return;
	if (len + 2 + tlen < PRIO_MAX) {
		buf[len] = ':';
		buf[len + 1] = '+';
		memcpy(buf + len + 2, tok, tlen + 1);
	}
}

/* Adds the key exchange (part 0), cipher (1) or MAC (2) of each TLS 1.2 suite listed. */
static void prio_add_listed(char *buf, const struct webconfig *wc, int part)
{
	for (size_t i = 0; i < wc->n_suites; i++) {
		const struct suite *s = &suites[wc->suites[i]];

		if (s->kx) /* TLS 1.3's suites are not configurable */
			prio_add(buf, part == 0 ? s->kx : part == 1 ? s->cipher : s->mac);
	}
}

/* The key exchanges, ciphers and MACs of cipher_suites, or ECDHE with AEAD ciphers. */
static void prio_add_suites(char *buf, const struct webconfig *wc)
{
	static const char *const aead[] = { "AES-128-GCM", "AES-256-GCM", "CHACHA20-POLY1305" };

	strcat(buf, ":-KX-ALL");
	if (wc->n_suites == 0) {
		prio_add(buf, "ECDHE-ECDSA");
		prio_add(buf, "ECDHE-RSA");
	}
	prio_add_listed(buf, wc, 0);
	strcat(buf, ":-CIPHER-ALL");
	prio_add_listed(buf, wc, 1);
	/* TLS 1.3's suites: always on, as in Go (they serve TLS 1.2's key exchanges as well) */
	if (wc->n_suites == 0 || wc->max_version == WEBCONFIG_TLS13)
		for (size_t i = 0; i < ELEMENTSOF(aead); i++)
			prio_add(buf, aead[i]);
	strcat(buf, ":-MAC-ALL");
	prio_add_listed(buf, wc, 2);
	prio_add(buf, "AEAD");
}

/* Builds wc->priorities; -ENOMEM. */
static int build_priorities(struct webconfig *wc)
{
	static const char *const vers[] = { "VERS-TLS1.0", "VERS-TLS1.1", "VERS-TLS1.2", "VERS-TLS1.3" };
	char buf[PRIO_MAX] = "NORMAL";

	if (wc->prefer_server_cipher_suites)
		strcat(buf, ":%SERVER_PRECEDENCE");
	strcat(buf, ":-VERS-ALL");
	for (int v = (int)wc->max_version; v >= (int)wc->min_version; v--)
		prio_add(buf, vers[v]);
	prio_add_suites(buf, wc);
	/* elliptic curves only: no finite-field Diffie-Hellman groups */
	strcat(buf, ":-GROUP-ALL");
	for (size_t i = 0; i < (wc->n_curves ? wc->n_curves : ELEMENTSOF(curves)); i++)
		prio_add(buf, curves[wc->n_curves ? wc->curves[i] : i][1]);
	free(wc->priorities);
	wc->priorities = strdup(buf);
	return wc->priorities ? 0 : -ENOMEM;
}

const char *webconfig_tls_priorities(const struct webconfig *wc)
{
	return wc->priorities;
}

/* ---- basic auth ---- */

static bool equal_const_time(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;

	for (size_t i = 0; i < la && i < lb; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

static bool digest_equal(const uint8_t x[32], const uint8_t y[32])
{
	uint8_t diff = 0;

	for (size_t i = 0; i < 32; i++)
		diff |= x[i] ^ y[i];
	return diff == 0;
}

/* The user named so (the last one, as bcrypt_check() takes), or NULL. */
static struct webconfig_user *user_of(struct webconfig *wc, const char *user)
{
	struct webconfig_user *found = NULL;

	for (size_t i = 0; i < wc->n_users; i++)
		if (strcmp(wc->users[i].name, user) == 0)
			found = &wc->users[i];
	return found;
}

/*
 * The login's digest: HMAC-SHA256 of "user\0password\0hash" under the process's cache key,
 * hash being the user's bcrypt hash (the first user's for an unknown one): a changed
 * password never matches what was remembered of the old one.
 */
static int login_digest(const struct webconfig_user *u, const char *user, const char *password,
			uint8_t digest[32])
{
	_cleanup_free_ char *msg = NULL;
	size_t ulen = strlen(user), plen = strlen(password), hlen = strlen(u->hash);
	size_t len = ulen + 1 + plen + 1 + hlen;
	int r;

	pthread_once(&cache_key_once, cache_key_init);
	msg = malloc(len);
	if (!msg)
		return -ENOMEM;
	memcpy(msg, user, ulen + 1);
	memcpy(msg + ulen + 1, password, plen + 1);
	memcpy(msg + ulen + 1 + plen + 1, u->hash, hlen);
	r = gnutls_hmac_fast(GNUTLS_MAC_SHA256, cache_key, sizeof(cache_key), msg, len, digest);
	explicit_bzero(msg, len);
	return r < 0 ? -EIO : 0;
}

/* Whether digest is remembered: as u's good login (u may be NULL), or as a failure. */
static bool cache_find(struct webconfig *wc, const struct webconfig_user *u,
		       const uint8_t digest[32], bool *ret_ok)
{
	bool found = false;

	pthread_mutex_lock(&wc->cache_lock);
	if (u && u->good_known && digest_equal(u->good, digest)) {
		*ret_ok = true;
		found = true;
	}
	for (size_t i = 0; i < wc->failed_used && !found; i++)
		if (memcmp(wc->failed[i], digest, 32) == 0) {
			*ret_ok = false;
			found = true;
		}
	pthread_mutex_unlock(&wc->cache_lock);
	return found;
}

/* A good login takes its user's slot; a failure the oldest slot of the ring of failures. */
static void cache_add(struct webconfig *wc, struct webconfig_user *u, const uint8_t digest[32],
		      bool ok)
{
	pthread_mutex_lock(&wc->cache_lock);
	if (ok) {
		memcpy(u->good, digest, 32);
		u->good_known = true;
	} else {
		memcpy(wc->failed[wc->failed_next], digest, 32);
		wc->failed_next = (wc->failed_next + 1) % WEBCONFIG_AUTH_CACHE;
		if (wc->failed_used < WEBCONFIG_AUTH_CACHE)
			wc->failed_used++;
	}
	pthread_mutex_unlock(&wc->cache_lock);
}

/*
 * bcrypt, one run at a time in the process, and token buckets for the rate, taken before
 * waiting for the run: what is over the rate is refused at once instead of queueing. Each
 * client has its own bucket; the clients that never logged in share one more, which bounds
 * the CPU a flood from many addresses costs. The table of clients is the process's: a
 * reload in this process keeps who logged in (the daemon starts a new HTTP process instead).
 */
static pthread_mutex_t bcrypt_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t token_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ratelimit bcrypt_bucket = { /* under token_lock, as what follows */
	.rate = WEBCONFIG_BCRYPT_PER_SECOND,
	.burst = WEBCONFIG_BCRYPT_BURST,
};
static struct clientlimit_slot client_slots[WEBCONFIG_LOGIN_CLIENTS];
static struct clientlimit clients = {
	.slots = client_slots,
	.n = WEBCONFIG_LOGIN_CLIENTS,
	.rate = WEBCONFIG_BCRYPT_CLIENT_PER_SECOND,
	.burst = WEBCONFIG_BCRYPT_CLIENT_BURST,
};

void webconfig_set_bcrypt_rate(double per_second, double burst, double client_per_second,
			       double client_burst)
{
	pthread_mutex_lock(&token_lock);
	bcrypt_bucket = (struct ratelimit){ .rate = per_second, .burst = burst };
	clientlimit_init(&clients, client_slots, WEBCONFIG_LOGIN_CLIENTS, client_per_second,
			 client_burst);
	pthread_mutex_unlock(&token_lock);
}

/* Takes the tokens of a bcrypt run for client: OK, or which budget is spent. */
static enum webconfig_login bcrypt_take_token(const uint8_t client[CLIENTLIMIT_KEY_LEN])
{
	enum webconfig_login res = WEBCONFIG_LOGIN_OK;
	uint64_t now = monotonic_ns() + 1, suppressed;
	bool proven;

	pthread_mutex_lock(&token_lock);
	if (!clientlimit_take(&clients, client, now, &proven))
		res = WEBCONFIG_LOGIN_BUSY_CLIENT;
	else if (!proven && !ratelimit_take(&bcrypt_bucket, now, &suppressed))
		res = WEBCONFIG_LOGIN_BUSY_ALL;
	pthread_mutex_unlock(&token_lock);
	return res;
}

static void client_prove(const uint8_t client[CLIENTLIMIT_KEY_LEN])
{
	pthread_mutex_lock(&token_lock);
	clientlimit_prove(&clients, client);
	pthread_mutex_unlock(&token_lock);
}

/* Under bcrypt_lock: the bcrypt check itself, of user u (NULL: unknown). */
static bool bcrypt_check(const struct webconfig *wc, const struct webconfig_user *u,
			 const char *password)
{
	_cleanup_free_ struct crypt_data *cd = NULL;
	const char *out;
	bool ok;

	cd = calloc(1, sizeof(*cd));
	if (!cd)
		return false;
	/* An unknown user is checked against a real hash too, then refused. */
	out = crypt_r(password, u ? u->hash : wc->users[0].hash, cd);
	ok = u && out && out[0] != '*' && equal_const_time(out, u->hash);
	explicit_bzero(cd, sizeof(*cd));
	return ok;
}

/* Under bcrypt_lock: the answer remembered meanwhile, else bcrypt's, remembered. */
static bool check_and_remember(struct webconfig *wc, struct webconfig_user *u, const char *password,
			       const uint8_t digest[32])
{
	bool ok;

	/* the same login may have been checked while this one waited for the lock */
	if (cache_find(wc, u, digest, &ok))
		return ok;
	ok = bcrypt_check(wc, u, password);
	cache_add(wc, u, digest, ok);
	return ok;
}

enum webconfig_login webconfig_login(struct webconfig *wc, const char *user, const char *password,
				     const uint8_t client[16])
{
	enum webconfig_login res;
	struct webconfig_user *u;
	uint8_t digest[32];
	bool ok;

	if (!wc || wc->n_users == 0 || !user || !password)
		return WEBCONFIG_LOGIN_REFUSED;
	u = user_of(wc, user);
	if (login_digest(u ? u : &wc->users[0], user, password, digest) < 0)
		return WEBCONFIG_LOGIN_REFUSED;
	/* remembered, right or wrong: no bcrypt, and no budget taken */
	if (cache_find(wc, u, digest, &ok))
		return ok ? WEBCONFIG_LOGIN_OK : WEBCONFIG_LOGIN_REFUSED;

	res = bcrypt_take_token(client);
	if (res != WEBCONFIG_LOGIN_OK)
		return res;
	pthread_mutex_lock(&bcrypt_lock);
	ok = check_and_remember(wc, u, password, digest);
	pthread_mutex_unlock(&bcrypt_lock);
	if (!ok)
		return WEBCONFIG_LOGIN_REFUSED;
	client_prove(client);
	return WEBCONFIG_LOGIN_OK;
}

bool webconfig_check_login(struct webconfig *wc, const char *user, const char *password)
{
	static const uint8_t nobody[CLIENTLIMIT_KEY_LEN];

	return webconfig_login(wc, user, password, nobody) == WEBCONFIG_LOGIN_OK;
}
