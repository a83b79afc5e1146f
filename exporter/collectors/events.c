/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The events collector: a cgroup's memory.events, the times it was reclaimed under memory.low
 * protection (low), throttled over memory.high (high), hit memory.max (max), ran out of memory
 * (oom) and had a process OOM-killed (oom_kill), as counters. By default only high and max, the
 * two the thrashing alert reads and no other exporter sends: cAdvisor and node_exporter count
 * the OOM kills, and nothing reads low (--collector.events.include adds them).
 *
 * The kernel counts high and max on the cgroup whose own memory.high or memory.max was
 * exceeded, and on its ancestors (memcg_memory_event()): in a cgroup where neither it nor a
 * descendant has that limit they stay 0. Such a zero is left out (most cgroups of a Kubernetes
 * node have no memory.high, a third no memory.max); a counter is sent where the cgroup has the
 * limit, so that its first event counts, or where it is not 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/mempressure.h"
#include "scan/collector.h"
#include "scan/render.h"
#include "base/util.h"

#define FAMILY "cachestat_cgroup_memory_events_total"

/* --collector.events.include: bit (1u << event) for each event sent */
static unsigned included = 1u << MEMPRESSURE_EVENT_HIGH | 1u << MEMPRESSURE_EVENT_MAX;

/* A comma-separated list of memory.events keys, at least one, into included. */
static int parse_include(const char *arg)
{
	_cleanup_free_ char *copy = strdup(arg);
	unsigned set = 0;
	char *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (char *word = strtok_r(copy, ",", &save); word; word = strtok_r(NULL, ",", &save)) {
		unsigned e = 0;

		while (e < _MEMPRESSURE_EVENT_MAX && strcmp(word, mempressure_event_name(e)) != 0)
			e++;
		if (e == _MEMPRESSURE_EVENT_MAX) {
			fprintf(stderr, "--collector.events.include: \"%s\" is not one of low, high, max, oom, oom_kill\n",
				word);
			return -EINVAL;
		}
		set |= 1u << e;
	}
	if (!set) {
		fprintf(stderr, "--collector.events.include: want one or more of low, high, max, oom, oom_kill, comma-separated\n");
		return -EINVAL;
	}
	included = set;
	return 0;
}

/* Whether cg's own file (memory.high, memory.max) sets a limit: not "max", not absent. */
static bool has_limit(struct collect_scan *scan, int dirfd, const struct snap_cgroup *cg, const char *file)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;

	if (scan_read_cgroup_file(scan, dirfd, cg, file, false, &buf, &len) <= 0)
		return false;
	return strcmp(buf, "max\n") != 0;
}

/* Leaves out the high and max counters that are 0 by construction (above). */
static void drop_zero_by_construction(struct collect_scan *scan, int dirfd, const struct snap_cgroup *cg,
				      struct mempressure_events *ev)
{
	static const struct {
		enum mempressure_event event;
		const char *limit;
	} limited[] = {
		{ MEMPRESSURE_EVENT_HIGH, "memory.high" },
		{ MEMPRESSURE_EVENT_MAX, "memory.max" },
	};

	for (size_t i = 0; i < ELEMENTSOF(limited); i++) {
		unsigned bit = 1u << limited[i].event;

		if ((ev->present & bit) && ev->value[limited[i].event] == 0 &&
		    !has_limit(scan, dirfd, cg, limited[i].limit))
			ev->present &= ~bit;
	}
}

static const struct collector_flag flags[] = {
	{ "collector.events.include", "EVENT[,...]",
	  "memory.events keys sent, of low, high, max, oom, oom_kill (default high,max)", parse_include },
};

static int events_scan_cgroup(struct collect_scan *scan, size_t idx, void *state, int dirfd,
			      struct snap_cgroup *cg)
{
	_cleanup_free_ struct mempressure_events *ev = NULL;
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	(void)state;
	r = scan_read_cgroup_file(scan, dirfd, cg, "memory.events", false, &buf, &len);
	if (r <= 0)
		return r; /* 0: the root cgroup has none: no series, not zeros */
	ev = malloc(sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	r = scan_parsed(scan, cg, "memory.events", mempressure_parse_events(buf, len, ev));
	if (r < 0)
		return r;
	ev->present &= included;
	drop_zero_by_construction(scan, dirfd, cg, ev);
	if (ev->present)
		cg->data[idx] = TAKE_PTR(ev);
	return 0;
}

static void events_text(FILE *out, const struct snapshot *s, size_t idx)
{
	bool head = false;

	for (size_t i = 0; i < s->n_cgroups; i++) {
		const struct mempressure_events *ev = s->cgroups[i].data[idx];

		for (unsigned e = 0; ev && e < _MEMPRESSURE_EVENT_MAX; e++) {
			if (!(ev->present & (1u << e)))
				continue;
			if (!head)
				render_family(out, FAMILY, "counter",
					      "memory.events: times the cgroup was reclaimed below memory.low (low), "
					      "throttled over memory.high (high), reached memory.max (max), "
					      "ran out of memory (oom), had a process OOM-killed (oom_kill).");
			head = true;
			render_sample_open(out, FAMILY, &s->cgroups[i]);
			render_sample_label(out, "event", mempressure_event_name(e));
			render_sample_close(out, ev->value[e]);
		}
	}
}

static void events_json(json_t *o, const struct snap_cgroup *cg, size_t idx)
{
	const struct mempressure_events *ev = cg->data[idx];
	json_t *obj;

	if (!ev)
		return;
	obj = json_object();
	for (unsigned e = 0; obj && e < _MEMPRESSURE_EVENT_MAX; e++)
		if (ev->present & (1u << e))
			json_object_set_new(obj, mempressure_event_name(e), render_json_u64(ev->value[e]));
	json_object_set_new(o, "memory_events_total", obj);
}

static const struct collector_def events_collector = {
	.name = "events",
	.help = "memory.events counters (high and max; --collector.events.include)",
	.default_on = true,
	.reported = true,
	.flags = flags,
	.n_flags = ELEMENTSOF(flags),
	.unavailable = scan_memory_v2_unavailable,
	.scan_cgroup = events_scan_cgroup,
	.free_cgroup = free,
	.render_text = events_text,
	.render_json = events_json,
};
REGISTER_COLLECTOR(events_collector);
