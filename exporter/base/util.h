/* SPDX-License-Identifier: Apache-2.0 */
/* Small helpers shared by every module: cleanup attributes, ownership transfer, array sizes. */
#pragma once

#include <stdint.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static inline void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)

/* Hands ownership of a pointer on: returns it and leaves NULL behind. */
#define TAKE_PTR(p)                              \
	({                                       \
		__typeof__(p) _tp_ = (p);        \
		(p) = NULL;                      \
		_tp_;                            \
	})

#define TAKE_FD(fd)                              \
	({                                       \
		int _tf_ = (fd);                 \
		(fd) = -1;                       \
		_tf_;                            \
	})

/* CLOCK_MONOTONIC in nanoseconds: the clock of every deadline, age and period of the daemon. */
uint64_t monotonic_ns(void);

/*
 * Reads a whole small file (cgroup and proc files) relative to dirfd into a NUL-terminated buffer;
 * -EFBIG past 16 MiB.
 */
int read_file_at(int dirfd, const char *name, char **ret_buf, size_t *ret_len);

/*
 * read_file_at() with the caller's cap: at most max + 1 bytes are read, so a file over max comes
 * back cut at max + 1 (*ret_len > max says so) and one that never ends (a tenant's table) costs
 * no more than that. Returns 0 or a negative errno; the outputs are untouched on failure.
 */
int read_file_at_max(int dirfd, const char *name, size_t max, char **ret_buf, size_t *ret_len);
