/* SPDX-License-Identifier: Apache-2.0 */
/* The web config parser (fed from strings), its loader's file checks, and basic auth. */
#define _GNU_SOURCE
#include <crypt.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <gnutls/gnutls.h>

#include "http/webconfig.h"

static struct webconfig *parse_ok(const char *yaml)
{
	struct webconfig *wc = NULL;
	char *err = NULL;
	int r = webconfig_parse(yaml, strlen(yaml), "web.yml", &wc, &err);

	if (r != 0)
		fail_msg("unexpected error %d: %s", r, err ? err : "(none)");
	assert_null(err);
	assert_non_null(wc);
	return wc;
}

/* Parses yaml, expects -EINVAL and an error message containing every string of want. */
static void parse_bad(const char *yaml, const char *want1, const char *want2)
{
	struct webconfig *wc = NULL;
	char *err = NULL;
	int r = webconfig_parse(yaml, strlen(yaml), "web.yml", &wc, &err);

	assert_int_equal(r, -EINVAL);
	assert_null(wc);
	assert_non_null(err);
	if (want1 && !strstr(err, want1))
		fail_msg("error \"%s\" lacks \"%s\"", err, want1);
	if (want2 && !strstr(err, want2))
		fail_msg("error \"%s\" lacks \"%s\"", err, want2);
	free(err);
}

/* ECDHE key exchange with AEAD ciphers; elliptic curves only, in Go's order */
#define DEFAULT_SUITES                                                                      \
	":-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"          \
	"+CHACHA20-POLY1305:-MAC-ALL:+AEAD"
#define DEFAULT_GROUPS \
	":-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:+GROUP-SECP521R1"

#define HASH "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"

static void test_full(void **state)
{
	static const char yaml[] = "# a comment\n"
				   "tls_server_config:\n"
				   "  cert_file: server.crt\n"
				   "  key_file: /etc/x/server.key\n"
				   "  client_auth_type: RequireAndVerifyClientCert\n"
				   "  client_ca_file: \"ca.crt\"\n"
				   "  min_version: TLS13\n"
				   "  prefer_server_cipher_suites: true\n"
				   "  cipher_suites: []\n"
				   "http_server_config:\n"
				   "  http2: false\n"
				   "  headers:\n"
				   "    strict-transport-security: max-age=31536000\n"
				   "    X-Frame-Options: deny\n"
				   "basic_auth_users:\n"
				   "  alice: " HASH "\n"
				   "  'bob smith': '" HASH "'\n";
	struct webconfig *wc = parse_ok(yaml);

	(void)state;
	assert_true(wc->tls);
	assert_string_equal(wc->cert.file, "server.crt");
	assert_string_equal(wc->key.file, "/etc/x/server.key");
	assert_string_equal(wc->client_ca.file, "ca.crt");
	assert_null(wc->cert.data);
	assert_int_equal(wc->client_auth, WEBCONFIG_REQUIRE_AND_VERIFY_CLIENT_CERT);
	assert_int_equal(wc->min_version, WEBCONFIG_TLS13);
	assert_int_equal(wc->max_version, WEBCONFIG_TLS13);
	assert_string_equal(webconfig_tls_priorities(wc),
			    "NORMAL:%SERVER_PRECEDENCE:-VERS-ALL:+VERS-TLS1.3" DEFAULT_SUITES DEFAULT_GROUPS);
	assert_int_equal(wc->n_headers, 2);
	assert_string_equal(wc->headers[0].name, "Strict-Transport-Security");
	assert_string_equal(wc->headers[0].value, "max-age=31536000");
	assert_int_equal(wc->n_users, 2);
	assert_string_equal(wc->users[1].name, "bob smith");
	assert_string_equal(wc->users[1].hash, HASH);
	assert_true(webconfig_has_auth(wc));
	webconfig_free(wc);
}

