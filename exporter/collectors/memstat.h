/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The memstat collector: a cgroup's memory.stat workingset counters, read with parse/memstat.h.
 * The numa collector's data is that parser's struct memstat_numa; the limits collector takes
 * memory.stat's file from it too.
 */
#pragma once

#include "parse/memstat.h"

/* snap_cgroup.data of "memstat"; absent where the cgroup has no memory.stat. */
struct memstat_cgroup {
	struct memstat memstat;
};
