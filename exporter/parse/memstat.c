/* SPDX-License-Identifier: Apache-2.0 */
#include "parse/memstat.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/textscan.h"
#include "base/util.h"

static const char *const key_names[_MEMSTAT_MAX] = {
	[MEMSTAT_FILE] = "file",
	[MEMSTAT_WORKINGSET_REFAULT_FILE] = "workingset_refault_file",
	[MEMSTAT_WORKINGSET_ACTIVATE_FILE] = "workingset_activate_file",
	[MEMSTAT_WORKINGSET_RESTORE_FILE] = "workingset_restore_file",
};

const char *memstat_key_name(enum memstat_key key)
{
	return key < _MEMSTAT_MAX ? key_names[key] : NULL;
}

/* "key value" lines into the counters whose name in names (NULL: none) the key is. */
static int parse_keyed(const char *buf, size_t len, const char *const names[_MEMSTAT_MAX],
		       struct memstat *ret)
{
	struct memstat m = { 0 };
	const char *pos = buf, *end = buf + len;
	struct span line;

	while (span_next_line(&pos, end, &line)) {
		struct span key, val, extra;
		uint64_t v;

		if (!span_next_word(&line, &key))
			continue; /* empty line */
		if (!span_next_word(&line, &val) || span_next_word(&line, &extra))
			return -EINVAL;
		if (span_parse_u64(val.p, val.end, &v) < 0)
			return -EINVAL;
		for (unsigned k = 0; k < _MEMSTAT_MAX; k++)
			if (names[k] && span_is(&key, names[k])) {
				m.value[k] = v;
				m.present |= 1u << k;
			}
	}
	*ret = m;
	return 0;
}

int memstat_parse(const char *buf, size_t len, struct memstat *ret)
{
	return parse_keyed(buf, len, key_names, ret);
}

/* v1's names of the same counters; NULL where v1 has none. */
static const char *const v1_key_names[_MEMSTAT_MAX] = {
	[MEMSTAT_FILE] = "total_cache",
	[MEMSTAT_WORKINGSET_REFAULT_FILE] = "total_workingset_refault_file",
};

int memstat_parse_v1(const char *buf, size_t len, struct memstat *ret)
{
	return parse_keyed(buf, len, v1_key_names, ret);
}

static int node_cmp(const void *a, const void *b)
{
	const struct memstat_node *x = a, *y = b;

	return (x->node > y->node) - (x->node < y->node);
}

/* The N<node>=<value> words of the workingset_refault_file line, appended to *nodes. */
static int parse_numa_line(struct span *line, struct memstat_node **nodes, size_t *n, size_t *cap)
{
	struct span w;

	while (span_next_word(line, &w)) {
		const char *eq = memchr(w.p, '=', (size_t)(w.end - w.p));
		uint64_t node, v;

		if (w.end - w.p < 3 || w.p[0] != 'N' || !eq)
			return -EINVAL;
		if (span_parse_u64(w.p + 1, eq, &node) < 0 || node > UINT32_MAX ||
		    span_parse_u64(eq + 1, w.end, &v) < 0)
			return -EINVAL;
		if (*n == *cap) {
			size_t ncap = *cap ? *cap * 2 : 8;
			struct memstat_node *t = realloc(*nodes, ncap * sizeof(*t));

			if (!t)
				return -ENOMEM;
			*nodes = t;
			*cap = ncap;
		}
		(*nodes)[(*n)++] = (struct memstat_node){ .node = (unsigned)node,
							  .workingset_refault_file = v };
	}
	return *n == 0 ? -EINVAL : 0;
}

int memstat_parse_numa(const char *buf, size_t len, struct memstat_numa *ret)
{
	_cleanup_free_ struct memstat_node *nodes = NULL;
	size_t n = 0, cap = 0;
	const char *pos = buf, *end = buf + len;
	struct span line;
	int r;

	while (span_next_line(&pos, end, &line)) {
		struct span key;

		if (!span_next_word(&line, &key))
			continue;
		if (!span_is(&key, "workingset_refault_file"))
			continue;
		if (n > 0)
			return -EINVAL; /* the key twice */
		r = parse_numa_line(&line, &nodes, &n, &cap);
		if (r < 0)
			return r;
	}
	if (n > 1)
		qsort(nodes, n, sizeof(*nodes), node_cmp);
	for (size_t i = 1; i < n; i++)
		if (nodes[i].node == nodes[i - 1].node)
			return -EINVAL;
	*ret = (struct memstat_numa){ .nodes = TAKE_PTR(nodes), .n_nodes = n };
	return 0;
}

void memstat_numa_done(struct memstat_numa *numa)
{
	free(numa->nodes);
	*numa = (struct memstat_numa){ 0 };
}
