/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topn: keeps the N files of a cgroup (or of the node: snap_file.cgroup tells the cgroups apart)
 * with the most cached + recently evicted bytes, for the per-file series. A min-heap of N entries, so a scan of a million files holds N paths.
 * Ties go to the smaller (device, inode), so the choice does not depend on the order of the scan
 * and needs no path: the caller works one out (a readlink) only for a file that enters.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scan/snapshot.h"

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

/* Whether this file would enter. */
bool topn_wants(const struct topn *t, const struct snap_file *f);

/*
 * Offers a file (f->path is taken over: freed if the file does not enter or is pushed out
 * later). Returns 1 when it entered, 0 when not.
 */
int topn_offer(struct topn *t, struct snap_file *f);

/*
 * Hands the kept files over, best first (equal keys by path), their paths made valid UTF-8
 * (utf8_sanitize(), one-to-one); a path that occurs twice in one cgroup (two deleted files of the
 * same name) gets the text \#N appended, which no sanitized name contains, so that every series stays
 * unique. Resets t for reuse.
 * Returns 0 or -ENOMEM (then nothing is handed over and t is reset).
 */
int topn_take(struct topn *t, struct snap_file **ret, size_t *ret_n);

void topn_done(struct topn *t);
