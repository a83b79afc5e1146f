/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Subtree totals without a second scan. The walk is depth first, parents before children, each
 * subtree whole before the next sibling (cgroups.h), so the cgroups whose subtree is still open
 * are exactly the current cgroup's ancestors: a stack, one level per depth, each with the set
 * of (dev, ino) its subtree has counted so far and their sums. A counted file goes into the
 * current cgroup's level and every ancestor's, from the deepest up, and stops at the first
 * level that has it already: every set holds all of its descendants' sets, so the levels above
 * have it too. That is the union a merge of each child's set into its parent's would give,
 * without keeping each file's counts to merge (a fileset holds no counts). A level is finished
 * when the walk leaves its subtree: a cgroup at the same depth or above comes next, or the walk
 * ends.
 */
#define _GNU_SOURCE
#include "collectors/subtree.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scan/cgroups.h"
#include "collectors/cachestat.h"
#include "files/fileset.h"
#include "parse/meminfo.h"
#include "scan/collector.h"
#include "scan/render.h"
#include "base/util.h"

/* One cgroup whose subtree the walk is in. */
struct level {
	struct fileset seen;    /* cleared, not freed, between the cgroups of a scan */
	struct subtree_cgroup sum;
	size_t cg;              /* index in snap->cgroups: the array moves as it grows */
	bool incomplete;        /* a cgroup of the subtree was not counted to the end */
};

struct subtree_scan {
	struct collect_scan *scan;
	size_t idx, cachestat;
	struct level levels[CGROUPS_MAX_DEPTH + 1];
	size_t depth;           /* levels in use; levels[depth - 1] is the current cgroup */
	bool entered;           /* levels[depth - 1] is the current cgroup (false before the first) */
	int error;              /* from a file_counted hook (-ENOMEM, -EINVAL), for scan_cgroup */
};

/* Depth of a cgroup label: "/" 0, "/a" 1, "/a/b" 2. */
static size_t label_depth(const char *label)
{
	size_t d = 0;

	if (strcmp(label, "/") == 0)
		return 0;
	for (const char *p = label; *p; p++)
		d += *p == '/';
	return d;
}