static void test_empty(void **state)
{
	static const char *const docs[] = { "", "# nothing\n", "---\n", "~\n",
					    "tls_server_config:\nbasic_auth_users: {}\n" };

	(void)state;
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		struct webconfig *wc = parse_ok(docs[i]);

		assert_false(wc->tls);
		assert_false(webconfig_has_auth(wc));
		assert_int_equal(wc->min_version, WEBCONFIG_TLS12);
		assert_string_equal(webconfig_tls_priorities(wc),
				    "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2" DEFAULT_SUITES DEFAULT_GROUPS);
		webconfig_free(wc);
	}
}

static void test_inline_pem(void **state)
{
	struct webconfig *wc = parse_ok("tls_server_config:\n"
					"  cert: |\n    -----BEGIN CERTIFICATE-----\n    AAAA\n"
					"  key: \"k\"\n");

	(void)state;
	assert_true(wc->tls);
	assert_null(wc->cert.file);
	assert_string_equal(wc->cert.data, "-----BEGIN CERTIFICATE-----\nAAAA\n");
	assert_int_equal(wc->cert.len, strlen(wc->cert.data));
	webconfig_free(wc);
}

static void test_syntax_error_position(void **state)
{
	(void)state;
	/* line 3, column 4: the unclosed flow mapping */
	parse_bad("tls_server_config:\n  cert_file: a\n   key_file: [b\n", "web.yml:3:", NULL);
	parse_bad("basic_auth_users:\n  a: \"unterminated\n", "web.yml:", "quoted scalar");
	parse_bad("\t- tab\n", "web.yml:1:", NULL);
}

static void test_unknown_keys(void **state)
{
	(void)state;
	parse_bad("tls_server_config:\n  cert_file: a\n  key_file: b\n  certfile: c\n",
		  "web.yml:4:3:", "unknown key \"certfile\" in tls_server_config");
	parse_bad("basic_auth:\n  a: b\n", "web.yml:1:1:", "unknown key \"basic_auth\"");
	parse_bad("http_server_config:\n  http3: true\n", "web.yml:2:3:", "http3");
	parse_bad("- a\n- b\n", "web.yml:1:1:", "want a mapping");
	parse_bad("tls_server_config: [a]\n", "web.yml:1:20:", "tls_server_config: want a mapping");
	parse_bad("? [a]\n: b\n", "keys must be strings", NULL);
}

static void test_duplicates_and_documents(void **state)
{
	(void)state;
	parse_bad("basic_auth_users:\n  a: " HASH "\n  a: " HASH "\n", "web.yml:3:3:",
		  "given twice");
	parse_bad("tls_server_config: {}\ntls_server_config: {}\n", "web.yml:2:1:", "given twice");
	parse_bad("basic_auth_users: {}\n---\nbasic_auth_users: {}\n", "more than one YAML document",
		  NULL);
}

static void test_tls_rules(void **state)
{
	(void)state;
	parse_bad("tls_server_config:\n  cert_file: a\n", "without its key", NULL);
	parse_bad("tls_server_config:\n  key_file: a\n", "without a certificate", NULL);
	parse_bad("tls_server_config:\n  cert_file: a\n  cert: b\n  key_file: c\n", "exclusive", NULL);
	parse_bad("tls_server_config:\n  client_ca_file: ca\n  client_auth_type: RequireAndVerifyClientCert\n",
		  "need cert_file and key_file", NULL);
	parse_bad("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_file: c\n",
		  "client_auth_type is NoClientCert", NULL);
	parse_bad("tls_server_config:\n  cert_file: a\n  key_file: b\n"
		  "  client_auth_type: RequireAndVerifyClientCert\n",
		  "needs client_ca_file", NULL);
	parse_bad("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: Always\n",
		  "web.yml:4:21:", "want NoClientCert");
	parse_bad("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS13\n"
		  "  max_version: TLS12\n",
		  "min_version is above max_version", NULL);
	parse_bad("tls_server_config:\n  min_version: SSL3\n", "web.yml:2:16:", "TLS10");
	parse_bad("tls_server_config:\n  client_allowed_sans: [a]\n", "not supported", NULL);
	parse_bad("tls_server_config:\n  prefer_server_cipher_suites: maybe\n", "want true or false",
		  NULL);
	parse_bad("tls_server_config:\n  cert_file: {a: b}\n", "cert_file: want a string", NULL);
	parse_bad("tls_server_config:\n  cert_file: \"a\\0b\"\n  key_file: k\n", "NUL byte", NULL);
}

