/* SPDX-License-Identifier: MIT */
/*
 * The scheduler over a fake cgroup tree with a fake cachestat: concurrent scrapes share one
 * scan.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "scheduler.h"

static int fake_calls;
static int fake_delay_ms;

static long fake_cachestat(long nr, ...)
{
	struct pagecache_cachestat *cs;
	va_list ap;

	assert_int_equal(nr, 451);
	va_start(ap, nr);
	(void)va_arg(ap, unsigned long);
	(void)va_arg(ap, unsigned long);
	cs = va_arg(ap, struct pagecache_cachestat *);
	va_end(ap);
	__atomic_add_fetch(&fake_calls, 1, __ATOMIC_RELAXED);
	if (fake_delay_ms) {
		struct timespec ts = { fake_delay_ms / 1000, (fake_delay_ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
	*cs = (struct pagecache_cachestat){ 3, 1, 0, 2, 1 };
	return 0;
}

static char root[] = "/tmp/cse-sched-XXXXXX";
static char data[64];

static int setup(void **state)
{
	char cmd[1024];

	(void)state;
	if (!mkdtemp(root))
		return -1;
	snprintf(data, sizeof(data), "%s.data", root);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/b %s && touch %s/cgroup.procs %s/b/cgroup.procs"
		 " && for i in 1 2 3 4 5; do echo $i > %s/f$i; done",
		 root, data, root, root, data);
	return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[700];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", root, data);
	return system(cmd) == 0 ? 0 : -1;
}

/* A collector whose scan of /b cachestats the five files of data. */
static struct collector *make(void)
{
	struct collector_options o = {
		.cgroupfs = root, .procfs = "/proc", .enable = { true, true, true }
	};
	struct pagecache pc = { .abi = PAGECACHE_ABI_MAINLINE, .sys = fake_cachestat };
	struct collector *c = NULL;
	struct config *cfg = NULL;
	char *json = NULL, *err = NULL;

	assert_true(asprintf(&json, "{ \"cgroups\": [ { \"match\": \"/b\", \"paths\": [\"%s\"] } ],"
				    " \"per_file_top\": 0 }", data) > 0);
	if (config_parse(json, strlen(json), "t", &cfg, &err) < 0)
		fail_msg("config: %s", err);
	free(json);
	assert_int_equal(collector_new(&o, &pc, cfg, &c), 0);
	return c;
}

struct racer {
	struct scheduler *s;
	pthread_barrier_t *start;
	struct snapshot *got;
	bool fresh;
};

static void *race(void *arg)
{
	struct racer *r = arg;

	pthread_barrier_wait(r->start);
	if (scheduler_snapshot(r->s, &r->got, &r->fresh) < 0)
		r->got = NULL;
	return NULL;
}

/* Callers that arrive while a scan runs wait for it and share its snapshot. */
static void test_shared_scan(void **state)
{
	struct collector *c = make();
	struct scheduler *s = NULL;
	struct racer r[4];
	pthread_t t[4];
	pthread_barrier_t start;
	int fresh = 0;

	(void)state;
	assert_int_equal(scheduler_new(c, &s), 0);
	fake_calls = 0;
	fake_delay_ms = 100; /* 5 files: a scan of half a second, long enough under load */
	pthread_barrier_init(&start, NULL, 4);
	for (int i = 0; i < 4; i++) {
		r[i] = (struct racer){ .s = s, .start = &start };
		assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	fake_delay_ms = 0;
	for (int i = 0; i < 4; i++) {
		assert_non_null(r[i].got);
		assert_ptr_equal(r[i].got, r[0].got);
		fresh += r[i].fresh;
	}
	assert_int_equal(fresh, 1);
	assert_int_equal(fake_calls, 5); /* one scan of five files */
	for (int i = 0; i < 4; i++)
		snapshot_unref(r[i].got);
	pthread_barrier_destroy(&start);
	scheduler_free(s);
	collector_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shared_scan),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
