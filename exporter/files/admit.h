/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admit: the one rule that lets a file be measured, whichever source found it: a process's held
 * descriptor (held.c), its mapping (mapped.c), a configured path (paths.c) or a fanotify handle
 * (handle.c). The source opens the file O_PATH its own way, which opens nothing (no device, no
 * FIFO, nothing asked of a FUSE daemon) and pins the inode; files_admit() then, in this order:
 *
 *   1. stats it without asking its file system anything not cached: a regular file, or skipped;
 *   2. leaves it alone on an excluded file system (fstypes.h);
 *   3. checks it is the file the source saw, where the source says one (a mapping's device
 *      and inode): the object whose permission the source judges;
 *   4. counts it once per cgroup: a file the cgroup counted already is passed over, else the
 *      source's permission step (could the process have asked cachestat(2) about it, creds.h)
 *      decides and it is claimed; a file the walk claimed by readdir's inode must still be it;
 *   5. reopens it read-only through our own O_PATH descriptor, not on a mount a scan is stuck on
 *      (quarantine.h), and visits it.
 *
 * Each refusal is counted as a skip. What really differs by source is an argument: the open
 * (the caller's), the process whose mount table names the mount, the identity, the permission.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "files/files.h"

/* What a source found: the file's O_PATH descriptor and what the rule needs to know of it. */
struct files_admission {
	int pfd;    /* the O_PATH descriptor (the caller's: it stays open), or -errno of its open */
	int piddir; /* /proc/PID of the process whose file it is, for its mount table; -1: none */
	/*
	 * The (dev, ino) the source saw, where it is not the descriptor itself (a mapping): both
	 * must match, but the device of a file on overlayfs, unless want_dev. The file is then
	 * also counted under it (maps prints the device the kernel keeps). NULL: none.
	 */
	const struct stat *want;
	bool want_dev;
	/* Claimed already (the walk, by readdir's inode): the file must still be that one. NULL. */
	const struct stat *claimed;
	/*
	 * The permission step: 1 when the process could have asked cachestat(2) about the file
	 * (st and mnt_id those of pfd), else 0 with the skip counted. NULL: none (a configured
	 * path: the operator named it).
	 */
	int (*may)(struct files_ctx *ctx, const struct stat *st, uint64_t mnt_id,
		   const void *arg);
	const void *may_arg;
	const char *path;      /* for the visit: the path, when the source knows it */
	const char *proc_link; /* else its link below procfs */
};

/* The rule above. Returns 0 (visited, or skipped and counted), or the visitor's negative errno. */
int files_admit(struct files_ctx *ctx, const struct files_admission *a);

/*
 * stat of what an O_PATH descriptor refers to, without asking its file system anything it
 * has not cached (AT_STATX_DONT_SYNC: a hung NFS server or FUSE daemon is not asked), with the
 * id of its mount. -errno on failure.
 */
int files_stat_opath(int fd, struct stat *st, uint64_t *ret_mnt_id);

/*
 * Step 4 alone, for a source that needs no permission step and opens the file itself (the walk
 * of a sealed directory, paths.c): the file readdir saw (claimed; else the entry was replaced
 * meanwhile: vanished), or a new (dev, ino) for the set. 1 to go on, 0 when skipped or already
 * counted, -ENOMEM.
 */
int files_claim(struct files_ctx *ctx, const struct stat *st, const struct stat *claimed);