static void test_versions(void **state)
{
	struct webconfig *wc = parse_ok("tls_server_config:\n  cert_file: a\n  key_file: b\n"
					"  min_version: TLS10\n  max_version: TLS11\n");

	(void)state;
	assert_string_equal(webconfig_tls_priorities(wc),
			    "NORMAL:-VERS-ALL:+VERS-TLS1.1:+VERS-TLS1.0" DEFAULT_SUITES DEFAULT_GROUPS);
	webconfig_free(wc);
}

/* Every priority string the parser makes must be one GnuTLS takes. */
static void assert_gnutls_takes(const struct webconfig *wc)
{
	gnutls_priority_t prio;
	const char *where = NULL;
	int e = gnutls_priority_init(&prio, webconfig_tls_priorities(wc), &where);

	if (e < 0)
		fail_msg("GnuTLS refuses \"%s\" at \"%s\": %s", webconfig_tls_priorities(wc),
			 where ? where : "?", gnutls_strerror(e));
	gnutls_priority_deinit(prio);
}

static void test_cipher_suites(void **state)
{
	static const char *const names[] = {
		"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
		"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
		"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
		"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
		"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
		"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
		"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
		"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
		"TLS_RSA_WITH_AES_128_GCM_SHA256", "TLS_RSA_WITH_AES_256_GCM_SHA384",
		"TLS_RSA_WITH_AES_128_CBC_SHA", "TLS_RSA_WITH_AES_256_CBC_SHA",
		"TLS_RSA_WITH_AES_128_CBC_SHA256", "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
	};
	struct webconfig *wc;
	char yaml[256];

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(yaml, sizeof(yaml), "tls_server_config:\n  cipher_suites: [%s]\n", names[i]);
		wc = parse_ok(yaml);
		assert_gnutls_takes(wc);
		webconfig_free(wc);
	}
	/* a CBC suite: its key exchange, cipher and MAC; TLS 1.3's AEAD ciphers stay on */
	wc = parse_ok("tls_server_config:\n  cipher_suites:\n    - TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA\n"
		      "    - TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA\n");
	assert_int_equal(wc->n_suites, 1);
	assert_string_equal(webconfig_tls_priorities(wc),
			    "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-KX-ALL:+ECDHE-RSA:-CIPHER-ALL:"
			    "+AES-128-CBC:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:-MAC-ALL:+SHA1:"
			    "+AEAD" DEFAULT_GROUPS);
	webconfig_free(wc);
	/* TLS 1.2 only: exactly what is listed, in its order; a TLS 1.3 name adds nothing */
	wc = parse_ok("tls_server_config:\n  max_version: TLS12\n  prefer_server_cipher_suites: yes\n"
		      "  cipher_suites: [TLS_RSA_WITH_AES_256_GCM_SHA384, TLS_AES_128_GCM_SHA256,\n"
		      "                  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256]\n");
	assert_string_equal(webconfig_tls_priorities(wc),
			    "NORMAL:%SERVER_PRECEDENCE:-VERS-ALL:+VERS-TLS1.2:-KX-ALL:+RSA:+ECDHE-ECDSA:"
			    "-CIPHER-ALL:+AES-256-GCM:+AES-128-CBC:-MAC-ALL:+AEAD:+SHA256" DEFAULT_GROUPS);
	assert_gnutls_takes(wc);
	webconfig_free(wc);
	wc = parse_ok("tls_server_config:\n  cipher_suites: []\n");
	assert_string_equal(webconfig_tls_priorities(wc),
			    "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2" DEFAULT_SUITES DEFAULT_GROUPS);
	webconfig_free(wc);
	parse_bad("tls_server_config:\n  cipher_suites:\n    - TLS_AES_128_GCM_SHA256\n"
		  "    - TLS_RSA_WITH_RC4_128_SHA\n",
		  "web.yml:4:7: cipher_suites: unknown cipher suite \"TLS_RSA_WITH_RC4_128_SHA\"", NULL);
	parse_bad("tls_server_config:\n  cipher_suites: [ECDHE-RSA-AES128-SHA]\n", "web.yml:2:19:",
		  "unknown cipher suite");
	parse_bad("tls_server_config:\n  cipher_suites: TLS_AES_128_GCM_SHA256\n", "web.yml:2:18:",
		  "want a list");
	parse_bad("tls_server_config:\n  cipher_suites: [[a]]\n", "want names", NULL);
	parse_bad("tls_server_config:\n  max_version: TLS12\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
		  "lists no suite below TLS 1.3", NULL);
}

