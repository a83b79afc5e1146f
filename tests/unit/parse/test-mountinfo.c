/* SPDX-License-Identifier: Apache-2.0 */
/* mountinfo parser, fed from strings. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "parse/mountinfo.h"

/* proc(5)'s example, with optional fields and escapes. */
static const char line_doc[] =
	"36 35 98:0 /mnt1 /mnt\\0402 rw,noatime master:1 shared:7 - ext3 /dev/root rw,errors=continue";

static int parse(const char *s, struct mountinfo *m)
{
	return mountinfo_parse_line(s, strlen(s), m);
}

static void test_line(void **state)
{
	struct mountinfo m;

	(void)state;
	assert_int_equal(parse(line_doc, &m), 0);
	assert_int_equal(m.mount_id, 36);
	assert_int_equal(m.parent_id, 35);
	assert_int_equal(m.major, 98);
	assert_int_equal(m.minor, 0);
	assert_string_equal(m.root, "/mnt1");
	assert_string_equal(m.mount_point, "/mnt 2");
	assert_string_equal(m.mount_options, "rw,noatime");
	assert_string_equal(m.fstype, "ext3");
	assert_string_equal(m.source, "/dev/root");
	assert_string_equal(m.super_options, "rw,errors=continue");
	mountinfo_done(&m);
}

/* An overlay as 6.18 prints it: no optional field, escapes kept in the super options. */
static void test_overlay_line(void **state)
{
	static const char l[] = "49 27 0:40 / /tmp/o\\134m rw,relatime - overlay overlay "
				"rw,lowerdir=/l\\134\\054b:/l2,upperdir=/u\\040p,workdir=/w";
	struct mountinfo m;

	(void)state;
	assert_int_equal(parse(l, &m), 0);
	assert_int_equal(m.minor, 40);
	assert_string_equal(m.mount_point, "/tmp/o\\m");
	assert_string_equal(m.fstype, "overlay");
	assert_string_equal(m.super_options, "rw,lowerdir=/l\\134\\054b:/l2,upperdir=/u\\040p,workdir=/w");
	mountinfo_done(&m);
}

/* The buffer need not end in NUL: only len bytes are read. */
static void test_unterminated(void **state)
{
	static const char l[] = "1 0 8:1 / / rw - ext4 /dev/sda1 rw,extra-tail-not-read";
	struct mountinfo m;

	(void)state;
	assert_int_equal(mountinfo_parse_line(l, strlen(l) - strlen(",extra-tail-not-read"), &m), 0);
	assert_string_equal(m.super_options, "rw");
	mountinfo_done(&m);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"",
		"36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 ext3 /dev/root rw", /* no "-" */
		"36 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root",                     /* no super options */
		"36 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root rw extra",            /* a field too many */
		"x 35 98:0 / / rw - ext3 /dev/root rw",
		"36 35 98 / / rw - ext3 /dev/root rw",
		"36 35 98:x / / rw - ext3 /dev/root rw",
		"-1 35 98:0 / / rw - ext3 /dev/root rw",
		"99999999999 35 98:0 / / rw - ext3 /dev/root rw",
		"36 35 98:0 /a\\08 / rw - ext3 /dev/root rw", /* not octal */
		"36 35 98:0 /a\\000 / rw - ext3 /dev/root rw", /* NUL */
		"36 35 98:0 /a\\1 / rw - ext3 /dev/root rw",   /* cut short */
		"36 35 98:0  / rw - ext3 /dev/root rw",       /* an empty field */
		"36 35 98:0 / / rw - ext3 /dev/root rw\n",    /* a newline inside */
	};
	struct mountinfo m = { .mount_id = 42 };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i], &m), -EINVAL);
		assert_int_equal(m.mount_id, 42); /* untouched */
	}
}

static void test_find(void **state)
{
	static const char buf[] = "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
				  "27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
				  "272 27 0:50 / /srv rw - tmpfs tmpfs rw,size=1k\n"
				  "3 27 broken\n";
	struct mountinfo m;

	(void)state;
	assert_int_equal(mountinfo_find(buf, strlen(buf), 27, &m), 0);
	assert_string_equal(m.mount_point, "/");
	assert_int_equal(m.major, 254);
	mountinfo_done(&m);
	/* 27 is a prefix of 272: the whole id must match */
	assert_int_equal(mountinfo_find(buf, strlen(buf), 272, &m), 0);
	assert_string_equal(m.fstype, "tmpfs");
	mountinfo_done(&m);
	assert_int_equal(mountinfo_find(buf, strlen(buf), 2, &m), -ENOENT);
	assert_int_equal(mountinfo_find(buf, strlen(buf), 3, &m), -EINVAL);
	assert_int_equal(mountinfo_find(buf, 0, 22, &m), -ENOENT);
}

/* A whole table: the well-formed lines in order, the broken and empty ones passed over. */
static void test_next(void **state)
{
	static const char buf[] = "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
				  "3 27 broken\n"
				  "\n"
				  "27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
				  "272 27 0:50 / /srv rw - tmpfs tmpfs rw,size=1k"; /* no newline */
	static const int want[] = { 22, 27, 272 };
	const char *pos = buf;
	struct mountinfo m;
	size_t i = 0;

	(void)state;
	while (mountinfo_next(&pos, buf + strlen(buf), &m) > 0) {
		assert_true(i < sizeof(want) / sizeof(want[0]));
		assert_int_equal(m.mount_id, want[i]);
		mountinfo_done(&m);
		i++;
	}
	assert_int_equal(i, sizeof(want) / sizeof(want[0]));
	assert_ptr_equal(pos, buf + strlen(buf));
	pos = buf;
	assert_int_equal(mountinfo_next(&pos, buf, &m), 0); /* nothing to read */
}

static void test_options(void **state)
{
	static const char list[] = "rw,lowerdir=/a\\054b:/c\\075d,upperdir=/u\\040p,userxattr,x\\075y=1";
	static const char *const want[][2] = {
		{ "rw", NULL }, { "lowerdir", "/a,b:/c=d" }, { "upperdir", "/u p" },
		{ "userxattr", NULL }, { "x=y", "1" },
	};
	const char *cursor = list, *value;
	char *key;
	size_t i = 0;
	int r;

	(void)state;
	while ((r = mountinfo_next_option(&cursor, &key, &value)) > 0) {
		assert_true(i < sizeof(want) / sizeof(want[0]));
		assert_string_equal(key, want[i][0]);
		if (want[i][1])
			assert_string_equal(value, want[i][1]);
		else
			assert_null(value);
		free(key);
		i++;
	}
	assert_int_equal(r, 0);
	assert_int_equal(i, sizeof(want) / sizeof(want[0]));

	cursor = "a=\\9";
	assert_int_equal(mountinfo_next_option(&cursor, &key, &value), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_line),	     cmocka_unit_test(test_overlay_line),
		cmocka_unit_test(test_unterminated), cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_find),	     cmocka_unit_test(test_options),
		cmocka_unit_test(test_next),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
