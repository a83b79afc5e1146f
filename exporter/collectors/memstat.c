/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "collectors/memstat.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scan/collector.h"
#include "scan/render.h"
#include "base/util.h"

static int scan_cgroup(struct collect_scan *scan, size_t idx, void *state, int dirfd,
		       struct snap_cgroup *cg)
{
	_cleanup_free_ char *buf = NULL;
	struct memstat_cgroup *m;
	size_t len;
	int r;

	(void)state;
	r = scan_read_cgroup_file(scan, dirfd, cg, "memory.stat", false, &buf, &len);
	if (r <= 0)
		return r; /* 0: no memory controller here: the series are absent, not zero */
	m = cg->data[idx] = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	r = scan_parsed(scan, cg, "memory.stat",
			scan->memory_v1 ? memstat_parse_v1(buf, len, &m->memstat)
					: memstat_parse(buf, len, &m->memstat));
	if (r < 0)
		free(TAKE_PTR(cg->data[idx]));
	return r;
}

static const struct {
	enum memstat_key key;
	const char *name;
	const char *type;
	const char *help;
} families[] = {
	{ MEMSTAT_WORKINGSET_REFAULT_FILE, "cachestat_cgroup_workingset_refault_file_total", "counter",
	  "memory.stat workingset_refault_file: refaults of evicted file pages." },
	{ MEMSTAT_WORKINGSET_ACTIVATE_FILE, "cachestat_cgroup_workingset_activate_file_total", "counter",
	  "memory.stat workingset_activate_file: refaulted file pages activated at once." },
	{ MEMSTAT_WORKINGSET_RESTORE_FILE, "cachestat_cgroup_workingset_restore_file_total", "counter",
	  "memory.stat workingset_restore_file: refaulted file pages that were workingset when evicted." },
};

/* A family has HELP and TYPE only where some cgroup has the key. */
static void render_family_of(FILE *out, const struct snapshot *s, size_t idx, size_t k)
{
	bool head = false;

	for (size_t i = 0; i < s->n_cgroups; i++) {
		const struct memstat_cgroup *m = s->cgroups[i].data[idx];

		if (!m || !memstat_has(&m->memstat, families[k].key))
			continue;
		if (!head)
			render_family(out, families[k].name, families[k].type, families[k].help);
		head = true;
		render_cgroup_sample(out, families[k].name, &s->cgroups[i],
				     m->memstat.value[families[k].key]);
	}
}

static void memstat_text(FILE *out, const struct snapshot *s, size_t idx)
{
	for (size_t k = 0; k < ELEMENTSOF(families); k++)
		render_family_of(out, s, idx, k);
}

static void memstat_json(json_t *o, const struct snap_cgroup *cg, size_t idx)
{
	const struct memstat_cgroup *m = cg->data[idx];
	json_t *stat;

	if (!m)
		return;
	stat = json_object();
	for (size_t k = 0; stat && k < ELEMENTSOF(families); k++)
		if (memstat_has(&m->memstat, families[k].key))
			json_object_set_new(stat, families[k].name + strlen("cachestat_cgroup_"),
					    render_json_u64(m->memstat.value[families[k].key]));
	json_object_set_new(o, "memory_stat", stat);
}

/* v1's memory.stat is read too: only a v2 tree without the controller has none */
static const char *memstat_unavailable(const struct collect_scan *scan)
{
	return scan_has_memory_controller(scan) ? NULL : "no_memory_controller";
}

static const struct collector_def memstat_collector = {
	.name = "memstat",
	.help = "memory.stat's workingset counters",
	.default_on = true,
	.reported = true,
	.unavailable = memstat_unavailable,
	.scan_cgroup = scan_cgroup,
	.free_cgroup = free,
	.render_text = memstat_text,
	.render_json = memstat_json,
};
REGISTER_COLLECTOR(memstat_collector);
