/* SPDX-License-Identifier: Apache-2.0 */
/* The perfile collector: the top N files of each cgroup from the cachestat collector's scan. */
#pragma once

#include <stddef.h>

#include "scan/snapshot.h"

/* snap_cgroup.data of "perfile"; present (maybe empty) wherever cachestat's is. */
struct perfile_cgroup {
	struct snap_file *top; /* best first */
	size_t n_top;
};
