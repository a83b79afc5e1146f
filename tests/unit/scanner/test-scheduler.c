/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scheduler over a fake cgroup tree with a fake cachestat: concurrent scrapes share one
 * scan and one rendered body; a scan that hangs is left behind and scrapes get the last body.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
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

#include "fixture.h"
#include "scan/registry.h"
#include "scanner/scheduler.h"

static char root[] = "/tmp/cse-sched-XXXXXX";
static char data[64];

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(root))
		return -1;
	snprintf(data, sizeof(data), "%s.data", root);
	tree_cgroups(root, ". b");
	fixture_sh("mkdir -p %s && for i in 1 2 3 4 5; do echo $i > %s/f$i; done", data, data);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return tree_remove(root) | tree_remove(data);
}

static const struct render_meta meta = { .version = "t", .revision = "t" };

/* A collector whose scan of /b cachestats the five files of data. */
static struct scan_engine *make(double max_scan_seconds)
{
	struct collector_options o = { .cgroupfs = root, .procfs = "/proc" };
	struct pagecache pc = { .abi = PAGECACHE_ABI_MAINLINE, .sys = fake_cachestat };
	struct scan_engine *c = NULL;
	struct config *cfg = NULL;
	char *json = NULL, *err = NULL;

	o.enable[registry_find("cachestat")] = o.enable[registry_find("events")] = true;
	o.enable[registry_find("identity")] = true;

	assert_true(asprintf(&json, "{ \"cgroups\": [ { \"match\": \"/b\", \"paths\": [\"%s\"] } ],"
				    " \"per_file_top\": 0, \"limits\": { \"max_scan_seconds\": %g } }",
			     data, max_scan_seconds) > 0);
	if (config_parse(json, strlen(json), "t", &cfg, &err) < 0)
		fail_msg("config: %s", err);
	free(json);
	assert_int_equal(scan_engine_new(&o, &pc, cfg, &c), 0);
	return c;
}

struct racer {
	struct scheduler *s;
	pthread_barrier_t *start;
	struct body *got;
	bool stale;
};

static void *race(void *arg)
{
	struct racer *r = arg;

	pthread_barrier_wait(r->start);
	if (scheduler_get(r->s, 10000000000ULL, true, &r->got, &r->stale) < 0)
		r->got = NULL;
	return NULL;
}

