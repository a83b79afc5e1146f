/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proccgroup: a parser of /proc/PID/cgroup (cgroups(7)): "hierarchy-ID:controllers:path" per
 * line. It takes a buffer, so tests feed it strings. Depends on nothing else.
 */
#pragma once

#include <stdbool.h>

/*
 * The cgroup path in a NUL-terminated /proc/PID/cgroup buffer: that of the cgroup v2 line
 * ("0::/a/b"), or with memory_v1 that of the v1 hierarchy with the memory controller. Paths
 * are relative to the reader's cgroup namespace, and one out of it starts with "/..": it is
 * returned as it is. Returns a pointer into buf (NUL-terminated in place, buf is cut up) or NULL.
 */
char *proccgroup_path(char *buf, bool memory_v1);
