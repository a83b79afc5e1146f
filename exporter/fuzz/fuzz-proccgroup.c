/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the /proc/PID/cgroup parser, for cgroup v2 and for the v1 memory
 * hierarchy, and the tree root's path from a mountinfo table (scan/cgroups.h), on any bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse/proccgroup.h"
#include "scan/cgroups.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void path_of(const uint8_t *data, size_t size, bool memory_v1)
{
	char *buf = malloc(size + 1), *path;

	if (!buf)
		return;
	memcpy(buf, data, size);
	buf[size] = '\0';
	path = proccgroup_path(buf, memory_v1);
	if (path && (path < buf || path > buf + size || path[0] != '/'))
		abort(); /* a path into buf, absolute */
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *ns = NULL;

	path_of(data, size, false);
	path_of(data, size, true);
	if (cgroups_ns_path_of((const char *)data, size, 30, "/sys/fs/cgroup/t", &ns) == 0) {
		if (ns[0] != '/')
			abort();
		free(ns);
	}
	return 0;
}
