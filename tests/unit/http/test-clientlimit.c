/* SPDX-License-Identifier: Apache-2.0 */
/* The client keys (IPv4, IPv4-mapped, IPv6 /64) and the bounded table of bcrypt budgets. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "http/clientlimit.h"

#define S 1000000000ULL

/* The key of the address text (IPv4 or IPv6). */
static void key_of(const char *addr, uint8_t key[CLIENTLIMIT_KEY_LEN])
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(1) };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(2) };

	if (inet_pton(AF_INET, addr, &in.sin_addr) == 1) {
		clientlimit_key((struct sockaddr *)&in, key);
		return;
	}
	assert_int_equal(inet_pton(AF_INET6, addr, &in6.sin6_addr), 1);
	clientlimit_key((struct sockaddr *)&in6, key);
}

static bool same(const char *a, const char *b)
{
	uint8_t ka[CLIENTLIMIT_KEY_LEN], kb[CLIENTLIMIT_KEY_LEN];

	key_of(a, ka);
	key_of(b, kb);
	return memcmp(ka, kb, CLIENTLIMIT_KEY_LEN) == 0;
}

static void test_keys(void **state)
{
	uint8_t k[CLIENTLIMIT_KEY_LEN], want[CLIENTLIMIT_KEY_LEN] = { 0 };

	(void)state;
	/* IPv4: the whole address, in the last four bytes */
	key_of("127.0.0.2", k);
	want[12] = 127, want[15] = 2;
	assert_memory_equal(k, want, CLIENTLIMIT_KEY_LEN);
	assert_false(same("127.0.0.1", "127.0.0.2"));
	assert_false(same("10.1.2.3", "10.1.2.4"));
	/* IPv4-mapped IPv6 is the IPv4 address */
	assert_true(same("::ffff:127.0.0.2", "127.0.0.2"));
	assert_false(same("::ffff:127.0.0.2", "::ffff:127.0.0.1"));
	/* IPv6: the /64 */
	assert_true(same("2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:fffe"));
	assert_false(same("2001:db8:1:2::1", "2001:db8:1:3::1"));
	assert_false(same("2001:db8:1:2::1", "2001:db9:1:2::1"));
	assert_true(same("::1", "::2"));
	assert_false(same("::1", "0.0.0.1")); /* ::/64 is not 0.0.0.0 */
	key_of("2001:db8:1:2:3:4:5:6", k);
	memset(want, 0, sizeof(want));
	memcpy(want, (const uint8_t[]){ 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2 }, 8);
	assert_memory_equal(k, want, CLIENTLIMIT_KEY_LEN);
	/* no address: all zero */
	clientlimit_key(NULL, k);
	memset(want, 0, sizeof(want));
	assert_memory_equal(k, want, CLIENTLIMIT_KEY_LEN);
}

static void key_n(uint8_t key[CLIENTLIMIT_KEY_LEN], unsigned n)
{
	memset(key, 0, CLIENTLIMIT_KEY_LEN);
	key[13] = (uint8_t)(n >> 16);
	key[14] = (uint8_t)(n >> 8);
	key[15] = (uint8_t)n;
}

/* Takes until refused; how many were taken (at most 100). */
static int drain(struct clientlimit *t, const uint8_t *key, uint64_t now, bool *ret_proven)
{
	int n = 0;

	while (n < 100 && clientlimit_take(t, key, now, ret_proven))
		n++;
	return n;
}

/* Each client has its own bucket: one spent does not touch another's; it refills at the rate. */
static void test_buckets_per_client(void **state)
{
	struct clientlimit_slot slots[8];
	struct clientlimit t;
	uint8_t a[16], b[16];
	bool proven = true;

	(void)state;
	clientlimit_init(&t, slots, 8, 1, 3);
	key_n(a, 1);
	key_n(b, 2);
	assert_int_equal(drain(&t, a, 10 * S, &proven), 3);
	assert_false(proven);
	assert_int_equal(drain(&t, b, 10 * S, &proven), 3);
	assert_int_equal(drain(&t, a, 10 * S + S / 2, &proven), 0);
	assert_int_equal(drain(&t, a, 11 * S, &proven), 1); /* one a second */
	assert_int_equal(drain(&t, a, 20 * S, &proven), 3); /* never more than the burst */
	clientlimit_prove(&t, a);
	assert_false(clientlimit_take(&t, a, 20 * S, &proven));
	assert_true(proven);
	assert_true(clientlimit_take(&t, b, 21 * S, &proven));
	assert_false(proven);
}

/*
 * A full table: a newcomer takes the slot of the unproven client that asked longest ago, never
 * a proven one's; the proven keep their (spent) buckets. Only a table of proven clients gives
 * up its oldest.
 */
static void test_full_table(void **state)
{
	struct clientlimit_slot slots[4];
	struct clientlimit t;
	uint8_t k[16], p1[16], p2[16];
	bool proven;

	(void)state;
	clientlimit_init(&t, slots, 4, 0.001, 3); /* no refill to speak of */
	key_n(p1, 1);
	key_n(p2, 2);
	/* two proven clients, their budgets spent, asking first (the oldest) */
	assert_int_equal(drain(&t, p1, 1 * S, &proven), 3);
	clientlimit_prove(&t, p1);
	assert_int_equal(drain(&t, p2, 1 * S, &proven), 3);
	clientlimit_prove(&t, p2);
	/* a flood from 100 addresses, one after the other */
	for (unsigned i = 0; i < 100; i++) {
		key_n(k, 1000 + i);
		assert_int_equal(drain(&t, k, 2 * S + i, &proven), 3);
		assert_false(proven);
	}
	/* the proven kept their slots: still proven, still spent (no fresh bucket) */
	assert_false(clientlimit_take(&t, p1, 2 * S + 200, &proven));
	assert_true(proven);
	assert_false(clientlimit_take(&t, p2, 2 * S + 200, &proven));
	assert_true(proven);
	/* the flood's last two are still there (spent); its first ones were let go */
	key_n(k, 1099);
	assert_false(clientlimit_take(&t, k, 2 * S + 201, &proven));
	key_n(k, 1098);
	assert_false(clientlimit_take(&t, k, 2 * S + 202, &proven));
	/* a table of proven clients only: a newcomer takes the oldest of them */
	key_n(k, 1099);
	clientlimit_prove(&t, k);
	key_n(k, 1098);
	clientlimit_prove(&t, k);
	key_n(k, 5000);
	assert_true(clientlimit_take(&t, k, 3 * S, &proven));
	assert_false(proven);
	for (size_t i = 0; i < 4; i++)
		assert_true(slots[i].used);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_buckets_per_client),
		cmocka_unit_test(test_full_table),
	};

	return cmocka_run_group_tests_name("clientlimit", tests, NULL, NULL);
}