static void test_curves(void **state)
{
	struct webconfig *wc;

	(void)state;
	wc = parse_ok("tls_server_config:\n  curve_preferences: [CurveP521, X25519, CurveP521]\n");
	assert_int_equal(wc->n_curves, 2);
	assert_string_equal(webconfig_tls_priorities(wc),
			    "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2" DEFAULT_SUITES
			    ":-GROUP-ALL:+GROUP-SECP521R1:+GROUP-X25519");
	assert_gnutls_takes(wc);
	webconfig_free(wc);
	wc = parse_ok("tls_server_config:\n  curve_preferences: [CurveP384, CurveP256]\n");
	assert_gnutls_takes(wc);
	webconfig_free(wc);
	parse_bad("tls_server_config:\n  curve_preferences: [P-256]\n", "web.yml:2:23:",
		  "unknown curve \"P-256\"");
	parse_bad("tls_server_config:\n  curve_preferences: [X448]\n", "want CurveP256", NULL);
}

static void test_headers(void **state)
{
	(void)state;
	parse_bad("http_server_config:\n  headers:\n    Set-Cookie: a=b\n", "web.yml:3:5:",
		  "cannot be set");
	parse_bad("http_server_config:\n  headers:\n    X-Frame-Options: allow\n",
		  "deny or sameorigin", NULL);
	parse_bad("http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n", "nosniff",
		  NULL);
	parse_bad("http_server_config:\n  headers:\n    Content-Security-Policy: \"a\\nb\"\n",
		  "control character", NULL);
	parse_bad("http_server_config:\n  headers:\n    Content-Security-Policy: \"\"\n",
		  "empty value", NULL);
}

static void test_users(void **state)
{
	(void)state;
	parse_bad("basic_auth_users:\n  alice: secret\n", "web.yml:2:10:", "alice: want a bcrypt hash");
	parse_bad("basic_auth_users:\n  alice: $1$abc$def\n", "bcrypt", NULL);
	parse_bad("basic_auth_users:\n  alice:\n", "bcrypt", NULL);
	parse_bad("basic_auth_users:\n  \"a:b\": " HASH "\n", "no ':'", NULL);
	parse_bad("basic_auth_users:\n  \"\": " HASH "\n", "empty user name", NULL);
	/* cost 03 is below bcrypt's minimum */
	parse_bad("basic_auth_users:\n  a: $2y$03$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n",
		  "bcrypt", NULL);
}

/* A config with users alice (password "right") and bob (password "other"), cost 4. */
static struct webconfig *auth_config(void)
{
	char salt[64], yaml[512];
	char *a, *b;
	struct webconfig *wc;

	assert_non_null(crypt_gensalt_rn("$2b$", 4, NULL, 0, salt, sizeof(salt)));
	a = strdup(crypt("right", salt));
	assert_non_null(crypt_gensalt_rn("$2y$", 4, NULL, 0, salt, sizeof(salt)));
	b = strdup(crypt("other", salt));
	assert_non_null(a);
	assert_non_null(b);
	snprintf(yaml, sizeof(yaml), "basic_auth_users:\n  alice: '%s'\n  bob: '%s'\n", a, b);
	free(a);
	free(b);
	wc = parse_ok(yaml);
	assert_int_equal(wc->n_users, 2);
	return wc;
}

