/* SPDX-License-Identifier: Apache-2.0 */
/* idmap: one read of the activity program's map, sorted by cgroup id (idmap.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "activity/idmap.h"

int activity_idmap_add(struct activity_idmap *m, uint64_t id, const struct activity_counts *c)
{
	if (m->n == m->size) {
		size_t size = m->size ? 2 * m->size : 64;
		struct activity_entry *e = reallocarray(m->entries, size, sizeof(*e));

		if (!e)
			return -ENOMEM;
		m->entries = e;
		m->size = size;
	}
	m->entries[m->n++] = (struct activity_entry){ .id = id, .counts = *c };
	return 0;
}

static int by_id(const void *a, const void *b)
{
	const struct activity_entry *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

void activity_idmap_sort(struct activity_idmap *m)
{
	size_t out = 0;

	if (m->n == 0)
		return;
	qsort(m->entries, m->n, sizeof(m->entries[0]), by_id);
	for (size_t i = 1; i < m->n; i++) {
		struct activity_entry *last = &m->entries[out];

		if (m->entries[i].id != last->id) {
			m->entries[++out] = m->entries[i];
			continue;
		}
		for (unsigned e = 0; e < _ACTIVITY_EVENT_MAX; e++)
			last->counts.events[e] += m->entries[i].counts.events[e];
	}
	m->n = out + 1;
}

const struct activity_entry *activity_idmap_claim(struct activity_idmap *m, uint64_t id)
{
	struct activity_entry key = { .id = id };
	struct activity_entry *e = m->n ? bsearch(&key, m->entries, m->n, sizeof(key), by_id) : NULL;

	if (e)
		e->claimed = true;
	return e;
}

void activity_idmap_free(struct activity_idmap *m)
{
	free(m->entries);
	*m = (struct activity_idmap){ 0 };
}
