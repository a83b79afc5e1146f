/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbols: the list of the functions kprobes can be attached to on the running kernel
 * (symbols.h), read from tracefs or made from /proc/kallsyms.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "activity/symbols.h"
#include "base/util.h"

/* The whole of fd in *ret_buf. */
static int read_fd(int fd, char **ret_buf, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, size = 0;

	for (;;) {
		ssize_t n;

		if (size - len < 65536) {
			char *b = realloc(buf, size + 1048576);

			if (!b)
				return -ENOMEM;
			buf = b;
			size += 1048576;
		}
		n = read(fd, buf + len, size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*ret_len = len;
	*ret_buf = TAKE_PTR(buf);
	return 0;
}

size_t activity_kallsyms_names(char *buf, size_t len)
{
	size_t out = 0;

	for (size_t at = 0; at < len;) {
		const char *line = buf + at, *eol = memchr(line, '\n', len - at);
		size_t n = eol ? (size_t)(eol - line) : len - at;
		const char *type = memchr(line, ' ', n), *name, *end;

		at += n + 1;
		/* "ADDRESS TYPE NAME" and, for a module's symbol, "\t[MODULE]" */
		if (!type || (size_t)(type - line) + 3 >= n || type[2] != ' ' ||
		    (type[1] != 't' && type[1] != 'T'))
			continue;
		name = type + 3;
		end = name;
		while (end < line + n && *end != '\t' && *end != ' ')
			end++;
		memmove(buf + out, name, (size_t)(end - name)); /* never ahead of what is read */
		out += (size_t)(end - name);
		buf[out++] = '\n';
	}
	return out;
}

static int read_path(const char *path, char **ret_buf, size_t *ret_len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

	return fd < 0 ? -errno : read_fd(fd, ret_buf, ret_len);
}

int activity_read_functions(char **ret_buf, size_t *ret_len, const char **ret_source)
{
	static const char *const tracefs[] = {
		"/sys/kernel/tracing/available_filter_functions",
		"/sys/kernel/debug/tracing/available_filter_functions",
	};
	int r;

	for (size_t i = 0; i < ELEMENTSOF(tracefs); i++) {
		r = read_path(tracefs[i], ret_buf, ret_len);
		if (r == 0 || r == -ENOMEM) {
			*ret_source = "available_filter_functions";
			return r;
		}
	}
	/*
	 * A kernel without function tracing, no tracefs here, or one this process may not read
	 * (root's, mode 0700): kprobes take any text symbol, and kallsyms's names are everyone's.
	 */
	*ret_source = "kallsyms";
	r = read_path("/proc/kallsyms", ret_buf, ret_len);
	if (r == 0)
		*ret_len = activity_kallsyms_names(*ret_buf, *ret_len);
	return r;
}