/* The client keys of the tests below: IPv4 10.0.0.N */
static void client(uint8_t key[16], unsigned n)
{
	memset(key, 0, 16);
	key[12] = 10;
	key[14] = (uint8_t)(n >> 8);
	key[15] = (uint8_t)n;
}

/* Every bucket full and no client known: rate and burst for all, client_* for each. */
static void limits(double rate, double burst, double client_rate, double client_burst)
{
	webconfig_set_bcrypt_rate(rate, burst, client_rate, client_burst);
}

static void limits_default(void)
{
	limits(WEBCONFIG_BCRYPT_PER_SECOND, WEBCONFIG_BCRYPT_BURST, WEBCONFIG_BCRYPT_CLIENT_PER_SECOND,
	       WEBCONFIG_BCRYPT_CLIENT_BURST);
}

static void test_login(void **state)
{
	struct webconfig *wc = auth_config();

	(void)state;
	limits(1e6, 1e6, 1e6, 1e6);
	assert_true(webconfig_check_login(wc, "alice", "right"));
	assert_true(wc->users[0].good_known);
	assert_false(wc->users[1].good_known);
	assert_int_equal(wc->failed_used, 0);
	assert_true(webconfig_check_login(wc, "alice", "right")); /* from the cache */
	assert_true(webconfig_check_login(wc, "bob", "other"));
	assert_true(wc->users[1].good_known);
	assert_false(webconfig_check_login(wc, "alice", "wrong"));
	assert_false(webconfig_check_login(wc, "alice", "other"));   /* bob's password */
	assert_false(webconfig_check_login(wc, "bob", "right"));     /* alice's */
	assert_false(webconfig_check_login(wc, "carol", "right"));   /* unknown user */
	assert_false(webconfig_check_login(wc, "alice", ""));
	assert_false(webconfig_check_login(wc, "alice", NULL));
	assert_false(webconfig_check_login(wc, NULL, "right"));
	assert_false(webconfig_check_login(wc, "Alice", "right"));
	assert_false(webconfig_check_login(wc, "alice", "right "));
	assert_int_equal(wc->failed_used, 7); /* failures are cached too, apart */
	assert_false(webconfig_check_login(wc, "alice", "wrong")); /* from the cache */
	assert_int_equal(wc->failed_used, 7);
	/* neither failure took a good login's place */
	assert_true(wc->users[0].good_known);
	assert_true(wc->users[1].good_known);
	assert_false(webconfig_check_login(NULL, "alice", "right"));
	limits_default();
	webconfig_free(wc);
}

static void test_login_no_users(void **state)
{
	struct webconfig *wc = parse_ok("");

	(void)state;
	assert_false(webconfig_check_login(wc, "alice", "right"));
	webconfig_free(wc);
}

/*
 * A good login stays remembered however many failures come after it, for the same user from
 * the same client: with every budget then empty, it still answers OK (no bcrypt, no budget)
 * while a new wrong password is not checked.
 */
static void test_login_failures_never_evict_success(void **state)
{
	struct webconfig *wc = auth_config();
	uint8_t key[16];
	char pw[32];

	(void)state;
	client(key, 1);
	limits(1e6, 1e6, 1e6, 1e6);
	assert_int_equal(webconfig_login(wc, "alice", "right", key), WEBCONFIG_LOGIN_OK);
	for (int i = 0; i < 2 * WEBCONFIG_AUTH_CACHE + 1; i++) {
		snprintf(pw, sizeof(pw), "guess%d", i);
		assert_int_equal(webconfig_login(wc, "alice", pw, key), WEBCONFIG_LOGIN_REFUSED);
	}
	assert_int_equal(wc->failed_used, WEBCONFIG_AUTH_CACHE);
	limits(0, 0, 0, 0);
	assert_int_equal(webconfig_login(wc, "alice", "right", key), WEBCONFIG_LOGIN_OK);
	assert_int_equal(webconfig_login(wc, "alice", "new guess", key), WEBCONFIG_LOGIN_BUSY_CLIENT);
	/* bob never logged in: his right password needs bcrypt, and there is no budget */
	assert_int_equal(webconfig_login(wc, "bob", "other", key), WEBCONFIG_LOGIN_BUSY_CLIENT);
	limits_default();
	webconfig_free(wc);
}

