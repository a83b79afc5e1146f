/* SPDX-License-Identifier: Apache-2.0 */
#include "base/lines.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int lines_open_at(struct lines *l, int dirfd, const char *name, size_t size)
{
	*l = (struct lines){ .fd = -1, .size = size };
	if (size < 2)
		return -EINVAL;
	l->buf = malloc(size);
	if (!l->buf)
		return -ENOMEM;
	l->fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (l->fd < 0) {
		int err = errno;

		lines_done(l);
		return -err;
	}
	return 0;
}

/* Moves what is left to the front and reads after it. 1 when bytes came, 0 at EOF, -errno. */
static int fill(struct lines *l)
{
	ssize_t n;

	memmove(l->buf, l->buf + l->start, l->end - l->start);
	l->end -= l->start;
	l->start = 0;
	do
		n = read(l->fd, l->buf + l->end, l->size - 1 - l->end);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		l->eof = true;
	l->end += (size_t)n;
	return n > 0;
}

int lines_next(struct lines *l, char **ret_line)
{
	for (;;) {
		char *line = l->buf + l->start;
		char *nl = memchr(line, '\n', l->end - l->start);
		int r;

		if (nl) {
			*nl = '\0';
			l->start = (size_t)(nl + 1 - l->buf);
			if (l->skipping) {
				l->skipping = false; /* the tail of a line too long: dropped */
				continue;
			}
			*ret_line = line;
			return 1;
		}
		if (l->eof) {
			if (l->start == l->end || l->skipping)
				return 0;
			l->buf[l->end] = '\0'; /* a last line without its newline */
			l->start = l->end;
			*ret_line = line;
			return 1;
		}
		if (l->start == 0 && l->end == l->size - 1) {
			/* the buffer is one line's beginning: drop it, and the rest up to its newline */
			if (!l->skipping)
				l->overlong++;
			l->skipping = true;
			l->start = l->end;
		}
		r = fill(l);
		if (r < 0)
			return r;
	}
}

void lines_done(struct lines *l)
{
	if (l->fd >= 0)
		close(l->fd);
	free(l->buf);
	l->fd = -1;
	l->buf = NULL;
}
