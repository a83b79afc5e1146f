/* SPDX-License-Identifier: MIT */
#include "fileset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t dev, uint64_t ino)
{
	uint64_t x = ino ^ (dev * 0x9e3779b97f4a7c15ULL);

	/* splitmix64 finaliser */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static bool slot_free(const struct fileset_key *k)
{
	return k->dev == 0 && k->ino == 0;
}

/* The slot holding the pair, or the free slot where it would go. cap must be non-zero. */
static struct fileset_key *find(const struct fileset *s, uint64_t dev, uint64_t ino)
{
	size_t mask = s->cap - 1, i = (size_t)mix(dev, ino) & mask;

	for (;;) {
		struct fileset_key *k = &s->slots[i];

		if (slot_free(k) || (k->dev == dev && k->ino == ino))
			return k;
		i = (i + 1) & mask;
	}
}

static int grow(struct fileset *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 1024;
	struct fileset old = *s;

	s->slots = calloc(ncap, sizeof(*s->slots));
	if (!s->slots) {
		s->slots = old.slots;
		return -ENOMEM;
	}
	s->cap = ncap;
	for (size_t i = 0; i < old.cap; i++)
		if (!slot_free(&old.slots[i]))
			*find(s, old.slots[i].dev, old.slots[i].ino) = old.slots[i];
	free(old.slots);
	return 0;
}

int fileset_add(struct fileset *s, uint64_t dev, uint64_t ino)
{
	struct fileset_key *k;

	if (dev == 0 && ino == 0) {
		if (s->has_zero)
			return 0;
		s->has_zero = true;
		return 1;
	}
	/* Keep the load under 1/2 so probes stay short. */
	if ((s->n + 1) * 2 > s->cap) {
		int r = grow(s);

		if (r < 0)
			return r;
	}
	k = find(s, dev, ino);
	if (!slot_free(k))
		return 0;
	*k = (struct fileset_key){ .dev = dev, .ino = ino };
	s->n++;
	return 1;
}

bool fileset_contains(const struct fileset *s, uint64_t dev, uint64_t ino)
{
	if (dev == 0 && ino == 0)
		return s->has_zero;
	if (s->cap == 0)
		return false;
	return !slot_free(find(s, dev, ino));
}

void fileset_clear(struct fileset *s)
{
	/* A big table left by one big cgroup would make clearing cost more than using it. */
	if (s->cap > 4096 && s->n * 8 < s->cap) {
		fileset_done(s);
		return;
	}
	if (s->n > 0)
		memset(s->slots, 0, s->cap * sizeof(*s->slots));
	s->n = 0;
	s->has_zero = false;
}

void fileset_done(struct fileset *s)
{
	free(s->slots);
	*s = (struct fileset){ 0 };
}
