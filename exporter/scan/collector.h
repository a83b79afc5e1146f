/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collector: the collector interface. Each collector is one file, collectors/NAME.c, that fills
 * a struct collector_def and registers it with REGISTER_COLLECTOR(); the scan engine
 * (engine.h) calls its hooks, cgroup by cgroup, and the collector reports through the scan_*()
 * functions below. The table of collectors is the registry's (registry.h).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/pagecache.h"
#include "scan/snapshot.h"
#include "files/fstypes.h"
#include "parse/config.h"

struct dircache;
struct files_ctx;
struct files_entry;
struct collector_options;

/* A flag of a collector's own, --NAME=ARG (NAME "collector.foo.bar"): parsed at start. */
struct collector_flag {
	const char *name;
	const char *arg;  /* the argument in --help, e.g. "SECONDS" */
	const char *help; /* the rest of its --help line, the default included */
	int (*parse)(const char *arg); /* 0, or -EINVAL after saying why on stderr */
};

/* Flags of all collectors together (registry_flag()) at most. */
#define REGISTRY_FLAGS_MAX 32

/*
 * What a collector sees of the scan in progress. the scan engine (engine.c) fills the public part; a collector
 * reads it and reports through the scan_*() functions below.
 */
struct collect_scan {
	const struct config *cfg;
	const struct pagecache *pc;
	const char *cgroupfs;
	bool memory_v1; /* cgroupfs is the v1 memory hierarchy: memory.stat in v1's names */
	const char *procfs;
	long page_size;
	struct fstypes *fstypes; /* the file system types not to touch, and its mount cache */
	struct dircache *dircache; /* directory listings kept between scans; NULL: none */
	size_t n_cgroups;        /* in the tree when the scan started, for fair shares of time */
	struct snapshot *snap;
	/* pages the mincore method may still walk in this scan, for all collectors (mincore.h) */
	uint64_t mincore_pages_left;

	/* the engine's own */
	bool active[COLLECTORS_MAX];
	void *state[COLLECTORS_MAX];
	double seconds[COLLECTORS_MAX];
};

/* A file a collector counted, offered to the collectors with a file_counted hook. */
struct collect_file {
	struct snap_cgroup *cg;
	const struct snap_file *file;   /* path NULL: files_entry_name(fc, e) works it out */
	const struct files_ctx *fc;
	const struct files_entry *e;
};

struct collector_def {
	const char *name; /* --collector.NAME, the label collector="NAME", a section of docs */
	const char *help; /* one line of --help */
	bool default_on;
	/* Has the scrape_collector_{success,duration_seconds} series (false: rides on another's scan). */
	bool reported;
	/* Its own flags (optional), besides --[no-]collector.NAME. */
	const struct collector_flag *flags;
	size_t n_flags;
	/*
	 * Once at start when enabled (optional), before privileges are dropped and before any
	 * thread starts: for what needs a privilege the scan does not keep. Returns 0 or -ENOMEM;
	 * other trouble is for the collector to report in its scans (the daemon runs on).
	 */
	int (*setup)(const struct collector_options *opts);
	/*
	 * Why it has nothing it can measure on this host, a reason of docs/metrics.md ("cgroup_v1",
	 * "no_memory_controller", "no_psi", "no_cachestat"), or NULL. Asked before every scan and
	 * once at start for the log (optional): an unavailable collector sits the scan out, and
	 * says why in cachestat_collector_unavailable_info instead of a success and no series.
	 */
	const char *(*unavailable)(const struct collect_scan *scan);
	/* What it will send beyond its name, for the line logged at start (optional). */
	void (*describe)(const struct config *cfg, char *buf, size_t size);

	/*
	 * Once per scan, before the walk, in registry order: 1 to take part in this scan, 0 to sit
	 * it out (no series, no success or duration), or -errno (the scan fails). *ret_state is
	 * what the other hooks get. Optional: without it, a collector always takes part, with a
	 * NULL state.
	 */
	int (*scan_begin)(struct collect_scan *scan, size_t idx, void **ret_state);
	/*
	 * Per cgroup, timed for the duration series. Returns 0 or -errno: -ENOMEM ends the scan,
	 * another error marks the collector failed and the scan goes on.
	 */
	int (*scan_cgroup)(struct collect_scan *scan, size_t idx, void *state, int dirfd,
			   struct snap_cgroup *cg);
	/* Per cgroup, after every collector's scan_cgroup. Same returns. */
	int (*cgroup_done)(struct collect_scan *scan, size_t idx, void *state, struct snap_cgroup *cg);
	/* A file another collector counted (see scan_file_counted()). */
	void (*file_counted)(void *state, const struct collect_file *f);
	/* Once after the walk, also when the scan failed; frees state. Optional. */
	void (*scan_end)(struct collect_scan *scan, void *state);

	/* Frees what the collector left in snap_cgroup.data[idx]. */
	void (*free_cgroup)(void *data);
	/* Its families in the text format (through render.h), and its keys of a cgroup's JSON. */
	void (*render_text)(FILE *out, const struct snapshot *s, size_t idx);
	void (*render_json)(json_t *obj, const struct snap_cgroup *cg, size_t idx);
};

#define REGISTER_COLLECTOR(def)                                                              \
	static const struct collector_def *const registry_entry_##def                         \
		__attribute__((section("cachestat_collectors"), used, aligned(sizeof(void *)))) = \
			&(def)

/*
 * What the host offers under scan's cgroup tree, for the collectors' unavailable hooks: whether
 * its cgroups can have the memory controller's files (memory.stat, memory.events...: not where
 * the v2 tree's root lists no "memory" in cgroup.controllers), and whether the kernel has PSI
 * (procfs's pressure/memory). Each says yes when it cannot tell: a reason must be certain.
 */
bool scan_has_memory_controller(const struct collect_scan *scan);
bool scan_has_psi(const struct collect_scan *scan);
/*
 * The unavailable hook of a collector of the v2 memory controller's own files (memory.events,
 * memory.current...), which the v1 hierarchy lacks: "cgroup_v1", "no_memory_controller" or NULL.
 */
const char *scan_memory_v2_unavailable(const struct collect_scan *scan);

/* For collectors, during a scan. */
__attribute__((format(printf, 2, 3))) void scan_problem(struct collect_scan *scan, const char *fmt, ...);
void scan_fail(struct collect_scan *scan, size_t idx);
/* Whether the collector named name takes part in this scan; its index in *ret_idx. */
bool scan_active(const struct collect_scan *scan, const char *name, size_t *ret_idx);
/* Offers a counted file to every active collector with a file_counted hook. */
void scan_file_counted(struct collect_scan *scan, const struct collect_file *f);

/*
 * A collector's read of one of cg's files (name, below dirfd): 1 with it in *ret_buf (free()) and
 * *ret_len; 0 where the cgroup has no such file (ENOENT; EOPNOTSUPP too when
 * unsupported_is_absent), so that its series are absent rather than zero; -errno after
 * reporting "reading CGROUP/NAME: ..." with scan_problem().
 */
int scan_read_cgroup_file(struct collect_scan *scan, int dirfd, const struct snap_cgroup *cg,
			  const char *name, bool unsupported_is_absent, char **ret_buf,
			  size_t *ret_len);
/* r, a parser's return for cg's file name; a failure is reported "parsing CGROUP/NAME: ...". */
int scan_parsed(struct collect_scan *scan, const struct snap_cgroup *cg, const char *name, int r);
