/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot: the result of one scan, as the scan engine produces it and `render` prints it.
 * Plain data; a snapshot is shared by the scrapes that waited for the same scan (refcounted).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/pagecache.h"
#include "files/skip.h"

/* Page cache state in bytes. */
struct snap_counts {
	uint64_t cached;
	uint64_t dirty;
	uint64_t writeback;
	uint64_t evicted;
	uint64_t recently_evicted;
};

/* The counters of struct snap_counts by number, for tables of families. */
enum snap_count {
	SNAP_CACHED,
	SNAP_DIRTY,
	SNAP_WRITEBACK,
	SNAP_EVICTED,
	SNAP_RECENTLY_EVICTED,
	_SNAP_COUNT_MAX,
};

static inline uint64_t snap_counts_get(const struct snap_counts *c, enum snap_count f)
{
	switch (f) {
	case SNAP_CACHED:
		return c->cached;
	case SNAP_DIRTY:
		return c->dirty;
	case SNAP_WRITEBACK:
		return c->writeback;
	case SNAP_EVICTED:
		return c->evicted;
	case SNAP_RECENTLY_EVICTED:
		return c->recently_evicted;
	default:
		return 0;
	}
}

struct snap_file {
	char *path; /* valid UTF-8, one-to-one with the file's name (topn_take()) */
	uint64_t size;
	struct snap_counts c;
	uint64_t dev, ino; /* identity, for a choice among equals that needs no path */
	size_t cgroup;     /* during a scan: its cgroup's index in snapshot.cgroups (node-wide top) */
};

/* Collectors a program can hold (registry.h); a snapshot has a slot for each. */
#define COLLECTORS_MAX 32

struct snap_cgroup {
	char *name; /* the cgroup label: "/" or "/a/b" */
	/*
	 * What each collector found here, of its own type (its header says which), by registry
	 * index; NULL where it found nothing, so that its series are absent rather than zero.
	 */
	void *data[COLLECTORS_MAX];
};

/* The caps on the cgroups of a scan: cachestat_scan_cgroups_capped_total{cap}. */
enum snap_cap {
	SNAP_CAP_NODE,  /* --scan.max-cgroups */
	SNAP_CAP_OWNER, /* --scan.max-cgroups-per-owner */
	_SNAP_CAP_MAX,
};

/* The caps on what one process makes a scan read (limits.max_*_per_process). */
enum snap_process_cap {
	SNAP_PROCESS_CAP_FDS,
	SNAP_PROCESS_CAP_MAPS,
	_SNAP_PROCESS_CAP_MAX,
};
/* The caps on mount tables: cachestat_scan_mounts_capped_total{cap} (fstypes.h's order). */
#define SNAP_MOUNT_CAPS 3

/* Which caps bit in a scan, for the log. */
struct snap_cap_note {
	size_t max_cgroups, max_per_owner;
	bool node;         /* the node's cap left cgroups out */
	size_t owners_cut; /* owners that lost cgroups */
	char uids[200];    /* the first of them, "1000,1001", ",..." after the last that fits */
	bool process[_SNAP_PROCESS_CAP_MAX]; /* a process was cut by that cap */
};

struct snap_collector {
	bool enabled;  /* took part in the scan */
	bool reported; /* has duration/success series */
	bool success;
	double seconds;
	/* why it has nothing it can measure on this host (a reason of docs/metrics.md), or NULL */
	const char *unavailable;
};

struct snapshot {
	enum pagecache_abi abi;
	struct snap_cgroup *cgroups; /* sorted by name */
	size_t n_cgroups;
	struct snap_collector collectors[COLLECTORS_MAX]; /* by registry index */
	uint64_t skipped[_SKIP_MAX]; /* cumulative since start */
	char *problem;               /* first thing that went wrong in the scan, for the log */
	uint64_t capped[_SNAP_CAP_MAX]; /* scans a cap left cgroups out of, since start */
	bool process_capped[_SNAP_PROCESS_CAP_MAX]; /* in this scan */
	struct snap_cap_note *cap_note; /* set when which caps bit changed since the last scan */
	/* Scans in which a configured glob stopped at --collector.cachestat.max-glob-entries. */
	uint64_t globs_capped;
	char *glob_note;         /* the pattern it cut first, when it starts to cut (for the log) */
	size_t glob_max_entries; /* the cap, for the log */
	/* tables and overlays over a mount cap (enum fstypes_cap order), since start */
	uint64_t mounts_capped[SNAP_MOUNT_CAPS];
	unsigned mounts_cap_new; /* bits of the mount caps that bit this scan and not the last */
	size_t mounts_cap_limits[SNAP_MOUNT_CAPS]; /* their values, for the log */
	/* What frees a slot's data (snap_cgroup.data), set by the snapshot's maker (registry.h). */
	void (*free_data[COLLECTORS_MAX])(void *data);
	int refs;
};

struct snapshot *snapshot_new(void);
struct snapshot *snapshot_ref(struct snapshot *s);
void snapshot_unref(struct snapshot *s);

static inline void snapshot_unrefp(struct snapshot **s)
{
	snapshot_unref(*s);
}
void snap_file_done(struct snap_file *f);
