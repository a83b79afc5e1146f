/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "base/util.h"

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* Config files and the cgroup and proc files read here are small; refuse anything larger. */
#define READ_FILE_MAX (16u << 20)

int read_file_at_max(int dirfd, const char *name, size_t max, char **ret_buf, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	/* max + 1 bytes at most: one past max says the file is over it, without reading the rest */
	while (len <= max) {
		ssize_t n;

		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			char *t;

			if (ncap > max + 1)
				ncap = max + 1;
			t = realloc(buf, ncap + 1);
			if (!t)
				return -ENOMEM;
			buf = t;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*ret_buf = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

int read_file_at(int dirfd, const char *name, char **ret_buf, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = read_file_at_max(dirfd, name, READ_FILE_MAX, &buf, &len);
	if (r < 0)
		return r;
	if (len > READ_FILE_MAX)
		return -EFBIG;
	*ret_buf = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}
