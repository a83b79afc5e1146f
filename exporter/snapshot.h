/* SPDX-License-Identifier: MIT */
/*
 * snapshot: the result of one scan, as `collect` produces it and `render` prints it.
 * Plain data; a snapshot is shared by the scrapes that waited for the same scan (refcounted).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memstat.h"
#include "pagecache.h"

/* Why a file was not counted: cachestat_files_skipped_total{reason}. */
enum skip_reason {
	SKIP_EPERM,       /* open or cachestat refused */
	SKIP_VANISHED,    /* gone between finding and opening it */
	SKIP_NOT_REGULAR, /* socket, pipe, device, directory entry that is a symlink... */
	SKIP_LIMIT,       /* over max_files_per_scan or max_files_per_cgroup, or no descriptor
			     left (RLIMIT_NOFILE) */
	SKIP_NOT_FOUND,   /* a configured path that does not exist */
	SKIP_UNSUPPORTED, /* cachestat says EOPNOTSUPP (hugetlbfs) */
	SKIP_ERROR,       /* any other error */
	SKIP_NO_ACCESS,   /* the process holding it could not have asked cachestat about it */
	SKIP_FS_TYPE,     /* on a file system --collector.cachestat.fs-types-exclude names */
	_SKIP_MAX,
};

const char *skip_reason_name(enum skip_reason r);

/* Page cache state in bytes. */
struct snap_counts {
	uint64_t cached;
	uint64_t dirty;
	uint64_t writeback;
	uint64_t evicted;
	uint64_t recently_evicted;
};

struct snap_file {
	char *path; /* valid UTF-8, one-to-one with the file's name (topn_take()) */
	uint64_t size;
	struct snap_counts c;
	uint64_t dev, ino; /* identity, for a choice among equals that needs no path */
};

struct snap_cgroup {
	char *name; /* the cgroup label: "/" or "/a/b" */

	bool scanned; /* cachestat numbers below are present */
	struct snap_counts c;
	uint64_t files;
	uint64_t files_size;
	struct snap_file *top; /* per-file series, best first */
	size_t n_top;

	bool has_memstat;
	struct memstat memstat;
	struct memstat_numa numa;
};

enum collector_id {
	COLLECTOR_CACHESTAT,
	COLLECTOR_MEMSTAT,
	COLLECTOR_PERFILE,
	_COLLECTOR_MAX,
};

const char *collector_name(enum collector_id id);

struct snap_collector {
	bool enabled;
	bool reported; /* has duration/success series */
	bool success;
	double seconds;
};

struct snapshot {
	enum pagecache_abi abi;
	struct snap_cgroup *cgroups; /* sorted by name */
	size_t n_cgroups;
	struct snap_collector collectors[_COLLECTOR_MAX];
	uint64_t skipped[_SKIP_MAX]; /* cumulative since start */
	char *problem;               /* first thing that went wrong in the scan, for the log */
	int refs;
};

struct snapshot *snapshot_new(void);
struct snapshot *snapshot_ref(struct snapshot *s);
void snapshot_unref(struct snapshot *s);
void snap_file_done(struct snap_file *f);
