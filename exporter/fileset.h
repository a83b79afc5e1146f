/* SPDX-License-Identifier: MIT */
/*
 * fileset: the set of (device, inode) pairs already counted for a cgroup, so that a file open
 * by many processes, mapped several times or also named by the config counts once.
 * Open addressing; cleared between cgroups without giving the memory back.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fileset_key {
	uint64_t dev;
	uint64_t ino;
};

struct fileset {
	struct fileset_key *slots; /* (0, 0) marks a free slot */
	size_t cap;                /* a power of two, or 0 */
	size_t n;
	bool has_zero; /* the pair (0, 0) itself */
};

/* Returns 1 when the pair was added, 0 when it was there already, -ENOMEM. */
int fileset_add(struct fileset *s, uint64_t dev, uint64_t ino);
bool fileset_contains(const struct fileset *s, uint64_t dev, uint64_t ino);
void fileset_clear(struct fileset *s);
void fileset_done(struct fileset *s);
