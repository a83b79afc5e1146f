/* SPDX-License-Identifier: Apache-2.0 */
/*
 * source: what files.c gives the modules that find a cgroup's files, one per source (held.c:
 * a process's descriptors, mapped.c: its mappings, paths.c: the configured paths, handle.c:
 * fanotify's handles), and what they give each other. Every source charges the budget, opens
 * its file O_PATH its own way and hands it to files_admit() (admit.h), which ends in
 * files_visit_watched(). Not for use outside files/: files.h is the interface.
 */
#pragma once

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "files/creds.h"
#include "files/files.h"

/*
 * O_NONBLOCK: a FIFO or a device that slipped past the type check must not hang the scan.
 * No O_NOATIME: open, fstat, cachestat and close never change atime (only reading the data or
 * mapping it does, which the scan never does), and O_NOATIME would cost a permission check
 * (ownership or CAP_FOWNER) on every file.
 */
#define FILES_OPEN_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)

/* Counts a skip (and tells ctx->on_skip, with errno); errno is kept. */
void files_skip(struct files_ctx *ctx, enum skip_reason r);

/* The skip an errno stands for. */
enum skip_reason files_skip_reason_of(int err);

/*
 * Whether the scan and this cgroup's share still have time, the clock read at a cgroup's first
 * call and then every few; sets ctx->timed_out or slice_out when not.
 */
bool files_in_time(struct files_ctx *ctx);

/*
 * Charges one descriptor, mapping or file to the cgroup's budget, every duplicate included
 * (each costs system calls), and checks the time: false when the cgroup may look at no more
 * (over the budget: counted as a limit skip).
 */
bool files_charge(struct files_ctx *ctx);

/* fstat(2) through the plain system call (files.c says why). */
int files_fstat(int fd, struct stat *st);

/*
 * Once per scan: the host's mount table and ours, for fstypes_path_mount() and the exclusion
 * (ctx->fstypes, which must be set).
 */
void files_load_mounts(struct files_ctx *ctx);

/*
 * Whether a file on mount mnt_id must not be touched. A mount not in our mountinfo is looked
 * up in that of the process holding it (piddir, or -1); one found nowhere (detached) is
 * excluded, as what cannot be named cannot be cleared.
 */
bool files_mount_excluded(struct files_ctx *ctx, int piddir, uint64_t mnt_id);

/*
 * The same, with why: _SKIP_MAX when the file may be touched, SKIP_FS_TYPE when its mount is
 * excluded or unknown, SKIP_MOUNT_CAPPED when the holder's mount namespace or the overlay is
 * over a cap (fstypes_limits): only that namespace's files lose detail. Sets timed_out when the
 * scan's deadline passed while reading or judging the tables.
 */
enum skip_reason files_mount_skip(struct files_ctx *ctx, int piddir, uint64_t mnt_id);

/* Hands an open regular file to the visitor (the real file in its place, on overlayfs). */
int files_visit_open(struct files_ctx *ctx, const struct files_entry *e);

/*
 * Visits the real file of name, an entry of dirfd (whose fstat is dir), a directory of a walk on
 * overlayfs at path, whose mount is mnt_id: from one statx of the name, without opening the
 * overlay file (overlayfs would open its real file too, which the resolver opens again). Skips
 * and counts what is no regular file; -EXDEV, nothing done, for a name on another mount (a file
 * mounted there), which the caller visits as any other path.
 */
int files_visit_overlay_at(struct files_ctx *ctx, uint64_t mnt_id, int dirfd,
			   const struct stat *dir, const char *name, const char *path);

/*
 * Reopens the regular file that the O_PATH descriptor pfd refers to (st, from
 * files_stat_opath()) read-only through /proc/thread-self/fd and visits it, unless a scan left
 * behind is stuck on its mount (quarantine.h), which the reopen, cachestat and close wait on.
 */
int files_visit_watched(struct files_ctx *ctx, uint64_t mnt_id, int pfd, const struct stat *st,
			const char *path, const char *proc_link);

/* One process being scanned: its /proc directory (tied to it, not to its pid) and creds. */
struct files_proc {
	pid_t pid;
	int dirfd;
	struct creds creds;
};

/* Every file mapping of the process (mapped.c), from PID/maps. */
int files_scan_mappings(struct files_ctx *ctx, const struct files_proc *p);
