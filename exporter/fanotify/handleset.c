/* SPDX-License-Identifier: Apache-2.0 */
#include "fanotify/handleset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* A doubly linked list through the entries: head is the most recently opened. */
struct link {
	struct entry *prev, *next;
};

struct list {
	struct entry *head, *tail;
	size_t n;
};

struct cgroup {
	struct cgroup *hnext; /* chain of the cgroup table */
	uint64_t hash;
	struct list entries;
	char name[];
};

struct entry {
	struct entry *hnext; /* chain of the entry table */
	uint64_t hash;
	struct link all;     /* of every entry */
	struct link mine;    /* of its cgroup's */
	struct cgroup *cg;
	uint64_t last_open_ns;
	struct handleset_creds creds;
	uint32_t period;       /* the set's period when period_opens was last counted */
	uint16_t period_opens; /* opens in that period */
	uint64_t fsid;
	int32_t type;
	uint32_t len;
	unsigned char bytes[];
};

/* Chained hash tables whose size is a power of two, grown at a load of one. */
struct table {
	void **slots;
	size_t cap;
	size_t n;
};

struct handleset {
	struct handleset_limits lim;
	struct table entries; /* of struct entry */
	struct table cgroups; /* of struct cgroup */
	struct list all;
	struct handleset_stats stats;
	uint32_t period; /* handleset_new_period() calls; wraps, which only needs inequality */
};

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

#define FNV_OFFSET 0xcbf29ce484222325ULL

static uint64_t key_hash(const struct cgroup *cg, const struct handleset_key *k)
{
	uint64_t h = fnv1a(FNV_OFFSET, &cg, sizeof(cg));

	h = fnv1a(h, &k->fsid, sizeof(k->fsid));
	h = fnv1a(h, &k->type, sizeof(k->type));
	return fnv1a(h, k->bytes, k->len);
}

/* Which link of an entry a list runs through. */
static struct link *link_of(struct entry *e, bool all)
{
	return all ? &e->all : &e->mine;
}

static void list_unlink(struct list *l, struct entry *e, bool all)
{
	struct link *k = link_of(e, all);

	if (k->prev)
		link_of(k->prev, all)->next = k->next;
	else
		l->head = k->next;
	if (k->next)
		link_of(k->next, all)->prev = k->prev;
	else
		l->tail = k->prev;
	k->prev = k->next = NULL;
	l->n--;
}

static void list_push_front(struct list *l, struct entry *e, bool all)
{
	struct link *k = link_of(e, all);

	k->prev = NULL;
	k->next = l->head;
	if (l->head)
		link_of(l->head, all)->prev = e;
	else
		l->tail = e;
	l->head = e;
	l->n++;
}

/* The slot of a chain that holds p (each chained object starts with its next pointer). */
static void **table_find_slot(struct table *t, const void *p, uint64_t hash)
{
	void **s = &t->slots[hash & (t->cap - 1)];

	while (*s && *s != p)
		s = (void **)*s;
	return s;
}

static int table_grow(struct table *t, uint64_t (*hash_of)(const void *))
{
	size_t ncap = t->cap ? t->cap * 2 : 64;
	void **ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		void *p = t->slots[i];

		while (p) {
			void *next = *(void **)p;
			void **s = &ns[hash_of(p) & (ncap - 1)];

			*(void **)p = *s;
			*s = p;
			p = next;
		}
	}
	free(t->slots);
	t->slots = ns;
	t->cap = ncap;
	return 0;
}

/* Adds p (its next pointer first) under hash. Returns 0 or -ENOMEM. */
static int table_add(struct table *t, void *p, uint64_t hash, uint64_t (*hash_of)(const void *))
{
	void **s;

	if (t->n + 1 > t->cap) {
		int r = table_grow(t, hash_of);

		if (r < 0)
			return r;
	}
	s = &t->slots[hash & (t->cap - 1)];
	*(void **)p = *s;
	*s = p;
	t->n++;
	return 0;
}

