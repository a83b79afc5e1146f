/* SPDX-License-Identifier: Apache-2.0 */
/* cgcap: the caps on the cgroups of a scan, the node's and each delegated owner's. */
#include "scan/cgcap.h"

#include <errno.h>
#include <stdlib.h>

#include "scan/cgroups.h"

struct owner {
	uid_t uid;
	size_t counted; /* first pass, up to max_per_owner + 1 */
	size_t allowed;
	size_t seen;    /* second pass */
	bool pruned;    /* the second pass left some of it out */
	bool pruned_for_room; /* ... under its own cap: for want of the node's room */
};

struct cgcap {
	struct cgcap_limits lim;
	int stack[CGROUPS_MAX_DEPTH + 1]; /* by depth: the owner index, -1 for root's own */
	struct owner *owners;
	size_t n_owners, cap_owners;
	size_t root_counted, root_allowed, root_seen;
	size_t spare;    /* the node's cap less the plan: room for cgroups made between the passes */
	bool root_over;  /* the first pass stopped at the node's cap on root's own */
	bool root_pruned; /* the second pass left some of root's own out */
};

int cgcap_new(const struct cgcap_limits *limits, struct cgcap **ret)
{
	struct cgcap *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->lim = *limits;
	*ret = c;
	return 0;
}

void cgcap_free(struct cgcap *c)
{
	if (!c)
		return;
	free(c->owners);
	free(c);
}

static int owner_find(const struct cgcap *c, uid_t uid)
{
	for (size_t i = 0; i < c->n_owners; i++)
		if (c->owners[i].uid == uid)
			return (int)i;
	return -1;
}

static int owner_add(struct cgcap *c, uid_t uid)
{
	if (c->n_owners == c->cap_owners) {
		size_t n = c->cap_owners ? c->cap_owners * 2 : 8;
		struct owner *a = realloc(c->owners, n * sizeof(*a));

		if (!a)
			return -ENOMEM;
		c->owners = a;
		c->cap_owners = n;
	}
	c->owners[c->n_owners] = (struct owner){ .uid = uid };
	return (int)c->n_owners++;
}

/*
 * Whose the cgroup at depth is: the owner of the delegated subtree it is in (its index), or
 * -1 for root's own; *ret_top says whether it starts that subtree. -ENOENT: an owner not met
 * in the first pass; -ENOMEM.
 */
static int classify(struct cgcap *c, unsigned depth, uid_t uid, bool add, bool *ret_top)
{
	int parent = depth > 0 && depth <= CGROUPS_MAX_DEPTH ? c->stack[depth - 1] : -1;
	int o = parent;

	*ret_top = false;
	if (depth > CGROUPS_MAX_DEPTH)
		return -ENOENT; /* the walk stops above this */
	if (parent < 0 && depth > 0 && uid != 0) {
		o = owner_find(c, uid);
		/* as many owners as the node keeps cgroups: each needs one to be worth a slot */
		if (o < 0 && add && c->n_owners < c->lim.max_cgroups)
			o = owner_add(c, uid);
		if (o < 0 && o != -ENOMEM)
			o = -ENOENT;
		if (o < 0)
			return o;
		*ret_top = true;
	}
	c->stack[depth] = o;
	return o;
}

/* What the walk should skip once a subtree is over: the rest of its parent, unless that is root's. */
static int prune(bool top)
{
	return top ? CGROUPS_WALK_PRUNE : CGROUPS_WALK_PRUNE_REST;
}

int cgcap_count(struct cgcap *c, unsigned depth, uid_t uid)
{
	bool top;
	int o = classify(c, depth, uid, true, &top);

	if (o == -ENOMEM)
		return o;
	if (o == -ENOENT)
		return prune(true);
	if (o < 0) {
		if (++c->root_counted > c->lim.max_cgroups) {
			c->root_over = true;
			return -ECANCELED; /* root's own take the node's cap: no owner keeps any */
		}
		return 0;
	}
	if (++c->owners[o].counted > c->lim.max_per_owner)
		return prune(top);
	return 0;
}

/* What an owner asks for: what it has, up to its cap. */
static size_t demand(const struct cgcap *c, const struct owner *o)
{
	return o->counted < c->lim.max_per_owner ? o->counted : c->lim.max_per_owner;
}

void cgcap_plan(struct cgcap *c)
{
	size_t left, unmet = 0;

	c->root_allowed = c->root_counted < c->lim.max_cgroups ? c->root_counted : c->lim.max_cgroups;
	left = c->lim.max_cgroups - c->root_allowed;
	for (size_t i = 0; i < c->n_owners; i++) {
		c->owners[i].allowed = 0;
		unmet += demand(c, &c->owners[i]) > 0;
	}
	/* water filling: each round, an equal share of what is left to those still wanting */
	while (unmet > 0 && left > 0) {
		size_t share = left / unmet, met = 0;

		for (size_t i = 0; i < c->n_owners && left > 0; i++) {
			struct owner *o = &c->owners[i];
			size_t want = demand(c, o) - o->allowed, give;

			if (want == 0)
				continue;
			give = share == 0 ? 1 : want < share ? want : share;
			o->allowed += give;
			left -= give;
			met += o->allowed == demand(c, o);
		}
		unmet -= met;
	}
	c->spare = c->lim.max_cgroups - cgcap_planned(c);
}

size_t cgcap_planned(const struct cgcap *c)
{
	size_t n = c->root_allowed;

	for (size_t i = 0; i < c->n_owners; i++)
		n += c->owners[i].allowed;
	return n;
}

/*
 * Whether a cgroup past its plan, made between the two passes (a pod started mid-scan), still
 * fits: in the node's spare room, and for an owner that got all it asked for, within its cap.
 */
static bool fits_spare(struct cgcap *c, const struct owner *o)
{
	if (c->spare == 0 || (o && (o->allowed < demand(c, o) || o->seen > c->lim.max_per_owner)))
		return false;
	c->spare--;
	return true;
}

int cgcap_admit(struct cgcap *c, unsigned depth, uid_t uid)
{
	bool top;
	int o = classify(c, depth, uid, false, &top);

	if (o == -ENOENT || o == -ENOMEM)
		return prune(top || o == -ENOENT);
	if (o < 0) {
		if (++c->root_seen <= c->root_allowed || fits_spare(c, NULL))
			return 0;
		c->root_pruned = true;
		return CGROUPS_WALK_PRUNE_REST;
	}
	if (++c->owners[o].seen <= c->owners[o].allowed || fits_spare(c, &c->owners[o]))
		return 0;
	c->owners[o].pruned = true;
	if (c->owners[o].seen <= c->lim.max_per_owner)
		c->owners[o].pruned_for_room = true;
	return prune(top);
}

bool cgcap_node_cut(const struct cgcap *c)
{
	if (c->root_over || c->root_pruned)
		return true;
	for (size_t i = 0; i < c->n_owners; i++)
		if (c->owners[i].allowed < demand(c, &c->owners[i]) || c->owners[i].pruned_for_room)
			return true;
	return false;
}

size_t cgcap_owners_cut(const struct cgcap *c, uid_t *uids, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < c->n_owners; i++) {
		const struct owner *o = &c->owners[i];

		if (o->counted <= o->allowed && !o->pruned)
			continue;
		if (k < n)
			uids[k] = o->uid;
		k++;
	}
	return k;
}
