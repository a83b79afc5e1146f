/* SPDX-License-Identifier: Apache-2.0 */
#include "files/dircache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* An entry in a listing's data: the inode (8 bytes, unaligned), d_type, the name and its NUL. */
#define ENTRY_HEAD 9

struct dircache_listing {
	struct dircache_listing *next; /* in its bucket */
	uint64_t dev, ino;
	struct timespec mtime, ctime;
	uint64_t gen; /* of the last scan that found it */
	size_t len; /* bytes of data */
	char data[];
};

struct dircache {
	struct dircache_listing **buckets;
	size_t n_buckets; /* a power of two */
	size_t n;         /* listings */
	size_t bytes, max_bytes;
	uint64_t gen;
};

int dircache_new(size_t max_bytes, struct dircache **ret)
{
	struct dircache *dc = calloc(1, sizeof(*dc));

	if (!dc)
		return -ENOMEM;
	dc->n_buckets = 64;
	dc->buckets = calloc(dc->n_buckets, sizeof(*dc->buckets));
	if (!dc->buckets) {
		free(dc);
		return -ENOMEM;
	}
	dc->max_bytes = max_bytes;
	*ret = dc;
	return 0;
}

void dircache_free(struct dircache *dc)
{
	if (!dc)
		return;
	for (size_t i = 0; i < dc->n_buckets; i++) {
		struct dircache_listing *l = dc->buckets[i];

		while (l) {
			struct dircache_listing *next = l->next;

			free(l);
			l = next;
		}
	}
	free(dc->buckets);
	free(dc);
}

static size_t bucket_of(const struct dircache *dc, uint64_t dev, uint64_t ino)
{
	uint64_t h = (ino ^ (dev << 32) ^ (dev >> 32)) * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h >> 32) & (dc->n_buckets - 1);
}

static void drop(struct dircache *dc, struct dircache_listing **link)
{
	struct dircache_listing *l = *link;

	*link = l->next;
	dc->bytes -= sizeof(*l) + l->len;
	dc->n--;
	free(l);
}

void dircache_begin_scan(struct dircache *dc)
{
	dc->gen++;
}

