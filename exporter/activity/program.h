/* SPDX-License-Identifier: Apache-2.0 */
/*
 * program: what the BPF program (program.c) and the exporter agree on: the events it counts, the
 * value of its map per cgroup id, the map's bound.
 */
#pragma once

#include <linux/types.h>

/* What the program counts, each at one kernel function the running kernel has (attach.h). */
enum activity_event {
	ACTIVITY_ACCESSED,       /* a page-cache folio accessed (folio_mark_accessed) */
	ACTIVITY_ADDED,          /* a folio added to the page cache (filemap_add_folio): a miss */
	ACTIVITY_DIRTIED,        /* a page-cache folio dirtied (folio_account_dirtied) */
	ACTIVITY_BUFFER_DIRTIED, /* a buffer head dirtied (mark_buffer_dirty) */
	_ACTIVITY_EVENT_MAX,
};

/*
 * The cgroups the per-CPU hash map holds at most; the events of others are counted as dropped. The
 * map is allocated in full, for every possible CPU (256 KiB each); a 110-pod node has some 470.
 */
#define ACTIVITY_MAX_CGROUPS 8192

/* The map's value: per CPU, per cgroup id (bpf_get_current_cgroup_id()). */
struct activity_counts {
	__u64 events[_ACTIVITY_EVENT_MAX];
};
