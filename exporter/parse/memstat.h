/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memstat: parsers for a cgroup v2's memory.stat and memory.numa_stat, and for a cgroup v1
 * memory.stat mapped onto the same keys. They take a buffer, so
 * tests feed them strings; they allocate only for the per-node list. Depend on nothing else.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum memstat_key {
	MEMSTAT_FILE,
	MEMSTAT_WORKINGSET_REFAULT_FILE,
	MEMSTAT_WORKINGSET_ACTIVATE_FILE,
	MEMSTAT_WORKINGSET_RESTORE_FILE,
	_MEMSTAT_MAX,
};

/* The counters of memory.stat the exporter uses; a key the kernel did not print is absent. */
struct memstat {
	uint64_t value[_MEMSTAT_MAX];
	unsigned present; /* bit (1u << key) */
};

static inline bool memstat_has(const struct memstat *m, enum memstat_key key)
{
	return m->present & (1u << key);
}

const char *memstat_key_name(enum memstat_key key);

/*
 * Parses memory.stat ("key value" per line). Unknown keys are ignored (the kernel adds them
 * over time). Returns 0, or -EINVAL for a line that is not "key value" with a decimal value.
 */
int memstat_parse(const char *buf, size_t len, struct memstat *ret);

/*
 * Parses a cgroup v1 memory.stat (the v1 memory hierarchy of a hybrid host) onto the same keys.
 * v1 prints each counter twice, for the cgroup alone and, prefixed "total_", with its
 * descendants; v2's memory.stat counts the descendants, so the total_ ones are taken:
 *   total_cache                    -> MEMSTAT_FILE (both are NR_FILE_PAGES, shmem included)
 *   total_workingset_refault_file  -> MEMSTAT_WORKINGSET_REFAULT_FILE
 * v1 has no workingset_activate_file nor workingset_restore_file (memcg1_stat_format() of 6.18
 * and memcg_stat_show() of 6.1 print neither): they stay absent, as does a refault counter an
 * older kernel does not print. Returns 0, or -EINVAL as memstat_parse() does.
 */
int memstat_parse_v1(const char *buf, size_t len, struct memstat *ret);

struct memstat_node {
	unsigned node;
	uint64_t workingset_refault_file;
};

struct memstat_numa {
	struct memstat_node *nodes; /* sorted by node */
	size_t n_nodes;
};

/*
 * Parses memory.numa_stat ("key N0=value N1=value ..." per line) for the per-node
 * workingset_refault_file. Returns 0 (n_nodes == 0 when the key is missing), -EINVAL for a
 * malformed line, -ENOMEM.
 */
int memstat_parse_numa(const char *buf, size_t len, struct memstat_numa *ret);
void memstat_numa_done(struct memstat_numa *numa);
