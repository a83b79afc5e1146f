/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pressure collector: the totals of a cgroup's memory.pressure (PSI), the time some task
 * (some) or every non-idle task at once (full) stalled waiting for memory, as counters of
 * seconds. Two families, as node_exporter's node_pressure_memory_{waiting,stalled}_seconds_total:
 * full is part of some, so a label to sum over would mislead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "parse/mempressure.h"
#include "scan/collector.h"
#include "scan/render.h"
#include "base/util.h"

static const struct {
	const char *name;
	const char *json;
	const char *help;
} families[_MEMPRESSURE_PSI_MAX] = {
	[MEMPRESSURE_PSI_SOME] = { "cachestat_cgroup_memory_pressure_some_seconds_total", "memory_pressure_some_seconds_total",
			      "memory.pressure some total: time at least one task of the cgroup stalled waiting for memory." },
	[MEMPRESSURE_PSI_FULL] = { "cachestat_cgroup_memory_pressure_full_seconds_total", "memory_pressure_full_seconds_total",
			      "memory.pressure full total: time every non-idle task of the cgroup stalled on memory at once." },
};

/* v1 has no PSI files (its memory.pressure_level is another thing) */
static const char *pressure_unavailable(const struct collect_scan *scan)
{
	if (scan->memory_v1)
		return "cgroup_v1";
	return scan_has_psi(scan) ? NULL : "no_psi";
}

static int pressure_scan_cgroup(struct collect_scan *scan, size_t idx, void *state, int dirfd,
				struct snap_cgroup *cg)
{
	_cleanup_free_ struct mempressure_psi *psi = NULL;
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	(void)state;
	/* absent: the root before 5.2; EOPNOTSUPP: a cgroup of a kernel booted with psi=0 */
	r = scan_read_cgroup_file(scan, dirfd, cg, "memory.pressure", true, &buf, &len);
	if (r <= 0)
		return r;
	psi = malloc(sizeof(*psi));
	if (!psi)
		return -ENOMEM;
	r = scan_parsed(scan, cg, "memory.pressure", mempressure_parse_psi(buf, len, psi));
	if (r < 0)
		return r;
	if (psi->present)
		cg->data[idx] = TAKE_PTR(psi);
	return 0;
}

static void pressure_text(FILE *out, const struct snapshot *s, size_t idx)
{
	for (unsigned k = 0; k < _MEMPRESSURE_PSI_MAX; k++) {
		bool head = false;

		for (size_t i = 0; i < s->n_cgroups; i++) {
			const struct mempressure_psi *psi = s->cgroups[i].data[idx];

			if (!psi || !(psi->present & (1u << k)))
				continue;
			if (!head)
				render_family(out, families[k].name, "counter", families[k].help);
			head = true;
			render_sample_open(out, families[k].name, &s->cgroups[i]);
			render_sample_close_micros(out, psi->total_us[k]);
		}
	}
}

static void pressure_json(json_t *o, const struct snap_cgroup *cg, size_t idx)
{
	const struct mempressure_psi *psi = cg->data[idx];

	for (unsigned k = 0; psi && k < _MEMPRESSURE_PSI_MAX; k++)
		if (psi->present & (1u << k))
			json_object_set_new(o, families[k].json, json_real((double)psi->total_us[k] / 1e6));
}

static const struct collector_def pressure_collector = {
	.name = "pressure",
	.help = "memory.pressure (PSI) some and full totals",
	.default_on = true,
	.reported = true,
	.unavailable = pressure_unavailable,
	.scan_cgroup = pressure_scan_cgroup,
	.free_cgroup = free,
	.render_text = pressure_text,
	.render_json = pressure_json,
};
REGISTER_COLLECTOR(pressure_collector);
