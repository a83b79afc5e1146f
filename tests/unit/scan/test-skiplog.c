/* SPDX-License-Identifier: Apache-2.0 */
/*
 * skiplog: the token bucket (burst, refill, the count of lines it refused), one bucket per
 * reason, the end-of-scan summary, and files' skip hook, which reports every skip it counts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "files/files.h"
#include "fixture.h"
#include "scan/skiplog.h"

#define SEC 1000000000ULL

static void test_bucket(void **state)
{
	struct ratelimit rl = { .rate = 2.0, .burst = 3.0 };
	uint64_t suppressed = 99;
	unsigned passed = 0;

	(void)state;
	/* a full bucket: 3 at once, then nothing until it refills */
	for (int i = 0; i < 10; i++)
		passed += ratelimit_take(&rl, 1 * SEC, &suppressed);
	assert_int_equal(passed, 3);
	assert_int_equal(rl.suppressed, 7);
	/* half a second later, one token (2/s): the line says 7 were refused before it */
	assert_true(ratelimit_take(&rl, 1 * SEC + SEC / 2, &suppressed));
	assert_int_equal(suppressed, 7);
	assert_false(ratelimit_take(&rl, 1 * SEC + SEC / 2, &suppressed));
	/* an hour later: never more than the burst */
	passed = 0;
	for (int i = 0; i < 10; i++)
		passed += ratelimit_take(&rl, 3600 * SEC, &suppressed);
	assert_int_equal(passed, 3);
	/* a clock that goes back refills nothing */
	assert_false(ratelimit_take(&rl, 2 * SEC, &suppressed));
}

static unsigned n_lines[_SKIP_MAX], n_summaries;
static uint64_t summary_count[_SKIP_MAX];

static void sink(const struct skiplog_event *ev, uint64_t suppressed)
{
	if (ev->summary) {
		n_summaries++;
		summary_count[ev->reason] += suppressed;
		return;
	}
	n_lines[ev->reason]++;
}

static void test_buckets_per_reason(void **state)
{
	(void)state;
	skiplog_set_sink(sink);
	assert_true(skiplog_enabled());
	for (int i = 0; i < 1000; i++)
		skiplog_note(&(struct skiplog_event){ .reason = SKIP_NOT_REGULAR, .pid = 1 });
	/* 1000 pipes do not use up the lines of the EPERMs */
	for (int i = 0; i < 5; i++)
		skiplog_note(&(struct skiplog_event){ .reason = SKIP_EPERM, .pid = 1, .err = EACCES });
	assert_in_range(n_lines[SKIP_NOT_REGULAR], SKIPLOG_BURST, SKIPLOG_BURST + 5);
	assert_int_equal(n_lines[SKIP_EPERM], 5);
	skiplog_flush();
	/* every skip is a line or counted in one: the oracle is the number noted */
	assert_int_equal(n_lines[SKIP_NOT_REGULAR] + summary_count[SKIP_NOT_REGULAR], 1000);
	assert_int_equal(summary_count[SKIP_EPERM], 0);
	assert_int_equal(n_summaries, 1);
	skiplog_set_sink(NULL);
	assert_false(skiplog_enabled());
	skiplog_note(&(struct skiplog_event){ .reason = SKIP_EPERM });
	assert_int_equal(n_lines[SKIP_EPERM], 5);
}

static unsigned hook_calls[_SKIP_MAX];
static int hook_pid = -1, hook_err;

static void hook(struct files_ctx *ctx, enum skip_reason r, int err)
{
	hook_calls[r]++;
	hook_pid = ctx->pid;
	hook_err = err;
}

static int visit(struct files_ctx *ctx, const struct files_entry *e)
{
	(void)ctx;
	(void)e;
	return 0;
}

static void test_files_hook(void **state)
{
	char dir[] = "/tmp/cse-skiplog-XXXXXX", p[64];
	struct files_ctx ctx = { .visit = visit, .budget = 100, .on_skip = hook, .pid = 42 };

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/fifo", dir);
	assert_int_equal(mkfifo(p, 0600), 0);
	ctx.procfs_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(ctx.procfs_fd >= 0);
	assert_int_equal(files_scan_path(&ctx, dir), 0);
	snprintf(p, sizeof(p), "%s/none", dir);
	assert_int_equal(files_scan_path(&ctx, p), 0);
	/* a configured path has no process; every counted skip went through the hook */
	assert_int_equal(hook_pid, 0);
	assert_int_equal(hook_err, ENOENT);
	for (int r = 0; r < _SKIP_MAX; r++)
		assert_int_equal(hook_calls[r], ctx.skipped[r]);
	assert_int_equal(ctx.skipped[SKIP_NOT_REGULAR], 1);
	assert_int_equal(ctx.skipped[SKIP_NOT_FOUND], 1);
	close(ctx.procfs_fd);
	fileset_done(&ctx.seen);
	assert_int_equal(tree_remove(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket),
		cmocka_unit_test(test_buckets_per_reason),
		cmocka_unit_test(test_files_hook),
	};

	return cmocka_run_group_tests_name("skiplog", tests, NULL, NULL);
}