/*
 * A good login is remembered for its config only: the same file parsed again (a reload)
 * checks it with bcrypt again, and a new password for the user is never taken for the old.
 */
static void test_login_remembered_per_config(void **state)
{
	struct webconfig *wc = auth_config(), *again = auth_config();
	uint8_t key[16];

	(void)state;
	client(key, 2);
	limits(1e6, 1e6, 1e6, 1e6);
	assert_int_equal(webconfig_login(wc, "alice", "right", key), WEBCONFIG_LOGIN_OK);
	limits(0, 0, 0, 0);
	assert_int_equal(webconfig_login(wc, "alice", "right", key), WEBCONFIG_LOGIN_OK);
	assert_int_equal(webconfig_login(again, "alice", "right", key), WEBCONFIG_LOGIN_BUSY_CLIENT);
	limits(1e6, 1e6, 1e6, 1e6);
	assert_int_equal(webconfig_login(again, "alice", "right", key), WEBCONFIG_LOGIN_OK);
	limits_default();
	webconfig_free(wc);
	webconfig_free(again);
}

/*
 * bcrypt runs are limited per client: past its burst, a client's login not remembered is not
 * checked (BUSY_CLIENT), while another client's is; a remembered login still answers. (The
 * buckets barely refill here: the rates are a thousandth of a run a second.)
 */
static void test_login_rate_per_client(void **state)
{
	struct webconfig *wc = auth_config();
	uint8_t a[16], b[16];
	char pw[32];

	(void)state;
	client(a, 3);
	client(b, 4);
	limits(0.001, 100, 0.001, 3);
	assert_int_equal(webconfig_login(wc, "alice", "right", a), WEBCONFIG_LOGIN_OK);
	for (int i = 0; i < 2; i++) {
		snprintf(pw, sizeof(pw), "guess%d", i);
		assert_int_equal(webconfig_login(wc, "alice", pw, a), WEBCONFIG_LOGIN_REFUSED);
	}
	assert_int_equal(webconfig_login(wc, "alice", "guess2", a), WEBCONFIG_LOGIN_BUSY_CLIENT);
	assert_int_equal(webconfig_login(wc, "alice", "guess3", a), WEBCONFIG_LOGIN_BUSY_CLIENT);
	assert_int_equal(webconfig_login(wc, "alice", "right", a), WEBCONFIG_LOGIN_OK);  /* cached */
	assert_int_equal(webconfig_login(wc, "alice", "guess0", a), WEBCONFIG_LOGIN_REFUSED); /* cached */
	/* another client has its own budget */
	assert_int_equal(webconfig_login(wc, "alice", "guess2", b), WEBCONFIG_LOGIN_REFUSED);
	assert_int_equal(webconfig_login(wc, "bob", "other", b), WEBCONFIG_LOGIN_OK);
	limits_default();
	webconfig_free(wc);
}

/*
 * The clients that never logged in share one more budget, so that a flood from many addresses
 * is bounded too; a client that logged in before (kept across configs) is not held by it.
 */
static void test_login_rate_new_clients(void **state)
{
	struct webconfig *wc = auth_config(), *again;
	uint8_t key[16], proven[16];
	int checked = 0;
	char pw[32];

	(void)state;
	client(proven, 1000);
	limits(0.001, 10, 0.001, 3);
	assert_int_equal(webconfig_login(wc, "alice", "right", proven), WEBCONFIG_LOGIN_OK);
	for (unsigned i = 0; i < 20; i++) {
		enum webconfig_login r;

		client(key, 100 + i);
		snprintf(pw, sizeof(pw), "guess%u", i);
		r = webconfig_login(wc, "alice", pw, key);
		if (r == WEBCONFIG_LOGIN_REFUSED)
			checked++;
		else
			assert_int_equal(r, WEBCONFIG_LOGIN_BUSY_ALL);
	}
	assert_int_equal(checked, 10 - 1); /* the burst, less the proven client's first login */
	/* a reload forgets the logins, not who logged in: bcrypt runs for it on its own budget */
	again = auth_config();
	assert_int_equal(webconfig_login(again, "alice", "right", proven), WEBCONFIG_LOGIN_OK);
	client(key, 99);
	assert_int_equal(webconfig_login(again, "alice", "guess99", key), WEBCONFIG_LOGIN_BUSY_ALL);
	/* the good login now remembered answers any client, at no cost */
	assert_int_equal(webconfig_login(again, "alice", "right", key), WEBCONFIG_LOGIN_OK);
	limits_default();
	webconfig_free(wc);
	webconfig_free(again);
}

