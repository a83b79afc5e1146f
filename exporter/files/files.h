/* SPDX-License-Identifier: Apache-2.0 */
/*
 * files: finds the regular files of a cgroup (open by its processes, mapped by them, or named
 * by the config), deduplicates them by (device, inode) and hands each, opened read-only, to a
 * visitor, closing it right after. Nothing is opened before it was fstat()ed through an O_PATH
 * descriptor the scan holds (no device open, no FIFO), nothing on an excluded file system is
 * touched, and a process's file is visited only if the process itself could have asked
 * cachestat(2) about it (creds.h). Counts what it skips; never logs.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "files/creds.h"
#include "files/dircache.h"
#include "files/fileset.h"
#include "files/fstypes.h"
#include "base/pagecache.h"
#include "files/skip.h"

struct files_ctx;

/*
 * One file, open: fd and st are valid during the visit only. fd is -1 for a file whose
 * cachestat(2) answer is known already this scan: files_cachestat() gives it.
 */
struct files_entry {
	int fd;
	const struct stat *st;
	const char *path;      /* the path, when known (configured paths) */
	const char *proc_link; /* else a link below procfs ("PID/fd/N", "PID/map_files/A-B") */
};

/* Returns 0, or a negative errno that stops the scan of this cgroup. */
typedef int (*files_visit_fn)(struct files_ctx *ctx, const struct files_entry *e);

struct files_ctx {
	int procfs_fd;
	bool map_files_closed; /* map_files entries cannot be followed: mappings come from maps */
	files_visit_fn visit;
	void *userdata;
	struct fstypes *fstypes; /* file systems not to touch; NULL: none */
	struct dircache *dircache; /* the directory listings kept between scans; NULL: none */
	/* the overlay mounts met (overlay.h), made at the first; freed by files_ctx_done() */
	struct overlay_cache *overlays;
	dev_t overlay_dev;              /* the device of the last file found on overlayfs; 0: none */

	struct fileset seen;         /* cleared between cgroups (files_cgroup_begin) */
	struct filecache cache;      /* the large files' cachestat answers, for the whole scan */
	uint64_t budget;             /* descriptors, mappings and files that may still be looked at */
	/* what one process may make the scan read (0: no cap); past it, the rest is not read */
	uint64_t max_fds_per_process;
	uint64_t max_maps_per_process;
	bool fds_capped, maps_capped; /* a process of this scan was cut by one of them */
	uint64_t deadline_ns;        /* of the scan, CLOCK_MONOTONIC; 0 for none */
	uint64_t slice_deadline_ns;  /* of this cgroup's share of the scan time; 0 for none */
	uint64_t reserve_ns;         /* kept for each cgroup still to come */
	bool timed_out;              /* set once the scan's deadline passed */
	bool slice_out;              /* set once this cgroup's share ran out */
	unsigned clock_skip;         /* files to charge before the clock is read again */
	uint64_t skipped[_SKIP_MAX]; /* added to by every call */
	char self_userns[64];        /* our user namespace, to judge others' capabilities */
	int self_fd_dir;             /* /proc/thread-self/fd, opened at the first reopen; 0: not yet */

	/*
	 * The cgroup being scanned as /proc/PID/cgroup names it (cgroups_ns_path()), the v1
	 * memory hierarchy's line with cgroup_memory_v1; NULL: not checked. files_scan_pid()
	 * scans a process only if its /proc directory, once opened, says it is there: the pid
	 * that cgroup.procs listed may have been given to a process of another cgroup meanwhile.
	 */
	const char *cgroup;
	bool cgroup_memory_v1;

	/*
	 * The mincore method's (mincore.h): the page size, the pages the scan may still walk
	 * (shared by the collectors of a scan; NULL: no cap) and the vector it fills (freed by
	 * files_ctx_done()).
	 */
	uint64_t page_size;
	uint64_t *mincore_pages_left;
	unsigned char *mincore_vec;

	pid_t pid; /* the process files_scan_pid() is at; 0 for configured paths */
	/*
	 * Names a configured glob reads at most, per pattern and cgroup (pathglob.h); 0: no cap.
	 * glob_capped: the first pattern the cap cut (the config's string), NULL while none.
	 */
	size_t glob_max_entries;
	const char *glob_capped;
	/*
	 * Optional: called with every skip counted, err the errno of the refused call (stale where
	 * the reason is no failed call: not_regular, a budget spent, an inode that changed).
	 */
	void (*on_skip)(struct files_ctx *ctx, enum skip_reason r, int err);
};

/* Monotonic clock in nanoseconds. */
uint64_t files_now_ns(void);

/*
 * Starts a cgroup: a budget of descriptors, mappings and files, and its share of the time:
 * up to the scan's deadline less reserve_ns for each of the cgroups after it (cgroups_left
 * counts this one), and never less than an equal share of the time left.
 */
void files_cgroup_begin(struct files_ctx *ctx, uint64_t budget, size_t cgroups_left);

/* Whether the scan of this cgroup stopped (its share of time, or the scan's deadline). */
bool files_stopped(const struct files_ctx *ctx);

/* Frees what the scan kept (the set, the mounts seen); ctx may be used again. */
void files_ctx_done(struct files_ctx *ctx);

/*
 * Whether err, from following an entry of /proc/PID/map_files, means that no entry can be
 * followed (the file mappings are then read from /proc/PID/maps), rather than that this one
 * file may not be read (which is counted as eperm).
 */
bool files_map_files_closed(int err);

/*
 * Open regular files and file mappings of one process. A process that exited is no error; one
 * that is not in ctx->cgroup once its /proc directory is open (its pid reused, or it moved) is
 * skipped and counted as vanished.
 */
int files_scan_pid(struct files_ctx *ctx, pid_t pid);

/* A configured path: file, directory (recursively, one file system, no symlinks) or glob. */
int files_scan_path(struct files_ctx *ctx, const char *pattern);

/*
 * cachestat(2) of an entry's file, as pagecache_stat() returns it, or with PAGECACHE_ABI_MINCORE
 * its cached pages as mincore_stat() counts them (-E2BIG: over a page cap). A large file's
 * answer (the kernel visits each of its cached pages, or every page with mincore) is remembered
 * for the rest of the scan: a file counted in several cgroups is then not asked about, nor even
 * opened, again.
 */
int files_cachestat(struct files_ctx *ctx, const struct pagecache *pc, const struct files_entry *e,
		    struct pagecache_cachestat *ret);

/* The path of an entry: its path, or what its proc link points to. Caller frees; NULL on error. */
char *files_entry_name(const struct files_ctx *ctx, const struct files_entry *e);

struct file_handle;

/*
 * A file known by a handle (fanotify's), opened O_PATH through mount_fd (open_by_handle_at(2),
 * which needs CAP_DAC_READ_SEARCH) and then treated as a file a process opened: regular files
 * only, not on an excluded file system, deduplicated, and visited only if creds (those of the
 * process that opened it; there is no descriptor to tell its open mode, so the rule for a path
 * it opened: owner, write permission or the capabilities) allow. A deleted file (ESTALE) is
 * counted as vanished. The visit's proc_link is "self/fd/N", our own O_PATH descriptor.
 */
int files_scan_handle(struct files_ctx *ctx, int mount_fd, struct file_handle *fh,
		      const struct creds *creds);
