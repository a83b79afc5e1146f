/* SPDX-License-Identifier: Apache-2.0 */
/*
 * idmap: one read of the program's map, by cgroup id. On cgroup v2 a cgroup's id (what
 * bpf_get_current_cgroup_id() returns) is the inode number of its directory, so a scan finds a
 * walked cgroup's counts by the st_ino of its directory, and the ids no walked cgroup claimed are
 * what may have disappeared.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "activity/program.h"

struct activity_entry {
	uint64_t id;
	struct activity_counts counts; /* summed over the CPUs */
	bool claimed;
};

struct activity_idmap {
	struct activity_entry *entries; /* sorted by id once activity_idmap_sort() ran */
	size_t n, size;
	uint64_t dropped; /* events the program could not count: the map was full */
};

/* Adds id's counts (a CPU's, or all of them): -ENOMEM, or 0. Before the sort only. */
int activity_idmap_add(struct activity_idmap *m, uint64_t id, const struct activity_counts *c);
/* Sorts the entries and merges those of the same id. */
void activity_idmap_sort(struct activity_idmap *m);
/* The entry of id, marked claimed, or NULL. After the sort. */
const struct activity_entry *activity_idmap_claim(struct activity_idmap *m, uint64_t id);
void activity_idmap_free(struct activity_idmap *m);
