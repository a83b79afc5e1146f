/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The identity collector: cachestat_cgroup_info{cgroup, systemd_slice, systemd_unit,
 * container_runtime, container_id, pod_uid, pod_qos} 1, one series per cgroup, the labels read
 * from the cgroup path alone by identity.c (no runtime socket, no API call).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "parse/identity.h"
#include "scan/collector.h"
#include "scan/render.h"
#include "base/util.h"

#define INFO_FAMILY "cachestat_cgroup_info"

static int any_label(const char *name, const char *value, void *userdata)
{
	(void)name, (void)value;
	*(bool *)userdata = true;
	return 0;
}

/* snap_cgroup.data of "identity": a struct identity, absent where no label applies. */
static int identity_scan_cgroup(struct collect_scan *scan, size_t idx, void *state, int dirfd,
				struct snap_cgroup *cg)
{
	_cleanup_free_ struct identity *id = malloc(sizeof(*id));
	bool any = false;

	(void)scan, (void)state, (void)dirfd;
	if (!id)
		return -ENOMEM;
	identity_parse(cg->name, id);
	identity_foreach_label(id, any_label, &any);
	if (any)
		cg->data[idx] = TAKE_PTR(id);
	return 0;
}

static int text_label(const char *name, const char *value, void *userdata)
{
	render_sample_label(userdata, name, value);
	return 0;
}

static void identity_text(FILE *out, const struct snapshot *s, size_t idx)
{
	if (!s->collectors[idx].enabled || s->n_cgroups == 0)
		return;
	render_family(out, INFO_FAMILY, "gauge",
		      "Who a cgroup belongs to (systemd unit and slice, container, Kubernetes pod), "
		      "read from its path; 1.");
	for (size_t i = 0; i < s->n_cgroups; i++) {
		const struct identity *id = s->cgroups[i].data[idx];

		render_sample_open(out, INFO_FAMILY, &s->cgroups[i]);
		if (id)
			identity_foreach_label(id, text_label, out);
		render_sample_close(out, 1);
	}
}

static int json_label(const char *name, const char *value, void *userdata)
{
	return json_object_set_new(userdata, name, render_json_str(value)) == 0 ? 0 : -ENOMEM;
}

static void identity_json(json_t *o, const struct snap_cgroup *cg, size_t idx)
{
	const struct identity *id = cg->data[idx];
	json_t *labels;

	if (!id)
		return;
	labels = json_object();
	if (labels)
		identity_foreach_label(id, json_label, labels);
	json_object_set_new(o, "identity", labels);
}

static const struct collector_def identity_collector = {
	.name = "identity",
	.help = "cachestat_cgroup_info: unit, container and pod of each cgroup",
	.default_on = true,
	.scan_cgroup = identity_scan_cgroup,
	.free_cgroup = free,
	.render_text = identity_text,
	.render_json = identity_json,
};
REGISTER_COLLECTOR(identity_collector);
