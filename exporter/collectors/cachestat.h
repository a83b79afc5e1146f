/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cachestat collector: finds each cgroup's files (files.h), asks cachestat(2) about each
 * and sums per cgroup. Offers every counted file to the collectors with a file_counted hook.
 */
#pragma once

#include <stdint.h>

#include "base/snapshot.h"

/* snap_cgroup.data of "cachestat"; absent where the cgroup was not scanned to the end. */
struct cachestat_cgroup {
	struct snap_counts c;
	uint64_t files;
	uint64_t files_size;
};
