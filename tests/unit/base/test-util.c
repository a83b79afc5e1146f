/* SPDX-License-Identifier: Apache-2.0 */
/*
 * read_file_at() and read_file_at_max(): a file read whole below the cap, cut one byte past it
 * above (so the caller knows it is over), and a file that never ends (/dev/zero, as a tenant's
 * table may be) read no further than the cap.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/util.h"

/* A temporary file of len bytes (a repeating pattern); its name in path. */
static void make_file(char *path, size_t len)
{
	_cleanup_close_ int fd = mkstemp(path);
	char chunk[4096];
	size_t done = 0;

	assert_true(fd >= 0);
	for (size_t i = 0; i < sizeof(chunk); i++)
		chunk[i] = (char)('a' + i % 26);
	while (done < len) {
		size_t n = len - done < sizeof(chunk) ? len - done : sizeof(chunk);

		assert_int_equal(write(fd, chunk, n), (ssize_t)n);
		done += n;
	}
}

/* Reads a file of len bytes under the cap max: len and the bytes it expects, NUL after. */
static void check_read(size_t len, size_t max, size_t want_len)
{
	char path[] = "/tmp/test-util-XXXXXX";
	_cleanup_free_ char *buf = NULL;
	size_t got = 12345;

	make_file(path, len);
	assert_int_equal(read_file_at_max(AT_FDCWD, path, max, &buf, &got), 0);
	unlink(path);
	assert_int_equal(got, want_len);
	assert_non_null(buf);
	assert_int_equal(buf[got], '\0');
	for (size_t i = 0; i < got; i++)
		assert_int_equal(buf[i], (char)('a' + i % 4096 % 26));
}

static void test_under_cap_whole(void **state)
{
	(void)state;
	check_read(0, 100, 0);
	check_read(99, 100, 99);
	check_read(100, 100, 100);
	/* past the first buffer: the growth steps end at the cap */
	check_read(20000, 50000, 20000);
}

static void test_over_cap_cut_one_past(void **state)
{
	(void)state;
	check_read(101, 100, 101);
	check_read(5000, 100, 101);
	check_read(50000, 20000, 20001);
	check_read(4096, 4095, 4096);
}

/* A file with no end is read to the cap and no further (before the cap, this loop ran to 16 MiB). */
static void test_endless_file_capped(void **state)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(read_file_at_max(AT_FDCWD, "/dev/zero", 1000, &buf, &len), 0);
	assert_int_equal(len, 1001);
}

/* read_file_at(): its own 16 MiB cap refuses the endless file; errors leave the outputs alone. */
static void test_read_file_at_refuses_big(void **state)
{
	char sentinel = 'x', *buf = &sentinel;
	size_t len = 7;

	(void)state;
	assert_int_equal(read_file_at(AT_FDCWD, "/dev/zero", &buf, &len), -EFBIG);
	assert_ptr_equal(buf, &sentinel);
	assert_int_equal(len, 7);
	assert_int_equal(read_file_at_max(AT_FDCWD, "/nonexistent/x", 10, &buf, &len), -ENOENT);
	assert_ptr_equal(buf, &sentinel);
	assert_int_equal(len, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_under_cap_whole),
		cmocka_unit_test(test_over_cap_cut_one_past),
		cmocka_unit_test(test_endless_file_capped),
		cmocka_unit_test(test_read_file_at_refuses_big),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
