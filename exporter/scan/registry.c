/* SPDX-License-Identifier: Apache-2.0 */
#include "scan/registry.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The linker makes these two symbols for the section of REGISTER_COLLECTOR(). Weak, so that a
 * program linked without any collector (the fuzz targets) still links, with an empty table.
 */
extern const struct collector_def *const __start_cachestat_collectors[] __attribute__((weak));
extern const struct collector_def *const __stop_cachestat_collectors[] __attribute__((weak));

static const struct collector_def *sorted[COLLECTORS_MAX];
static size_t n_sorted;
static pthread_once_t loaded = PTHREAD_ONCE_INIT;

static int by_name(const void *a, const void *b)
{
	const struct collector_def *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

size_t registry_linked(void)
{
	if (!__start_cachestat_collectors)
		return 0;
	return (size_t)(__stop_cachestat_collectors - __start_cachestat_collectors);
}

static void load(void)
{
	size_t n = registry_linked();

	for (size_t i = 0; i < n && n_sorted < COLLECTORS_MAX; i++)
		sorted[n_sorted++] = __start_cachestat_collectors[i];
	qsort(sorted, n_sorted, sizeof(*sorted), by_name);
}

size_t registry_count(void)
{
	pthread_once(&loaded, load);
	return n_sorted;
}

const struct collector_def *registry_get(size_t idx)
{
	return idx < registry_count() ? sorted[idx] : NULL;
}

int registry_find(const char *name)
{
	for (size_t i = 0; i < registry_count(); i++)
		if (strcmp(sorted[i]->name, name) == 0)
			return (int)i;
	return -ENOENT;
}

size_t registry_flag_count(void)
{
	size_t n = 0;

	for (size_t i = 0; i < registry_count(); i++)
		n += sorted[i]->n_flags;
	return n < REGISTRY_FLAGS_MAX ? n : REGISTRY_FLAGS_MAX;
}

const struct collector_flag *registry_flag(size_t idx)
{
	if (idx >= registry_flag_count())
		return NULL;
	for (size_t i = 0; i < registry_count(); i++) {
		if (idx < sorted[i]->n_flags)
			return &sorted[i]->flags[idx];
		idx -= sorted[i]->n_flags;
	}
	return NULL;
}

void registry_print_flags(FILE *f, const struct collector_def *def)
{
	for (size_t i = 0; i < def->n_flags; i++)
		fprintf(f, "  --%s=%s\n                             %s\n", def->flags[i].name,
			def->flags[i].arg, def->flags[i].help);
}

struct snapshot *registry_snapshot_new(void)
{
	struct snapshot *s = snapshot_new();

	for (size_t i = 0; s && i < registry_count(); i++)
		s->free_data[i] = registry_get(i)->free_cgroup;
	return s;
}

const struct snap_collector *snapshot_collector(const struct snapshot *s, const char *name)
{
	int i = registry_find(name);

	return i < 0 ? NULL : &s->collectors[i];
}

void *snap_cgroup_data(const struct snap_cgroup *cg, const char *name)
{
	int i = registry_find(name);

	return i < 0 ? NULL : cg->data[i];
}
