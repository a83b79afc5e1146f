/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "collect.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroups.h"
#include "files.h"
#include "memstat.h"
#include "topn.h"
#include "util.h"

struct config_ref {
	struct config *cfg;
	int refs;
};

struct collector {
	struct collector_options opts;
	char *cgroupfs;
	char *procfs;
	struct pagecache pc;
	long page_size;

	pthread_mutex_t lock;
	struct config_ref *cfg;      /* under lock */
	uint64_t skipped[_SKIP_MAX]; /* cumulative; under lock */
};

/* State of one scan. */
struct scan {
	const struct collector *c;
	const struct config *cfg;
	struct snapshot *snap;
	size_t cap_cgroups;
	int procfs_fd;
	struct files_ctx files;
	struct topn top;
	uint64_t scan_budget;
	struct snap_cgroup *cur; /* the cgroup being scanned */
	double seconds[_COLLECTOR_MAX];
};

static void config_ref_drop(struct config_ref *r)
{
	if (r && --r->refs == 0) {
		config_free(r->cfg);
		free(r);
	}
}

__attribute__((format(printf, 2, 3))) static void problem(struct scan *s, const char *fmt, ...)
{
	va_list ap;

	if (s->snap->problem)
		return; /* the first one says most */
	va_start(ap, fmt);
	if (vasprintf(&s->snap->problem, fmt, ap) < 0)
		s->snap->problem = NULL;
	va_end(ap);
}

static double seconds_since(uint64_t start_ns)
{
	return (double)(files_now_ns() - start_ns) / 1e9;
}

/* files' visitor: one cachestat call per open file. */
static int visit_file(struct files_ctx *fc, const struct files_entry *e)
{
	struct scan *s = fc->userdata;
	struct snap_cgroup *cg = s->cur;
	struct pagecache_cachestat cs;
	struct snap_counts c;
	struct snap_file file;
	uint64_t ps = (uint64_t)s->c->page_size;
	int r;

	r = pagecache_stat(&s->c->pc, e->fd, &cs);
	if (r < 0) {
		fc->skipped[r == -EPERM	       ? SKIP_EPERM
			    : r == -EOPNOTSUPP ? SKIP_UNSUPPORTED
					       : SKIP_ERROR]++;
		return 0;
	}
	c = (struct snap_counts){
		.cached = cs.nr_cache * ps,
		.dirty = cs.nr_dirty * ps,
		.writeback = cs.nr_writeback * ps,
		.evicted = cs.nr_evicted * ps,
		.recently_evicted = cs.nr_recently_evicted * ps,
	};
	cg->c.cached += c.cached;
	cg->c.dirty += c.dirty;
	cg->c.writeback += c.writeback;
	cg->c.evicted += c.evicted;
	cg->c.recently_evicted += c.recently_evicted;
	cg->files++;
	cg->files_size += (uint64_t)e->st->st_size;

	file = (struct snap_file){
		.size = (uint64_t)e->st->st_size,
		.c = c,
		.dev = (uint64_t)e->st->st_dev,
		.ino = (uint64_t)e->st->st_ino,
	};
	if (topn_wants(&s->top, &file)) {
		file.path = files_entry_name(fc, e);
		topn_offer(&s->top, &file);
	}
	return 0;
}

static int read_memstat(struct scan *s, int dirfd, struct snap_cgroup *cg)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = read_file_at(dirfd, "memory.stat", &buf, &len);
	if (r == -ENOENT)
		return 0; /* no memory controller here: the series are absent, not zero */
	if (r < 0) {
		problem(s, "reading %s/memory.stat: %s", cg->name, strerror(-r));
		return r;
	}
	r = memstat_parse(buf, len, &cg->memstat);
	if (r < 0) {
		problem(s, "parsing %s/memory.stat: %s", cg->name, strerror(-r));
		return r;
	}
	cg->has_memstat = true;
	free(buf);
	buf = NULL;

	r = read_file_at(dirfd, "memory.numa_stat", &buf, &len);
	if (r == -ENOENT)
		return 0; /* a kernel without NUMA */
	if (r < 0) {
		problem(s, "reading %s/memory.numa_stat: %s", cg->name, strerror(-r));
		return r;
	}
	r = memstat_parse_numa(buf, len, &cg->numa);
	if (r < 0)
		problem(s, "parsing %s/memory.numa_stat: %s", cg->name, strerror(-r));
	return r;
}

