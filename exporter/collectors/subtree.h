/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The subtree collector: for every cgroup with children, the union of the files the cachestat
 * collector counted in it and below it, each inode once; and, on the root, the node's page
 * cache from /proc/meminfo beside the root subtree's.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "scan/snapshot.h"

/*
 * snap_cgroup.data of "subtree". Present on a cgroup with children whose whole subtree the
 * cachestat collector counted (has_subtree), and on the root when /proc/meminfo was read.
 */
struct subtree_cgroup {
	bool has_subtree;      /* c, files, files_size are the subtree's */
	struct snap_counts c;  /* each inode of the subtree once */
	uint64_t files;
	uint64_t files_size;

	bool has_node;         /* the root only: the fields below */
	bool has_unattributed; /* the root's subtree was counted to the end */
	uint64_t node_cached;  /* /proc/meminfo Cached, bytes (Shmem included, as the kernel counts) */
	uint64_t node_shmem;   /* /proc/meminfo Shmem, bytes */
	uint64_t unattributed; /* node_cached - the root subtree's cached bytes, at least 0 */
};
