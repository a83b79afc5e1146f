/* SPDX-License-Identifier: Apache-2.0 */
#include "files/quarantine.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "base/util.h"

/* Places for the threads inside a mount: the running scan, the fanotify listener, stuck ones. */
#define QUARANTINE_SLOTS 16

struct slot {
	atomic_uint_fast64_t mnt;   /* the mount + 1; 0: the place is free */
	atomic_uint_fast64_t since; /* CLOCK_MONOTONIC ns of the enter */
	atomic_bool reported;       /* its quarantine was logged: its end will be */
};

static struct slot slots[QUARANTINE_SLOTS];
static _Thread_local struct slot *mine;

/* The quarantines begun and ended since the caller last took them. Rare: a lock is cheap here. */
static pthread_mutex_t events_lock = PTHREAD_MUTEX_INITIALIZER;
static struct quarantine_event events[QUARANTINE_EVENTS];
static size_t n_events;
static uint64_t events_lost;

static void event_add(uint64_t mnt_id, uint64_t stuck_ns, bool answered)
{
	pthread_mutex_lock(&events_lock);
	if (n_events < QUARANTINE_EVENTS)
		events[n_events++] = (struct quarantine_event){ mnt_id, stuck_ns, answered };
	else
		events_lost++;
	pthread_mutex_unlock(&events_lock);
}

size_t quarantine_events_take(struct quarantine_event *ret, size_t max, uint64_t *ret_lost)
{
	size_t n;

	pthread_mutex_lock(&events_lock);
	n = n_events < max ? n_events : max;
	for (size_t i = 0; i < n; i++)
		ret[i] = events[i];
	for (size_t i = n; i < n_events; i++)
		events[i - n] = events[i];
	n_events -= n;
	*ret_lost = events_lost;
	events_lost = 0;
	pthread_mutex_unlock(&events_lock);
	return n;
}

/* The thread's place now holds mnt_id (+ 1; 0 frees it), entered now. */
static void place_set(struct slot *s, uint_fast64_t mnt)
{
	if (atomic_exchange(&s->reported, false))
		event_add(atomic_load(&s->mnt) - 1, monotonic_ns() - atomic_load(&s->since), true);
	atomic_store(&s->since, 0); /* while it changes: see quarantine_holds() */
	atomic_store(&s->mnt, mnt);
	if (mnt)
		atomic_store(&s->since, monotonic_ns());
}

uint64_t quarantine_enter(uint64_t mnt_id)
{
	uint64_t outer;

	if (mnt_id == QUARANTINE_NO_MOUNT)
		return mine ? atomic_load(&mine->mnt) - 1 : QUARANTINE_NO_MOUNT;
	if (mine) {
		outer = atomic_load(&mine->mnt) - 1;
		place_set(mine, mnt_id + 1);
		return outer;
	}
	for (size_t i = 0; i < QUARANTINE_SLOTS; i++) {
		uint_fast64_t free_place = 0;

		if (atomic_compare_exchange_strong(&slots[i].mnt, &free_place, mnt_id + 1)) {
			atomic_store(&slots[i].since, monotonic_ns());
			mine = &slots[i];
			break;
		}
	}
	return QUARANTINE_NO_MOUNT;
}

void quarantine_leave(uint64_t outer)
{
	struct slot *s = mine;

	if (!s)
		return;
	if (outer == QUARANTINE_NO_MOUNT)
		mine = NULL;
	place_set(s, outer == QUARANTINE_NO_MOUNT ? 0 : outer + 1);
}

bool quarantine_holds(uint64_t mnt_id)
{
	uint64_t now = 0;

	if (mnt_id == QUARANTINE_NO_MOUNT)
		return false;
	for (size_t i = 0; i < QUARANTINE_SLOTS; i++) {
		struct slot *s = &slots[i];
		uint64_t since;

		if (s == mine || atomic_load(&s->mnt) != mnt_id + 1)
			continue;
		if (!now)
			now = monotonic_ns();
		since = atomic_load(&s->since);
		/* since is 0 while a place changes hands: a thread just entering reads as just entered */
		if (!since || now < since || now - since < QUARANTINE_AFTER_NS)
			continue;
		if (!atomic_exchange(&s->reported, true))
			event_add(mnt_id, now - since, false);
		return true;
	}
	return false;
}