static char tmpdir[64];

static void write_file(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static int setup_dir(void **state)
{
	(void)state;
	strcpy(tmpdir, "/tmp/test-webconfig.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Files are named relative to the config's directory; missing and non-regular ones are
 * errors that name them, and a FIFO does not block the load. */
static void test_load_files(void **state)
{
	char path[256], fifo[256];
	struct webconfig *wc = NULL;
	char *err = NULL;

	(void)state;
	snprintf(path, sizeof(path), "%s/web.yml", tmpdir);
	write_file("web.yml", "basic_auth_users:\n  a: " HASH "\n");
	assert_int_equal(webconfig_load(path, &wc, &err), 0);
	assert_int_equal(wc->n_users, 1);
	webconfig_free(wc);
	wc = NULL;

	write_file("web.yml", "tls_server_config:\n  cert_file: missing.crt\n  key_file: k\n");
	assert_int_equal(webconfig_load(path, &wc, &err), -EINVAL);
	assert_non_null(strstr(err, "missing.crt"));
	assert_non_null(strstr(err, tmpdir)); /* made absolute against the config's directory */
	free(err);

	snprintf(fifo, sizeof(fifo), "%s/fifo.crt", tmpdir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	write_file("web.yml", "tls_server_config:\n  cert_file: fifo.crt\n  key_file: k\n");
	assert_int_equal(webconfig_load(path, &wc, &err), -EINVAL);
	assert_non_null(strstr(err, "not a regular file"));
	free(err);

	/* PEM that is not a certificate: the TLS check refuses it */
	write_file("bad.crt", "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n");
	write_file("bad.key", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
	write_file("web.yml", "tls_server_config:\n  cert_file: bad.crt\n  key_file: bad.key\n");
	assert_int_equal(webconfig_load(path, &wc, &err), -EINVAL);
	assert_non_null(strstr(err, "do not load"));
	free(err);

	/* the config itself: a directory, a missing file, a syntax error */
	assert_int_equal(webconfig_load(tmpdir, &wc, &err), -EINVAL);
	assert_non_null(strstr(err, "not a regular file"));
	free(err);
	snprintf(path, sizeof(path), "%s/nope.yml", tmpdir);
	assert_int_equal(webconfig_load(path, &wc, &err), -ENOENT);
	assert_non_null(strstr(err, "nope.yml"));
	free(err);
	snprintf(path, sizeof(path), "%s/web.yml", tmpdir);
	write_file("web.yml", "basic_auth_users:\n  a: [\n");
	assert_int_equal(webconfig_load(path, &wc, &err), -EINVAL);
	assert_non_null(strstr(err, "web.yml:"));
	free(err);
	assert_null(wc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_inline_pem),
		cmocka_unit_test(test_syntax_error_position),
		cmocka_unit_test(test_unknown_keys),
		cmocka_unit_test(test_duplicates_and_documents),
		cmocka_unit_test(test_tls_rules),
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_cipher_suites),
		cmocka_unit_test(test_curves),
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_users),
		cmocka_unit_test(test_login),
		cmocka_unit_test(test_login_no_users),
		cmocka_unit_test(test_login_failures_never_evict_success),
		cmocka_unit_test(test_login_remembered_per_config),
		cmocka_unit_test(test_login_rate_per_client),
		cmocka_unit_test(test_login_rate_new_clients),
		cmocka_unit_test_setup_teardown(test_load_files, setup_dir, teardown_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
