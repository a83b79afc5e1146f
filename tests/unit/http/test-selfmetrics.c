/* SPDX-License-Identifier: Apache-2.0 */
/* The process_* families: this process's own figures, rendered at most once a second, or
 * the scanner's from the shared page; the config reload pair. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "http/selfmetrics.h"

/* process_open_fds as rendered now, or -1. */
static long rendered_fds(struct selfmetrics_proc *p)
{
	struct selfmetrics m = { 0 };
	char *text = NULL, *at;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	long n = -1;

	assert_non_null(f);
	assert_int_equal(selfmetrics_render(f, &m, p, NULL), 0);
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
	assert_int_equal(selfmetrics_render(f, &m, &p, NULL), 0);
	assert_int_equal(fclose(f), 0);
	assert_null(strstr(text, "process_open_fds"));
	assert_non_null(strstr(text, "cachestat_http_requests_total{code=\"200\"} 0\n"));
	free(text);
	selfmetrics_proc_close(&p);
}

/* The render of p with sh into a string (caller frees). */
static char *render_with(struct selfmetrics_proc *p, const struct selfmetrics_shared *sh)
{
	struct selfmetrics m = { 0 };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(selfmetrics_render(f, &m, p, sh), 0);
	assert_int_equal(fclose(f), 0);
	return text;
}

/*
 * A sampled shared page: process_* are its figures (the scanner's), this process's are
 * cachestat_http_process_*; the reload pair follows the last load.
 */
static void test_shared_page(void **state)
{
	struct selfmetrics_shared *sh = NULL;
	struct selfmetrics_proc p;
	char *text;

	(void)state;
	selfmetrics_proc_init(&p);
	assert_int_equal(selfmetrics_proc_open("/proc", &p), 0);
	assert_int_equal(selfmetrics_shared_new(&sh), 0);
	text = render_with(&p, sh); /* never sampled: this process is process_* */
	assert_non_null(strstr(text, "\nprocess_open_fds "));
	assert_null(strstr(text, "cachestat_http_process_"));
	assert_non_null(strstr(text, "\ncachestat_config_last_reload_successful 1\n"));
	free(text);

	selfmetrics_shared_sample(sh, &p);
	atomic_store(&sh->open_fds, 4242); /* as if the scanner had that many */
	selfmetrics_shared_config_loaded(sh, false);
	selfmetrics_proc_close(&p); /* a fresh render, not the one of the last second */
	assert_int_equal(selfmetrics_proc_open("/proc", &p), 0);
	text = render_with(&p, sh);
	assert_non_null(strstr(text, "\nprocess_open_fds 4242\n"));
	assert_non_null(strstr(text, "\ncachestat_http_process_open_fds "));
	assert_non_null(strstr(text, "\ncachestat_http_process_start_time_seconds "));
	assert_non_null(strstr(text, "\ncachestat_config_last_reload_successful 0\n"));
	free(text);
	selfmetrics_shared_free(sh);
	selfmetrics_proc_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rendered_once_a_second),
		cmocka_unit_test(test_without_files),
		cmocka_unit_test(test_shared_page),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
