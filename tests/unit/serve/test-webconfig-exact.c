/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Web config logins with exact oracles: which bcrypt strings the parser takes (every character
 * and the cost's bounds), and where the login cache writes, counted from the number of
 * successful logins (the hashes are made here by libcrypt).
 */
#define _GNU_SOURCE
#include <crypt.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "serve/webconfig.h"

/* A valid bcrypt string: cost 10, 53 characters of bcrypt's alphabet. */
#define SALT_AND_HASH "QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"

static int parse(const char *yaml, struct webconfig **ret)
{
	char *err = NULL;
	int r = webconfig_parse(yaml, strlen(yaml), "web.yml", ret, &err);

	free(err);
	return r;
}

/* user a with the hash $2y$COST$REST */
static int parse_hash(const char *cost, const char *rest)
{
	struct webconfig *wc = NULL;
	char yaml[256];
	int r;

	snprintf(yaml, sizeof(yaml), "basic_auth_users:\n  a: '$2y$%s$%s'\n", cost, rest);
	r = parse(yaml, &wc);
	webconfig_free(wc);
	return r;
}

static void test_bcrypt_strings(void **state)
{
	char rest[64];

	(void)state;
	assert_int_equal(parse_hash("10", SALT_AND_HASH), 0);
	assert_int_equal(parse_hash("04", SALT_AND_HASH), 0);
	assert_int_equal(parse_hash("31", SALT_AND_HASH), 0);
	assert_int_equal(parse_hash("32", SALT_AND_HASH), -EINVAL);
	assert_int_equal(parse_hash("03", SALT_AND_HASH), -EINVAL);
	/* one character outside the alphabet, first or last */
	for (size_t at = 0; at < 53; at += 52) {
		strcpy(rest, SALT_AND_HASH);
		rest[at] = '!';
		assert_int_equal(parse_hash("10", rest), -EINVAL);
	}
	/* one character short or long */
	strcpy(rest, SALT_AND_HASH);
	rest[52] = '\0';
	assert_int_equal(parse_hash("10", rest), -EINVAL);
	strcpy(rest, SALT_AND_HASH "a");
	assert_int_equal(parse_hash("10", rest), -EINVAL);
}

/* WEBCONFIG_AUTH_CACHE + 1 users log in once each: the cache fills, then wraps to slot 1. */
static void test_login_cache_slots(void **state)
{
	enum { N = WEBCONFIG_AUTH_CACHE + 1 };
	size_t cap = 64 + N * 96, len = 0;
	char *yaml = malloc(cap), salt[CRYPT_GENSALT_OUTPUT_SIZE], name[16], pass[16];
	struct webconfig *wc = NULL;

	(void)state;
	assert_non_null(yaml);
	len += (size_t)snprintf(yaml + len, cap - len, "basic_auth_users:\n");
	for (int i = 0; i < N; i++) {
		snprintf(pass, sizeof(pass), "pw%d", i);
		assert_non_null(crypt_gensalt_rn("$2b$", 4, NULL, 0, salt, sizeof(salt)));
		len += (size_t)snprintf(yaml + len, cap - len, "  u%d: '%s'\n", i, crypt(pass, salt));
		assert_true(len < cap);
	}
	assert_int_equal(parse(yaml, &wc), 0);
	free(yaml);
	assert_int_equal(wc->n_users, N);
	webconfig_set_bcrypt_rate(1e6, 1e6); /* N + 2 bcrypt runs, not N / 5 seconds */
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "u%d", i);
		snprintf(pass, sizeof(pass), "pw%d", i);
		assert_true(webconfig_check_login(wc, name, pass));
		assert_int_equal(wc->cache_used, i + 1 < WEBCONFIG_AUTH_CACHE ? i + 1 : WEBCONFIG_AUTH_CACHE);
		assert_int_equal(wc->cache_next, (size_t)(i + 1) % WEBCONFIG_AUTH_CACHE);
	}
	/* u0's entry was overwritten by the last login: u0 is checked by bcrypt again, and passes */
	assert_true(webconfig_check_login(wc, "u0", "pw0"));
	assert_false(webconfig_check_login(wc, "u0", "pw1"));
	webconfig_set_bcrypt_rate(WEBCONFIG_BCRYPT_PER_SECOND, WEBCONFIG_BCRYPT_BURST);
	webconfig_free(wc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bcrypt_strings),
		cmocka_unit_test(test_login_cache_slots),
	};

	return cmocka_run_group_tests_name("webconfig-exact", tests, NULL, NULL);
}
