/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The activity collector: page-cache accesses, additions (misses), dirtyings and buffer
 * dirtyings counted in the kernel per cgroup by a BPF program on kprobes (activity/), as BCC's
 * cachestat counts them for the whole node. Loaded and attached at start, before the
 * privileges go; each scan reads the program's map, finds each walked cgroup's counts by the
 * inode of its directory (its cgroup v2 id), and removes the entries no walked cgroup claimed
 * for three scans.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "activity/attach.h"
#include "activity/idmap.h"
#include "activity/loader.h"
#include "activity/symbols.h"
#include "scan/collector.h"
#include "scan/engine.h" /* struct collector_options */
#include "scan/render.h"
#include "base/util.h"

/* snap_cgroup.data of "activity". */
struct activity_cgroup {
	struct activity_counts counts;
	bool counted;     /* the map has an entry of the cgroup: else only the node's numbers */
	bool has_node;    /* the node's own numbers ride on the first cgroup of the scan */
	uint64_t dropped; /* events not counted: the map was full */
	uint64_t entries; /* cgroups in the map */
};

struct activity_scan {
	struct activity_idmap map;
	bool node_done;
};

static const char *const families[_ACTIVITY_EVENT_MAX][2] = {
	[ACTIVITY_ACCESSED] = { "cachestat_cgroup_pagecache_accesses_total",
				"Page-cache folios the cgroup's tasks accessed (folio_mark_accessed, mark_page_accessed)." },
	[ACTIVITY_ADDED] = { "cachestat_cgroup_pagecache_added_pages_total",
			     "Folios the cgroup's tasks added to the page cache, the misses (filemap_add_folio, add_to_page_cache_lru)." },
	[ACTIVITY_DIRTIED] = { "cachestat_cgroup_pagecache_dirtied_pages_total",
			       "Page-cache folios the cgroup's tasks dirtied (folio_account_dirtied, account_page_dirtied, __folio_mark_dirty)." },
	[ACTIVITY_BUFFER_DIRTIED] = { "cachestat_cgroup_pagecache_buffer_dirtied_total",
				      "Buffer heads the cgroup's tasks dirtied (mark_buffer_dirty), which BCC subtracts from the accesses." },
};

static struct activity *program;
static const char *attached[_ACTIVITY_EVENT_MAX]; /* the function of each event, NULL: none */
static const char *source;                       /* where the functions were listed */
static const char *reason;                       /* why it has nothing to measure, or NULL */
static char *setup_error;                        /* the start's failure, for the log */

/* The reason of docs/metrics.md for a failed start: the permission, the kprobes, or other. */
static const char *start_reason(int r)
{
	if (r == -EOPNOTSUPP)
		return "no_bpf_program";
	if (r == -EPERM || r == -EACCES)
		return "no_bpf_permission";
	if (r == -ENOENT || r == -ENOSYS || r == -EINVAL)
		return "no_kprobes";
	return "bpf_failed";
}

/*
 * What a refused attach asks of the operator, appended to the start's failure: a kprobe is
 * attached with perf_event_open(2), which wants CAP_PERFMON, or CAP_SYS_ADMIN at the level 3 of
 * kernel.perf_event_paranoid that Debian's and Ubuntu's kernels add. Nothing when it cannot tell.
 */
static void explain_permission(const char *procfs)
{
	_cleanup_free_ char *path = NULL, *text = NULL, *explained = NULL;
	size_t len;
	int level;

	if (!setup_error || asprintf(&path, "%s/sys/kernel/perf_event_paranoid", procfs) < 0)
		return;
	if (read_file_at_max(AT_FDCWD, path, 16, &text, &len) < 0 || sscanf(text, "%d", &level) != 1)
		return;
	if (asprintf(&explained, "%s (kernel.perf_event_paranoid is %d: a kprobe wants %s)", setup_error, level,
		     level >= 3 ? "CAP_SYS_ADMIN at this level" : "CAP_BPF and CAP_PERFMON") < 0)
		return;
	free(setup_error);
	setup_error = TAKE_PTR(explained);
}

