/* SPDX-License-Identifier: Apache-2.0 */
#include "scan/snapshot.h"

#include <stdlib.h>

struct snapshot *snapshot_new(void)
{
	struct snapshot *s = calloc(1, sizeof(*s));

	if (s)
		s->refs = 1;
	return s;
}

struct snapshot *snapshot_ref(struct snapshot *s)
{
	if (s)
		__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
	return s;
}

void snap_file_done(struct snap_file *f)
{
	free(f->path);
	f->path = NULL;
}

void snapshot_unref(struct snapshot *s)
{
	if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	for (size_t i = 0; i < s->n_cgroups; i++) {
		struct snap_cgroup *cg = &s->cgroups[i];

		free(cg->name);
		for (size_t j = 0; j < COLLECTORS_MAX; j++)
			if (cg->data[j] && s->free_data[j])
				s->free_data[j](cg->data[j]);
	}
	free(s->cgroups);
	free(s->problem);
	free(s->cap_note);
	free(s->glob_note);
	free(s);
}
