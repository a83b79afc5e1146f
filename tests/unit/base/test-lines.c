/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lines: every line of a file comes out whole and in order whatever the buffer's size, a line
 * longer than the buffer is skipped and counted (never cut into pieces that parse as lines),
 * and a last line without its newline is kept. The oracle: the file's text split by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/lines.h"

static char dir[] = "/tmp/test-lines-XXXXXX";
static int dirfd_ = -1;

static void write_file(const char *text, size_t len)
{
	int fd = openat(dirfd_, "f", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
}

/*
 * The lines of text of at most max bytes, each followed by '|': what the reader must give;
 * *overlong the number of the others. The last line may lack its newline.
 */
static char *expected(const char *text, size_t max, size_t *overlong)
{
	char *out = calloc(1, strlen(text) + 2);
	const char *p = text;

	assert_non_null(out);
	*overlong = 0;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len <= max)
			strcat(strncat(out, p, len), "|");
		else
			(*overlong)++;
		p += len + (nl != NULL);
	}
	return out;
}

static char *read_all(size_t size, size_t *overlong)
{
	struct lines l;
	char *out = calloc(1, 1 << 16), *line;
	int r;

	assert_int_equal(lines_open_at(&l, dirfd_, "f", size), 0);
	while ((r = lines_next(&l, &line)) > 0)
		strcat(strcat(out, line), "|");
	assert_int_equal(r, 0);
	*overlong = l.overlong;
	lines_done(&l);
	return out;
}

static void test_every_buffer_size(void **state)
{
	static const char text[] = "a\nbb\nccc\n0123456789\ndd\ne\n\nlast";
	size_t overlong, want_overlong;
	char *got, *want;

	(void)state;
	write_file(text, sizeof(text) - 1);
	for (size_t size = 2; size < 40; size++) {
		got = read_all(size, &overlong);
		want = expected(text, size - 2, &want_overlong); /* the newline needs its byte */
		assert_string_equal(got, want);
		assert_int_equal(overlong, want_overlong);
		free(got);
		free(want);
	}
}

static void test_long_line_not_cut(void **state)
{
	char text[300];
	size_t overlong;
	char *got;

	(void)state;
	memset(text, 'x', sizeof(text));
	memcpy(text, "first\n", 6);
	memcpy(text + 200, "\nnext\n", 6); /* 194 x's between: a line of 194 bytes */
	write_file(text, 206);
	got = read_all(64, &overlong);
	assert_string_equal(got, "first|next|");
	assert_int_equal(overlong, 1);
	free(got);
}

static void test_missing_file(void **state)
{
	struct lines l;

	(void)state;
	assert_int_equal(lines_open_at(&l, dirfd_, "nope", 64), -ENOENT);
	assert_int_equal(lines_open_at(&l, dirfd_, "f", 1), -EINVAL);
}

static int setup(void **state)
{
	(void)state;
	assert_non_null(mkdtemp(dir));
	dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return dirfd_ < 0;
}

static int teardown(void **state)
{
	(void)state;
	unlinkat(dirfd_, "f", 0);
	close(dirfd_);
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_buffer_size),
		cmocka_unit_test(test_long_line_not_cut),
		cmocka_unit_test(test_missing_file),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
