/* SPDX-License-Identifier: Apache-2.0 */
/* The recently opened files per cgroup: order, caps, expiry, drop counts, memory. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fanotify/handleset.h"

#define SEC 1000000000ULL

static const struct handleset_creds creds = { .fsuid = 1000, .fsgid = 1000 };

/* A handle of 8 bytes (ext4's inode and generation) made from n. */
static struct handleset_key key_of(uint64_t n, unsigned char buf[8])
{
	memcpy(buf, &n, 8);
	return (struct handleset_key){ .fsid = 0x1234, .type = 1, .len = 8, .bytes = buf };
}

static void note(struct handleset *hs, const char *cg, uint64_t n, uint64_t now)
{
	unsigned char b[8];
	struct handleset_key k = key_of(n, b);

	assert_int_equal(handleset_note(hs, cg, &k, &creds, now, NULL), 0);
}

/* The handle numbers of a cgroup's entries, most recent first, as "3 1 2". */
static void order_of(struct handleset *hs, const char *cg, uint64_t now, char *out, size_t size)
{
	struct handleset_item *items;
	size_t n, len = 0;
	uint64_t v;

	assert_int_equal(handleset_cgroup_items(hs, cg, now, &items, &n), 0);
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		memcpy(&v, items[i].bytes, 8);
		len += (size_t)snprintf(out + len, size - len, "%s%llu", i ? " " : "", (unsigned long long)v);
	}
	free(items);
}

static struct handleset *make(size_t max, size_t per_cg, uint64_t window)
{
	struct handleset *hs = NULL;
	struct handleset_limits lim = { .max_entries = max, .max_per_cgroup = per_cg, .window_ns = window };

	assert_int_equal(handleset_new(&lim, &hs), 0);
	return hs;
}

static void test_order_and_reopen(void **state)
{
	struct handleset *hs = make(100, 100, 60 * SEC);
	char s[128];

	(void)state;
	note(hs, "/a", 1, 1 * SEC);
	note(hs, "/a", 2, 2 * SEC);
	note(hs, "/a", 3, 3 * SEC);
	order_of(hs, "/a", 3 * SEC, s, sizeof(s));
	assert_string_equal(s, "3 2 1");
	note(hs, "/a", 1, 4 * SEC); /* opened again: to the front, no second entry */
	order_of(hs, "/a", 4 * SEC, s, sizeof(s));
	assert_string_equal(s, "1 3 2");
	note(hs, "/b", 1, 5 * SEC); /* the same file in another cgroup is another entry */
	order_of(hs, "/b", 5 * SEC, s, sizeof(s));
	assert_string_equal(s, "1");
	order_of(hs, "/none", 5 * SEC, s, sizeof(s));
	assert_string_equal(s, "");
	{
		struct handleset_stats st;

		handleset_get_stats(hs, &st);
		assert_int_equal(st.entries, 4);
		assert_int_equal(st.cgroups, 2);
	}
	handleset_free(hs);
}

