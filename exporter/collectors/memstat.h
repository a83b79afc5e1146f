/* SPDX-License-Identifier: Apache-2.0 */
/* The memstat collector: a cgroup's memory.stat and memory.numa_stat, read with memstat.h. */
#pragma once

#include "parse/memstat.h"

/* snap_cgroup.data of "memstat"; absent where the cgroup has no memory.stat. */
struct memstat_cgroup {
	struct memstat memstat;
	struct memstat_numa numa; /* n_nodes == 0 without memory.numa_stat */
};
