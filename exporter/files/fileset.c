/* SPDX-License-Identifier: Apache-2.0 */
#include "files/fileset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Inodes per slot: a slot holds a bitmap of FILESET_SPAN neighbouring inode numbers. */
#define FILESET_SPAN 64

static uint64_t mix(uint64_t dev, uint64_t base)
{
	uint64_t x = base ^ (dev * 0x9e3779b97f4a7c15ULL);

	/* splitmix64 finaliser */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static bool slot_free(const struct fileset_slot *k)
{
	return k->bits == 0; /* a slot in use holds at least one inode */
}

/* The slot holding (dev, base), or the free slot where it would go. cap must be non-zero. */
static struct fileset_slot *find(const struct fileset *s, uint64_t dev, uint64_t base)
{
	size_t mask = s->cap - 1, i = (size_t)mix(dev, base) & mask;

	for (;;) {
		struct fileset_slot *k = &s->slots[i];

		if (slot_free(k) || (k->dev == dev && k->base == base))
			return k;
		i = (i + 1) & mask;
	}
}

static int grow(struct fileset *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 256;
	struct fileset old = *s;

	s->slots = calloc(ncap, sizeof(*s->slots));
	if (!s->slots) {
		s->slots = old.slots;
		return -ENOMEM;
	}
	s->cap = ncap;
	for (size_t i = 0; i < old.cap; i++)
		if (!slot_free(&old.slots[i]))
			*find(s, old.slots[i].dev, old.slots[i].base) = old.slots[i];
	free(old.slots);
	return 0;
}

int fileset_add(struct fileset *s, uint64_t dev, uint64_t ino)
{
	uint64_t base = ino / FILESET_SPAN, bit = 1ULL << (ino % FILESET_SPAN);
	struct fileset_slot *k;

	/* Keep the load under 1/2 so probes stay short. */
	if ((s->used + 1) * 2 > s->cap) {
		int r = grow(s);

		if (r < 0)
			return r;
	}
	k = find(s, dev, base);
	if (k->bits & bit)
		return 0;
	if (slot_free(k)) {
		*k = (struct fileset_slot){ .dev = dev, .base = base };
		s->used++;
	}
	k->bits |= bit;
	s->n++;
	return 1;
}

bool fileset_contains(const struct fileset *s, uint64_t dev, uint64_t ino)
{
	if (s->cap == 0)
		return false;
	return find(s, dev, ino / FILESET_SPAN)->bits & (1ULL << (ino % FILESET_SPAN));
}

void fileset_clear(struct fileset *s)
{
	/* A big table left by one big cgroup would make clearing cost more than using it. */
	if (s->cap > 4096 && s->used * 8 < s->cap) {
		fileset_done(s);
		return;
	}
	if (s->used > 0)
		memset(s->slots, 0, s->cap * sizeof(*s->slots));
	s->n = 0;
	s->used = 0;
}

void fileset_done(struct fileset *s)
{
	free(s->slots);
	*s = (struct fileset){ 0 };
}

/* The slot of (dev, ino), or the free slot where it would go. cap must be non-zero. */
static struct filecache_entry *cache_find(const struct filecache *c, uint64_t dev, uint64_t ino)
{
	size_t mask = c->cap - 1, i = (size_t)mix(dev, ino) & mask;

	while (c->slots[i].used && (c->slots[i].dev != dev || c->slots[i].ino != ino))
		i = (i + 1) & mask;
	return &c->slots[i];
}

static int cache_grow(struct filecache *c)
{
	size_t ncap = c->cap ? c->cap * 2 : 64;
	struct filecache_entry *slots = calloc(ncap, sizeof(*slots)), *old = c->slots;
	size_t ocap = c->cap;

	if (!slots)
		return -ENOMEM;
	c->slots = slots;
	c->cap = ncap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].used)
			*cache_find(c, old[i].dev, old[i].ino) = old[i];
	free(old);
	return 0;
}

int filecache_put(struct filecache *c, uint64_t dev, uint64_t ino, uint64_t size,
		  const struct pagecache_cachestat *cs)
{
	struct filecache_entry *e;

	if ((c->n + 1) * 2 > c->cap) {
		int r = cache_grow(c);

		if (r < 0)
			return r;
	}
	e = cache_find(c, dev, ino);
	if (!e->used)
		c->n++;
	*e = (struct filecache_entry){
		.dev = dev, .ino = ino, .size = size, .cs = *cs, .used = true
	};
	return 0;
}

const struct filecache_entry *filecache_get(const struct filecache *c, uint64_t dev, uint64_t ino)
{
	const struct filecache_entry *e;

	if (c->n == 0)
		return NULL;
	e = cache_find(c, dev, ino);
	return e->used ? e : NULL;
}

void filecache_done(struct filecache *c)
{
	free(c->slots);
	*c = (struct filecache){ 0 };
}
