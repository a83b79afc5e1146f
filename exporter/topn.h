/* SPDX-License-Identifier: MIT */
/*
 * topn: keeps the N files of a cgroup with the most cached + recently evicted bytes, for the
 * per-file series. A min-heap of N entries, so a scan of a million files holds N paths.
 * Ties go to the smaller path, so the choice does not depend on the order of the scan.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"

struct topn {
	struct snap_file *heap; /* heap[0] is the entry that leaves first */
	size_t n;
	size_t cap;
};

static inline uint64_t topn_key(const struct snap_counts *c)
{
	return c->cached + c->recently_evicted;
}

/* cap == 0 keeps nothing. Returns 0 or -ENOMEM. */
int topn_init(struct topn *t, size_t cap);

/*
 * Whether a file with these counts could enter: lets the caller skip working out a path
 * (a readlink) for files that would not. A tie on the key says yes; the path decides.
 */
bool topn_wants(const struct topn *t, const struct snap_counts *c);

/*
 * Offers a file; takes ownership of path (freed if the file does not enter or is pushed out).
 * Returns 1 when it entered, 0 when not.
 */
int topn_offer(struct topn *t, char *path, uint64_t size, const struct snap_counts *c);

/*
 * Hands the kept files over, best first, their paths made valid UTF-8 (utf8_sanitize()); a
 * path that then occurs twice (two deleted files of the same name, or names that differ only
 * in invalid bytes) gets " (N)" appended so that every series stays unique. Resets t for reuse.
 * Returns 0 or -ENOMEM (then nothing is handed over and t is reset).
 */
int topn_take(struct topn *t, struct snap_file **ret, size_t *ret_n);

void topn_done(struct topn *t);
