/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "collectors/cachestat.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scan/cgroups.h"
#include "files/files.h"
#include "scan/collector.h"
#include "scan/render.h"
#include "scan/skiplog.h"
#include "base/util.h"

/* Names a configured glob reads at most, per pattern and cgroup: --collector.cachestat.max-glob-entries. */
#define CACHESTAT_DEFAULT_MAX_GLOB_ENTRIES 100000
static size_t max_glob_entries = CACHESTAT_DEFAULT_MAX_GLOB_ENTRIES;

struct cachestat_scan {
	struct collect_scan *scan;
	size_t idx;
	bool broken;          /* procfs could not be opened: nothing to scan */
	struct files_ctx files;
	uint64_t scan_budget; /* files left of max_files_per_scan */
	struct snap_cgroup *cur;
	struct cachestat_cgroup *sum;
	pid_t comm_pid;       /* whose comm is in comm; 0: none yet */
	char comm[32];
	char *cgroup_root;    /* the tree's root as /proc/PID/cgroup names it; NULL: unknown */
	char *cgroup_path;    /* that of the cgroup being scanned (files.cgroup) */
};

/* /proc/PID/comm of the process the scan is at, read once per process; NULL if unknown. */
static const char *scan_comm(struct cachestat_scan *cs, pid_t pid)
{
	_cleanup_free_ char *buf = NULL;
	char rel[32];
	size_t len;

	if (pid <= 0)
		return NULL;
	if (cs->comm_pid != pid) {
		cs->comm_pid = pid;
		cs->comm[0] = '\0';
		snprintf(rel, sizeof(rel), "%d/comm", (int)pid);
		if (read_file_at(cs->files.procfs_fd, rel, &buf, &len) >= 0)
			snprintf(cs->comm, sizeof(cs->comm), "%.*s", (int)strcspn(buf, "\n"), buf);
	}
	return cs->comm[0] ? cs->comm : NULL;
}

/* A skipped file to the debug log (skiplog rate limits it); call and e when known. */
static void note_skip(struct cachestat_scan *cs, enum skip_reason r, int err, const char *call,
		      const struct files_entry *e)
{
	const struct skiplog_event ev = {
		.pid = cs->files.pid,
		.comm = scan_comm(cs, cs->files.pid),
		.cgroup = cs->cur ? cs->cur->name : NULL,
		.file = e ? (e->path ? e->path : e->proc_link) : NULL,
		.reason = r,
		.err = err,
		.call = call,
	};

	skiplog_note(&ev);
}

/* files' skip hook: errno means something only where a call failed (eperm, error). */
static void files_skipped(struct files_ctx *fc, enum skip_reason r, int err)
{
	note_skip(fc->userdata, r, r == SKIP_EPERM || r == SKIP_ERROR ? err : 0, NULL, NULL);
}

enum skip_reason cachestat_skip_reason(int r)
{
	switch (r) {
	case -EPERM:
		return SKIP_EPERM;
	case -EOPNOTSUPP: /* cachestat(2) on hugetlbfs */
	case -ENODEV:     /* mmap(2) of a file system that cannot map its files */
		return SKIP_UNSUPPORTED;
	case -E2BIG: /* the mincore method's page caps */
		return SKIP_PAGE_CAP;
	default:
		return SKIP_ERROR;
	}
}

struct snap_file cachestat_file_record(const struct files_entry *e,
				       const struct pagecache_cachestat *st, uint64_t ps)
{
	return (struct snap_file){
		.size = (uint64_t)e->st->st_size,
		.c = {
			.cached = st->nr_cache * ps,
			.dirty = st->nr_dirty * ps,
			.writeback = st->nr_writeback * ps,
			.evicted = st->nr_evicted * ps,
			.recently_evicted = st->nr_recently_evicted * ps,
		},
		.dev = (uint64_t)e->st->st_dev,
		.ino = (uint64_t)e->st->st_ino,
	};
}

void cachestat_sum_add(struct cachestat_cgroup *sum, const struct snap_file *file)
{
	sum->c.cached += file->c.cached;
	sum->c.dirty += file->c.dirty;
	sum->c.writeback += file->c.writeback;
	sum->c.evicted += file->c.evicted;
	sum->c.recently_evicted += file->c.recently_evicted;
	sum->files++;
	sum->files_size += file->size;
}

