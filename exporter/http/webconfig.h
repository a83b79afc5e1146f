/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webconfig: the --web.config.file, in the YAML format of Prometheus' exporter-toolkit:
 *
 *   tls_server_config:
 *     cert_file: server.crt          # or cert: inline PEM; relative paths are taken
 *     key_file: server.key           # from the directory of the web config file
 *     client_auth_type: RequireAndVerifyClientCert
 *     client_ca_file: ca.crt
 *     min_version: TLS12
 *     cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]   # Go's names
 *     curve_preferences: [X25519, CurveP256]
 *   http_server_config:
 *     headers: { Strict-Transport-Security: max-age=31536000 }
 *   basic_auth_users:
 *     alice: $2y$10$...              # bcrypt, checked with crypt(3)
 *
 * The parser takes a buffer (tests and fuzzers feed it strings); errors name the line and the
 * column. cipher_suites, curve_preferences, min_version and max_version make the GnuTLS
 * priority string; without cipher_suites only ECDHE key exchange with AEAD ciphers is offered.
 * client_allowed_sans, which this exporter cannot enforce, is refused rather than ignored.
 * Never logs.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum webconfig_client_auth {
	WEBCONFIG_NO_CLIENT_CERT,
	WEBCONFIG_REQUEST_CLIENT_CERT,
	WEBCONFIG_REQUIRE_ANY_CLIENT_CERT,
	WEBCONFIG_VERIFY_CLIENT_CERT_IF_GIVEN,
	WEBCONFIG_REQUIRE_AND_VERIFY_CLIENT_CERT,
};

enum webconfig_tls_version {
	WEBCONFIG_TLS10,
	WEBCONFIG_TLS11,
	WEBCONFIG_TLS12,
	WEBCONFIG_TLS13,
};

struct webconfig_user {
	char *name;
	char *hash; /* bcrypt: $2a$, $2b$ or $2y$ */
	/* The login bcrypt last accepted for this user (under the config's cache_lock): one slot
	 * per user, apart from the failures, so that no number of wrong passwords evicts it. */
	uint8_t good[32];
	bool good_known;
};

struct webconfig_header {
	char *name;
	char *value;
};

/* A PEM blob: a file named in the config, or inline PEM. */
struct webconfig_pem {
	char *file; /* as written, then made absolute by webconfig_load() */
	char *data; /* inline PEM, or the file's contents once loaded */
	size_t len;
};

/* Wrong logins remembered (the right ones have a slot per user). */
#define WEBCONFIG_AUTH_CACHE 256
/*
 * bcrypt runs allowed per second (and at once after a quiet time): for each client (an IPv4
 * address or an IPv6 /64), and for all the clients that never logged in together. A client
 * that did log in has only its own budget; a login remembered costs no bcrypt and no budget.
 */
#define WEBCONFIG_BCRYPT_CLIENT_PER_SECOND 1
#define WEBCONFIG_BCRYPT_CLIENT_BURST 5
#define WEBCONFIG_BCRYPT_PER_SECOND 5
#define WEBCONFIG_BCRYPT_BURST 10
/* Clients whose budget is kept (the table is the process's, kept across webconfig_load()s). */
#define WEBCONFIG_LOGIN_CLIENTS 1024

/* Entries of cipher_suites and curve_preferences kept (more are refused). */
#define WEBCONFIG_MAX_SUITES 32
#define WEBCONFIG_MAX_CURVES 4

struct webconfig {
	bool tls; /* cert and key given */
	struct webconfig_pem cert, key, client_ca;
	enum webconfig_client_auth client_auth;
	enum webconfig_tls_version min_version, max_version;
	bool prefer_server_cipher_suites;
	/* indices into webconfig.c's table of Go's suite and curve names, in the config's order */
	uint8_t suites[WEBCONFIG_MAX_SUITES];
	size_t n_suites; /* 0: the default, ECDHE with AEAD ciphers */
	uint8_t curves[WEBCONFIG_MAX_CURVES];
	size_t n_curves; /* 0: X25519, P-256, P-384, P-521 */
	char *priorities; /* the GnuTLS priority string of all the above */

	struct webconfig_user *users; /* basic auth; none means no auth */
	size_t n_users;
	struct webconfig_header *headers; /* added to every response */
	size_t n_headers;

	/* Logins checked, keyed by a keyed hash of user, password and the user's hash, so that
	 * neither a scrape nor a client repeating a wrong password pays bcrypt's cost each time:
	 * the right ones in users[].good, the wrong ones in a ring of their own. Reset with the
	 * config. */
	pthread_mutex_t cache_lock;
	uint8_t failed[WEBCONFIG_AUTH_CACHE][32];
	size_t failed_next;
	size_t failed_used;
};

/* Largest web config file read. */
#define WEBCONFIG_MAX_FILE_SIZE (1024 * 1024)

/*
 * Parses buf (len bytes, need not be NUL-terminated); source names it in messages. Files are
 * not read. Returns 0 and *ret, -EINVAL with *ret_error ("SOURCE:LINE:COLUMN: what"; caller
 * frees), or -ENOMEM.
 */
int webconfig_parse(const char *buf, size_t len, const char *source, struct webconfig **ret,
		    char **ret_error);

/*
 * Reads and parses the file at path, resolves the cert, key and CA files against its
 * directory and reads them, and checks that the certificate, key and CA load. Returns 0, or
 * -errno with *ret_error.
 */
int webconfig_load(const char *path, struct webconfig **ret, char **ret_error);

void webconfig_free(struct webconfig *wc);

/* The files a loaded config depends on (the config itself aside), NULL-terminated. */
size_t webconfig_files(const struct webconfig *wc, const char *ret_files[4]);

/*
 * The GnuTLS priority string for the configured versions, key exchanges, ciphers, MACs and
 * groups (valid as long as wc).
 */
const char *webconfig_tls_priorities(const struct webconfig *wc);

/* Whether the config asks for basic auth at all. */
static inline bool webconfig_has_auth(const struct webconfig *wc)
{
	return wc && wc->n_users > 0;
}

enum webconfig_login {
	WEBCONFIG_LOGIN_REFUSED,
	WEBCONFIG_LOGIN_OK,
	/* not checked, try later: the client is over WEBCONFIG_BCRYPT_CLIENT_PER_SECOND */
	WEBCONFIG_LOGIN_BUSY_CLIENT,
	/* not checked: the clients that never logged in are over WEBCONFIG_BCRYPT_PER_SECOND */
	WEBCONFIG_LOGIN_BUSY_ALL,
};

/*
 * Checks a basic auth login from client (clientlimit_key()). An unknown user costs a bcrypt
 * run as well, so that the answer's timing does not tell which users exist. A login
 * remembered (right or wrong) answers at once; bcrypt runs one at a time in the process,
 * within the client's budget and, for a client that never logged in, the common one.
 */
enum webconfig_login webconfig_login(struct webconfig *wc, const char *user, const char *password,
				     const uint8_t client[16]);

/*
 * The bcrypt rate limits (the defaults above unless changed here: tests that need many bcrypt
 * runs lift them): per_second after a burst of burst for the clients that never logged in
 * together, client_per_second and client_burst for each. Every bucket starts full and the
 * table of clients empty.
 */
void webconfig_set_bcrypt_rate(double per_second, double burst, double client_per_second,
			       double client_burst);

/* webconfig_login() from the client of key zero == WEBCONFIG_LOGIN_OK. */
bool webconfig_check_login(struct webconfig *wc, const char *user, const char *password);

const char *webconfig_client_auth_name(enum webconfig_client_auth a);