/* The walk left l's subtree: its totals go to its cgroup, if it has children and all counted. */
static int level_finish(struct subtree_scan *ss, struct collect_scan *scan, struct level *l)
{
	struct snap_cgroup *cg = &scan->snap->cgroups[l->cg];
	struct subtree_cgroup *out;

	if (l > ss->levels)
		l[-1].incomplete |= l->incomplete;
	/* the root keeps its sums even as a leaf: the node's figure needs them */
	if (l->incomplete || (!l->sum.has_subtree && l != ss->levels))
		return 0;
	out = calloc(1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	*out = l->sum;
	cg->data[ss->idx] = out;
	return 0;
}

/* Pops the levels at depth d and below: the walk has left their subtrees. */
static int leave_to(struct subtree_scan *ss, struct collect_scan *scan, size_t d)
{
	while (ss->depth > d) {
		int r = level_finish(ss, scan, &ss->levels[ss->depth - 1]);

		ss->depth--;
		if (r < 0)
			return r;
	}
	return 0;
}

/* Makes cg the current cgroup (once per cgroup; file_counted may come first). */
static int enter(struct subtree_scan *ss, struct collect_scan *scan, const struct snap_cgroup *cg)
{
	size_t i = (size_t)(cg - scan->snap->cgroups), d;
	struct level *l;
	int r;

	if (ss->entered && ss->levels[ss->depth - 1].cg == i)
		return 0; /* the common case: the next file of the same cgroup */
	d = label_depth(cg->name);
	r = leave_to(ss, scan, d);
	if (r < 0)
		return r;
	if (d != ss->depth || d > CGROUPS_MAX_DEPTH)
		return -EINVAL; /* not depth first: no parent on the stack */
	if (d > 0) /* has_subtree: the walk went deeper while the level was open */
		ss->levels[d - 1].sum.has_subtree = true;
	l = &ss->levels[d];
	fileset_clear(&l->seen);
	l->sum = (struct subtree_cgroup){ 0 };
	l->cg = i;
	l->incomplete = false;
	ss->depth = d + 1;
	ss->entered = true;
	return 0;
}

static int scan_begin(struct collect_scan *scan, size_t idx, void **ret_state)
{
	struct subtree_scan *ss;
	size_t cachestat;

	if (!scan_active(scan, "cachestat", &cachestat))
		return 0;
	ss = calloc(1, sizeof(*ss));
	if (!ss)
		return -ENOMEM;
	ss->scan = scan;
	ss->idx = idx;
	ss->cachestat = cachestat;
	*ret_state = ss;
	return 1;
}

static void add(struct subtree_cgroup *sum, const struct snap_file *f)
{
	sum->c.cached += f->c.cached;
	sum->c.dirty += f->c.dirty;
	sum->c.writeback += f->c.writeback;
	sum->c.evicted += f->c.evicted;
	sum->c.recently_evicted += f->c.recently_evicted;
	sum->files++;
	sum->files_size += f->size;
}

/* A file counted in the current cgroup: new to a level, it counts there, and so on upwards. */
static void file_counted(void *state, const struct collect_file *f)
{
	struct subtree_scan *ss = state;
	struct collect_scan *scan = ss->scan;
	int r = ss->error < 0 ? ss->error : enter(ss, scan, f->cg);

	for (size_t d = ss->depth; r == 0 && d > 0; d--) {
		struct level *l = &ss->levels[d - 1];
		int added = fileset_add(&l->seen, f->file->dev, f->file->ino);

		if (added <= 0) { /* there already, and so in every level above; or -ENOMEM */
			r = added;
			break;
		}
		add(&l->sum, f->file);
	}
	if (r < 0)
		ss->error = r;
}

/* Whether the cgroup at dirfd was removed during the scan (its files are then in no use). */
static bool removed(int dirfd)
{
	return faccessat(dirfd, "cgroup.procs", F_OK, 0) < 0 && (errno == ENOENT || errno == ENODEV);
}

/* After cachestat's scan_cgroup: a cgroup it left without numbers leaves its subtree open. */
static int scan_cgroup(struct collect_scan *scan, size_t idx, void *state, int dirfd,
		       struct snap_cgroup *cg)
{
	struct subtree_scan *ss = state;
	int r = ss->error < 0 ? ss->error : enter(ss, scan, cg);

	(void)idx;
	if (r < 0) {
		if (r == -EINVAL)
			scan_problem(scan, "subtree: the walk reached %s before its parent", cg->name);
		return r;
	}
	if (!cg->data[ss->cachestat] && !removed(dirfd))
		ss->levels[ss->depth - 1].incomplete = true;
	return 0;
}

/* The node's page cache beside the root subtree's: on the root, whatever became of the walk. */
static int node_figures(struct subtree_scan *ss, struct collect_scan *scan)
{
	struct snap_cgroup *root = &scan->snap->cgroups[0];
	struct subtree_cgroup *sum = root->data[ss->idx];
	_cleanup_free_ char *path = NULL, *buf = NULL;
	struct meminfo mi;
	size_t len;
	int r;

	if (asprintf(&path, "%s/meminfo", scan->procfs) < 0)
		return -ENOMEM;
	r = read_file_at(AT_FDCWD, path, &buf, &len);
	if (r == 0)
		r = meminfo_parse(buf, len, &mi);
	if (r < 0) {
		scan_problem(scan, "reading %s: %s", path, strerror(-r));
		return r;
	}
	if (sum) { /* the root's subtree was counted to the end */
		sum->has_unattributed = true;
		sum->unattributed = mi.cached > sum->c.cached ? mi.cached - sum->c.cached : 0;
	} else {
		sum = root->data[ss->idx] = calloc(1, sizeof(*sum));
		if (!sum)
			return -ENOMEM;
	}
	sum->has_node = true;
	sum->node_cached = mi.cached;
	sum->node_shmem = mi.shmem;
	return 0;
}

static void scan_end(struct collect_scan *scan, void *state)
{
	struct subtree_scan *ss = state;
	bool walked = scan->snap->collectors[ss->idx].success && ss->error == 0 && ss->entered &&
		      strcmp(scan->snap->cgroups[0].name, "/") == 0;

	/* a walk cut short (out of memory, the root unreadable) leaves no totals to trust */
	if (walked && (leave_to(ss, scan, 0) < 0 || node_figures(ss, scan) < 0))
		scan_fail(scan, ss->idx);
	for (size_t d = 0; d < ELEMENTSOF(ss->levels); d++)
		fileset_done(&ss->levels[d].seen);
	free(ss);
}

/*
 * The subtree families: what a pod's, a slice's and the node's panels and rules read. The other
 * counters (dirty, writeback, evicted, files) are in the JSON report; as series they would cost
 * one per cgroup with children each, and the leaves' own families answer for them.
 */
static const struct {
	enum snap_count count;
	const char *name;
	const char *help;
} families[] = {
	{ SNAP_CACHED, "cachestat_cgroup_subtree_cached_bytes",
	  "Page cache held by the files of the cgroup and its descendants, each inode once (cgroups with children)." },
	{ SNAP_RECENTLY_EVICTED, "cachestat_cgroup_subtree_recently_evicted_bytes",
	  "Evicted pages of the files of the cgroup's subtree that would count as workingset refaults, each inode once." },
};

static void subtree_families(FILE *out, const struct snapshot *s, size_t idx)
{
	bool any = false;

	for (size_t i = 0; i < s->n_cgroups; i++) {
		const struct subtree_cgroup *sum = s->cgroups[i].data[idx];

		any |= sum && sum->has_subtree;
	}
	for (size_t f = 0; any && f < ELEMENTSOF(families); f++) {
		if (!pagecache_measures(s->abi, (unsigned)families[f].count))
			continue; /* not measured (the mincore method): no series rather than zeros */
		render_family(out, families[f].name, "gauge", families[f].help);
		for (size_t i = 0; i < s->n_cgroups; i++) {
			const struct subtree_cgroup *sum = s->cgroups[i].data[idx];

			if (sum && sum->has_subtree)
				render_cgroup_sample(out, families[f].name, &s->cgroups[i],
						     snap_counts_get(&sum->c, families[f].count));
		}
	}
}

static void node_families(FILE *out, const struct subtree_cgroup *root)
{
	render_family(out, "cachestat_node_memory_cached_bytes", "gauge",
		      "Page cache of the node: /proc/meminfo Cached (Shmem included).");
	render_sample(out, "cachestat_node_memory_cached_bytes", root->node_cached);
	render_family(out, "cachestat_node_memory_shmem_bytes", "gauge",
		      "Shared memory of the node, part of its page cache: /proc/meminfo Shmem.");
	render_sample(out, "cachestat_node_memory_shmem_bytes", root->node_shmem);
	if (!root->has_unattributed)
		return;
	render_family(out, "cachestat_node_unattributed_cached_bytes", "gauge",
		      "Page cache of the node held by no file in use: meminfo Cached minus the root subtree's cached bytes.");
	render_sample(out, "cachestat_node_unattributed_cached_bytes", root->unattributed);
}

static void subtree_text(FILE *out, const struct snapshot *s, size_t idx)
{
	const struct subtree_cgroup *root = NULL;

	subtree_families(out, s, idx);
	for (size_t i = 0; i < s->n_cgroups && !root; i++)
		if (strcmp(s->cgroups[i].name, "/") == 0)
			root = s->cgroups[i].data[idx];
	if (root && root->has_node)
		node_families(out, root);
}

static void subtree_json(json_t *o, const struct snap_cgroup *cg, size_t idx)
{
	const struct subtree_cgroup *sum = cg->data[idx];
	json_t *t;

	if (sum && sum->has_subtree && (t = render_json_counts(&sum->c, json_object()))) {
		json_object_set_new(t, "files", render_json_u64(sum->files));
		json_object_set_new(t, "files_size_bytes", render_json_u64(sum->files_size));
		json_object_set_new(o, "subtree", t);
	}
	if (sum && sum->has_node && (t = json_object())) {
		json_object_set_new(t, "memory_cached_bytes", render_json_u64(sum->node_cached));
		json_object_set_new(t, "memory_shmem_bytes", render_json_u64(sum->node_shmem));
		if (sum->has_unattributed)
			json_object_set_new(t, "unattributed_cached_bytes", render_json_u64(sum->unattributed));
		json_object_set_new(o, "node", t);
	}
}

static const struct collector_def subtree_collector = {
	.name = "subtree",
	.help = "page cache of each cgroup's subtree, each file once; the node's unattributed cache",
	.default_on = true,
	.reported = false, /* its work happens inside cachestat's scan, and is timed there */
	.scan_begin = scan_begin,
	.scan_cgroup = scan_cgroup,
	.file_counted = file_counted,
	.scan_end = scan_end,
	.free_cgroup = free,
	.render_text = subtree_text,
	.render_json = subtree_json,
};
REGISTER_COLLECTOR(subtree_collector);
