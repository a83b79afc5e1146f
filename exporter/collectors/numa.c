/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The numa collector (off by default): a cgroup's memory.numa_stat workingset_refault_file, per
 * NUMA node. One series per cgroup and node: on a two-socket node that doubles the refault
 * series of every cgroup, and their sum is memstat's total. Where refaults land matters to
 * those who place workloads on nodes; a fleet alerting on refaults does not need it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "parse/memstat.h"
#include "scan/collector.h"
#include "scan/render.h"
#include "base/util.h"

#define FAMILY "cachestat_cgroup_node_workingset_refault_file_total"

static void free_cgroup(void *data)
{
	memstat_numa_done(data);
	free(data);
}

static int numa_scan_cgroup(struct collect_scan *scan, size_t idx, void *state, int dirfd,
			    struct snap_cgroup *cg)
{
	_cleanup_free_ char *buf = NULL;
	struct memstat_numa *numa;
	size_t len;
	int r;

	(void)state;
	r = scan_read_cgroup_file(scan, dirfd, cg, "memory.numa_stat", false, &buf, &len);
	if (r <= 0)
		return r; /* 0: a kernel without NUMA, or the root cgroup */
	numa = calloc(1, sizeof(*numa));
	if (!numa)
		return -ENOMEM;
	r = scan_parsed(scan, cg, "memory.numa_stat", memstat_parse_numa(buf, len, numa));
	if (r < 0 || numa->n_nodes == 0) {
		free_cgroup(numa);
		return r;
	}
	cg->data[idx] = numa;
	return 0;
}

static void numa_text(FILE *out, const struct snapshot *s, size_t idx)
{
	bool head = false;

	for (size_t i = 0; i < s->n_cgroups; i++) {
		const struct memstat_numa *numa = s->cgroups[i].data[idx];

		for (size_t j = 0; numa && j < numa->n_nodes; j++) {
			char node[16];

			if (!head)
				render_family(out, FAMILY, "counter",
					      "memory.numa_stat workingset_refault_file: refaults of evicted file pages, per NUMA node.");
			head = true;
			snprintf(node, sizeof(node), "%u", numa->nodes[j].node);
			render_sample_open(out, FAMILY, &s->cgroups[i]);
			render_sample_label(out, "node", node);
			render_sample_close(out, numa->nodes[j].workingset_refault_file);
		}
	}
}

static void numa_json(json_t *o, const struct snap_cgroup *cg, size_t idx)
{
	const struct memstat_numa *numa = cg->data[idx];
	json_t *a;

	if (!numa)
		return;
	a = json_array();
	for (size_t j = 0; a && j < numa->n_nodes; j++)
		json_array_append_new(a, json_pack("{s:I,s:I}", "node", (json_int_t)numa->nodes[j].node,
						   "workingset_refault_file_total",
						   (json_int_t)numa->nodes[j].workingset_refault_file));
	json_object_set_new(o, "numa", a);
}

static const struct collector_def numa_collector = {
	.name = "numa",
	.help = "memory.numa_stat's file refaults, per NUMA node",
	.default_on = false,
	.reported = true,
	/* v1's memory.numa_stat has no refault counters */
	.unavailable = scan_memory_v2_unavailable,
	.scan_cgroup = numa_scan_cgroup,
	.free_cgroup = free_cgroup,
	.render_text = numa_text,
	.render_json = numa_json,
};
REGISTER_COLLECTOR(numa_collector);