static int scan_files(struct scan *s, int dirfd, struct snap_cgroup *cg)
{
	_cleanup_free_ pid_t *pids = NULL;
	size_t n_pids = 0;
	uint64_t budget;
	int r;

	budget = s->cfg->max_files_per_cgroup;
	if (budget > s->scan_budget)
		budget = s->scan_budget;
	s->files.budget = budget;
	s->cur = cg;
	fileset_clear(&s->files.seen);

	r = cgroups_read_procs(dirfd, &pids, &n_pids);
	if (r == -ENOENT || r == -ENODEV)
		return 0; /* removed meanwhile */
	if (r == -EOPNOTSUPP) {
		/* a threaded cgroup: its processes are listed by its domain */
		pids = NULL;
		n_pids = 0;
		r = 0;
	}
	if (r < 0) {
		problem(s, "reading %s/cgroup.procs: %s", cg->name, strerror(-r));
		return r;
	}
	cg->scanned = true;
	for (size_t i = 0; i < n_pids && !s->files.timed_out; i++) {
		r = files_scan_pid(&s->files, pids[i]);
		if (r < 0) {
			problem(s, "scanning process %d of %s: %s", (int)pids[i], cg->name,
				strerror(-r));
			if (r == -ENOMEM)
				return r;
		}
	}
	for (size_t i = 0; i < s->cfg->n_cgroups && !s->files.timed_out; i++) {
		const struct config_cgroup *cc = &s->cfg->cgroups[i];

		if (fnmatch(cc->match, cg->name, FNM_PATHNAME) != 0)
			continue;
		for (size_t j = 0; j < cc->n_paths && !s->files.timed_out; j++) {
			r = files_scan_path(&s->files, cc->paths[j]);
			if (r == -ENOMEM)
				return r;
		}
	}
	s->scan_budget -= budget - s->files.budget;
	/*
	 * Cut by the clock, or max_files_per_scan spent before this cgroup got any: its numbers
	 * would be zeros that mean nothing, so leave them out (the skips are counted).
	 */
	if (s->files.timed_out || budget == 0) {
		cg->scanned = false;
		cg->c = (struct snap_counts){ 0 };
		cg->files = cg->files_size = 0;
		topn_done(&s->top);
		return topn_init(&s->top, s->c->opts.enable[COLLECTOR_PERFILE] ? s->cfg->per_file_top : 0);
	}
	return topn_take(&s->top, &cg->top, &cg->n_top);
}