/* Callers that arrive while a scan runs wait for it and share its rendered body. */
static void test_shared_scan(void **state)
{
	struct scan_engine *c = make(10);
	struct scheduler *s = NULL;
	struct racer r[4];
	pthread_t t[4];
	pthread_barrier_t start;

	(void)state;
	assert_int_equal(scheduler_new(c, &meta, &s), 0);
	fake_reset_calls();
	fake_set_delay(100); /* 5 files: a scan of half a second, long enough under load */
	pthread_barrier_init(&start, NULL, 4);
	for (int i = 0; i < 4; i++) {
		r[i] = (struct racer){ .s = s, .start = &start };
		assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	fake_set_delay(0);
	for (int i = 0; i < 4; i++) {
		assert_non_null(r[i].got);
		assert_ptr_equal(r[i].got, r[0].got);
		assert_false(r[i].stale);
	}
	assert_int_equal(fake_calls(), 5); /* one scan of five files */
	assert_non_null(strstr(r[0].got->text, "cachestat_cgroup_files{cgroup=\"/b\"} 5\n"));
	assert_non_null(r[0].got->gz);
	for (int i = 0; i < 4; i++)
		body_unref(r[i].got);
	pthread_barrier_destroy(&start);
	scheduler_free(s);
}

static double since(uint64_t t0)
{
	return (double)(scheduler_now_ns() - t0) / 1e9;
}

static int threads(void)
{
	char line[256];
	int n = -1;
	FILE *f = fopen("/proc/self/status", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

/*
 * A scan blocked in one call (3 s, past max_scan_seconds 0.5 + the margin): scrapes get the
 * last body within their budget, the scan is left behind and counted once, and a new one beside
 * it skips the mount the stuck one waits on and ends, until that call returns.
 */
static void test_stuck_scan(void **state)
{
	struct scan_engine *c = make(0.5);
	struct scheduler *s = NULL;
	struct body *b = NULL, *first;
	uint64_t t0;
	bool stale;
	int base = threads();

	(void)state;
	assert_int_equal(scheduler_new(c, &meta, &s), 0);
	fake_set_delay(0);
	assert_int_equal(scheduler_get(s, 5000000000ULL, true, &first, &stale), 0);
	assert_false(stale);

	fake_set_delay(3000);
	t0 = scheduler_now_ns();
	assert_int_equal(scheduler_get(s, 300000000ULL, true, &b, &stale), 0);
	assert_true(since(t0) < 1.0);
	assert_true(stale);
	assert_ptr_equal(b, first);
	body_unref(b);
	assert_int_equal(scheduler_stuck_total(s), 0);

	/*
	 * Past max_scan_seconds + margin: left behind. The next scan skips the mount the stuck one
	 * waits on (quarantine.h) and ends: a fresh body, the files counted as mount_stuck.
	 */
	while (since(t0) < 0.5 + SCHEDULER_STUCK_MARGIN_SECONDS + 0.1)
		usleep(50000);
	assert_int_equal(scheduler_get(s, 2000000000ULL, true, &b, &stale), 0);
	assert_false(stale);
	assert_true(b->seq > first->seq);
	/* its files all skipped: /b holds none counted, so no series */
	assert_null(strstr(b->text, "cachestat_cgroup_files{cgroup=\"/b\"}"));
	assert_non_null(strstr(b->text, "cachestat_files_skipped_total{reason=\"mount_stuck\"} "));
	assert_null(strstr(b->text, "cachestat_files_skipped_total{reason=\"mount_stuck\"} 0\n"));
	body_unref(b);
	/* the timer and two scanners, each waiting on the thread its scan runs in */
	assert_true(threads() <= base + 5);
	assert_int_equal(scheduler_stuck_total(s), 1);

	/* the file system answers again: the quarantine ends with the stuck call, files counted */
	fake_set_delay(0);
	b = NULL;
	for (int i = 0; i < 40; i++) {
		body_unref(b);
		assert_int_equal(scheduler_get(s, 8000000000ULL, true, &b, &stale), 0);
		if (strstr(b->text, "cachestat_cgroup_files{cgroup=\"/b\"} 5\n"))
			break;
		usleep(250000);
	}
	assert_false(stale);
	assert_non_null(strstr(b->text, "cachestat_cgroup_files{cgroup=\"/b\"} 5\n"));
	body_unref(b);
	body_unref(first);
	assert_int_equal(scheduler_stuck_total(s), 1);
	scheduler_free(s);
}

/* With a minimum interval, scrapes get a young body at once; past it they wait for a scan. */
static void test_min_interval(void **state)
{
	struct scan_engine *c = make(10);
	struct scheduler *s = NULL;
	struct body *a = NULL, *b = NULL;
	bool stale;

	(void)state;
	assert_int_equal(scheduler_new(c, &meta, &s), 0);
	scheduler_set_min_interval(s, 10);
	fake_reset_calls();
	assert_int_equal(scheduler_get(s, 5000000000ULL, true, &a, &stale), 0);
	assert_int_equal(fake_calls(), 5);
	assert_int_equal(scheduler_get(s, 5000000000ULL, true, &b, &stale), 0);
	assert_int_equal(fake_calls(), 5);
	assert_ptr_equal(a, b);
	assert_false(stale);
	body_unref(b);
	/* past the interval: the scrape waits for the scan it starts, and gets its body */
	scheduler_set_min_interval(s, 0.2);
	usleep(300000);
	assert_int_equal(scheduler_get(s, 5000000000ULL, true, &b, &stale), 0);
	assert_int_equal(fake_calls(), 10);
	assert_ptr_not_equal(a, b);
	assert_true(b->seq > a->seq);
	assert_false(stale);
	body_unref(a);
	/* a scan slower than the scrape's budget: the previous body, said to be stale */
	usleep(300000);
	fake_set_delay(100); /* 5 files: half a second */
	assert_int_equal(scheduler_get(s, 100000000ULL, true, &a, &stale), 0);
	assert_ptr_equal(a, b);
	assert_true(stale);
	fake_set_delay(0);
	body_unref(a);
	body_unref(b);
	for (int i = 0; i < 500 && fake_calls() < 15; i++)
		usleep(20000); /* the slow scan's end: half a second, up to ten on a loaded machine */
	assert_int_equal(fake_calls(), 15);
	scheduler_set_min_interval(s, 0);
	assert_int_equal(scheduler_get(s, 5000000000ULL, true, &b, &stale), 0);
	assert_int_equal(fake_calls(), 20);
	body_unref(b);
	scheduler_free(s);
}

/* HEAD's way: the latest as it is, no scan, and -ENODATA before the first. */
static void test_no_scan(void **state)
{
	struct scan_engine *c = make(10);
	struct scheduler *s = NULL;
	struct body *b = NULL;
	bool stale;

	(void)state;
	assert_int_equal(scheduler_new(c, &meta, &s), 0);
	fake_reset_calls();
	assert_int_equal(scheduler_get(s, 1000000000ULL, false, &b, &stale), -ENODATA);
	usleep(100000);
	assert_int_equal(fake_calls(), 0);
	scheduler_free(s);
}

/* A waiter whose wake blocks until the test lets it go, then takes its body. */
struct blocked_waiter {
	struct body_waiter w;
	struct scheduler *s;
	sem_t in, go, done;
	struct body *b;
	bool stale;
	int r;
};

static void blocked_wake(void *userdata)
{
	struct blocked_waiter *x = userdata;

	sem_post(&x->in);
	sem_wait(&x->go);
	x->r = scheduler_take(x->s, &x->w, &x->b, &x->stale);
	sem_post(&x->done);
}

/*
 * scheduler_free() while the scan's thread is still waking its waiters: the scheduler stays
 * until that thread is out, so the woken can still take their bodies (under ASan, a use after
 * free when it was destroyed under them).
 */
static void test_free_while_waking(void **state)
{
	struct blocked_waiter x = { .w = { .wake = blocked_wake } };

	(void)state;
	x.w.userdata = &x;
	sem_init(&x.in, 0, 0);
	sem_init(&x.go, 0, 0);
	sem_init(&x.done, 0, 0);
	fake_set_delay(0);
	assert_int_equal(scheduler_new(make(10), &meta, &x.s), 0);
	assert_int_equal(scheduler_enqueue(x.s, 5000000000ULL, true, &x.w), 0);
	sem_wait(&x.in); /* the scan ended and its thread is in blocked_wake() */
	scheduler_free(x.s);
	sem_post(&x.go);
	sem_wait(&x.done);
	assert_int_equal(x.r, 0);
	assert_non_null(x.b);
	assert_true(x.b->seq >= 1);
	body_unref(x.b);
	usleep(200000); /* the scan's thread out, the scheduler freed by it */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shared_scan),
		cmocka_unit_test(test_stuck_scan),
		cmocka_unit_test(test_no_scan),
		cmocka_unit_test(test_min_interval),
		cmocka_unit_test(test_free_while_waking),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
