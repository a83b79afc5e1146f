/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quarantine: a mount another thread has been inside for over QUARANTINE_AFTER_NS is held, the
 * thread's own is not, a nested enter moves the thread and its leave moves it back, and a leave
 * lifts the quarantine at once. Each quarantine's start and end is one event for the caller.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "files/quarantine.h"

/* A thread that enters and leaves mounts when told: step is what to do next. */
static sem_t go, done;
static enum { ENTER_5, ENTER_7_INSIDE, LEAVE_7, LEAVE_5, QUIT } step;

static void *worker(void *arg)
{
	uint64_t outer5 = 0, outer7 = 0;

	(void)arg;
	for (;;) {
		sem_wait(&go);
		switch (step) {
		case ENTER_5:
			outer5 = quarantine_enter(5);
			break;
		case ENTER_7_INSIDE:
			outer7 = quarantine_enter(7);
			break;
		case LEAVE_7:
			quarantine_leave(outer7);
			break;
		case LEAVE_5:
			quarantine_leave(outer5);
			break;
		case QUIT:
			sem_post(&done);
			return NULL;
		}
		sem_post(&done);
	}
}

static void tell(int what)
{
	step = what;
	sem_post(&go);
	sem_wait(&done);
}

/* Past QUARANTINE_AFTER_NS. */
static void wait_past(void)
{
	usleep((useconds_t)(QUARANTINE_AFTER_NS / 1000 + 150000));
}

/* The events since the last take are exactly mount mnt_id's start (answered false) or end. */
static void expect_event(uint64_t mnt_id, bool answered)
{
	struct quarantine_event ev[QUARANTINE_EVENTS];
	uint64_t lost;
	size_t n = quarantine_events_take(ev, QUARANTINE_EVENTS, &lost);

	assert_int_equal(n, 1);
	assert_int_equal(lost, 0);
	assert_int_equal(ev[0].mnt_id, mnt_id);
	assert_int_equal(ev[0].answered, answered);
	assert_true(ev[0].stuck_ns >= QUARANTINE_AFTER_NS);
}

static void expect_no_event(void)
{
	struct quarantine_event ev[1];
	uint64_t lost;

	assert_int_equal(quarantine_events_take(ev, 1, &lost), 0);
}

static void test_other_thread(void **state)
{
	pthread_t t;

	(void)state;
	sem_init(&go, 0, 0);
	sem_init(&done, 0, 0);
	assert_int_equal(pthread_create(&t, NULL, worker, NULL), 0);

	tell(ENTER_5);
	assert_false(quarantine_holds(5)); /* just entered: not stuck yet */
	expect_no_event();
	wait_past();
	assert_true(quarantine_holds(5));
	assert_true(quarantine_holds(5));
	expect_event(5, false); /* once, not per call */
	assert_false(quarantine_holds(6));
	assert_false(quarantine_holds(QUARANTINE_NO_MOUNT));

	/* a file met inside the walk of mount 5, on mount 7: 5's quarantine ends */
	tell(ENTER_7_INSIDE);
	expect_event(5, true);
	assert_false(quarantine_holds(5));
	assert_false(quarantine_holds(7));
	wait_past();
	assert_true(quarantine_holds(7));
	assert_false(quarantine_holds(5));
	expect_event(7, false);

	/* back in 5: 7 lifted at once, 5's clock starts again */
	tell(LEAVE_7);
	expect_event(7, true);
	assert_false(quarantine_holds(7));
	assert_false(quarantine_holds(5));
	wait_past();
	assert_true(quarantine_holds(5));
	expect_event(5, false);

	tell(LEAVE_5);
	expect_event(5, true);
	assert_false(quarantine_holds(5));
	expect_no_event();
	tell(QUIT);
	pthread_join(t, NULL);
	sem_destroy(&go);
	sem_destroy(&done);
}

/* A thread is never held up by its own mount: it is in it. */
static void test_own_thread(void **state)
{
	uint64_t outer;

	(void)state;
	outer = quarantine_enter(9);
	assert_int_equal(outer, QUARANTINE_NO_MOUNT);
	wait_past();
	assert_false(quarantine_holds(9));
	quarantine_leave(outer);
	/* QUARANTINE_NO_MOUNT is never recorded */
	outer = quarantine_enter(QUARANTINE_NO_MOUNT);
	assert_int_equal(outer, QUARANTINE_NO_MOUNT);
	quarantine_leave(outer);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_other_thread),
		cmocka_unit_test(test_own_thread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
