/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the scan and collector unit tests stand on, written once: a fake cachestat(2) (a fake
 * kernel: it decodes the arguments as the seed or the mainline kernel would, or passes the call
 * to the running kernel and counts it), fake cgroup trees under a temporary directory, and one
 * scan with one collector, rendered. Included by test files only (each test is one program), so
 * the helpers are static.
 */
#pragma once

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/pagecache.h"
#include "scan/engine.h"
#include "scan/registry.h"
#include "scan/render.h"

/* ---- a fake cachestat(2) ---- */

enum fake_kernel {
	FAKE_MAINLINE,        /* (fd, range *, cstat *, flags); a NULL range is EFAULT */
	FAKE_MAINLINE_EINVAL, /* as FAKE_MAINLINE, but a NULL range is EINVAL (flags checked
			       * first), as in FAKE_BOTH */
	FAKE_SEED,            /* (fd, off, len, cstat_size, cstat): a partial copy of cstat_size */
	FAKE_BOTH,            /* the v3 series: the mainline form when the 4th argument is 0 */
	FAKE_NONE,            /* no such system call: ENOSYS */
	FAKE_BROKEN,          /* EFAULT whatever the arguments */
	FAKE_REAL,            /* the running kernel's, counted */
};

struct fake_cachestat {
	enum fake_kernel kernel;
	/*
	 * Each call must be the one a scan makes: the whole file (offset and length 0), the whole
	 * struct, flags 0. Off for the probe's tests, whose calls are the probe's.
	 */
	bool whole_file;
	struct pagecache_cachestat pages; /* what every file has, unless answer says otherwise */
	/* When set, the answer for the file behind fd: 0 with *ret filled, or -1 with errno. */
	long (*answer)(int fd, struct pagecache_cachestat *ret);
	int calls;    /* cachestat calls so far (atomic: scans run in threads of their own) */
	int delay_ms; /* each call sleeps this long first (a slow file system) */
};

/* Every file: 3 pages cached, 1 dirty, 2 evicted of which 1 recently. */
static struct fake_cachestat fake = {
	.kernel = FAKE_MAINLINE,
	.whole_file = true,
	.pages = { 3, 1, 0, 2, 1 },
};

static inline int fake_calls(void)
{
	return __atomic_load_n(&fake.calls, __ATOMIC_RELAXED);
}

static inline void fake_reset_calls(void)
{
	__atomic_store_n(&fake.calls, 0, __ATOMIC_RELAXED);
}

static inline void fake_set_delay(int ms)
{
	__atomic_store_n(&fake.delay_ms, ms, __ATOMIC_RELAXED);
}

/* The struct for fd, as much of it as fits in size bytes. */
static inline long fake_fill(int fd, struct pagecache_cachestat *cs, size_t size)
{
	struct pagecache_cachestat full = fake.pages;

	if (fake.answer && fake.answer(fd, &full) < 0)
		return -1;
	memcpy(cs, &full, size);
	return 0;
}

/* The seed kernel: (fd, off, len, cstat_size, cstat). */
static inline long fake_seed(unsigned long fd, unsigned long off, unsigned long len,
			     unsigned long size, unsigned long cs)
{
	if (fake.whole_file) {
		assert_int_equal(off, 0);
		assert_int_equal(len, 0);
		assert_int_equal(size, sizeof(struct pagecache_cachestat));
	}
	/* a mainline-form call is a seed-form call with a pointer as off and cstat_size 0,
	 * which succeeds and copies nothing */
	if ((long)off < 0 || size > sizeof(struct pagecache_cachestat)) {
		errno = EINVAL;
		return -1;
	}
	return fake_fill((int)fd, (struct pagecache_cachestat *)cs, size);
}

/* The mainline kernel: (fd, range *, cstat *, flags). */
static inline long fake_mainline(unsigned long fd, unsigned long range, unsigned long cs,
				 unsigned long flags)
{
	const struct pagecache_range *r = (const void *)range;

	if (fake.whole_file) {
		assert_non_null(r);
		assert_int_equal(r->off, 0);
		assert_int_equal(r->len, 0);
		assert_int_equal((unsigned int)flags, 0);
	}
	if (!r) {
		errno = fake.kernel == FAKE_MAINLINE ? EFAULT : EINVAL;
		return -1;
	}
	if (flags != 0) {
		errno = EINVAL;
		return -1;
	}
	return fake_fill((int)fd, (struct pagecache_cachestat *)cs, sizeof(struct pagecache_cachestat));
}