/* Before the privileges go: the program loaded and attached (CAP_BPF, CAP_PERFMON). */
static int setup(const struct collector_options *opts)
{
	_cleanup_free_ char *functions = NULL;
	const char *names[_ACTIVITY_EVENT_MAX];
	size_t len;
	int r;

	if (program || reason)
		return 0; /* one per process: the tests make several engines */
	if (opts->memory_v1) {
		reason = "cgroup_v1"; /* nothing it counts could be shown: nothing loaded */
		return 0;
	}
	if (!activity_built()) {
		reason = "no_bpf_program";
		return 0;
	}
	r = activity_read_functions(&functions, &len, &source);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		reason = r == -EACCES || r == -EPERM ? "no_bpf_permission" : "no_kprobes";
		if (asprintf(&setup_error, "reading %s: %s", source, strerror(-r)) < 0)
			setup_error = NULL;
		return 0;
	}
	if (activity_choose(functions, len, names) < 0) {
		reason = "no_kprobes";
		if (asprintf(&setup_error, "the kernel has none of the functions of an event (%s)", source) < 0)
			setup_error = NULL;
		return 0;
	}
	r = activity_start(names, &program, &setup_error);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		reason = start_reason(r);
		if (r == -EPERM || r == -EACCES)
			explain_permission(opts->procfs);
		return 0;
	}
	memcpy(attached, names, sizeof(attached));
	return 0;
}

static const char *unavailable(const struct collect_scan *scan)
{
	if (scan->memory_v1)
		return "cgroup_v1"; /* the program's ids are the v2 tree's, not v1's directories */
	return reason;
}

static void describe(const struct config *cfg, char *buf, size_t size)
{
	size_t used;

	(void)cfg;
	if (!program && !reason) {
		snprintf(buf, size, "%s", activity_built() ? "kprobes chosen at start" : "not built in (no_bpf_program)");
		return;
	}
	if (!program) {
		snprintf(buf, size, "not attached (%s)%s%s", reason, setup_error ? ": " : "",
			 setup_error ? setup_error : "");
		return;
	}
	used = (size_t)snprintf(buf, size, "kprobes chosen from %s:", source);
	for (unsigned e = 0; e < _ACTIVITY_EVENT_MAX && used < size; e++)
		used += (size_t)snprintf(buf + used, size - used, "%s %s at %s", e ? "," : "",
					 activity_event_name(e), attached[e] ? attached[e] : "(none)");
}

static int scan_begin(struct collect_scan *scan, size_t idx, void **ret_state)
{
	_cleanup_free_ struct activity_scan *as = calloc(1, sizeof(*as));
	int r;

	(void)idx;
	if (!as)
		return -ENOMEM;
	r = activity_read(program, &as->map);
	if (r == -ENOMEM) {
		activity_idmap_free(&as->map);
		return r;
	}
	if (r < 0) {
		scan_problem(scan, "activity: reading the program's map: %s", strerror(-r));
		activity_idmap_free(&as->map);
		return 0;
	}
	activity_idmap_sort(&as->map);
	*ret_state = TAKE_PTR(as);
	return 1;
}

static int scan_cgroup(struct collect_scan *scan, size_t idx, void *state, int dirfd,
		       struct snap_cgroup *cg)
{
	struct activity_scan *as = state;
	const struct activity_entry *e;
	struct activity_cgroup *mine;
	struct stat st;

	(void)scan;
	if (fstat(dirfd, &st) < 0)
		return 0; /* gone meanwhile */
	e = activity_idmap_claim(&as->map, (uint64_t)st.st_ino);
	if (!e && as->node_done)
		return 0; /* nothing counted here: no series, not zeros */
	mine = calloc(1, sizeof(*mine));
	if (!mine)
		return -ENOMEM;
	if (e) {
		mine->counts = e->counts;
		mine->counted = true;
	}
	if (!as->node_done) {
		mine->has_node = true;
		mine->dropped = as->map.dropped;
		mine->entries = as->map.n;
		as->node_done = true;
	}
	cg->data[idx] = mine;
	return 0;
}

/*
 * The ids no walked cgroup claimed in the last scans, and in how many in a row: an entry leaves
 * the map after ACTIVITY_UNCLAIMED_SCANS. A cgroup the walk does not reach has no series, so its
 * entry is worth nothing here; a cgroup made while a scan walked is claimed by the next one. (Asking
 * the kernel whether the id's cgroup exists, open_by_handle_at(2), is what the unit's and the
 * container's system call filters refuse.)
 */
