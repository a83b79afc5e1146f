/* SPDX-License-Identifier: Apache-2.0 */
/* The cgroup of an event's process, from /proc/PID/cgroup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fanotify.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v2_line),
		cmocka_unit_test(test_v1_memory_line),
		cmocka_unit_test(test_missing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
