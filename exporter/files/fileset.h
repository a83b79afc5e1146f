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

#include "base/pagecache.h"

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

/*
 * filecache: what cachestat(2) said of a file this scan, by (device, inode), with the size the
 * file had then, so that a file counted in several cgroups is asked about once per scan. Meant
 * for the few files whose call costs most (the kernel visits each of their cached pages), not
 * for all: one slot per file, open addressing.
 */
struct filecache_entry {
	uint64_t dev, ino;
	uint64_t size;
	struct pagecache_cachestat cs;
	bool used;
};

struct filecache {
	struct filecache_entry *slots;
	size_t cap; /* a power of two, or 0 */
	size_t n;
};

/* Remembers (or updates) a file's answer. Returns 0 or -ENOMEM. */
int filecache_put(struct filecache *c, uint64_t dev, uint64_t ino, uint64_t size,
		  const struct pagecache_cachestat *cs);
/* The answer remembered for the file, or NULL. */
const struct filecache_entry *filecache_get(const struct filecache *c, uint64_t dev, uint64_t ino);
void filecache_done(struct filecache *c);
