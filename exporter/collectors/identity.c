/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The identity collector: cachestat_cgroup_info{cgroup, systemd_slice, systemd_unit,
 * container_runtime, container_id, pod_uid, pod_qos, rootless_uid} 1, one series per cgroup, the
 * labels read from the cgroup path by identity.c (no runtime socket, no API call), as far down as
 * root owns the cgroups (a stat of each parent).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* Parents looked at for a delegation point: deeper cgroups are parsed as if delegated. */
#define IDENTITY_MAX_DEPTH 64

/*
 * The index of the first component of the cgroup's path (name) whose directory root does not
 * own: a delegation point (identity.h). dirfd is the cgroup's own directory; its parents are
 * "..", "../..". A parent that cannot be looked at counts as delegated.
 */
static size_t delegation_point(int dirfd, const char *name)
{
	char rel[3 * IDENTITY_MAX_DEPTH + 2] = ".";
	size_t depth = 0, len = 0, first = IDENTITY_NO_DELEGATION;
	struct stat st;

	for (const char *p = name; *p; p++)
		if (*p == '/' && p[1] && p[1] != '/')
			depth++;
	if (depth > IDENTITY_MAX_DEPTH)
		return 0;
	/* the cgroup itself ("."), then each parent up to the first component ("..", "../..") */
	for (size_t up = 0; up < depth; up++) {
		if (up > 0) {
			memcpy(rel + len, up == 1 ? ".." : "/..", up == 1 ? 3 : 4);
			len += up == 1 ? 2 : 3;
		}
		if (fstatat(dirfd, rel, &st, 0) < 0 || st.st_uid != 0)
			first = depth - 1 - up;
	}
	return first;
}

/* snap_cgroup.data of "identity": a struct identity, absent where no label applies. */
static int identity_scan_cgroup(struct collect_scan *scan, size_t idx, void *state, int dirfd,
				struct snap_cgroup *cg)
{
	_cleanup_free_ struct identity *id = malloc(sizeof(*id));
	bool any = false;

	(void)scan, (void)state;
	if (!id)
		return -ENOMEM;
	identity_parse(cg->name, delegation_point(dirfd, cg->name), id);
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