#define ACTIVITY_UNCLAIMED_SCANS 3
struct unclaimed {
	uint64_t id;
	unsigned scans;
};
static struct unclaimed *unclaimed;
static size_t n_unclaimed;

/* The scans in a row before this one that left id unclaimed (unclaimed[] is sorted by id). */
static unsigned unclaimed_before(uint64_t id)
{
	size_t lo = 0, hi = n_unclaimed;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (unclaimed[mid].id == id)
			return unclaimed[mid].scans;
		if (unclaimed[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/*
 * The entries no walked cgroup claimed for ACTIVITY_UNCLAIMED_SCANS scans leave the map; the
 * others are counted for the next scan. as->map is sorted by id, so the new list is too.
 */
static void scan_end(struct collect_scan *scan, void *state)
{
	_cleanup_free_ struct activity_scan *as = state;
	struct unclaimed *next;
	size_t n = 0;

	(void)scan;
	if (!as)
		return;
	next = calloc(as->map.n ? as->map.n : 1, sizeof(*next));
	for (size_t i = 0; next && i < as->map.n; i++) {
		const struct activity_entry *e = &as->map.entries[i];
		unsigned scans;

		if (e->claimed)
			continue;
		scans = unclaimed_before(e->id) + 1;
		if (scans >= ACTIVITY_UNCLAIMED_SCANS)
			(void)activity_forget(program, e->id); /* -ENOENT: gone already */
		else
			next[n++] = (struct unclaimed){ e->id, scans };
	}
	if (next) { /* out of memory: the counts start again, nothing is forgotten */
		free(unclaimed);
		unclaimed = next;
		n_unclaimed = n;
	}
	activity_idmap_free(&as->map);
}

_Static_assert(ACTIVITY_MAX_CGROUPS == 8192, "the HELP of cachestat_pagecache_activity_cgroups says 8192");

static void render_node(FILE *out, const struct activity_cgroup *n)
{
	render_family(out, "cachestat_pagecache_activity_dropped_total", "counter",
		      "Page-cache events the activity program could not count: its map of cgroups was full.");
	render_sample(out, "cachestat_pagecache_activity_dropped_total", n->dropped);
	render_family(out, "cachestat_pagecache_activity_cgroups", "gauge",
		      "Cgroups in the activity program's map (at most 8192).");
	render_sample(out, "cachestat_pagecache_activity_cgroups", n->entries);
}

static void activity_text(FILE *out, const struct snapshot *s, size_t idx)
{
	for (unsigned e = 0; e < _ACTIVITY_EVENT_MAX; e++) {
		bool head = false;

		for (size_t i = 0; i < s->n_cgroups; i++) {
			const struct activity_cgroup *a = s->cgroups[i].data[idx];

			if (!a || !a->counted)
				continue;
			if (!head)
				render_family(out, families[e][0], "counter", families[e][1]);
			head = true;
			render_sample_open(out, families[e][0], &s->cgroups[i]);
			render_sample_close(out, a->counts.events[e]);
		}
	}
	for (size_t i = 0; i < s->n_cgroups; i++) {
		const struct activity_cgroup *a = s->cgroups[i].data[idx];

		if (a && a->has_node)
			render_node(out, a);
	}
}

static void activity_json(json_t *o, const struct snap_cgroup *cg, size_t idx)
{
	const struct activity_cgroup *a = cg->data[idx];
	json_t *obj;

	if (!a || !a->counted)
		return;
	obj = json_object();
	for (unsigned e = 0; obj && e < _ACTIVITY_EVENT_MAX; e++)
		json_object_set_new(obj, activity_event_name(e), render_json_u64(a->counts.events[e]));
	json_object_set_new(o, "pagecache_activity_total", obj);
}

static const struct collector_def activity_collector = {
	.name = "activity",
	.help = "page-cache accesses, misses and dirtyings per cgroup, counted by a BPF program on kprobes",
	.default_on = false,
	.reported = true,
	.setup = setup,
	.unavailable = unavailable,
	.describe = describe,
	.scan_begin = scan_begin,
	.scan_cgroup = scan_cgroup,
	.scan_end = scan_end,
	.free_cgroup = free,
	.render_text = activity_text,
	.render_json = activity_json,
};
REGISTER_COLLECTOR(activity_collector);