/* files' visitor: one cachestat call per open file. */
static int visit_file(struct files_ctx *fc, const struct files_entry *e)
{
	struct cachestat_scan *cs = fc->userdata;
	struct pagecache_cachestat st;
	struct snap_file file;
	int r;

	r = files_cachestat(fc, cs->scan->pc, e, &st);
	if (r < 0) {
		enum skip_reason why = cachestat_skip_reason(r);

		fc->skipped[why]++;
		if (fc->on_skip)
			note_skip(cs, why, -r,
				  cs->scan->pc->abi == PAGECACHE_ABI_MINCORE ? "mincore" : "cachestat", e);
		return 0;
	}
	file = cachestat_file_record(e, &st, (uint64_t)cs->scan->page_size);
	cachestat_sum_add(cs->sum, &file);
	scan_file_counted(cs->scan, &(struct collect_file){ .cg = cs->cur, .file = &file, .fc = fc, .e = e });
	return 0;
}

const char *cachestat_unavailable(const struct collect_scan *scan)
{
	/* no numbers at all rather than zeros */
	return scan->pc->abi == PAGECACHE_ABI_NONE ? "no_cachestat" : NULL;
}

static int scan_begin(struct collect_scan *scan, size_t idx, void **ret_state)
{
	_cleanup_free_ struct cachestat_scan *cs = NULL;
	int r;

	cs = calloc(1, sizeof(*cs));
	if (!cs)
		return -ENOMEM;
	cs->scan = scan;
	cs->idx = idx;
	cs->scan_budget = scan->cfg->max_files_per_scan;
	cs->files = (struct files_ctx){
		.visit = visit_file,
		.userdata = cs,
		.fstypes = scan->fstypes,
		.dircache = scan->dircache,
		.deadline_ns = files_now_ns() + (uint64_t)(scan->cfg->max_scan_seconds * 1e9),
		/* half an equal share of the time is kept for every cgroup; the rest is first come */
		.reserve_ns = (uint64_t)(scan->cfg->max_scan_seconds * 1e9) / (2 * (scan->n_cgroups + 1)),
		.on_skip = skiplog_enabled() ? files_skipped : NULL,
		.max_fds_per_process = scan->cfg->max_descriptors_per_process,
		.max_maps_per_process = scan->cfg->max_mappings_per_process,
		.glob_max_entries = max_glob_entries,
		.page_size = (uint64_t)scan->page_size,
		.mincore_pages_left = &scan->mincore_pages_left,
	};
	cs->files.procfs_fd = open(scan->procfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cs->files.procfs_fd < 0) {
		scan_problem(scan, "opening %s: %m", scan->procfs);
		scan_fail(scan, idx);
		cs->broken = true;
	} else {
		r = cgroups_ns_path(cs->files.procfs_fd, scan->cgroupfs, &cs->cgroup_root);
		if (r == -ENOMEM) {
			closep(&cs->files.procfs_fd);
			return r;
		}
		/* not a cgroup file system (a directory walked as one): no cgroup to compare with */
		if (r < 0 && r != -ENOMEDIUM)
			scan_problem(scan, "finding %s in the mount table: %s; a reused pid is not detected",
				     scan->cgroupfs, strerror(-r));
	}
	cs->files.cgroup_memory_v1 = scan->memory_v1;
	*ret_state = TAKE_PTR(cs);
	return 1;
}

/* The files of the cgroup's processes; -ENOENT when the cgroup went away meanwhile. */
static int scan_procs(struct cachestat_scan *cs, int dirfd)
{
	_cleanup_free_ pid_t *pids = NULL;
	size_t n_pids = 0;
	int r;

	r = cgroups_read_procs(dirfd, &pids, &n_pids);
	if (r == -ENODEV)
		return -ENOENT;
	if (r == -EOPNOTSUPP)
		return 0; /* a threaded cgroup: its processes are listed by its domain */
	if (r < 0) {
		if (r != -ENOENT)
			scan_problem(cs->scan, "reading %s/cgroup.procs: %s", cs->cur->name, strerror(-r));
		return r;
	}
	for (size_t i = 0; i < n_pids && !cs->files.timed_out; i++) {
		r = files_scan_pid(&cs->files, pids[i]);
		if (r < 0) {
			scan_problem(cs->scan, "scanning process %d of %s: %s", (int)pids[i],
				     cs->cur->name, strerror(-r));
			if (r == -ENOMEM)
				return r;
		}
	}
	return 0;
}

