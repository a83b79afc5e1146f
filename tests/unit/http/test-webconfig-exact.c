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

#include "http/webconfig.h"

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

/*
 * WEBCONFIG_AUTH_CACHE + 1 wrong passwords: the ring of failures fills, then wraps to slot 1;
 * the first is forgotten (bcrypt would run again: with no budget left, it is not checked),
 * the second still remembered, and the good login kept apart throughout.
 */
static void test_login_cache_slots(void **state)
{
	enum { N = WEBCONFIG_AUTH_CACHE + 1 };
	char salt[CRYPT_GENSALT_OUTPUT_SIZE], yaml[256], pass[16];
	static const uint8_t key[16];
	struct webconfig *wc = NULL;

	(void)state;
	assert_non_null(crypt_gensalt_rn("$2b$", 4, NULL, 0, salt, sizeof(salt)));
	snprintf(yaml, sizeof(yaml), "basic_auth_users:\n  u: '%s'\n", crypt("right", salt));
	assert_int_equal(parse(yaml, &wc), 0);
	webconfig_set_bcrypt_rate(1e6, 1e6, 1e6, 1e6); /* N + 2 bcrypt runs, not N seconds */
	assert_int_equal(webconfig_login(wc, "u", "right", key), WEBCONFIG_LOGIN_OK);
	for (int i = 0; i < N; i++) {
		snprintf(pass, sizeof(pass), "pw%d", i);
		assert_int_equal(webconfig_login(wc, "u", pass, key), WEBCONFIG_LOGIN_REFUSED);
		assert_int_equal(wc->failed_used, i + 1 < WEBCONFIG_AUTH_CACHE ? i + 1 : WEBCONFIG_AUTH_CACHE);
		assert_int_equal(wc->failed_next, (size_t)(i + 1) % WEBCONFIG_AUTH_CACHE);
	}
	webconfig_set_bcrypt_rate(0, 0, 0, 0);
	assert_int_equal(webconfig_login(wc, "u", "pw0", key), WEBCONFIG_LOGIN_BUSY_CLIENT);
	assert_int_equal(webconfig_login(wc, "u", "pw1", key), WEBCONFIG_LOGIN_REFUSED);
	assert_int_equal(webconfig_login(wc, "u", "right", key), WEBCONFIG_LOGIN_OK);
	webconfig_set_bcrypt_rate(WEBCONFIG_BCRYPT_PER_SECOND, WEBCONFIG_BCRYPT_BURST,
				  WEBCONFIG_BCRYPT_CLIENT_PER_SECOND, WEBCONFIG_BCRYPT_CLIENT_BURST);
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
