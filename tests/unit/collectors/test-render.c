/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Rendering: label escaping (quotes, backslashes, newlines, bytes that are not UTF-8) and a
 * known snapshot rendered to the golden files in golden/. UPDATE_GOLDEN=1 rewrites them. The
 * JSON body capped as the text is.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collectors/cachestat.h"
#include "collectors/memstat.h"
#include "collectors/perfile.h"
#include "collectors/subtree.h"
#include "scan/registry.h"
#include "scan/render.h"
#include "base/utf8.h"

static char *label(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(render_label_value(f, s), 0);
	fclose(f);
	return buf;
}

static void expect_label(const char *in, const char *want)
{
	char *got = label(in);

	if (strcmp(got, want) != 0)
		fail_msg("label of \"%s\": got \"%s\", want \"%s\"", in, got, want);
	free(got);
}

static void test_label_escaping(void **state)
{
	(void)state;
	expect_label("/plain/path", "/plain/path");
	expect_label("a\"b", "a\\\"b");
	expect_label("a\\b", "a\\\\\\\\b"); /* doubled by the sanitizer, then escaped */
	expect_label("line\nbreak", "line\\nbreak");
	expect_label("tab\there", "tab\there");
	expect_label("", "");
}

static void test_label_invalid_utf8(void **state)
{
	(void)state;
	/* valid multi-byte sequences pass through */
	expect_label("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	/* a lone byte: \xff becomes the text \xff, its backslash escaped for the format */
	expect_label("a\xff" "b", "a\\\\xffb");
	/* an overlong '/', a UTF-16 surrogate, a truncated sequence, beyond U+10FFFF */
	expect_label("\xc0\xaf", "\\\\xc0\\\\xaf");
	expect_label("\xed\xa0\x80", "\\\\xed\\\\xa0\\\\x80");
	expect_label("x\xe2\x82", "x\\\\xe2\\\\x82");
	expect_label("\xf4\x90\x80\x80", "\\\\xf4\\\\x90\\\\x80\\\\x80");
	/* everything at once */
	expect_label("\"\\\n\xfe", "\\\"\\\\\\\\\\n\\\\xfe");
}

static void test_sanitize(void **state)
{
	char *s;

	(void)state;
	s = utf8_sanitize("ok\x80");
	assert_string_equal(s, "ok\\x80");
	free(s);
	s = utf8_sanitize("\xe2\x82\xac");
	assert_string_equal(s, "\xe2\x82\xac");
	free(s);
}

/* Gives cg the data of the collector named name (registry.h); returns it. */
static void *set_data(struct snap_cgroup *cg, const char *name, size_t size)
{
	int idx = registry_find(name);

	assert_true(idx >= 0);
	cg->data[idx] = calloc(1, size);
	assert_non_null(cg->data[idx]);
	return cg->data[idx];
}

static void set_collector(struct snapshot *s, const char *name, struct snap_collector c)
{
	int idx = registry_find(name);

	assert_true(idx >= 0);
	s->collectors[idx] = c;
}

/* The root cgroup of known_snapshot(): every kind of series. */
static void known_root(struct snap_cgroup *cg)
{
	struct cachestat_cgroup *cs = set_data(cg, "cachestat", sizeof(*cs));
	struct memstat_cgroup *ms = set_data(cg, "memstat", sizeof(*ms));
	struct memstat_numa *numa = set_data(cg, "numa", sizeof(*numa));
	struct perfile_cgroup *pf = set_data(cg, "perfile", sizeof(*pf));

	cg->name = strdup("/");
	cs->c = (struct snap_counts){ 8192, 4096, 0, 40960, 12288 };
	cs->files = 2;
	cs->files_size = 10000;
	ms->memstat.present = (1u << _MEMSTAT_MAX) - 1;
	ms->memstat.value[MEMSTAT_FILE] = 123456789;
	ms->memstat.value[MEMSTAT_WORKINGSET_REFAULT_FILE] = 18446744073709551615ULL;
	ms->memstat.value[MEMSTAT_WORKINGSET_ACTIVATE_FILE] = 3;
	ms->memstat.value[MEMSTAT_WORKINGSET_RESTORE_FILE] = 4;
	numa->n_nodes = 2;
	numa->nodes = calloc(2, sizeof(*numa->nodes));
	assert_non_null(numa->nodes);
	numa->nodes[0] = (struct memstat_node){ 0, 100 };
	numa->nodes[1] = (struct memstat_node){ 1, 200 };
	pf->n_top = 2;
	pf->top = calloc(2, sizeof(*pf->top));
	assert_non_null(pf->top);
	/* as topn_take() hands it over: sanitized, a backslash doubled, a bad byte as \xff */
	pf->top[0] = (struct snap_file){ strdup("/var/lib/db/data \"quoted\"\\\\back\nline\\xff"), 8000,
					 { 8192, 4096, 0, 0, 0 }, 8, 1, 0 };
	pf->top[1] = (struct snap_file){ strdup("/tmp/gone (deleted)"), 2000, { 0, 0, 0, 40960, 12288 }, 8, 2, 0 };
}

/* A snapshot with every kind of series, names that need escaping, absent memory.stat. */
static struct snapshot *known_snapshot(void)
{
	struct snapshot *s = registry_snapshot_new();
	struct snap_cgroup *cg;
	struct memstat_cgroup *ms;

	assert_non_null(s);
	s->abi = PAGECACHE_ABI_SEED;
	s->n_cgroups = 3;
	s->cgroups = calloc(3, sizeof(*s->cgroups));
	assert_non_null(s->cgroups);
	known_root(&s->cgroups[0]);

	cg = &s->cgroups[1];
	cg->name = strdup("/system.slice/db.service");
	/* scanned, nothing found: zeros are true values here */
	set_data(cg, "cachestat", sizeof(struct cachestat_cgroup));
	set_data(cg, "perfile", sizeof(struct perfile_cgroup));

	cg = &s->cgroups[2];
	cg->name = strdup("/weird \"cg\"\xc3");
	ms = set_data(cg, "memstat", sizeof(*ms));
	ms->memstat.present = 1u << MEMSTAT_WORKINGSET_REFAULT_FILE; /* an old kernel: only the refaults */
	ms->memstat.value[MEMSTAT_WORKINGSET_REFAULT_FILE] = 4096;

	set_collector(s, "cachestat", (struct snap_collector){ true, true, true, 0.25, NULL });
	set_collector(s, "memstat", (struct snap_collector){ true, true, false, 0.1, NULL });
	set_collector(s, "numa", (struct snap_collector){ true, true, true, 0.05, NULL });
	set_collector(s, "perfile", (struct snap_collector){ .enabled = true });
	/* on, with nothing to measure here: a reason, no success */
	set_collector(s, "pressure", (struct snap_collector){ .unavailable = "cgroup_v1" });
	s->skipped[SKIP_EPERM] = 1;
	s->skipped[SKIP_NOT_REGULAR] = 42;
	return s;
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return buf;
}

static void check_golden(const char *golden, const char *got)
{
	char *want;

	if (getenv("UPDATE_GOLDEN")) {
		FILE *f = fopen(golden, "we");

		assert_non_null(f);
		fputs(got, f);
		fclose(f);
	}
	want = read_all(golden);
	if (!want)
		fail_msg("cannot read %s (run with UPDATE_GOLDEN=1 to create it)", golden);
	if (strcmp(want, got) != 0) {
		fprintf(stderr, "---- got:\n%s---- want (%s):\n%s", got, golden, want);
		free(want);
		fail_msg("%s differs", golden);
	}
	free(want);
}

/* Renders s with fn and drops the reference to s; the caller frees the text. */
static char *render_unref(int (*fn)(FILE *, const struct snapshot *, const struct render_meta *),
			  struct snapshot *s)
{
	const struct render_meta meta = { "1.2.3", "abcdef" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fn(f, s, &meta), 0);
	fclose(f);
	snapshot_unref(s);
	return buf;
}

static void test_golden_text(void **state)
{
	char *buf = render_unref(render_text, known_snapshot());

	(void)state;
	assert_true(buf[0] && buf[strlen(buf) - 1] == '\n');
	check_golden("golden/metrics.prom", buf);
	free(buf);
}

static void test_golden_json(void **state)
{
	char *buf = render_unref(render_json, known_snapshot());

	(void)state;
	check_golden("golden/snapshot.json", buf);
	free(buf);
}

/* With abi none nothing of cachestat is printed, not even HELP lines. */
static void test_abi_none(void **state)
{
	struct snapshot *s = registry_snapshot_new();
	struct memstat_cgroup *ms;
	char *buf;

	(void)state;
	s->abi = PAGECACHE_ABI_NONE;
	s->n_cgroups = 1;
	s->cgroups = calloc(1, sizeof(*s->cgroups));
	s->cgroups[0].name = strdup("/");
	ms = set_data(&s->cgroups[0], "memstat", sizeof(*ms));
	ms->memstat.present = 1u << MEMSTAT_WORKINGSET_REFAULT_FILE;
	ms->memstat.value[MEMSTAT_WORKINGSET_REFAULT_FILE] = 9;
	buf = render_unref(render_text, s);
	assert_non_null(strstr(buf, "cachestat_syscall_info{abi=\"none\"} 1\n"));
	assert_non_null(strstr(buf, "cachestat_cgroup_workingset_refault_file_total{cgroup=\"/\"} 9\n"));
	assert_null(strstr(buf, "cachestat_cgroup_cached_bytes"));
	assert_null(strstr(buf, "cachestat_file_"));
	assert_null(strstr(buf, "cachestat_cgroup_memory_file_bytes"));
	free(buf);
}

/* known_snapshot() measured with the mincore method, the root's subtree sums added. */
static struct snapshot *mincore_snapshot(void)
{
	struct snapshot *s = known_snapshot();
	struct subtree_cgroup *st = set_data(&s->cgroups[0], "subtree", sizeof(*st));

	s->abi = PAGECACHE_ABI_MINCORE;
	st->has_subtree = true;
	st->c = (struct snap_counts){ .cached = 8192 };
	st->files = 2;
	return s;
}

/*
 * The mincore method measures cached pages only: the cached families are there, per cgroup,
 * per subtree and per file; dirty, writeback, evicted and recently evicted have no series (no
 * HELP line either) and no JSON key, rather than zeros.
 */
static void test_mincore_absent(void **state)
{
	static const char *const absent_text[] = {
		"cachestat_cgroup_dirty_bytes", "cachestat_cgroup_writeback_bytes",
		"cachestat_cgroup_evicted_bytes", "cachestat_cgroup_recently_evicted_bytes",
		"cachestat_cgroup_subtree_recently_evicted_bytes",
		"cachestat_file_recently_evicted_bytes",
	};
	static const char *const absent_json[] = {
		"\"dirty_bytes\"", "\"writeback_bytes\"", "\"evicted_bytes\"", "\"recently_evicted_bytes\"",
	};
	char *buf;

	(void)state;
	buf = render_unref(render_text, mincore_snapshot());
	assert_non_null(strstr(buf, "cachestat_syscall_info{abi=\"mincore\"} 1\n"));
	assert_non_null(strstr(buf, "cachestat_cgroup_cached_bytes{cgroup=\"/\"} 8192\n"));
	assert_non_null(strstr(buf, "cachestat_cgroup_subtree_cached_bytes{cgroup=\"/\"} 8192\n"));
	assert_non_null(strstr(buf, "cachestat_cgroup_files{cgroup=\"/\"} 2\n"));
	assert_non_null(strstr(buf, "cachestat_file_cached_bytes{"));
	for (size_t i = 0; i < sizeof(absent_text) / sizeof(absent_text[0]); i++)
		if (strstr(buf, absent_text[i]))
			fail_msg("%s rendered under the mincore method", absent_text[i]);
	free(buf);

	buf = render_unref(render_json, mincore_snapshot());
	assert_non_null(strstr(buf, "\"abi\": \"mincore\""));
	assert_non_null(strstr(buf, "\"cached_bytes\": 8192"));
	for (size_t i = 0; i < sizeof(absent_json) / sizeof(absent_json[0]); i++)
		if (strstr(buf, absent_json[i]))
			fail_msg("%s in the JSON under the mincore method", absent_json[i]);
	free(buf);

	/* the same snapshot under cachestat keeps every family: the test can tell */
	buf = render_unref(render_text, known_snapshot());
	assert_non_null(strstr(buf, "cachestat_cgroup_dirty_bytes{cgroup=\"/\"} 4096\n"));
	free(buf);
}

/* n cgroups of long names, each with its memory.stat file: a body of about n KB in JSON. */
static struct snapshot *many_snapshot(size_t n)
{
	struct snapshot *s = registry_snapshot_new();

	assert_non_null(s);
	s->abi = PAGECACHE_ABI_MAINLINE;
	s->n_cgroups = n;
	s->cgroups = calloc(n, sizeof(*s->cgroups));
	assert_non_null(s->cgroups);
	for (size_t i = 0; i < n; i++) {
		struct memstat_cgroup *ms = set_data(&s->cgroups[i], "memstat", sizeof(*ms));

		assert_true(asprintf(&s->cgroups[i].name, "/tenant/%0200zu", i) > 0);
		ms->memstat.present = 1u << MEMSTAT_WORKINGSET_REFAULT_FILE;
		ms->memstat.value[MEMSTAT_WORKINGSET_REFAULT_FILE] = 4096 * i;
	}
	set_collector(s, "memstat", (struct snap_collector){ true, true, true, 0.1, NULL });
	return s;
}

/* The JSON body in max bytes (0: no cap); the cut said in *ret_cut; parsed into *ret_root. */
static size_t render_json_capped(struct snapshot *s, size_t max, uint64_t cut_before,
				 bool *ret_cut, json_t **ret_root)
{
	const struct render_meta meta = { "1.2.3", "abcdef" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_error_t err;

	assert_non_null(f);
	assert_int_equal(render_json_limited(f, s, &meta, max ? max : SIZE_MAX, cut_before, ret_cut), 0);
	fclose(f);
	*ret_root = json_loads(buf, 0, &err);
	if (!*ret_root)
		fail_msg("the body is not JSON: %s (line %d)", err.text, err.line);
	free(buf);
	return len;
}

/*
 * --web.max-body-bytes caps the JSON body as it caps the text: whole cgroups while they fit, the
 * body valid JSON within the cap, the cut counted after cut_before; uncut, everything is there.
 */
static void test_json_limited(void **state)
{
	struct snapshot *s = many_snapshot(2000);
	json_t *root;
	size_t len, kept;
	bool cut = true;

	(void)state;
	len = render_json_capped(s, 0, 0, &cut, &root);
	assert_false(cut);
	assert_true(len > (512u << 10)); /* over the cap below by far */
	assert_int_equal(json_array_size(json_object_get(root, "cgroups")), 2000);
	assert_int_equal(json_integer_value(json_object_get(root, "body_truncated_total")), 0);
	json_decref(root);

	len = render_json_capped(s, 128u << 10, 5, &cut, &root);
	assert_true(cut);
	assert_true(len <= (128u << 10));
	kept = json_array_size(json_object_get(root, "cgroups"));
	/* most of the room is used: about 300 bytes a cgroup, 96 KiB before the tail's 32 */
	assert_true(kept > 250 && kept < 2000);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(root, "cgroups"), kept - 1), "cgroup")),
			    s->cgroups[kept - 1].name);
	assert_int_equal(json_integer_value(json_object_get(root, "body_truncated_total")), 6);
	assert_non_null(json_object_get(root, "collectors"));
	json_decref(root);
	snapshot_unref(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_label_escaping),
		cmocka_unit_test(test_label_invalid_utf8),
		cmocka_unit_test(test_sanitize),
		cmocka_unit_test(test_golden_text),
		cmocka_unit_test(test_golden_json),
		cmocka_unit_test(test_abi_none),
		cmocka_unit_test(test_mincore_absent),
		cmocka_unit_test(test_json_limited),
	};

	return cmocka_run_group_tests_name("render", tests, NULL, NULL);
}