/* The paths the config assigns to the cgroup. */
static int scan_paths(struct cachestat_scan *cs)
{
	const struct config *cfg = cs->scan->cfg;

	for (size_t i = 0; i < cfg->n_cgroups && !cs->files.timed_out; i++) {
		const struct config_cgroup *cc = &cfg->cgroups[i];

		if (fnmatch(cc->match, cs->cur->name, FNM_PATHNAME) != 0)
			continue;
		for (size_t j = 0; j < cc->n_paths && !cs->files.timed_out; j++)
			if (files_scan_path(&cs->files, cc->paths[j]) == -ENOMEM)
				return -ENOMEM;
	}
	return 0;
}

static void drop_sum(struct cachestat_scan *cs, struct snap_cgroup *cg)
{
	free(cg->data[cs->idx]);
	cg->data[cs->idx] = NULL;
}

static int scan_cgroup(struct collect_scan *scan, size_t idx, void *state, int dirfd,
		       struct snap_cgroup *cg)
{
	struct cachestat_scan *cs = state;
	uint64_t budget = scan->cfg->max_files_per_cgroup;
	int r;

	(void)idx;
	if (cs->broken || cs->files.timed_out)
		return 0; /* the cgroups not reached have no series */
	if (budget > cs->scan_budget)
		budget = cs->scan_budget;
	cs->cur = cg;
	files_cgroup_begin(&cs->files, budget,
			   scan->n_cgroups >= scan->snap->n_cgroups
				   ? scan->n_cgroups - scan->snap->n_cgroups + 1 : 1);
	cs->sum = cg->data[cs->idx] = calloc(1, sizeof(struct cachestat_cgroup));
	if (!cs->sum)
		return -ENOMEM;
	if (cs->cgroup_root) {
		free(cs->cgroup_path);
		cs->cgroup_path = cgroups_label_path(cs->cgroup_root, cg->name);
		if (!cs->cgroup_path)
			return -ENOMEM;
		cs->files.cgroup = cs->cgroup_path;
	}

	r = scan_procs(cs, dirfd);
	if (r == 0)
		r = scan_paths(cs);
	cs->scan_budget -= budget - cs->files.budget;
	/*
	 * Cut by the clock, or max_files_per_scan spent before this cgroup got any: its numbers
	 * would be zeros that mean nothing, so leave them out (the skips are counted). A cgroup
	 * removed meanwhile (-ENOENT) has no series either, and is no failure.
	 */
	if (r < 0 || cs->files.timed_out || budget == 0)
		drop_sum(cs, cg);
	return r == -ENOENT ? 0 : r;
}

/*
 * After every collector added its files (fanotify's recent ones): a cgroup that holds no file
 * has no series, not seven zeros. A tenant's empty cgroups cost the node's series budget
 * nothing, and the absence means the same as a zero would.
 */
static int cgroup_done(struct collect_scan *scan, size_t idx, void *state, struct snap_cgroup *cg)
{
	const struct cachestat_cgroup *sum = cg->data[idx];

	(void)scan, (void)state;
	if (sum && sum->files == 0)
		drop_sum(state, cg);
	return 0;
}

static void scan_end(struct collect_scan *scan, void *state)
{
	struct cachestat_scan *cs = state;

	if (cs->files.timed_out) {
		scan_problem(scan, "scan cut at limits.max_scan_seconds=%g; cgroups not reached have no cachestat series",
			     scan->cfg->max_scan_seconds);
		scan_fail(scan, cs->idx);
	}
	memcpy(scan->snap->skipped, cs->files.skipped, sizeof(scan->snap->skipped));
	scan->snap->process_capped[SNAP_PROCESS_CAP_FDS] = cs->files.fds_capped;
	scan->snap->process_capped[SNAP_PROCESS_CAP_MAPS] = cs->files.maps_capped;
	if (cs->files.glob_capped) {
		scan->snap->globs_capped = 1;
		scan->snap->glob_max_entries = max_glob_entries;
		scan->snap->glob_note = strdup(cs->files.glob_capped); /* NULL: not logged */
	}
	if (cs->files.on_skip)
		skiplog_flush();
	closep(&cs->files.procfs_fd);
	files_ctx_done(&cs->files);
	free(cs->cgroup_root);
	free(cs->cgroup_path);
	free(cs);
}