/* Keys differ by file system id, handle type and handle bytes. */
static void test_key_parts(void **state)
{
	struct handleset *hs = make(100, 100, 60 * SEC);
	unsigned char b[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct handleset_key k = { .fsid = 1, .type = 1, .len = 8, .bytes = b };
	struct handleset_stats st;
	unsigned char big[HANDLESET_HANDLE_MAX + 1] = { 0 };

	(void)state;
	assert_int_equal(handleset_note(hs, "/", &k, &creds, 1, NULL), 0);
	k.fsid = 2;
	assert_int_equal(handleset_note(hs, "/", &k, &creds, 1, NULL), 0);
	k.type = 2;
	assert_int_equal(handleset_note(hs, "/", &k, &creds, 1, NULL), 0);
	k.len = 7;
	assert_int_equal(handleset_note(hs, "/", &k, &creds, 1, NULL), 0);
	k.len = 8;
	assert_int_equal(handleset_note(hs, "/", &k, &creds, 1, NULL), 0); /* same as the third */
	k = (struct handleset_key){ .len = sizeof(big), .bytes = big };
	assert_int_equal(handleset_note(hs, "/", &k, &creds, 1, NULL), -EINVAL);
	handleset_get_stats(hs, &st);
	assert_int_equal(st.entries, 4);
	handleset_free(hs);
}

/* Over its own cap a cgroup loses its least recently opened, and others keep theirs. */
static void test_cgroup_cap(void **state)
{
	struct handleset *hs = make(100, 3, 60 * SEC);
	struct handleset_stats st;
	char s[128];

	(void)state;
	note(hs, "/other", 99, 1);
	for (uint64_t i = 1; i <= 5; i++)
		note(hs, "/a", i, 10 + i);
	order_of(hs, "/a", 20, s, sizeof(s));
	assert_string_equal(s, "5 4 3");
	note(hs, "/a", 3, 30); /* reopened: 4 is now the oldest */
	note(hs, "/a", 6, 31);
	order_of(hs, "/a", 31, s, sizeof(s));
	assert_string_equal(s, "6 3 5");
	order_of(hs, "/other", 31, s, sizeof(s));
	assert_string_equal(s, "99");
	handleset_get_stats(hs, &st);
	assert_int_equal(st.dropped_cgroup_cap, 3);
	assert_int_equal(st.dropped_global_cap, 0);
	assert_int_equal(st.entries, 4);
	handleset_free(hs);
}

/* Over the global cap the least recently opened of all goes, whichever cgroup it is in. */
static void test_global_cap(void **state)
{
	struct handleset *hs = make(4, 10, 60 * SEC);
	struct handleset_stats st;
	char s[128];

	(void)state;
	note(hs, "/a", 1, 1);
	note(hs, "/b", 2, 2);
	note(hs, "/a", 3, 3);
	note(hs, "/b", 4, 4);
	note(hs, "/a", 1, 5); /* /a 1 is recent again: /b 2 is the oldest */
	note(hs, "/c", 5, 6);
	order_of(hs, "/b", 6, s, sizeof(s));
	assert_string_equal(s, "4");
	note(hs, "/c", 6, 7); /* now /a 3 */
	order_of(hs, "/a", 7, s, sizeof(s));
	assert_string_equal(s, "1");
	handleset_get_stats(hs, &st);
	assert_int_equal(st.dropped_global_cap, 2);
	assert_int_equal(st.dropped_cgroup_cap, 0);
	assert_int_equal(st.entries, 4);
	assert_int_equal(st.cgroups, 3);
	handleset_free(hs);
}

/* An entry counts for the window after its last open, then is expired and counted. */
static void test_expiry(void **state)
{
	struct handleset *hs = make(100, 100, 10 * SEC);
	struct handleset_stats st;
	char s[128];

	(void)state;
	note(hs, "/a", 1, 100 * SEC);
	note(hs, "/a", 2, 105 * SEC);
	order_of(hs, "/a", 110 * SEC, s, sizeof(s)); /* 1 is exactly at the window's end */
	assert_string_equal(s, "2 1");
	order_of(hs, "/a", 111 * SEC, s, sizeof(s)); /* a read hides it, does not drop it */
	assert_string_equal(s, "2");
	handleset_get_stats(hs, &st);
	assert_int_equal(st.entries, 2);
	assert_int_equal(handleset_expire(hs, 111 * SEC), 1);
	note(hs, "/a", 2, 112 * SEC); /* reopened: its window starts again */
	assert_int_equal(handleset_expire(hs, 120 * SEC), 0);
	order_of(hs, "/a", 122 * SEC, s, sizeof(s));
	assert_string_equal(s, "2");
	assert_int_equal(handleset_expire(hs, 123 * SEC), 1);
	handleset_get_stats(hs, &st);
	assert_int_equal(st.expired, 2);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.cgroups, 0); /* an empty cgroup is forgotten */
	handleset_free(hs);
}

/* Opens of an entry in the current period, this one included: what the silencing rule reads. */
static unsigned opens_of(struct handleset *hs, const char *cg, uint64_t n, uint64_t now)
{
	unsigned char b[8];
	struct handleset_key k = key_of(n, b);
	unsigned opens = 0;

	assert_int_equal(handleset_note(hs, cg, &k, &creds, now, &opens), 0);
	return opens;
}

