/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scan engine: one scan of the cgroup tree into a snapshot, running the registered collectors
 * (collector.h, registry.h) over each cgroup. When scans run and who shares them is the scheduler's.
 * Never logs: what went wrong is in snapshot->problem and the collector success flags.
 */
#pragma once

#include <stdbool.h>

#include "parse/config.h"
#include "base/pagecache.h"
#include "scan/snapshot.h"
#include "files/fstypes.h"

/* The caps on cgroups per scan (cgcap.h) when the options leave them 0. */
#define SCAN_DEFAULT_MAX_CGROUPS 10000
#define SCAN_DEFAULT_MAX_CGROUPS_PER_OWNER 1000

struct collector_options {
	const char *cgroupfs; /* the cgroup v2 mount to walk */
	bool memory_v1;       /* cgroupfs is the cgroup v1 memory hierarchy (a hybrid host) */
	const char *procfs;
	bool enable[COLLECTORS_MAX]; /* by registry index */
	const char *fs_types_exclude; /* regex of file system types not to touch; NULL: the default */
	bool keep_listings; /* keep directory listings between scans (dircache.h): a daemon's */
	size_t max_cgroups;           /* per scan; 0: SCAN_DEFAULT_MAX_CGROUPS */
	size_t max_cgroups_per_owner; /* per owner of delegated subtrees (cgcap.h); 0: the default */
	struct fstypes_limits mounts; /* per mount namespace and overlay (fstypes.h); 0s: defaults */
};

struct scan_engine;

/* Takes ownership of cfg. Returns 0, -ENOMEM, or -EINVAL for a bad fs_types_exclude. */
int scan_engine_new(const struct collector_options *opts, const struct pagecache *pc,
		  struct config *cfg, struct scan_engine **ret);

/* Replaces the config (takes ownership); a scan in progress finishes with the old one. */
void scan_engine_set_config(struct scan_engine *c, struct config *cfg);

/*
 * One scan with the current config, in the calling thread; skipped counts in the snapshot are
 * cumulative since start. Safe to call from several threads at once. Returns 0 or -ENOMEM.
 * The caller drops the snapshot with snapshot_unref().
 */
int scan_engine_run(struct scan_engine *c, struct snapshot **ret);

/*
 * Why the collector at registry index idx has nothing it can measure on this host (its
 * unavailable hook, collector.h), or NULL: for the line logged at start.
 */
const char *scan_engine_unavailable(struct scan_engine *c, size_t idx);

/* limits.max_scan_seconds of the current config: a scan checks it between files. */
double scan_engine_max_scan_seconds(struct scan_engine *c);

void scan_engine_free(struct scan_engine *c);

static inline void scan_engine_freep(struct scan_engine **c)
{
	scan_engine_free(*c);
}
