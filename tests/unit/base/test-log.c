/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log: promslog's fields in order (time, level, source, msg, then the key-value fields) in
 * logfmt and JSON, the quoting that keeps an event on one line, the level filter, and a
 * repeated warning written once and counted. The JSON lines are checked by jansson's parser.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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
	/* a shorter line written over a longer one would leave the longer one's end */
	if (buf)
		memset(buf, 0, len);
	rewind(out);
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
	/* one word needs no quotes; a part without a literal key is kept, marked, not lost */
	at = __LINE__ + 1;
	log_error("failed\tloose\t%s=v", "k");
	snprintf(want, sizeof(want),
		 "level=ERROR source=test-log.c:%d msg=failed !BADKEY=loose !BADKEY=\"k=v\"\n", at);
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
	/* a tab inside a value is part of the value, not a field separator */
	assert_string_equal(json_string_value(json_object_get(j, "problem")),
			    "tab\there \"q\" \x01 end");
	assert_int_equal(strlen(json_string_value(json_object_get(j, "time"))), 24);
	assert_int_equal(json_object_size(j), 5);
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

/* A process name as a tenant may choose it: a tab, a forged level, a byte that is not UTF-8. */
static const char attack[] = "x\tlevel=ERROR\tmsg=forged\xff";

/* How often key= starts a field of a logfmt line (outside quoted values). */
static int logfmt_keys(const char *line, const char *key)
{
	size_t n = strlen(key);
	bool quoted = false;
	int count = 0;

	for (const char *p = line; *p; p++) {
		if (*p == '\\' && quoted && p[1]) {
			p++;
			continue;
		}
		if (*p == '"')
			quoted = !quoted;
		else if (!quoted && (p == line || p[-1] == ' ') && strncmp(p, key, n) == 0 && p[n] == '=')
			count++;
	}
	return count;
}

static void test_forged_fields_logfmt(void **state)
{
	const char *line;

	(void)state;
	log_info("process seen\tcomm=%s\tpid=%d", attack, 42);
	line = logged();
	assert_int_equal(logfmt_keys(line, "level"), 1);
	assert_int_equal(logfmt_keys(line, "msg"), 1);
	assert_int_equal(logfmt_keys(line, "comm"), 1);
	assert_non_null(strstr(line, " level=INFO "));
	/* the value quoted and escaped; the byte 0xff written as the exposition writes it */
	assert_non_null(strstr(line, " comm=\"x\\tlevel=ERROR\\tmsg=forged\\\\xff\" pid=42\n"));
	assert_null(strchr(line, '\xff'));
}

static void test_forged_fields_json(void **state)
{
	json_error_t jerr;
	const char *line;
	json_t *j;

	(void)state;
	assert_int_equal(log_set_format("json"), 0);
	log_warn("process seen\tcomm=%s\tpid=%d\tratio=%.1f\tbytes=%" PRIu64 "\tpadded=%5d",
		 attack, 42, 0.5, (uint64_t)1 << 40, 7);
	line = logged();
	/* jansson refuses a string that is not UTF-8, and keeps the last of two equal keys */
	j = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "level")), "WARN");
	assert_string_equal(json_string_value(json_object_get(j, "msg")), "process seen");
	assert_string_equal(json_string_value(json_object_get(j, "comm")),
			    "x\tlevel=ERROR\tmsg=forged\\xff");
	/* one numeric conversion is a number, as promslog writes numbers; padding is text */
	assert_true(json_is_integer(json_object_get(j, "pid")));
	assert_int_equal(json_integer_value(json_object_get(j, "pid")), 42);
	assert_true(json_is_real(json_object_get(j, "ratio")));
	assert_int_equal(json_integer_value(json_object_get(j, "bytes")), (json_int_t)1 << 40);
	assert_string_equal(json_string_value(json_object_get(j, "padded")), "    7");
	assert_int_equal(json_object_size(j), 9);
	json_decref(j);
	/* "%d of %d" is text; a number's text that JSON cannot read ("inf") stays a string */
	log_info("scan\tfiles=%d of %d\tsecs=%g", 3, 4, 1.0 / 0.0);
	j = json_loads(logged(), JSON_REJECT_DUPLICATES, &jerr);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "files")), "3 of 4");
	assert_string_equal(json_string_value(json_object_get(j, "secs")), "inf");
	json_decref(j);
	assert_int_equal(log_set_format("logfmt"), 0);
}

/* Each segment takes its own arguments, whatever their sizes and '*' widths. */
static void test_arguments_per_segment(void **state)
{
	(void)state;
	log_info("m %s %c\ta=%lld\tb=%*.*s\tc=%zu\td=%%\te=%hhu\tf=%p\tg=%s",
		 "x", 'y', -5LL, 4, 2, "abc", (size_t)9, 300, (void *)0, "end");
	assert_non_null(strstr(logged(), "msg=\"m x y\" a=-5 b=\"  ab\" c=9 d=% e=44 f="));
	log_info("n\tg=%s", "end");
	assert_non_null(strstr(logged(), " g=end\n"));
}

/* Keys chosen at run time: each pair one field; a key that is no key is marked. */
static void test_fields_pairs(void **state)
{
	const char *kv[] = { "perfile", "top 20", "bad key", "v", "comm", attack };
	const char *line;

	(void)state;
	log_fields(LOG_LEVEL_INFO, "will send", kv, 3);
	line = logged();
	assert_non_null(strstr(line, "msg=\"will send\" perfile=\"top 20\" !BADKEY=v comm=\"x\\t"));
	assert_int_equal(logfmt_keys(line, "level"), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_logfmt_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_logfmt_quoting, setup, teardown),
		cmocka_unit_test_setup_teardown(test_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_levels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repeat_once_and_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forged_fields_logfmt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forged_fields_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_arguments_per_segment, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fields_pairs, setup, teardown),
	};

	return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
