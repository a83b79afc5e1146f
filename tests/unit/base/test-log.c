/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log: promslog's fields in order (time, level, source, msg, then the key-value fields) in
 * logfmt and JSON, the quoting that keeps an event on one line, the level filter, and a
 * repeated warning written once and counted. The JSON lines are checked by jansson's parser.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/log.h"

static char *buf;
static size_t len;
static FILE *out;

static int setup(void **state)
{
	(void)state;
	out = open_memstream(&buf, &len);
	log_set_stream(out);
	log_set_level("info");
	log_set_format("logfmt");
	return out ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	log_set_stream(NULL);
	fclose(out);
	free(buf);
	buf = NULL;
	return 0;
}

/* What was logged since the last call. */
static const char *logged(void)
{
	static char copy[4096];

	fflush(out);
	snprintf(copy, sizeof(copy), "%s", buf ? buf : "");
	rewind(out);
	if (buf)
		buf[0] = '\0';
	len = 0;
	return copy;
}

static void test_logfmt_fields(void **state)
{
	const char *line;
	char want[256];
	int n = 0, at = __LINE__ + 3;

	(void)state;
	log_info("Listening on\taddress=%s\ttelemetry_path=%s", ":9451", "/metrics");
	line = logged();
	snprintf(want, sizeof(want),
		 "level=INFO source=test-log.c:%d msg=\"Listening on\" address=:9451 "
		 "telemetry_path=/metrics\n", at);
	/* time first, RFC 3339 UTC with milliseconds, then level, source, msg, the fields */
	assert_int_equal(sscanf(line, "time=%*4d-%*2d-%*2dT%*2d:%*2d:%*2d.%*3dZ %n", &n), 0);
	assert_true(n == 30);
	assert_string_equal(line + n, want);
}

static void test_logfmt_quoting(void **state)
{
	const char *line;
	char want[128];
	int at;

	(void)state;
	log_warn("scan problem\tproblem=%s\tempty=", "a \"b\"\nc=d");
	line = strstr(logged(), "msg=");
	assert_non_null(line);
	assert_string_equal(line, "msg=\"scan problem\" problem=\"a \\\"b\\\"\\nc=d\" empty=\"\"\n");
	/* one word needs no quotes; a part without '=' is kept as a field, not lost */
	at = __LINE__ + 1;
	log_error("failed\tloose");
	snprintf(want, sizeof(want), "level=ERROR source=test-log.c:%d msg=failed field=loose\n", at);
	assert_non_null(strstr(logged(), want));
}

static void test_json(void **state)
{
	json_error_t jerr;
	char source[32];
	json_t *j;

	(void)state;
	assert_int_equal(log_set_format("json"), 0);
	snprintf(source, sizeof(source), "test-log.c:%d", __LINE__ + 1);
	log_warn("scan problem\tproblem=%s", "tab\there \"q\" \x01 end");
	j = json_loads(logged(), 0, &jerr);
	assert_non_null(j);
	/* the keys in promslog's order */
	assert_string_equal(json_string_value(json_object_get(j, "level")), "WARN");
	assert_string_equal(json_string_value(json_object_get(j, "source")), source);
	assert_string_equal(json_string_value(json_object_get(j, "msg")), "scan problem");
	assert_string_equal(json_string_value(json_object_get(j, "problem")), "tab");
	assert_string_equal(json_string_value(json_object_get(j, "field")), "here \"q\" \x01 end");
	assert_int_equal(strlen(json_string_value(json_object_get(j, "time"))), 24);
	assert_int_equal(json_object_size(j), 6);
	json_decref(j);
	assert_int_equal(log_set_format("xml"), -EINVAL);
	assert_int_equal(log_set_format("logfmt"), 0);
}

static void test_levels(void **state)
{
	(void)state;
	log_debug("hidden");
	assert_string_equal(logged(), "");
	assert_int_equal(log_set_level("debug"), 0);
	log_debug("shown");
	assert_non_null(strstr(logged(), "level=DEBUG"));
	assert_int_equal(log_set_level("error"), 0);
	log_warn("hidden");
	assert_string_equal(logged(), "");
	assert_int_equal(log_set_level("WARN"), -EINVAL);
}

static void test_repeat_once_and_counted(void **state)
{
	static struct log_repeat slot;
	uint64_t before = log_repeats_suppressed();

	(void)state;
	for (int i = 0; i < 5; i++)
		log_warn_repeat(&slot, "scan problem\tproblem=%s", "limit reached");
	/* written once, the four repeats counted */
	assert_non_null(strstr(logged(), "problem=\"limit reached\"\n"));
	assert_int_equal(log_repeats_suppressed() - before, 4);
	/* another problem is written, saying how often the one before came again */
	log_warn_repeat(&slot, "scan problem\tproblem=%s", "other");
	assert_non_null(strstr(logged(), "problem=other previous_repeated=4\n"));
	log_warn_repeat(&slot, "scan problem\tproblem=%s", "limit reached");
	assert_non_null(strstr(logged(), "problem=\"limit reached\"\n"));
	assert_int_equal(log_repeats_suppressed() - before, 4);
	free(slot.last);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_logfmt_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_logfmt_quoting, setup, teardown),
		cmocka_unit_test_setup_teardown(test_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_levels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repeat_once_and_counted, setup, teardown),
	};

	return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
