/* SPDX-License-Identifier: Apache-2.0 */
/* The cgroup of an event's process, from /proc/PID/cgroup; the silencing rule. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <stdlib.h>

#include "fanotify/fanotify.h"

static const char hybrid[] = "12:memory:/system.slice/db.service\n"
			     "11:cpu,cpuacct:/system.slice/db.service\n"
			     "1:name=systemd:/system.slice/db.service\n"
			     "0::/system.slice/db.service/sub\n";

static void test_v2_line(void **state)
{
	char buf[sizeof(hybrid)];
	const char *cg;

	(void)state;
	memcpy(buf, hybrid, sizeof(hybrid));
	cg = fanotify_cgroup_of(buf, false);
	assert_non_null(cg);
	assert_string_equal(cg, "/system.slice/db.service/sub");
}

static void test_v1_memory_line(void **state)
{
	char buf[] = "4:pids:/a\n3:cpu,memory,io:/system.slice/x.service\n0::/\n";
	const char *cg;

	(void)state;
	cg = fanotify_cgroup_of(buf, true);
	assert_non_null(cg);
	assert_string_equal(cg, "/system.slice/x.service");
}

/* Only the unified line counts for v2; a controller named like a prefix is not memory. */
static void test_missing(void **state)
{
	char v1only[] = "12:memory:/a\n";
	char nomem[] = "5:memory_x:/a\n0::/b\n";
	char junk[] = "garbage\n0:x\n0::relative\n";
	char outside[] = "0::/../../kubepods.slice/pod1\n"; /* seen from a private cgroup namespace */

	(void)state;
	assert_null(fanotify_cgroup_of(v1only, false));
	assert_null(fanotify_cgroup_of(nomem, true));
	assert_null(fanotify_cgroup_of(junk, false));
	assert_null(fanotify_cgroup_of(outside, false));
}

#define SEC 1000000000ULL

/* The second open of a period earns a mark; the first, and those after, do not. */
static void test_silence_second_open(void **state)
{
	struct fanotify_silence s;

	(void)state;
	fanotify_silence_init(&s, 30 * SEC, 100, 0);
	assert_false(fanotify_silence_wanted(&s, 1));
	assert_true(fanotify_silence_wanted(&s, 2));
	assert_false(fanotify_silence_wanted(&s, 3)); /* queued before the mark took effect */
	assert_false(fanotify_silence_wanted(&s, 65535));
	fanotify_silence_init(&s, 0, 100, 0); /* --collector.fanotify.refresh=0 */
	assert_false(fanotify_silence_wanted(&s, 2));
	assert_false(fanotify_silence_due(&s, 1000 * SEC));
	assert_int_equal(fanotify_silence_timeout_ms(&s, 1000 * SEC), -1);
}

/* The period: due at its end exactly, poll()'s timeout rounded up, a refresh starts another. */
static void test_silence_period(void **state)
{
	struct fanotify_silence s;

	(void)state;
	fanotify_silence_init(&s, 30 * SEC, 100, 100 * SEC);
	assert_false(fanotify_silence_due(&s, 100 * SEC));
	assert_false(fanotify_silence_due(&s, 130 * SEC - 1));
	assert_true(fanotify_silence_due(&s, 130 * SEC));
	assert_false(fanotify_silence_due(&s, 99 * SEC)); /* a clock behind the start: not due */
	assert_int_equal(fanotify_silence_timeout_ms(&s, 100 * SEC), 30000);
	assert_int_equal(fanotify_silence_timeout_ms(&s, 130 * SEC - 1), 1);
	assert_int_equal(fanotify_silence_timeout_ms(&s, 131 * SEC), 0);
	fanotify_silence_placed(&s, 0);
	assert_int_equal(s.files, 1);
	fanotify_silence_refreshed(&s, 131 * SEC);
	assert_int_equal(s.files, 0);
	assert_int_equal(s.refreshes, 1);
	assert_false(fanotify_silence_due(&s, 160 * SEC));
	assert_true(fanotify_silence_due(&s, 161 * SEC));
	fanotify_silence_init(&s, 3600 * SEC, 1, 0);
	assert_int_equal(fanotify_silence_timeout_ms(&s, 0), 3600000);
	fanotify_silence_init(&s, UINT64_MAX / 2, 1, 0);
	assert_int_equal(fanotify_silence_timeout_ms(&s, 0), INT_MAX);
}