/* The per-cgroup families, in the order of the contract. */
static const struct {
	const char *name;
	const char *help;
} families[] = {
	{ "cachestat_cgroup_cached_bytes", "Page cache held by the files of the cgroup (deduplicated by inode)." },
	{ "cachestat_cgroup_dirty_bytes", "Dirty page cache of the files of the cgroup." },
	{ "cachestat_cgroup_writeback_bytes", "Page cache under writeback of the files of the cgroup." },
	{ "cachestat_cgroup_evicted_bytes",
	  "Evicted pages of the files of the cgroup whose shadow entries remain." },
	{ "cachestat_cgroup_recently_evicted_bytes",
	  "Evicted pages of the files of the cgroup that would count as refaults of the workingset." },
	{ "cachestat_cgroup_files", "Files scanned for the cgroup." },
	{ "cachestat_cgroup_files_size_bytes", "Sum of the sizes of the files scanned for the cgroup." },
};

/* Field f of families[]: the five counts, then files and their size. */
static uint64_t field(const struct cachestat_cgroup *sum, size_t f)
{
	if (f < _SNAP_COUNT_MAX)
		return snap_counts_get(&sum->c, (enum snap_count)f);
	return f == _SNAP_COUNT_MAX ? sum->files : sum->files_size;
}

static void cachestat_text(FILE *out, const struct snapshot *s, size_t idx)
{
	bool any = false;

	for (size_t i = 0; i < s->n_cgroups; i++)
		any |= s->cgroups[i].data[idx] != NULL;
	if (!any)
		return;
	for (size_t f = 0; f < ELEMENTSOF(families); f++) {
		if (f < _SNAP_COUNT_MAX && !pagecache_measures(s->abi, (unsigned)f))
			continue; /* not measured (the mincore method): no series rather than zeros */
		render_family(out, families[f].name, "gauge", families[f].help);
		for (size_t i = 0; i < s->n_cgroups; i++) {
			const struct cachestat_cgroup *sum = s->cgroups[i].data[idx];

			if (sum)
				render_cgroup_sample(out, families[f].name, &s->cgroups[i], field(sum, f));
		}
	}
}

static void cachestat_json(json_t *o, const struct snap_cgroup *cg, size_t idx)
{
	const struct cachestat_cgroup *sum = cg->data[idx];

	if (!sum)
		return;
	render_json_counts(&sum->c, o);
	json_object_set_new(o, "files", render_json_u64(sum->files));
	json_object_set_new(o, "files_size_bytes", render_json_u64(sum->files_size));
}

static int parse_max_glob_entries(const char *arg)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v < 1 || v > UINT32_MAX) {
		fprintf(stderr, "--collector.cachestat.max-glob-entries: want a whole number from 1 to "
			"%u, not \"%s\"\n", UINT32_MAX, arg);
		return -EINVAL;
	}
	max_glob_entries = (size_t)v;
	return 0;
}

static const struct collector_flag flags[] = {
	{ "collector.cachestat.max-glob-entries", "N",
	  "names a configured glob reads at most, per pattern and cgroup, matched or not; the "
	  "matches past it are left out, counted and logged once (default 100000)",
	  parse_max_glob_entries },
};

static const struct collector_def cachestat_collector = {
	.name = "cachestat",
	.help = "page cache of the files of each cgroup",
	.default_on = true,
	.reported = true,
	.unavailable = cachestat_unavailable,
	.scan_begin = scan_begin,
	.scan_cgroup = scan_cgroup,
	.cgroup_done = cgroup_done,
	.scan_end = scan_end,
	.free_cgroup = free,
	.render_text = cachestat_text,
	.render_json = cachestat_json,
	.flags = flags,
	.n_flags = ELEMENTSOF(flags),
};
REGISTER_COLLECTOR(cachestat_collector);
