/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meminfo: a parser for /proc/meminfo's page cache lines (Cached, Shmem). Takes a buffer, so
 * tests feed it strings; depends on nothing else.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct meminfo {
	uint64_t cached; /* Cached: page cache, Shmem included, without swap cache and Buffers */
	uint64_t shmem;  /* Shmem: tmpfs, shared anonymous memory, SysV and POSIX shm */
};

/*
 * Parses /proc/meminfo ("Key:   N kB" per line) into bytes. Other keys are ignored. Returns 0,
 * -EINVAL for a malformed Cached or Shmem line, -ENOENT when either is missing.
 */
int meminfo_parse(const char *buf, size_t len, struct meminfo *ret);