/* At most max_files marks a period; the kernel's refusals and limits, and a file gone. */
static void test_silence_cap_and_errors(void **state)
{
	struct fanotify_silence s;

	(void)state;
	fanotify_silence_init(&s, 30 * SEC, 2, 0);
	fanotify_silence_placed(&s, 0);
	assert_true(fanotify_silence_wanted(&s, 2));
	fanotify_silence_placed(&s, 0);
	assert_false(fanotify_silence_wanted(&s, 2)); /* the cap */
	fanotify_silence_refreshed(&s, 30 * SEC);
	assert_true(fanotify_silence_wanted(&s, 2));
	fanotify_silence_placed(&s, -ESTALE); /* deleted since: no mark, no error */
	fanotify_silence_placed(&s, -EBADF);
	fanotify_silence_placed(&s, -EACCES);
	assert_int_equal(s.files, 0);
	assert_int_equal(s.errors, 2);
	assert_true(fanotify_silence_wanted(&s, 2));
	fanotify_silence_placed(&s, -ENOSPC); /* the kernel's mark limit: none more this period */
	assert_false(fanotify_silence_wanted(&s, 2));
	fanotify_silence_refreshed(&s, 60 * SEC);
	assert_true(fanotify_silence_wanted(&s, 2));
	fanotify_silence_placed(&s, -EINVAL); /* no FAN_MARK_EVICTABLE (before 5.19): off for good */
	assert_true(s.refused);
	assert_false(fanotify_silence_wanted(&s, 2));
	fanotify_silence_refreshed(&s, 90 * SEC);
	assert_false(fanotify_silence_wanted(&s, 2));
	assert_int_equal(s.errors, 4);
}

/*
 * The listener's loop over a model of the kernel: an open of a file with an ignore mark makes no
 * event; a refresh drops every mark. Returns the events of cgroup cg opening file n at now.
 */
struct model {
	struct fanotify_silence s;
	struct handleset *hs;
	bool marked[8];
	unsigned events;
};

static void model_open(struct model *m, const char *cg, uint64_t n, uint64_t now)
{
	static const struct handleset_creds creds = { 0 };
	struct handleset_key k = { .fsid = 1, .type = 1, .len = sizeof(n), .bytes = (const void *)&n };
	unsigned opens;

	if (fanotify_silence_due(&m->s, now)) {
		memset(m->marked, 0, sizeof(m->marked));
		handleset_new_period(m->hs);
		fanotify_silence_refreshed(&m->s, now);
	}
	if (m->marked[n])
		return;
	m->events++;
	assert_int_equal(handleset_note(m->hs, cg, &k, &creds, now, &opens), 0);
	if (fanotify_silence_wanted(&m->s, opens)) {
		m->marked[n] = true;
		fanotify_silence_placed(&m->s, 0);
	}
}

/* Which file is silenced when: a hot file, a cold one, a second cgroup, the cap, no refresh. */
static void test_silence_model(void **state)
{
	struct handleset_limits lim = { .max_entries = 100, .max_per_cgroup = 100, .window_ns = 300 * SEC };
	struct handleset_item *items;
	struct model m = { 0 };
	size_t n;

	(void)state;
	assert_int_equal(handleset_new(&lim, &m.hs), 0);
	fanotify_silence_init(&m.s, 30 * SEC, 2, 0);
	/* file 1 opened every 10 ms for 90 s: two events in each of the three periods */
	for (uint64_t t = 0; t < 90 * SEC; t += SEC / 100)
		model_open(&m, "/a", 1, t);
	assert_int_equal(m.events, 6);
	/* file 2 opened once a period: an event each time, never a mark */
	m.events = 0;
	for (uint64_t t = 90 * SEC; t < 180 * SEC; t += 30 * SEC)
		model_open(&m, "/a", 2, t + SEC);
	assert_int_equal(m.events, 3);
	assert_int_equal(m.s.files, 0);
	/* /a silences file 3; /b's opens of it go unseen until the refresh, then /b has it too */
	m.events = 0;
	model_open(&m, "/a", 3, 181 * SEC);
	model_open(&m, "/a", 3, 182 * SEC);
	model_open(&m, "/b", 3, 183 * SEC);
	assert_int_equal(m.events, 2);
	assert_int_equal(handleset_cgroup_items(m.hs, "/b", 183 * SEC, &items, &n), 0);
	assert_int_equal(n, 0);
	model_open(&m, "/b", 3, 211 * SEC); /* after the refresh at 210 s */
	assert_int_equal(m.events, 3);
	assert_int_equal(handleset_cgroup_items(m.hs, "/b", 211 * SEC, &items, &n), 0);
	assert_int_equal(n, 1);
	free(items);
	/* the cap (2 a period): the third hot file keeps making events */
	m.events = 0;
	for (uint64_t f = 4; f <= 6; f++)
		for (int i = 0; i < 10; i++)
			model_open(&m, "/a", f, 212 * SEC + (uint64_t)i);
	assert_int_equal(m.s.files, 2);
	assert_int_equal(m.events, 2 + 2 + 10);
	handleset_free(m.hs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v2_line),
		cmocka_unit_test(test_v1_memory_line),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_silence_second_open),
		cmocka_unit_test(test_silence_period),
		cmocka_unit_test(test_silence_cap_and_errors),
		cmocka_unit_test(test_silence_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
