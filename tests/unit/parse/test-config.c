/* SPDX-License-Identifier: Apache-2.0 */
/* The config parser, fed from strings: defaults, a full file, and the errors an operator meets. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "parse/config.h"

static int parse(const char *s, struct config **ret, char **ret_error)
{
	return config_parse(s, strlen(s), "test.json", ret, ret_error);
}

static void test_empty_object(void **state)
{
	struct config *c = NULL;
	char *err = NULL;

	(void)state;
	assert_int_equal(parse("{}", &c, &err), 0);
	assert_null(err);
	assert_int_equal(c->n_cgroups, 0);
	assert_int_equal(c->per_file_top, CONFIG_DEFAULT_PER_FILE_TOP);
	assert_int_equal(c->max_files_per_scan, CONFIG_DEFAULT_MAX_FILES_PER_SCAN);
	assert_int_equal(c->max_files_per_cgroup, CONFIG_DEFAULT_MAX_FILES_PER_CGROUP);
	assert_true(c->max_scan_seconds == CONFIG_DEFAULT_MAX_SCAN_SECONDS);
	config_free(c);
}

static void test_full(void **state)
{
	static const char full[] =
		"{\n"
		"  \"cgroups\": [\n"
		"    { \"match\": \"/system.slice/db.service\", \"paths\": [\"/var/lib/db\", \"/srv/logs/*.log\"] },\n"
		"    { \"match\": \"/kubepods.slice/*\", \"paths\": [\"/data\"] },\n"
		"    { \"match\": \"/idle\" }\n"
		"  ],\n"
		"  \"per_file_top\": 0,\n"
		"  \"limits\": { \"max_files_per_scan\": 1000000, \"max_files_per_cgroup\": 200000,\n"
		"              \"max_descriptors_per_process\": 5000, \"max_mappings_per_process\": 7000,\n"
		"              \"max_scan_seconds\": 2.5 }\n"
		"}\n";
	struct config *c = NULL;
	char *err = NULL;

	(void)state;
	assert_int_equal(parse(full, &c, &err), 0);
	assert_int_equal(c->n_cgroups, 3);
	assert_string_equal(c->cgroups[0].match, "/system.slice/db.service");
	assert_int_equal(c->cgroups[0].n_paths, 2);
	assert_string_equal(c->cgroups[0].paths[1], "/srv/logs/*.log");
	assert_true(config_path_is_glob(c->cgroups[0].paths[1]));
	assert_false(config_path_is_glob(c->cgroups[0].paths[0]));
	assert_string_equal(c->cgroups[1].paths[0], "/data");
	assert_int_equal(c->cgroups[2].n_paths, 0);
	assert_int_equal(c->per_file_top, 0);
	assert_int_equal(c->max_files_per_scan, 1000000);
	assert_int_equal(c->max_files_per_cgroup, 200000);
	assert_int_equal(c->max_descriptors_per_process, 5000);
	assert_int_equal(c->max_mappings_per_process, 7000);
	assert_true(c->max_scan_seconds == 2.5);
	config_free(c);
}

/* A syntax error names the line and the column. */
static void test_syntax_error_line_column(void **state)
{
	static const char bad[] = "{\n  \"per_file_top\": 5,\n  \"limits\": { \"max_files_per_scan\" 7 }\n}\n";
	struct config *c = NULL;
	char *err = NULL;

	(void)state;
	assert_int_equal(parse(bad, &c, &err), -EINVAL);
	assert_null(c);
	assert_non_null(err);
	/* line 3, column 36: the 7 where a ':' belongs */
	if (strncmp(err, "test.json:3:36: ", 16) != 0)
		fail_msg("unexpected error \"%s\"", err);
	free(err);
}

static void test_trailing_comma(void **state)
{
	struct config *c = NULL;
	char *err = NULL;

	(void)state;
	assert_int_equal(parse("{\"per_file_top\": 1,}", &c, &err), -EINVAL);
	assert_non_null(err);
	assert_int_equal(strncmp(err, "test.json:1:", 12), 0);
	free(err);
}

static void expect_error(const char *json, const char *needle)
{
	struct config *c = NULL;
	char *err = NULL;

	assert_int_equal(parse(json, &c, &err), -EINVAL);
	assert_null(c);
	assert_non_null(err);
	if (!strstr(err, needle))
		fail_msg("error \"%s\" does not contain \"%s\"", err, needle);
	free(err);
}

static void test_unknown_keys(void **state)
{
	(void)state;
	expect_error("{\"per_file_tops\": 3}", "unknown key \"per_file_tops\" in the top level");
	expect_error("{\"limits\": {\"max_files\": 3}}", "unknown key \"max_files\" in limits");
	expect_error("{\"cgroups\": [{\"match\": \"/a\", \"path\": [\"/x\"]}]}",
		     "unknown key \"path\" in cgroups[0]");
}

static void test_bad_values(void **state)
{
	(void)state;
	expect_error("[]", "the top level must be an object");
	expect_error("{\"per_file_top\": -1}", "per_file_top: must be between 0 and");
	expect_error("{\"per_file_top\": \"10\"}", "per_file_top: must be an integer");
	expect_error("{\"per_file_top\": 1.5}", "per_file_top: must be an integer");
	expect_error("{\"limits\": {\"max_files_per_scan\": 0}}", "limits.max_files_per_scan");
	expect_error("{\"limits\": {\"max_scan_seconds\": 0}}", "limits.max_scan_seconds");
	expect_error("{\"limits\": {\"max_mappings_per_process\": 0}}",
		     "limits.max_mappings_per_process");
	expect_error("{\"limits\": []}", "limits: must be an object");
	expect_error("{\"cgroups\": {}}", "cgroups: must be an array");
	expect_error("{\"cgroups\": [{\"paths\": [\"/x\"]}]}", "cgroups[0].match: required");
	expect_error("{\"cgroups\": [{\"match\": \"/a\"}, {\"match\": \"/b\", \"paths\": [\"rel\"]}]}",
		     "cgroups[1].paths[0]: must be an absolute path");
	expect_error("{\"cgroups\": [{\"match\": \"/a\", \"paths\": \"/x\"}]}",
		     "cgroups[0].paths: must be an array");
	expect_error("{\"per_file_top\": 1, \"per_file_top\": 2}", "duplicate");
	expect_error("{\"cgroups\": [{\"match\": \"/a\", \"paths\": [\"/*"
		     "/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a"
		     "/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a\"]}]}",
		     "cgroups[0].paths[0]: a glob of more than 64 components");
}

static void test_not_json(void **state)
{
	(void)state;
	expect_error("", "test.json:");
	expect_error("per_file_top: 3\n", "test.json:1:");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_object),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_syntax_error_line_column),
		cmocka_unit_test(test_trailing_comma),
		cmocka_unit_test(test_unknown_keys),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_not_json),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