static void table_remove(struct table *t, void *p, uint64_t hash)
{
	void **s = table_find_slot(t, p, hash);

	if (*s) {
		*s = *(void **)p;
		t->n--;
	}
}

static uint64_t entry_hash_of(const void *p)
{
	return ((const struct entry *)p)->hash;
}

static uint64_t cgroup_hash_of(const void *p)
{
	return ((const struct cgroup *)p)->hash;
}

static struct cgroup *cgroup_find(const struct handleset *hs, const char *name, uint64_t hash)
{
	if (!hs->cgroups.cap)
		return NULL;
	for (struct cgroup *c = hs->cgroups.slots[hash & (hs->cgroups.cap - 1)]; c; c = c->hnext)
		if (c->hash == hash && strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

/* The cgroup named name, made if new. NULL on ENOMEM. */
static struct cgroup *cgroup_get(struct handleset *hs, const char *name)
{
	uint64_t hash = fnv1a(FNV_OFFSET, name, strlen(name));
	struct cgroup *c = cgroup_find(hs, name, hash);
	size_t n = strlen(name);

	if (c)
		return c;
	c = calloc(1, sizeof(*c) + n + 1);
	if (!c)
		return NULL;
	c->hash = hash;
	memcpy(c->name, name, n + 1);
	if (table_add(&hs->cgroups, c, hash, cgroup_hash_of) < 0) {
		free(c);
		return NULL;
	}
	return c;
}

static void entry_drop(struct handleset *hs, struct entry *e)
{
	struct cgroup *cg = e->cg;

	table_remove(&hs->entries, e, e->hash);
	list_unlink(&hs->all, e, true);
	list_unlink(&cg->entries, e, false);
	free(e);
	if (cg->entries.n == 0) {
		table_remove(&hs->cgroups, cg, cg->hash);
		free(cg);
	}
}

static struct entry *entry_find(const struct handleset *hs, const struct cgroup *cg,
				const struct handleset_key *k, uint64_t hash)
{
	if (!hs->entries.cap)
		return NULL;
	for (struct entry *e = hs->entries.slots[hash & (hs->entries.cap - 1)]; e; e = e->hnext)
		if (e->hash == hash && e->cg == cg && e->fsid == k->fsid && e->type == k->type &&
		    e->len == k->len && memcmp(e->bytes, k->bytes, k->len) == 0)
			return e;
	return NULL;
}

int handleset_new(const struct handleset_limits *lim, struct handleset **ret)
{
	struct handleset *hs;

	if (lim->max_entries == 0 || lim->max_per_cgroup == 0 || lim->window_ns == 0)
		return -EINVAL;
	hs = calloc(1, sizeof(*hs));
	if (!hs)
		return -ENOMEM;
	hs->lim = *lim;
	*ret = hs;
	return 0;
}

void handleset_free(struct handleset *hs)
{
	if (!hs)
		return;
	while (hs->all.tail)
		entry_drop(hs, hs->all.tail);
	free(hs->entries.slots);
	free(hs->cgroups.slots);
	free(hs);
}

/* A new entry for key in cg, at the front of both lists. */
static int entry_add(struct handleset *hs, struct cgroup *cg, const struct handleset_key *k,
		     uint64_t hash, struct entry **ret)
{
	_cleanup_free_ struct entry *e = calloc(1, sizeof(*e) + k->len);
	int r;

	if (!e)
		return -ENOMEM;
	e->hash = hash;
	e->cg = cg;
	e->period = hs->period;
	e->fsid = k->fsid;
	e->type = k->type;
	e->len = k->len;
	memcpy(e->bytes, k->bytes, k->len);
	r = table_add(&hs->entries, e, hash, entry_hash_of);
	if (r < 0)
		return r;
	list_push_front(&hs->all, e, true);
	list_push_front(&cg->entries, e, false);
	*ret = TAKE_PTR(e);
	return 0;
}

/* The caps, least recently opened first: the cgroup's own, then the global one. */
static void enforce_caps(struct handleset *hs, struct cgroup *cg)
{
	while (cg->entries.n > hs->lim.max_per_cgroup) {
		entry_drop(hs, cg->entries.tail);
		hs->stats.dropped_cgroup_cap++;
	}
	while (hs->all.n > hs->lim.max_entries) {
		entry_drop(hs, hs->all.tail);
		hs->stats.dropped_global_cap++;
	}
}

/* One more open of e in the current period (a new entry's count starts in it, at 0). */
static void count_open(const struct handleset *hs, struct entry *e)
{
	if (e->period != hs->period) {
		e->period = hs->period;
		e->period_opens = 0;
	}
	if (e->period_opens < UINT16_MAX)
		e->period_opens++;
}

int handleset_note(struct handleset *hs, const char *cgroup, const struct handleset_key *key,
		   const struct handleset_creds *creds, uint64_t now_ns, unsigned *ret_period_opens)
{
	struct cgroup *cg;
	struct entry *e;
	uint64_t hash;
	int r;

	if (key->len > HANDLESET_HANDLE_MAX)
		return -EINVAL;
	handleset_expire(hs, now_ns);
	cg = cgroup_get(hs, cgroup);
	if (!cg)
		return -ENOMEM;
	hash = key_hash(cg, key);
	e = entry_find(hs, cg, key, hash);
	if (e) {
		list_unlink(&hs->all, e, true);
		list_push_front(&hs->all, e, true);
		list_unlink(&cg->entries, e, false);
		list_push_front(&cg->entries, e, false);
	} else {
		r = entry_add(hs, cg, key, hash, &e);
		if (r < 0) {
			if (cg->entries.n == 0) {
				table_remove(&hs->cgroups, cg, cg->hash);
				free(cg);
			}
			return r;
		}
	}
	e->last_open_ns = now_ns;
	e->creds = *creds;
	count_open(hs, e);
	if (ret_period_opens)
		*ret_period_opens = e->period_opens;
	enforce_caps(hs, cg);
	return 0;
}

void handleset_new_period(struct handleset *hs)
{
	hs->period++;
}

static bool expired(const struct handleset *hs, const struct entry *e, uint64_t now_ns)
{
	return now_ns > e->last_open_ns && now_ns - e->last_open_ns > hs->lim.window_ns;
}

size_t handleset_expire(struct handleset *hs, uint64_t now_ns)
{
	size_t n = 0;

	/* the global list is in order of last open: the old ones are at its tail */
	while (hs->all.tail && expired(hs, hs->all.tail, now_ns)) {
		entry_drop(hs, hs->all.tail);
		n++;
	}
	hs->stats.expired += n;
	return n;
}

int handleset_cgroup_items(const struct handleset *hs, const char *cgroup, uint64_t now_ns,
			   struct handleset_item **ret, size_t *ret_n)
{
	const struct cgroup *cg = cgroup_find(hs, cgroup, fnv1a(FNV_OFFSET, cgroup, strlen(cgroup)));
	struct handleset_item *items;
	size_t n = 0;

	if (!cg) {
		*ret = NULL;
		*ret_n = 0;
		return 0;
	}
	items = calloc(cg->entries.n, sizeof(*items));
	if (!items)
		return -ENOMEM;
	for (const struct entry *e = cg->entries.head; e && !expired(hs, e, now_ns); e = e->mine.next) {
		items[n] = (struct handleset_item){ .fsid = e->fsid, .type = e->type, .len = e->len,
						    .creds = e->creds, .last_open_ns = e->last_open_ns };
		memcpy(items[n].bytes, e->bytes, e->len);
		n++;
	}
	if (n == 0) {
		free(items);
		items = NULL;
	}
	*ret = items;
	*ret_n = n;
	return 0;
}

void handleset_get_stats(const struct handleset *hs, struct handleset_stats *ret)
{
	*ret = hs->stats;
	ret->entries = hs->all.n;
	ret->cgroups = hs->cgroups.n;
}
