/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quarantine: a mount another thread has been inside for over QUARANTINE_AFTER_NS is held, the
 * thread's own is not, a nested enter moves the thread and its leave moves it back, and a leave
 * lifts the quarantine at once.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
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

static void test_other_thread(void **state)
{
	pthread_t t;

	(void)state;
	sem_init(&go, 0, 0);
	sem_init(&done, 0, 0);
	assert_int_equal(pthread_create(&t, NULL, worker, NULL), 0);

	tell(ENTER_5);
	assert_false(quarantine_holds(5)); /* just entered: not stuck yet */
	wait_past();
	assert_true(quarantine_holds(5));
	assert_false(quarantine_holds(6));
	assert_false(quarantine_holds(QUARANTINE_NO_MOUNT));

	/* a file met inside the walk of mount 5, on mount 7 */
	tell(ENTER_7_INSIDE);
	assert_false(quarantine_holds(5));
	assert_false(quarantine_holds(7));
	wait_past();
	assert_true(quarantine_holds(7));
	assert_false(quarantine_holds(5));

	/* back in 5: 7 lifted at once, 5's clock starts again */
	tell(LEAVE_7);
	assert_false(quarantine_holds(7));
	assert_false(quarantine_holds(5));
	wait_past();
	assert_true(quarantine_holds(5));

	tell(LEAVE_5);
	assert_false(quarantine_holds(5));
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
