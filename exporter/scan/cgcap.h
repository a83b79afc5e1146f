/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cgcap: how many cgroups a scan visits. A cap for the node (--scan.max-cgroups) and a smaller
 * one per owner of delegated subtrees (--scan.max-cgroups-per-owner): a cgroup directory owned
 * by a non-root uid below a root-owned one starts a subtree its owner chose, and every cgroup
 * below it counts against that owner, whoever owns it (a user namespace chowns to its subuids).
 * Root's cgroups are kept first; the rest of the node's cap is shared among the owners, none
 * getting more than it asks for (max-min fair). So a tenant's bomb cuts the tenant's own
 * subtrees, not what the walk reaches last. Two passes over the tree: cgcap_count() on each
 * cgroup, cgcap_plan(), then cgcap_admit() on each cgroup of the scan's walk. Never logs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct cgcap_limits {
	size_t max_cgroups;   /* per scan, the whole node */
	size_t max_per_owner; /* per owner of delegated subtrees */
};

struct cgcap;

/* Returns 0 or -ENOMEM. */
int cgcap_new(const struct cgcap_limits *limits, struct cgcap **ret);
void cgcap_free(struct cgcap *c);

/*
 * The first pass: the cgroup at depth (0 for the walk's root) whose directory uid owns.
 * Returns 0 or a CGROUPS_WALK_* value (the rest is not worth counting), -ECANCELED when
 * nothing more can be kept, or -ENOMEM.
 */
int cgcap_count(struct cgcap *c, unsigned depth, uid_t uid);

/* Between the passes: what each owner and root's own cgroups may keep. */
void cgcap_plan(struct cgcap *c);

/* After cgcap_plan(): how many cgroups the second pass will visit at most. */
size_t cgcap_planned(const struct cgcap *c);

/* The second pass, the same way: 0 to visit the cgroup, or a CGROUPS_WALK_* value. */
int cgcap_admit(struct cgcap *c, unsigned depth, uid_t uid);

/* After the second pass: whether the node's cap left any cgroup out. */
bool cgcap_node_cut(const struct cgcap *c);

/* The owners that lost cgroups (to either cap), at most n into uids; returns how many lost. */
size_t cgcap_owners_cut(const struct cgcap *c, uid_t *uids, size_t n);

static inline void cgcap_freep(struct cgcap **c)
{
	cgcap_free(*c);
}
