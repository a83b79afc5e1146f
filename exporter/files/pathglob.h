/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pathglob: a configured glob expanded one component at a time, in place of glob(3), which
 * follows a symlink in every component but the last: a user who owns a directory the glob
 * passes through could point it anywhere (`logs -> /root`) and have its files published.
 *
 * The literal prefix (the components before the first one with a glob character or a
 * backslash) is opened as the operator wrote it, links and all: the operator chose it. Below
 * it no symlink is followed, in any component: a directory is opened O_PATH | O_NOFOLLOW,
 * judged by its mount before it is read (the caller's enter_mount, for a directory on another
 * mount than its parent's, and for the prefix), and read through that descriptor. Names are
 * matched with fnmatch(3) as glob(3) matches them (a leading dot only by a dot; never "." or
 * ".."). The cost is bounded while expanding: every name read counts against max_entries, and
 * the caller's stopped() is asked at each, so a directory of a million names costs what the
 * cap allows, and no list of matches is built. Never logs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The mount id of a directory whose mount is not known (statx did not say). */
#define PATHGLOB_NO_MOUNT UINT64_MAX

/* A match, as ops->matched is given it. */
struct pathglob_match {
	int dirfd;          /* the directory it is in, open */
	const char *name;   /* its name there */
	const char *path;   /* its whole path */
	int fd;             /* a directory: opened read-only, its mount entered, the callee's; else -1 */
	unsigned char type; /* readdir's type (DT_REG...) of what is no directory */
	uid_t dir_uid;      /* the owner and mode of the directory it is in */
	mode_t dir_mode;
};

struct pathglob_ops {
	/*
	 * Whether a directory on mount mnt_id (the prefix's, or another than its parent's) may be
	 * read: 0, having entered it (*ret_token goes back to leave_mount once it is read), or
	 * -EXDEV (an excluded file system) or -EBUSY (a mount a scan is stuck on): not read.
	 */
	int (*enter_mount)(void *arg, uint64_t mnt_id, uint64_t *ret_token);
	void (*leave_mount)(void *arg, uint64_t token);
	/* Whether to stop now (the scan's deadline): asked before every name. NULL: never. */
	bool (*stopped)(void *arg);
	/*
	 * A match: a directory opened (m->fd), or anything else (no link), which the callee opens
	 * with O_NOFOLLOW. Returns 0, or a negative errno that ends the expansion.
	 */
	int (*matched)(void *arg, const struct pathglob_match *m);
	/*
	 * A name matched but not followed or not read: -ELOOP for a symlink, -EXDEV and -EBUSY
	 * from enter_mount, else the failed call's -errno. A name that is not there is no match.
	 */
	void (*skipped)(void *arg, int err);
};

struct pathglob {
	const struct pathglob_ops *ops;
	void *arg;
	size_t max_entries; /* names read at most; 0: no cap */
	size_t entries;     /* names read so far */
	bool capped;        /* max_entries was reached with names left to read */
};

/*
 * Expands the absolute pattern, calling ops->matched for each match in the order the
 * directories list them. Returns 0 (g->capped says whether the cap cut it), a negative errno
 * from ops->matched, -ENOMEM, or -EINVAL for a pattern that is not absolute.
 */
int pathglob_expand(struct pathglob *g, const char *pattern);

/* The length of pattern's literal prefix: "/srv/hst" of "/srv/hst/x*" (1 for "/x*"). */
size_t pathglob_prefix_len(const char *pattern);
