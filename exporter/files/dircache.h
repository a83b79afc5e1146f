/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dircache: the listings of the configured directories, kept from one scan to the next, so that
 * a daemon's scan reads a directory again only when it changed. Reading 90,000 names a scan was
 * 7% of its CPU; a kept listing costs the fstat the walk makes anyway.
 *
 * A listing is keyed by the directory's (device, inode) and stamped with its mtime and ctime:
 * every change of its entries sets both, and nobody can set ctime back (utimensat() sets it to
 * now), so a listing whose stamps still match is the directory's. A directory changed less than
 * DIRCACHE_SETTLE_NS before it was read is not kept: a change in the same clock tick as the read
 * could leave both stamps as they were. Only file systems whose stamps are fine-grained and whose
 * d_ino is the inode (paths.c's list) use it. A listing no scan walked is dropped at the end of
 * the next; the whole stays under the byte budget given (a listing that does not fit is not kept).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define DIRCACHE_SETTLE_NS 2000000000ULL
#define DIRCACHE_MAX_BYTES (16u << 20) /* 16 MiB: the names of ~1,000,000 files */

struct dircache;
struct dircache_listing;

/* A listing being read: its entries, appended as readdir gives them. */
struct dircache_builder {
	char *buf;
	size_t len, cap;
	size_t max;    /* bytes it may take; more makes it overflow */
	bool overflow; /* too big to keep: abandoned */
};

struct dircache_entry {
	uint64_t ino;
	unsigned char type; /* d_type */
	const char *name;
};

int dircache_new(size_t max_bytes, struct dircache **ret);
void dircache_free(struct dircache *dc);

/* A scan starts: what it does not find again is dropped by dircache_end_scan(). */
void dircache_begin_scan(struct dircache *dc);
void dircache_end_scan(struct dircache *dc);

/*
 * The kept listing of the directory dir (its fstat) if its stamps match, marked as used by this
 * scan; else NULL, and a stale listing of it is dropped.
 */
const struct dircache_listing *dircache_find(struct dircache *dc, const struct stat *dir);

/* Entry *pos of l, advancing *pos; false after the last. */
bool dircache_next(const struct dircache_listing *l, size_t *pos, struct dircache_entry *ret);

/* Whether a listing of dir read now may be kept: both stamps older than the settle time. */
bool dircache_settled(const struct stat *dir, const struct timespec *now);

/* A builder for a listing that may take what is left of dc's budget. */
void dircache_builder_init(struct dircache *dc, struct dircache_builder *b);
void dircache_builder_add(struct dircache_builder *b, uint64_t ino, unsigned char type,
			  const char *name);
/*
 * Keeps b's entries as the listing of dir (stat taken before reading it), unless b overflowed;
 * b is emptied either way. Returns 0 or -ENOMEM.
 */
int dircache_store(struct dircache *dc, const struct stat *dir, struct dircache_builder *b);
void dircache_builder_done(struct dircache_builder *b);

size_t dircache_bytes(const struct dircache *dc);
size_t dircache_listings(const struct dircache *dc);
