/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lines: a text file read a line at a time through a buffer of fixed size, for /proc files whose
 * length a process controls (PID/maps: a line per mapping, up to vm.max_map_count of them, each
 * with a path of up to PATH_MAX bytes). Memory stays the buffer's, however long the file; a line
 * longer than the buffer is skipped and counted, never cut.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct lines {
	int fd;
	char *buf;
	size_t size;       /* of buf */
	size_t start, end; /* the bytes read and not yet handed out */
	bool eof;
	bool skipping;     /* inside a line longer than the buffer */
	size_t overlong;   /* lines skipped for their length */
};

/* Opens name below dirfd with a buffer of size bytes (at least 2): lines of up to size - 2 bytes. 0 or -errno. */
int lines_open_at(struct lines *l, int dirfd, const char *name, size_t size);

/*
 * The next line, NUL-terminated in place of its newline (the last one may lack it), valid
 * until the next call. 1 for a line, 0 at the end of the file, -errno when a read fails.
 */
int lines_next(struct lines *l, char **ret_line);

void lines_done(struct lines *l);