/* The system call function of struct pagecache (its .sys), or pagecache_probe()'s. */
static inline long fake_cachestat(long nr, ...)
{
	unsigned long a[5];
	enum fake_kernel form = fake.kernel;
	int delay = __atomic_load_n(&fake.delay_ms, __ATOMIC_RELAXED);
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 5; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	if (form == FAKE_REAL) {
		__atomic_add_fetch(&fake.calls, nr == PAGECACHE_NR_CACHESTAT, __ATOMIC_RELAXED);
		return syscall(nr, a[0], a[1], a[2], a[3], a[4]);
	}
	__atomic_add_fetch(&fake.calls, 1, __ATOMIC_RELAXED);
	assert_int_equal(nr, PAGECACHE_NR_CACHESTAT);
	if (delay) {
		struct timespec ts = { delay / 1000, (delay % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
	if (form == FAKE_BOTH)
		form = a[3] == 0 ? FAKE_MAINLINE : FAKE_SEED;
	switch (form) {
	case FAKE_SEED:
		return fake_seed(a[0], a[1], a[2], a[3], a[4]);
	case FAKE_MAINLINE:
	case FAKE_MAINLINE_EINVAL:
		return fake_mainline(a[0], a[1], a[2], a[3]);
	case FAKE_NONE:
		errno = ENOSYS;
		return -1;
	default:
		errno = EFAULT;
		return -1;
	}
}

/* ---- fake cgroup trees and their files ---- */

/* Runs the shell command printed from fmt; it must succeed. */
__attribute__((format(printf, 1, 2))) static inline void fixture_sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_true(n > 0 && (size_t)n < sizeof(cmd));
	assert_int_equal(system(cmd), 0);
}

/*
 * Cgroups below root, named in the space-separated list (root itself: "."), each an ordinary
 * directory with an empty cgroup.procs.
 */
static inline void tree_cgroups(const char *root, const char *list)
{
	fixture_sh("cd '%s' && for d in %s; do mkdir -p $d && : > $d/cgroup.procs; done", root, list);
}

/* Writes content to root/rel. */
static inline void tree_write(const char *root, const char *rel, const char *content)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	f = fopen(p, "we");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

/* Removes the tree; for a group teardown. */
static inline int tree_remove(const char *root)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* ---- one scan ---- */

/* The cgroup of a snapshot by name; the test fails where it is absent. */
static inline const struct snap_cgroup *find_cgroup(const struct snapshot *s, const char *name)
{
	for (size_t i = 0; i < s->n_cgroups; i++)
		if (strcmp(s->cgroups[i].name, name) == 0)
			return &s->cgroups[i];
	fail_msg("no cgroup %s", name);
	return NULL;
}

/* Sets a collector's own flag (--NAME=arg) as the command line would. */
static inline void collector_flag_set(const char *name, const char *arg)
{
	for (size_t i = 0; i < registry_flag_count(); i++)
		if (strcmp(registry_flag(i)->name, name) == 0) {
			assert_int_equal(registry_flag(i)->parse(arg), 0);
			return;
		}
	fail_msg("no flag --%s", name);
}

/*
 * One scan with the options o (the tree, procfs, the layout) and the collector named name
 * alone, rendered as text (or JSON); its success flag in *ret_success when given. The caller
 * frees the text.
 */
static inline char *scan_one_with(struct collector_options o, const char *name, bool json,
				  bool *ret_success)
{
	struct pagecache pc = { .abi = PAGECACHE_ABI_NONE };
	const struct render_meta meta = { "1", "r" };
	struct scan_engine *c = NULL;
	struct snapshot *s = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int idx = registry_find(name);

	assert_true(idx >= 0);
	o.enable[idx] = true;
	assert_int_equal(scan_engine_new(&o, &pc, config_new_default(), &c), 0);
	assert_int_equal(scan_engine_run(c, &s), 0);
	if (ret_success)
		*ret_success = s->collectors[idx].success;
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal((json ? render_json : render_text)(f, s, &meta), 0);
	fclose(f);
	snapshot_unref(s);
	scan_engine_free(c);
	return buf;
}

/* scan_one_with() a v2 tree at root, with the host's /proc. */
static inline char *scan_one(const char *root, const char *name, bool json, bool *ret_success)
{
	return scan_one_with((struct collector_options){ .cgroupfs = root, .procfs = "/proc" }, name,
			     json, ret_success);
}