void dircache_end_scan(struct dircache *dc)
{
	for (size_t i = 0; i < dc->n_buckets; i++) {
		struct dircache_listing **link = &dc->buckets[i];

		while (*link) {
			if ((*link)->gen != dc->gen)
				drop(dc, link);
			else
				link = &(*link)->next;
		}
	}
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* The link to the listing of (dev, ino), or to the NULL that ends its bucket. */
static struct dircache_listing **lookup(struct dircache *dc, uint64_t dev, uint64_t ino)
{
	struct dircache_listing **link = &dc->buckets[bucket_of(dc, dev, ino)];

	while (*link && ((*link)->dev != dev || (*link)->ino != ino))
		link = &(*link)->next;
	return link;
}

const struct dircache_listing *dircache_find(struct dircache *dc, const struct stat *dir)
{
	struct dircache_listing **link = lookup(dc, (uint64_t)dir->st_dev, (uint64_t)dir->st_ino);
	struct dircache_listing *l = *link;

	if (!l)
		return NULL;
	if (!same_time(&l->mtime, &dir->st_mtim) || !same_time(&l->ctime, &dir->st_ctim)) {
		drop(dc, link);
		return NULL;
	}
	l->gen = dc->gen;
	return l;
}

bool dircache_next(const struct dircache_listing *l, size_t *pos, struct dircache_entry *ret)
{
	const char *p = l->data + *pos;

	if (*pos >= l->len)
		return false;
	memcpy(&ret->ino, p, sizeof(ret->ino));
	ret->type = (unsigned char)p[8];
	ret->name = p + ENTRY_HEAD;
	*pos += ENTRY_HEAD + strlen(ret->name) + 1;
	return true;
}

static uint64_t ns_of(const struct timespec *t)
{
	return t->tv_sec < 0 ? 0 : (uint64_t)t->tv_sec * 1000000000ULL + (uint64_t)t->tv_nsec;
}

bool dircache_settled(const struct stat *dir, const struct timespec *now)
{
	uint64_t n = ns_of(now);

	return ns_of(&dir->st_mtim) + DIRCACHE_SETTLE_NS <= n &&
	       ns_of(&dir->st_ctim) + DIRCACHE_SETTLE_NS <= n;
}

void dircache_builder_init(struct dircache *dc, struct dircache_builder *b)
{
	*b = (struct dircache_builder){
		.max = dc->bytes + sizeof(struct dircache_listing) < dc->max_bytes
			       ? dc->max_bytes - dc->bytes - sizeof(struct dircache_listing) : 0,
	};
	b->overflow = b->max == 0;
}

void dircache_builder_add(struct dircache_builder *b, uint64_t ino, unsigned char type,
			  const char *name)
{
	size_t need = ENTRY_HEAD + strlen(name) + 1;

	if (b->overflow)
		return;
	if (b->len + need > b->max) {
		b->overflow = true;
		return;
	}
	if (b->len + need > b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 4096;
		char *buf;

		while (cap < b->len + need)
			cap *= 2;
		buf = realloc(b->buf, cap);
		if (!buf) {
			b->overflow = true;
			return;
		}
		b->buf = buf;
		b->cap = cap;
	}
	memcpy(b->buf + b->len, &ino, sizeof(ino));
	b->buf[b->len + 8] = (char)type;
	memcpy(b->buf + b->len + ENTRY_HEAD, name, need - ENTRY_HEAD);
	b->len += need;
}

/* Doubles the buckets when there are more listings than buckets. */
static void grow(struct dircache *dc)
{
	struct dircache_listing **old = dc->buckets;
	size_t n_old = dc->n_buckets;

	dc->buckets = calloc(2 * n_old, sizeof(*dc->buckets));
	if (!dc->buckets) {
		dc->buckets = old; /* longer chains, nothing lost */
		return;
	}
	dc->n_buckets = 2 * n_old;
	for (size_t i = 0; i < n_old; i++) {
		struct dircache_listing *l = old[i];

		while (l) {
			struct dircache_listing *next = l->next;
			size_t k = bucket_of(dc, l->dev, l->ino);

			l->next = dc->buckets[k];
			dc->buckets[k] = l;
			l = next;
		}
	}
	free(old);
}

int dircache_store(struct dircache *dc, const struct stat *dir, struct dircache_builder *b)
{
	struct dircache_listing *l, **link;
	size_t k;

	if (b->overflow || dc->bytes + sizeof(*l) + b->len > dc->max_bytes) {
		dircache_builder_done(b);
		return 0;
	}
	l = malloc(sizeof(*l) + b->len);
	if (!l) {
		dircache_builder_done(b);
		return -ENOMEM;
	}
	*l = (struct dircache_listing){
		.dev = (uint64_t)dir->st_dev,
		.ino = (uint64_t)dir->st_ino,
		.mtime = dir->st_mtim,
		.ctime = dir->st_ctim,
		.gen = dc->gen,
		.len = b->len,
	};
	if (b->len)
		memcpy(l->data, b->buf, b->len);
	dircache_builder_done(b);
	link = lookup(dc, l->dev, l->ino);
	if (*link) /* an older listing of the same directory */
		drop(dc, link);
	if (dc->n >= dc->n_buckets)
		grow(dc);
	k = bucket_of(dc, l->dev, l->ino);
	l->next = dc->buckets[k];
	dc->buckets[k] = l;
	dc->n++;
	dc->bytes += sizeof(*l) + l->len;
	return 0;
}

void dircache_builder_done(struct dircache_builder *b)
{
	free(b->buf);
	*b = (struct dircache_builder){ .max = b->max, .overflow = b->overflow };
}

size_t dircache_bytes(const struct dircache *dc)
{
	return dc->bytes;
}

size_t dircache_listings(const struct dircache *dc)
{
	return dc->n;
}
