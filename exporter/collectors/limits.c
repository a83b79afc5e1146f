/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The limits collector (off by default): what a cgroup is charged and may be charged. Its
 * memory.current, memory.high and memory.max, each one number in bytes, or "max" for no limit
 * (left out rather than exported as a number), and memory.stat's file, the page cache charged.
 * In Kubernetes, cAdvisor sends the same as container_memory_usage_bytes,
 * container_spec_memory_limit_bytes and container_memory_cache: turn it on where no cAdvisor
 * runs (a host of systemd services).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "parse/memstat.h"
#include "scan/collector.h"
#include "scan/render.h"
#include "base/util.h"

/* "N\n" into *ret: 1; "max\n": 0; else -EINVAL. */
static int parse_limit(const char *buf, size_t len, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	if (strlen(buf) != len)
		return -EINVAL;
	if (strcmp(buf, "max\n") == 0)
		return 0;
	if (buf[0] < '0' || buf[0] > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || strcmp(end, "\n") != 0)
		return -EINVAL;
	*ret = v;
	return 1;
}

/* memory.stat's file into *ret: 1; 0 when the kernel does not print it; else -EINVAL. */
static int parse_stat_file(const char *buf, size_t len, uint64_t *ret)
{
	struct memstat m;
	int r;

	r = memstat_parse(buf, len, &m);
	if (r < 0)
		return r;
	if (!memstat_has(&m, MEMSTAT_FILE))
		return 0;
	*ret = m.value[MEMSTAT_FILE];
	return 1;
}

static const struct {
	const char *file;
	int (*parse)(const char *buf, size_t len, uint64_t *ret);
	const char *name;
	const char *help;
} families[] = {
	{ "memory.current", parse_limit, "cachestat_cgroup_memory_current_bytes",
	  "memory.current: memory charged to the cgroup and its descendants." },
	{ "memory.high", parse_limit, "cachestat_cgroup_memory_high_bytes",
	  "memory.high: the throttling limit of the cgroup, where one is set." },
	{ "memory.max", parse_limit, "cachestat_cgroup_memory_max_bytes",
	  "memory.max: the hard limit of the cgroup, where one is set." },
	{ "memory.stat", parse_stat_file, "cachestat_cgroup_memory_file_bytes",
	  "memory.stat file: page cache charged to the cgroup." },
};

/* snap_cgroup.data of "limits"; absent where the cgroup has none of the files. */
struct limits_cgroup {
	uint64_t value[ELEMENTSOF(families)];
	unsigned present; /* bit i: value[i] is a number */
};

/* One file into l; -ENOENT where the cgroup does not have it. */
static int read_limit(struct collect_scan *scan, int dirfd, const struct snap_cgroup *cg,
		      size_t i, struct limits_cgroup *l)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = scan_read_cgroup_file(scan, dirfd, cg, families[i].file, false, &buf, &len);
	if (r <= 0)
		return r == 0 ? -ENOENT : r;
	r = families[i].parse(buf, len, &l->value[i]);
	if (r < 0) {
		scan_problem(scan, "reading %s/%s: %s", cg->name, families[i].file, strerror(-r));
		return r;
	}
	l->present |= (unsigned)r << i;
	return 0;
}

static int limits_scan_cgroup(struct collect_scan *scan, size_t idx, void *state, int dirfd,
			      struct snap_cgroup *cg)
{
	_cleanup_free_ struct limits_cgroup *l = calloc(1, sizeof(*l));
	bool found = false;
	int r, failed = 0;

	(void)state;
	if (!l)
		return -ENOMEM;
	for (size_t i = 0; i < ELEMENTSOF(families); i++) {
		r = read_limit(scan, dirfd, cg, i, l);
		if (r == -ENOMEM)
			return r;
		found |= r != -ENOENT;
		if (r < 0 && r != -ENOENT)
			failed = r;
	}
	if (found)
		cg->data[idx] = TAKE_PTR(l);
	return failed;
}

static void limits_text(FILE *out, const struct snapshot *s, size_t idx)
{
	for (size_t f = 0; f < ELEMENTSOF(families); f++) {
		bool head = false;

		for (size_t i = 0; i < s->n_cgroups; i++) {
			const struct limits_cgroup *l = s->cgroups[i].data[idx];

			if (!l || !(l->present & (1u << f)))
				continue;
			if (!head)
				render_family(out, families[f].name, "gauge", families[f].help);
			head = true;
			render_cgroup_sample(out, families[f].name, &s->cgroups[i], l->value[f]);
		}
	}
}

static void limits_json(json_t *o, const struct snap_cgroup *cg, size_t idx)
{
	const struct limits_cgroup *l = cg->data[idx];

	for (size_t f = 0; l && f < ELEMENTSOF(families); f++)
		if (l->present & (1u << f))
			json_object_set_new(o, families[f].name + strlen("cachestat_cgroup_"),
					    render_json_u64(l->value[f]));
}

static const struct collector_def limits_collector = {
	.name = "limits",
	.help = "memory.current, memory.high, memory.max and memory.stat's file",
	.default_on = false,
	.reported = true,
	.unavailable = scan_memory_v2_unavailable,
	.scan_cgroup = limits_scan_cgroup,
	.free_cgroup = free,
	.render_text = limits_text,
	.render_json = limits_json,
};
REGISTER_COLLECTOR(limits_collector);