static int visit_cgroup(int dirfd, const char *label, void *userdata)
{
	struct scan *s = userdata;
	struct snap_cgroup *cg;
	uint64_t t;
	int r;

	if (s->snap->n_cgroups == s->cap_cgroups) {
		size_t ncap = s->cap_cgroups ? s->cap_cgroups * 2 : 64;
		struct snap_cgroup *a = realloc(s->snap->cgroups, ncap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		s->snap->cgroups = a;
		s->cap_cgroups = ncap;
	}
	cg = &s->snap->cgroups[s->snap->n_cgroups];
	*cg = (struct snap_cgroup){ .name = strdup(label) };
	if (!cg->name)
		return -ENOMEM;
	s->snap->n_cgroups++;

	if (s->snap->collectors[COLLECTOR_MEMSTAT].enabled) {
		t = files_now_ns();
		r = read_memstat(s, dirfd, cg);
		s->seconds[COLLECTOR_MEMSTAT] += seconds_since(t);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			s->snap->collectors[COLLECTOR_MEMSTAT].success = false;
	}
	if (s->snap->collectors[COLLECTOR_CACHESTAT].enabled && !s->files.timed_out) {
		t = files_now_ns();
		r = scan_files(s, dirfd, cg);
		s->seconds[COLLECTOR_CACHESTAT] += seconds_since(t);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			s->snap->collectors[COLLECTOR_CACHESTAT].success = false;
	}
	return 0;
}

static int cgroup_cmp(const void *a, const void *b)
{
	const struct snap_cgroup *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* One scan. Always returns a snapshot unless memory runs out. */
static struct snapshot *scan_run(struct collector *c, const struct config *cfg)
{
	struct scan s = { .c = c, .cfg = cfg, .procfs_fd = -1 };
	_cleanup_close_ int root = -1;
	bool cachestat;
	int r;

	s.snap = snapshot_new();
	if (!s.snap)
		return NULL;
	s.snap->abi = c->pc.abi;
	cachestat = c->opts.enable[COLLECTOR_CACHESTAT] && c->pc.abi != PAGECACHE_ABI_NONE;
	s.snap->collectors[COLLECTOR_CACHESTAT] = (struct snap_collector){
		.enabled = cachestat, .reported = cachestat, .success = true
	};
	s.snap->collectors[COLLECTOR_MEMSTAT] = (struct snap_collector){
		.enabled = c->opts.enable[COLLECTOR_MEMSTAT],
		.reported = c->opts.enable[COLLECTOR_MEMSTAT],
		.success = true,
	};
	s.snap->collectors[COLLECTOR_PERFILE] = (struct snap_collector){
		.enabled = cachestat && c->opts.enable[COLLECTOR_PERFILE] && cfg->per_file_top > 0,
	};

	s.scan_budget = cfg->max_files_per_scan;
	s.files = (struct files_ctx){
		.procfs_fd = -1,
		.visit = visit_file,
		.userdata = &s,
		.deadline_ns = files_now_ns() + (uint64_t)(cfg->max_scan_seconds * 1e9),
	};
	r = topn_init(&s.top, s.snap->collectors[COLLECTOR_PERFILE].enabled ? cfg->per_file_top : 0);
	if (r < 0)
		goto fail;

	s.files.procfs_fd = open(c->procfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s.files.procfs_fd < 0) {
		problem(&s, "opening %s: %m", c->procfs);
		s.snap->collectors[COLLECTOR_CACHESTAT].success = false;
		s.snap->collectors[COLLECTOR_CACHESTAT].enabled = false;
	}
	root = open(c->cgroupfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		problem(&s, "opening %s: %m", c->cgroupfs);
		s.snap->collectors[COLLECTOR_CACHESTAT].success = false;
		s.snap->collectors[COLLECTOR_MEMSTAT].success = false;
	} else {
		r = cgroups_walk(root, visit_cgroup, &s);
		if (r == -ENOMEM)
			goto fail;
		if (r < 0) {
			problem(&s, "walking %s: %s", c->cgroupfs, strerror(-r));
			s.snap->collectors[COLLECTOR_CACHESTAT].success = false;
			s.snap->collectors[COLLECTOR_MEMSTAT].success = false;
		}
	}
	if (s.files.timed_out) {
		problem(&s, "scan cut at limits.max_scan_seconds=%g; cgroups not reached have no cachestat series",
			cfg->max_scan_seconds);
		s.snap->collectors[COLLECTOR_CACHESTAT].success = false;
	}
	if (s.snap->n_cgroups > 1)
		qsort(s.snap->cgroups, s.snap->n_cgroups, sizeof(*s.snap->cgroups), cgroup_cmp);
	for (int i = 0; i < _COLLECTOR_MAX; i++)
		s.snap->collectors[i].seconds = s.seconds[i];
	memcpy(s.snap->skipped, s.files.skipped, sizeof(s.snap->skipped));

	closep(&s.files.procfs_fd);
	fileset_done(&s.files.seen);
	topn_done(&s.top);
	return s.snap;

fail:
	closep(&s.files.procfs_fd);
	fileset_done(&s.files.seen);
	topn_done(&s.top);
	snapshot_unref(s.snap);
	return NULL;
}

int collector_scan(struct collector *c, struct snapshot **ret)
{
	struct config_ref *cfg;
	struct snapshot *snap;

	pthread_mutex_lock(&c->lock);
	cfg = c->cfg;
	cfg->refs++;
	pthread_mutex_unlock(&c->lock);

	snap = scan_run(c, cfg->cfg);

	pthread_mutex_lock(&c->lock);
	config_ref_drop(cfg);
	if (snap) {
		for (int i = 0; i < _SKIP_MAX; i++) {
			c->skipped[i] += snap->skipped[i];
			snap->skipped[i] = c->skipped[i];
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (!snap)
		return -ENOMEM;
	*ret = snap;
	return 0;
}

double collector_max_scan_seconds(struct collector *c)
{
	double v;

	pthread_mutex_lock(&c->lock);
	v = c->cfg->cfg->max_scan_seconds;
	pthread_mutex_unlock(&c->lock);
	return v;
}

int collector_new(const struct collector_options *opts, const struct pagecache *pc,
		  struct config *cfg, struct collector **ret)
{
	struct collector *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->opts = *opts;
	c->cgroupfs = strdup(opts->cgroupfs);
	c->procfs = strdup(opts->procfs);
	c->cfg = calloc(1, sizeof(*c->cfg));
	if (!c->cgroupfs || !c->procfs || !c->cfg) {
		free(c->cgroupfs);
		free(c->procfs);
		free(c->cfg);
		free(c);
		return -ENOMEM;
	}
	c->opts.cgroupfs = c->cgroupfs;
	c->opts.procfs = c->procfs;
	c->cfg->cfg = cfg;
	c->cfg->refs = 1;
	c->pc = *pc;
	c->page_size = sysconf(_SC_PAGESIZE);
	if (c->page_size <= 0)
		c->page_size = 4096;
	pthread_mutex_init(&c->lock, NULL);
	*ret = c;
	return 0;
}

void collector_set_config(struct collector *c, struct config *cfg)
{
	struct config_ref *n = calloc(1, sizeof(*n)), *old;

	if (!n) {
		config_free(cfg);
		return;
	}
	n->cfg = cfg;
	n->refs = 1;
	pthread_mutex_lock(&c->lock);
	old = c->cfg;
	c->cfg = n;
	config_ref_drop(old);
	pthread_mutex_unlock(&c->lock);
}

void collector_free(struct collector *c)
{
	if (!c)
		return;
	config_ref_drop(c->cfg);
	pthread_mutex_destroy(&c->lock);
	free(c->cgroupfs);
	free(c->procfs);
	free(c);
}
