/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cachestat collector: finds each cgroup's files (files.h), asks cachestat(2) about each
 * and sums per cgroup. Offers every counted file to the collectors with a file_counted hook.
 */
#pragma once

#include <stdint.h>

#include "base/pagecache.h"
#include "scan/snapshot.h"

struct files_entry;

/*
 * snap_cgroup.data of "cachestat"; absent where the cgroup was not scanned to the end, and
 * where it holds no file.
 */
struct cachestat_cgroup {
	struct snap_counts c;
	uint64_t files;
	uint64_t files_size;
};

/*
 * The record of a file cachestat(2) answered st about: its size, identity and five counts in
 * bytes. The one place pages become bytes, for this collector and the fanotify one.
 */
struct snap_file cachestat_file_record(const struct files_entry *e,
				       const struct pagecache_cachestat *st, uint64_t page_size);
/* Adds a file's record to a cgroup's sums. */
void cachestat_sum_add(struct cachestat_cgroup *sum, const struct snap_file *file);
struct collect_scan;

/*
 * "no_cachestat" where the files cannot be measured (abi none: cachestat(2) forced but missing,
 * or refused by a filter), else NULL: the unavailable hook of this collector and the fanotify one.
 */
const char *cachestat_unavailable(const struct collect_scan *scan);
/* Why a file whose cachestat call failed with r is skipped. */
enum skip_reason cachestat_skip_reason(int r);