/* Counted per (cgroup, file), from 1 again in each period and after the entry was dropped. */
static void test_period_opens(void **state)
{
	struct handleset *hs = make(100, 2, 60 * SEC);

	(void)state;
	assert_int_equal(opens_of(hs, "/a", 1, 1 * SEC), 1);
	assert_int_equal(opens_of(hs, "/a", 1, 2 * SEC), 2);
	assert_int_equal(opens_of(hs, "/b", 1, 2 * SEC), 1); /* another cgroup, another count */
	assert_int_equal(opens_of(hs, "/a", 2, 3 * SEC), 1);
	assert_int_equal(opens_of(hs, "/a", 1, 4 * SEC), 3);
	handleset_new_period(hs);
	assert_int_equal(opens_of(hs, "/a", 1, 5 * SEC), 1);
	assert_int_equal(opens_of(hs, "/a", 1, 6 * SEC), 2);
	assert_int_equal(opens_of(hs, "/b", 1, 6 * SEC), 1); /* its open before the period: not counted */
	handleset_new_period(hs);
	handleset_new_period(hs);
	assert_int_equal(opens_of(hs, "/a", 2, 7 * SEC), 1); /* periods without an open: still 1 */
	/* /a holds 2 and 1; a third file drops 1 (the cgroup's cap is 2): it starts again at 1 */
	assert_int_equal(opens_of(hs, "/a", 3, 8 * SEC), 1);
	assert_int_equal(opens_of(hs, "/a", 1, 9 * SEC), 1);
	for (unsigned i = 0; i < 70000; i++)
		opens_of(hs, "/c", 9, 10 * SEC);
	assert_int_equal(opens_of(hs, "/c", 9, 10 * SEC), 65535); /* saturates */
	handleset_free(hs);
}

static void test_bad_limits(void **state)
{
	struct handleset *hs = NULL;
	struct handleset_limits lim = { .max_entries = 1, .max_per_cgroup = 0, .window_ns = 1 };

	(void)state;
	assert_int_equal(handleset_new(&lim, &hs), -EINVAL);
	assert_null(hs);
}

/* Resident set of this process in KiB, from /proc/self/status VmRSS. */
static long rss_kib(void)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &v) == 1)
			break;
	fclose(f);
	return v;
}

/*
 * 100,000 distinct files over 1,000 cgroups with handles of 32 bytes (more than ext4's 8 or
 * xfs's 16): the set's own growth of the resident set stays under 32 MiB, half the daemon's
 * budget of 64 MiB (the figure is printed; ASan's shadow memory is part of it).
 */
static void test_memory_100k(void **state)
{
	struct handleset *hs = make(100000, 1000, 3600 * SEC);
	unsigned char b[32] = { 0 };
	struct handleset_key k = { .fsid = 7, .type = 1, .len = sizeof(b), .bytes = b };
	struct handleset_stats st;
	long before = rss_kib(), after;
	char cg[32];

	(void)state;
	for (uint32_t i = 0; i < 100000; i++) {
		memcpy(b, &i, sizeof(i));
		snprintf(cg, sizeof(cg), "/slice/unit-%u.service", i % 1000);
		assert_int_equal(handleset_note(hs, cg, &k, &creds, SEC + i, NULL), 0);
	}
	after = rss_kib();
	handleset_get_stats(hs, &st);
	assert_int_equal(st.entries, 100000);
	assert_int_equal(st.dropped_cgroup_cap + st.dropped_global_cap, 0);
	printf("# handleset: 100000 entries grew RSS by %ld KiB\n", after - before);
	assert_true(after - before < 32 * 1024);
	handleset_free(hs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_reopen),
		cmocka_unit_test(test_key_parts),
		cmocka_unit_test(test_cgroup_cap),
		cmocka_unit_test(test_global_cap),
		cmocka_unit_test(test_expiry),
		cmocka_unit_test(test_period_opens),
		cmocka_unit_test(test_bad_limits),
		cmocka_unit_test(test_memory_100k),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
