/* SPDX-License-Identifier: Apache-2.0 */
/*
 * registry: the table of collectors. REGISTER_COLLECTOR() (collector.h) puts each collector's
 * definition into a linker section, so the collectors are the objects linked in and adding one
 * touches no list but the Makefile's sources. The flags --[no-]collector.NAME, their help and
 * the per-collector cachestat_scrape_collector_* series all come from here. Collectors are kept
 * sorted by name, whatever the link order: that is the order of their series in the exposition.
 */
#pragma once

#include <stddef.h>
#include <stdio.h>

#include "scan/collector.h"

/* Collectors registered, sorted by name; at most COLLECTORS_MAX. */
size_t registry_count(void);
const struct collector_def *registry_get(size_t idx);
/* Index of the collector named name, or -ENOENT. */
int registry_find(const char *name);
/* The flags of every collector, in registry order: registry_flag(0 .. registry_flag_count()-1). */
size_t registry_flag_count(void);
const struct collector_flag *registry_flag(size_t i);
/* The --help lines of def's own flags. */
void registry_print_flags(FILE *f, const struct collector_def *def);

/* A new snapshot whose slots free their data with each collector's free_cgroup, or NULL. */
struct snapshot *registry_snapshot_new(void);
/* The slot of the collector named name, or NULL when no such collector is linked. */
const struct snap_collector *snapshot_collector(const struct snapshot *s, const char *name);
/* cg's data of the collector named name, or NULL. */
void *snap_cgroup_data(const struct snap_cgroup *cg, const char *name);

/* Entries in the linker section (more than registry_count() means COLLECTORS_MAX is too small). */
size_t registry_linked(void);
