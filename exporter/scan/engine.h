/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collect: one scan of the cgroup tree into a snapshot, running the registered collectors
 * (registry.h) over each cgroup. When scans run and who shares them is the scheduler's.
 * Never logs: what went wrong is in snapshot->problem and the collector success flags.
 */
#pragma once

#include <stdbool.h>

#include "parse/config.h"
#include "base/pagecache.h"
#include "base/snapshot.h"

struct collector_options {
	const char *cgroupfs; /* the cgroup v2 mount to walk */
	bool memory_v1;       /* cgroupfs is the cgroup v1 memory hierarchy (a hybrid host) */
	const char *procfs;
	bool enable[COLLECTORS_MAX]; /* by registry index */
	const char *fs_types_exclude; /* regex of file system types not to touch; NULL: the default */
	bool keep_listings; /* keep directory listings between scans (dircache.h): a daemon's */
};

struct collector;

/* Takes ownership of cfg. Returns 0, -ENOMEM, or -EINVAL for a bad fs_types_exclude. */
int collector_new(const struct collector_options *opts, const struct pagecache *pc,
		  struct config *cfg, struct collector **ret);

/* Replaces the config (takes ownership); a scan in progress finishes with the old one. */
void collector_set_config(struct collector *c, struct config *cfg);

/*
 * One scan with the current config, in the calling thread; skipped counts in the snapshot are
 * cumulative since start. Safe to call from several threads at once. Returns 0 or -ENOMEM.
 * The caller drops the snapshot with snapshot_unref().
 */
int collector_scan(struct collector *c, struct snapshot **ret);

/* limits.max_scan_seconds of the current config: a scan checks it between files. */
double collector_max_scan_seconds(struct collector *c);

void collector_free(struct collector *c);

static inline void collector_freep(struct collector **c)
{
	collector_free(*c);
}
