/* SPDX-License-Identifier: MIT */
/*
 * files: finds the regular files of a cgroup (open by its processes, mapped by them, or named
 * by the config), opens each once without blocking or touching atime, deduplicates them by
 * (device, inode) and hands each open descriptor to a visitor, closing it right after.
 * Counts what it skips; never logs.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "fileset.h"
#include "snapshot.h"

struct files_ctx;

/* One file, open: fd and st are valid during the visit only. */
struct files_entry {
	int fd;
	const struct stat *st;
	const char *path;      /* the path, when known (configured paths) */
	const char *proc_link; /* else a link below procfs ("PID/fd/N", "PID/map_files/A-B") */
};

/* Returns 0, or a negative errno that stops the scan of this cgroup. */
typedef int (*files_visit_fn)(struct files_ctx *ctx, const struct files_entry *e);

enum files_getfd {
	FILES_GETFD_UNKNOWN, /* not tried yet: the zero value */
	FILES_GETFD_YES,
	FILES_GETFD_NO, /* procfs of another pid namespace, or a kernel without pidfd_getfd */
};

struct files_ctx {
	int procfs_fd;
	enum files_getfd getfd; /* how open files of processes are reached */
	bool map_files_closed;  /* map_files entries cannot be followed: mappings come from maps */
	files_visit_fn visit;
	void *userdata;

	struct fileset seen;         /* cleared by the caller between cgroups */
	uint64_t budget;             /* files that may still be opened */
	uint64_t deadline_ns;        /* CLOCK_MONOTONIC; 0 for none */
	bool timed_out;              /* set once the deadline passed */
	uint64_t skipped[_SKIP_MAX]; /* added to by every call */

	pid_t pid; /* the process files_scan_pid() is at; 0 for configured paths */
	/*
	 * Optional: called with every skip counted, err the errno of the refused call (stale where
	 * the reason is no failed call: not_regular, a budget spent, an inode that changed).
	 */
	void (*on_skip)(struct files_ctx *ctx, enum skip_reason r, int err);
};

/* Monotonic clock in nanoseconds. */
uint64_t files_now_ns(void);

/*
 * Whether err, from following an entry of /proc/PID/map_files, means that no entry can be
 * followed (the file mappings are then read from /proc/PID/maps), rather than that this one
 * file may not be read (which is counted as eperm).
 */
bool files_map_files_closed(int err);

/* Open regular files and file mappings of one process. A process that exited is no error. */
int files_scan_pid(struct files_ctx *ctx, pid_t pid);

/* A configured path: file, directory (recursively, one file system, no symlinks) or glob. */
int files_scan_path(struct files_ctx *ctx, const char *pattern);

/* The path of an entry: its path, or what its proc link points to. Caller frees; NULL on error. */
char *files_entry_name(const struct files_ctx *ctx, const struct files_entry *e);
