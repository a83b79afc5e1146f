/* SPDX-License-Identifier: Apache-2.0 */
#include "files/quarantine.h"

#include <stdatomic.h>
#include <stddef.h>

#include "base/log.h"
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

/* The thread's place now holds mnt_id (+ 1; 0 frees it), entered now. */
static void place_set(struct slot *s, uint_fast64_t mnt)
{
	if (atomic_exchange(&s->reported, false))
		log_info("mount answers again; its files are measured again"
			 "\tmount_id=%llu\tstuck_seconds=%.1f",
			 (unsigned long long)(atomic_load(&s->mnt) - 1),
			 (double)(monotonic_ns() - atomic_load(&s->since)) / 1e9);
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
			log_warn("mount has not answered a call; its files are skipped until it does"
				 "\tmount_id=%llu\tstuck_seconds=%.1f\treason=mount_stuck",
				 (unsigned long long)mnt_id, (double)(now - since) / 1e9);
		return true;
	}
	return false;
}
