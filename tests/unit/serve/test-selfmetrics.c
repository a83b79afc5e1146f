/* SPDX-License-Identifier: Apache-2.0 */
/* The process_* families: this process's own figures, rendered at most once a second. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "serve/selfmetrics.h"

/* process_open_fds as rendered now, or -1. */
static long rendered_fds(struct selfmetrics_proc *p)
{
	struct selfmetrics m = { 0 };
	char *text = NULL, *at;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	long n = -1;

	assert_non_null(f);
	assert_int_equal(selfmetrics_render(f, &m, p), 0);
	assert_int_equal(fclose(f), 0);
	at = strstr(text, "\nprocess_open_fds ");
	if (at)
		n = strtol(at + strlen("\nprocess_open_fds "), NULL, 10);
	free(text);
	return n;
}

/* Within the TTL the figures are those of the last render; after it, this moment's. */
static void test_rendered_once_a_second(void **state)
{
	struct selfmetrics_proc p;
	int extra[10];
	long before, cached, after;

	(void)state;
	selfmetrics_proc_init(&p);
	assert_int_equal(selfmetrics_proc_open("/proc", &p), 0);
	before = rendered_fds(&p);
	assert_true(before > 0);
	for (int i = 0; i < 10; i++)
		extra[i] = dup(0);
	cached = rendered_fds(&p);
	assert_int_equal(cached, before);
	usleep((useconds_t)(SELFMETRICS_PROCESS_TTL_NS / 1000) + 50000);
	after = rendered_fds(&p);
	assert_int_equal(after, before + 10);
	for (int i = 0; i < 10; i++)
		close(extra[i]);
	selfmetrics_proc_close(&p);
}

/* Closed (or never opened): no process_* series, the others still there. */
static void test_without_files(void **state)
{
	struct selfmetrics_proc p;
	struct selfmetrics m = { 0 };
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	selfmetrics_proc_init(&p);
	f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(selfmetrics_render(f, &m, &p), 0);
	assert_int_equal(fclose(f), 0);
	assert_null(strstr(text, "process_open_fds"));
	assert_non_null(strstr(text, "cachestat_http_requests_total{code=\"200\"} 0\n"));
	free(text);
	selfmetrics_proc_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rendered_once_a_second),
		cmocka_unit_test(test_without_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
