/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the unit tests of one collector: a fake cgroup tree under a temporary directory,
 * and one scan with that collector alone, rendered. Included by test files only (each test
 * is one program), so the helpers are static.
 */
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "scan/engine.h"
#include "scan/registry.h"
#include "scan/render.h"

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

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd) == 0 ? 0 : -1;
}

/*
 * One scan of the tree at root with the collector named name alone, rendered as text (or
 * JSON); its success flag in *ret_success when given. The caller frees the text.
 */
static inline char *scan_one(const char *root, const char *name, bool json, bool *ret_success)
{
	struct collector_options o = { .cgroupfs = root, .procfs = "/proc" };
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
