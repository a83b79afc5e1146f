/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fileset: the set of (device, inode) pairs already counted for a cgroup, so that a file open
 * by many processes, mapped several times or also named by the config counts once.
 * Open addressing on (device, inode / 64), each slot a bitmap of 64 neighbouring inodes: files
 * made together get neighbouring inode numbers, so a directory's files share a few slots that
 * stay in the CPU cache (one slot per file was one cache miss per file). Cleared between
 * cgroups without giving the memory back.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fileset_slot {
	uint64_t dev;
	uint64_t base; /* inode / 64 */
	uint64_t bits; /* bit i: inode base * 64 + i is in the set; 0 marks a free slot */
};

struct fileset {
	struct fileset_slot *slots;
	size_t cap;  /* a power of two, or 0 */
	size_t used; /* slots in use */
	size_t n;    /* pairs in the set */
};

/* Returns 1 when the pair was added, 0 when it was there already, -ENOMEM. */
int fileset_add(struct fileset *s, uint64_t dev, uint64_t ino);
bool fileset_contains(const struct fileset *s, uint64_t dev, uint64_t ino);
void fileset_clear(struct fileset *s);
void fileset_done(struct fileset *s);
